/*
 * util/json_simd.h over simdjson's DOM API, built without exceptions (error codes only).
 * A text is parsed into simdjson's tape and turned into jansson values, the rules jansson adds
 * (unique keys, no NUL, integers within long long) applied on the way; anything simdjson
 * refuses is declined, so jansson words the refusal. The picker walks the whole tape for those
 * rules first, then builds only the members asked for.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "util/json_simd.h"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <vector>

#include <simdjson.h>

extern "C" {
#include "util/buf.h"
#include "util/json_dump.h"
}

namespace dom = simdjson::dom;

static_assert(simdjson::SIMDJSON_PADDING <= DSA_JSIMD_PADDING, "the padding callers promise");

namespace
{

/* jansson's JSON_PARSER_MAX_DEPTH: texts nested deeper are refused by both */
constexpr size_t max_depth = 2048;

/* A parser that nests as deep as jansson does and keeps its buffers (the padded copy of the
   text, the tape, the decoded strings) for the next call. */
struct deep_parser {
    dom::parser p;
    bool ok; /* false: out of memory, every text is declined */
    deep_parser() : ok(!p.allocate(simdjson::SIMDJSON_PADDING, max_depth))
    {
    }
};

/* One parser per text being walked at once: the row, and the prompt decoded from it. */
thread_local deep_parser outer_parser, inner_parser;

/* jansson with JSON_REJECT_DUPLICATES refuses an object with a key twice; without it, it keeps
   the last value. Either way the text is jansson's to decide. Keys are compared decoded. */
bool keys_unique(dom::object o)
{
    std::string_view few[16];
    size_t n = 0;
    for (dom::key_value_pair kv : o) {
        if (n == 16)
            break;
        for (size_t i = 0; i < n; i++)
            if (few[i] == kv.key)
                return false;
        few[n++] = kv.key;
    }
    if (n < 16)
        return true;
    std::vector<std::string_view> all;
    for (dom::key_value_pair kv : o)
        all.push_back(kv.key);
    std::sort(all.begin(), all.end());
    return std::adjacent_find(all.begin(), all.end()) == all.end();
}

/* No NUL byte: simdjson refuses a raw one, so one here was "\u0000", which jansson refuses
   (without JSON_ALLOW_NUL) in strings and keys alike. */
bool no_nul(std::string_view s)
{
    return !std::memchr(s.data(), '\0', s.size());
}

/* True when every object in e has unique keys, key() holds for each of their keys and leaf()
   for each scalar: the walk of jansson_takes(). */
template <class Leaf, class Key> bool every(dom::element e, Leaf leaf, Key key)
{
    switch (e.type()) {
    case dom::element_type::ARRAY: {
        dom::array a;
        if (e.get_array().get(a))
            return false;
        for (dom::element v : a)
            if (!every(v, leaf, key))
                return false;
        return true;
    }
    case dom::element_type::OBJECT: {
        dom::object o;
        if (e.get_object().get(o) || !keys_unique(o))
            return false;
        for (dom::key_value_pair kv : o)
            if (!key(kv.key) || !every(kv.value, leaf, key))
                return false;
        return true;
    }
    default:
        return leaf(e);
    }
}

/* The rules jansson adds to simdjson's, over a whole value: unique keys in every object, no
   NUL in a string or key, no integer beyond long long (simdjson reads those as uint64;
   jansson's strtoll overflows). */
bool jansson_takes(dom::element e)
{
    return every(
        e,
        [](dom::element v) {
            std::string_view s;
            switch (v.type()) {
            case dom::element_type::STRING:
                return !v.get_string().get(s) && no_nul(s);
            case dom::element_type::UINT64:
                return false;
            default:
                return true;
            }
        },
        no_nul);
}

/* Makes jansson values of simdjson ones, applying jansson_takes()'s rules on the way (NULL:
   declined, or out of memory). Short strings that repeat within one text (the "user" and
   "assistant" of a message list) become one shared json_t: jansson's values are reference
   counted, and the trees are read, never changed in place (json_simd.h). */
class builder
{
  public:
    ~builder()
    {
        for (size_t i = 0; i < nshort; i++)
            json_decref(shorts[i].v);
    }
    json_t *build(dom::element e);

  private:
    static constexpr size_t short_max = 16, nshort_max = 8;
    struct short_string {
        json_t *v;
        size_t len;
        char bytes[short_max];
    } shorts[nshort_max];
    size_t nshort = 0;

    json_t *string(std::string_view s);
    json_t *array(dom::element e);
    json_t *object(dom::element e);
};

json_t *builder::string(std::string_view s)
{
    if (!no_nul(s))
        return nullptr;
    if (s.size() > short_max)
        return json_stringn_nocheck(s.data(), s.size());
    for (size_t i = 0; i < nshort; i++)
        if (shorts[i].len == s.size() && !std::memcmp(shorts[i].bytes, s.data(), s.size()))
            return json_incref(shorts[i].v);
    /* valid UTF-8: simdjson checked */
    json_t *v = json_stringn_nocheck(s.data(), s.size());
    if (v && nshort < nshort_max) {
        short_string &c = shorts[nshort++];
        c.v = json_incref(v);
        c.len = s.size();
        std::memcpy(c.bytes, s.data(), s.size());
    }
    return v;
}

json_t *builder::array(dom::element e)
{
    dom::array a;
    json_t *arr = json_array();
    if (!arr || e.get_array().get(a))
        return arr;
    for (dom::element v : a) {
        json_t *c = build(v);
        if (!c || json_array_append_new(arr, c)) {
            json_decref(arr);
            return nullptr;
        }
    }
    return arr;
}

json_t *builder::object(dom::element e)
{
    dom::object o;
    if (e.get_object().get(o) || !keys_unique(o))
        return nullptr;
    json_t *obj = json_object();
    if (!obj)
        return nullptr;
    for (dom::key_value_pair kv : o) {
        json_t *c = no_nul(kv.key) ? build(kv.value) : nullptr;
        /* keys are valid UTF-8 (simdjson checked) without NUL (checked) */
        if (!c || json_object_setn_new_nocheck(obj, kv.key.data(), kv.key.size(), c)) {
            json_decref(obj);
            return nullptr;
        }
    }
    return obj;
}

json_t *builder::build(dom::element e)
{
    switch (e.type()) {
    case dom::element_type::ARRAY:
        return array(e);
    case dom::element_type::OBJECT:
        return object(e);
    case dom::element_type::INT64: {
        int64_t v = 0;
        return e.get_int64().get(v) ? nullptr : json_integer(static_cast<json_int_t>(v));
    }
    case dom::element_type::DOUBLE: {
        /* simdjson rounds correctly, as glibc's strtod does for jansson */
        double v = 0;
        return e.get_double().get(v) ? nullptr : json_real(v);
    }
    case dom::element_type::STRING: {
        std::string_view s;
        return e.get_string().get(s) ? nullptr : string(s);
    }
    case dom::element_type::BOOL: {
        bool v = false;
        return e.get_bool().get(v) ? nullptr : json_boolean(v);
    }
    case dom::element_type::NULL_VALUE:
        return json_null();
    case dom::element_type::UINT64:
        break; /* beyond long long: jansson refuses it */
    }
    return nullptr;
}

/* Writes e as dsa_json_dump_compact() writes the tree builder::build() makes of it (jansson's
   compact bytes: members in text order, jansson's escapes, integers as %lld), straight from
   the tape. false: a value this does not write byte-exact (a real: jansson's formatting of
   doubles is left to jansson) or one builder declines; out then holds a fragment. */
bool dump_compact(dom::element e, struct dsa_buf *out)
{
    switch (e.type()) {
    case dom::element_type::ARRAY: {
        dom::array a;
        if (e.get_array().get(a))
            return false;
        dsa_buf_addch(out, '[');
        bool first = true;
        for (dom::element v : a) {
            if (!first)
                dsa_buf_addch(out, ',');
            first = false;
            if (!dump_compact(v, out))
                return false;
        }
        dsa_buf_addch(out, ']');
        return true;
    }
    case dom::element_type::OBJECT: {
        dom::object o;
        if (e.get_object().get(o) || !keys_unique(o))
            return false;
        dsa_buf_addch(out, '{');
        bool first = true;
        for (dom::key_value_pair kv : o) {
            if (!first)
                dsa_buf_addch(out, ',');
            first = false;
            if (!no_nul(kv.key) || dsa_json_dump_string(kv.key.data(), kv.key.size(), out) < 0)
                return false;
            dsa_buf_addch(out, ':');
            if (!dump_compact(kv.value, out))
                return false;
        }
        dsa_buf_addch(out, '}');
        return true;
    }
    case dom::element_type::STRING: {
        std::string_view s;
        return !e.get_string().get(s) && no_nul(s) &&
               dsa_json_dump_string(s.data(), s.size(), out) == 0;
    }
    case dom::element_type::INT64: {
        int64_t v = 0;
        if (e.get_int64().get(v))
            return false;
        dsa_buf_addf(out, "%" JSON_INTEGER_FORMAT, static_cast<json_int_t>(v));
        return true;
    }
    case dom::element_type::BOOL: {
        bool v = false;
        if (e.get_bool().get(v))
            return false;
        dsa_buf_adds(out, v ? "true" : "false");
        return true;
    }
    case dom::element_type::NULL_VALUE:
        dsa_buf_adds(out, "null");
        return true;
    case dom::element_type::DOUBLE:
    case dom::element_type::UINT64:
        break;
    }
    return false;
}

/* True when the compact dump of e (parsed from text) is text with its blanks between tokens
   removed: no number (jansson re-formats those: "-0", "1E2"), no duplicate key, and in the
   text no "\\u" escape (jansson writes the character, or \\u00XX in upper case) nor "\\/"
   (jansson writes "/"); every other escape ("\\n", "\\"", "\\\\", "\\t" …) and every raw byte of
   a string is what jansson writes for it. On the same walk (one pass over the tape, not two),
   *n grows by the length of that compact text, its strings' escapes not counted (the caller
   adds one byte per escape): quotes and decoded bytes of every string and key, brackets,
   commas, colons and literals. That length equals the text's own only when the text has no
   blank between its tokens, so that minifying it would copy it unchanged. */
bool verbatim_len(dom::element e, size_t *n)
{
    switch (e.type()) {
    case dom::element_type::ARRAY: {
        dom::array a;
        if (e.get_array().get(a))
            return false;
        size_t k = 0;
        for (dom::element v : a) {
            if (!verbatim_len(v, n))
                return false;
            k++;
        }
        *n += 2 + (k ? k - 1 : 0);
        return true;
    }
    case dom::element_type::OBJECT: {
        dom::object o;
        if (e.get_object().get(o) || !keys_unique(o))
            return false;
        size_t k = 0;
        for (dom::key_value_pair kv : o) {
            *n += kv.key.size() + 3; /* "key": */
            if (!verbatim_len(kv.value, n))
                return false;
            k++;
        }
        *n += 2 + (k ? k - 1 : 0);
        return true;
    }
    case dom::element_type::STRING: {
        std::string_view s;
        if (e.get_string().get(s))
            return false;
        *n += s.size() + 2;
        return true;
    }
    case dom::element_type::BOOL: {
        bool v = false;
        if (e.get_bool().get(v))
            return false;
        *n += v ? 4 : 5;
        return true;
    }
    case dom::element_type::NULL_VALUE:
        *n += 4;
        return true;
    default:
        return false; /* a number */
    }
}

/* True when no escape in text is one jansson writes otherwise (see verbatim_len()); *n gets the
   number of escapes, each two bytes of the text for one decoded byte. */
bool escapes_verbatim(std::string_view text, size_t *n)
{
    const char *p = text.data(), *end = p + text.size();
    *n = 0;
    while ((p = static_cast<const char *>(std::memchr(p, '\\', static_cast<size_t>(end - p))))) {
        if (p + 1 >= end || p[1] == 'u' || p[1] == '/')
            return false;
        p += 2; /* the escaped byte, a backslash included */
        ++*n;
    }
    return true;
}

/* A non-empty array of objects, each with a string member of every name in required[]. */
bool records_with(dom::element root, const char *const *required)
{
    dom::array a;
    if (root.get_array().get(a) || a.size() == 0)
        return false;
    for (dom::element m : a) {
        dom::object o;
        if (m.get_object().get(o))
            return false;
        for (const char *const *k = required; *k; k++) {
            dom::element v;
            if (o.at_key(*k).get(v) || v.type() != dom::element_type::STRING)
                return false;
        }
    }
    return true;
}

/* The root of text, parsed by p, when it is an object (or, with arrays, an array). */
bool parse_root(deep_parser &dp, const char *text, size_t len, bool padded, bool arrays,
                dom::element *root)
{
    if (!len || !dp.ok || dp.p.parse(text, len, !padded).get(*root))
        return false;
    dom::element_type t = root->type();
    return t == dom::element_type::OBJECT || (arrays && t == dom::element_type::ARRAY);
}

bool named(const char *const *names, std::string_view key)
{
    for (; *names; names++)
        if (key == *names)
            return true;
    return false;
}

} // namespace

json_t *dsa_jsimd_pick(const char *text, size_t len, bool padded, const char *const *names)
{
    dom::element root;
    dom::object o;
    if (!parse_root(outer_parser, text, len, padded, false, &root) || !jansson_takes(root) ||
        root.get_object().get(o))
        return nullptr;
    builder b;
    json_t *out = json_object();
    for (dom::key_value_pair kv : o) {
        if (!named(names, kv.key))
            continue;
        json_t *v = b.build(kv.value);
        if (!v || json_object_setn_new_nocheck(out, kv.key.data(), kv.key.size(), v)) {
            json_decref(out);
            return nullptr;
        }
    }
    return out;
}

/* The decoded string s as a text of its own (the prompt's messages), or NULL. */
static json_t *load_inner(std::string_view s)
{
    dom::element root;
    if (!parse_root(inner_parser, s.data(), s.size(), false, true, &root))
        return nullptr;
    builder b;
    return b.build(root);
}

json_t *dsa_jsimd_load(const char *text, size_t len, bool padded, const char *inner_key,
                       json_t **inner)
{
    if (inner)
        *inner = nullptr;
    dom::element root;
    if (!parse_root(outer_parser, text, len, padded, true, &root))
        return nullptr;
    dom::object o;
    builder b;
    if (!inner_key || root.get_object().get(o))
        return b.build(root);
    if (!keys_unique(o))
        return nullptr;
    json_t *out = json_object();
    for (dom::key_value_pair kv : o) {
        json_t *v = nullptr;
        std::string_view s;
        if (inner && !*inner && kv.key == inner_key && !kv.value.get_string().get(s) &&
            (*inner = load_inner(s)))
            v = json_string(""); /* the bytes live on as *inner */
        else if (no_nul(kv.key))
            v = b.build(kv.value);
        if (!v || json_object_setn_new_nocheck(out, kv.key.data(), kv.key.size(), v)) {
            json_decref(out);
            if (inner) {
                json_decref(*inner);
                *inner = nullptr;
            }
            return nullptr;
        }
    }
    return out;
}

json_t *dsa_jsimd_load_dumped(const char *text, size_t len, bool padded, const char *inner_key,
                              const char *const *required, struct dsa_buf *inner_json, bool *dumped)
{
    *dumped = false;
    dom::element root;
    dom::object o;
    if (!parse_root(outer_parser, text, len, padded, false, &root) || root.get_object().get(o) ||
        !keys_unique(o))
        return nullptr;
    builder b;
    json_t *out = json_object();
    for (dom::key_value_pair kv : o) {
        json_t *v = nullptr;
        std::string_view s;
        dom::element inner;
        if (!*dumped && kv.key == inner_key && !kv.value.get_string().get(s) &&
            parse_root(inner_parser, s.data(), s.size(), false, true, &inner) &&
            records_with(inner, required)) {
            size_t start = inner_json->len, n = 0, nesc = 0;
            dsa_buf_grow(inner_json, s.size() + 2);
            size_t clen = 0;
            bool plain = verbatim_len(inner, &clen) && escapes_verbatim(s, &nesc);
            if (plain && clen + nesc == s.size()) {
                /* already compact: the text itself, with no pass to look for blanks */
                dsa_buf_add(inner_json, s.data(), s.size());
                *dumped = true;
                v = json_string("");
            } else if (plain &&
                       !simdjson::minify(s.data(), s.size(), inner_json->data + start, n)) {
                /* the text itself, blanks removed: no string decoded and escaped again */
                inner_json->len = start + n;
                inner_json->data[inner_json->len] = '\0';
                *dumped = true;
                v = json_string("");
            } else if (dump_compact(inner, inner_json)) {
                *dumped = true;
                v = json_string(""); /* the bytes live on in inner_json */
            } else {
                inner_json->len = start; /* declined: the member stays a string */
                inner_json->data[start] = '\0';
            }
        }
        if (!v && no_nul(kv.key))
            v = b.build(kv.value);
        if (!v || json_object_setn_new_nocheck(out, kv.key.data(), kv.key.size(), v)) {
            json_decref(out);
            *dumped = false;
            return nullptr;
        }
    }
    return out;
}
