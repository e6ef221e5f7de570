/*
 * dsa_json_pick_object() and the tree builders (json_pick.h), and the checks shared with
 * evals/mrcr_grade_fields.c that make the event parser accept exactly jansson's texts, for
 * jansson's default flags plus JSON_REJECT_DUPLICATES.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "util/json_pick.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <yajl/yajl_parse.h>

#include "util/buf.h"
#include "util/utf8.h"

#define MAX_DEPTH 2048 /* jansson's JSON_PARSER_MAX_DEPTH */

/* ---- the shared checks ---- */

struct dsa_json_key_slot {
    uint32_t serial, hash; /* serial 0: empty */
    size_t off, len;       /* the key's bytes in dsa_json_keys.bytes */
};

static uint32_t key_hash(uint32_t serial, const unsigned char *s, size_t len)
{
    uint32_t h = 2166136261u ^ serial; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ s[i]) * 16777619u;
    return h;
}

static void keys_grow(struct dsa_json_keys *k)
{
    size_t cap = k->cap ? 2 * k->cap : 64;
    struct dsa_json_key_slot *t = dsa_xcalloc(cap, sizeof *t);
    for (size_t i = 0; i < k->cap; i++) {
        if (!k->slots[i].serial)
            continue;
        size_t j = k->slots[i].hash & (cap - 1);
        while (t[j].serial)
            j = (j + 1) & (cap - 1);
        t[j] = k->slots[i];
    }
    free(k->slots);
    k->slots = t;
    k->cap = cap;
}

bool dsa_json_keys_add(struct dsa_json_keys *k, uint32_t serial, const unsigned char *key,
                       size_t len)
{
    if (2 * (k->n + 1) > k->cap)
        keys_grow(k);
    uint32_t h = key_hash(serial, key, len);
    size_t j = h & (k->cap - 1);
    for (; k->slots[j].serial; j = (j + 1) & (k->cap - 1)) {
        const struct dsa_json_key_slot *e = &k->slots[j];
        if (e->serial == serial && e->hash == h && e->len == len &&
            !memcmp(k->bytes.data + e->off, key, len))
            return false;
    }
    k->slots[j] = (struct dsa_json_key_slot){serial, h, k->bytes.len, len};
    dsa_buf_add(&k->bytes, key, len);
    k->n++;
    return true;
}

void dsa_json_keys_release(struct dsa_json_keys *k)
{
    free(k->slots);
    dsa_buf_release(&k->bytes);
    memset(k, 0, sizeof *k);
}

bool dsa_json_number_fits(const char *num, size_t len)
{
    char buf[128];
    if (len >= sizeof buf)
        return false;
    memcpy(buf, num, len);
    buf[len] = '\0';
    errno = 0;
    if (!strpbrk(buf, ".eE")) {
        (void)strtoll(buf, NULL, 10);
        return errno != ERANGE;
    }
    double v = strtod(buf, NULL);
    return !(errno == ERANGE && isinf(v));
}

static long hex4(const char *p, const char *end)
{
    if (end - p < 4)
        return -1;
    long v = 0;
    for (int k = 0; k < 4; k++) {
        char c = p[k];
        int h = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

/* The escape whose backslash is at `at`, if "\u" starts there: 0 = fine (*skip moved past it,
   a surrogate pair whole) or no escape (an escaped backslash before a "u"), -1 = jansson must
   decide ("\u0000", a lone surrogate, a malformed escape). */
static int check_escape(const char *text, size_t len, size_t at, size_t *skip)
{
    const char *p = text + at, *end = text + len;
    if (at < *skip || p[0] != '\\' || p[1] != 'u')
        return 0;
    size_t run = 0; /* a "\u" is an escape when an even number of backslashes precede it */
    for (const char *q = p; q > text && q[-1] == '\\'; q--)
        run++;
    if (run % 2)
        return 0;
    long v = hex4(p + 2, end);
    if (v <= 0 || (v >= 0xDC00 && v <= 0xDFFF))
        return -1;
    if (v >= 0xD800 && v <= 0xDBFF) {
        long lo = end - p >= 12 && p[6] == '\\' && p[7] == 'u' ? hex4(p + 8, end) : -1;
        if (lo < 0xDC00 || lo > 0xDFFF)
            return -1;
        *skip = at + 12;
        return 0;
    }
    *skip = at + 6;
    return 0;
}

/* The \u escapes jansson (without JSON_ALLOW_NUL) refuses and yajl lets through: "\u0000"
   and lone surrogates. An MRCR row's prompt has a backslash every few bytes but hardly a
   "\u", so the pairs "\u" are found 8 bytes at a time (the has-zero-byte test on the word
   xor '\\' and on the word xor 'u'; it may flag a byte above a true match, never miss one) and
   only those are looked at. */
static bool escapes_plain(const char *text, size_t len)
{
    const uint64_t ones = UINT64_C(0x0101010101010101), highs = UINT64_C(0x8080808080808080);
    size_t skip = 0, i = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t prev_bs = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w, b, u;
        memcpy(&w, text + i, 8);
        b = w ^ (ones * '\\');
        u = w ^ (ones * 'u');
        uint64_t bs = (b - ones) & ~b & highs, us = (u - ones) & ~u & highs;
        uint64_t cand = ((bs << 8) | (prev_bs >> 56)) & us; /* a 'u' after a '\\' */
        prev_bs = bs;
        for (; cand; cand &= cand - 1)
            if (check_escape(text, len, i + (size_t)__builtin_ctzll(cand) / 8 - 1, &skip))
                return false;
    }
#endif
    for (size_t at = i ? i - 1 : 0; at + 1 < len; at++)
        if (check_escape(text, len, at, &skip))
            return false;
    return true;
}

static bool blanks_only_controls(const char *text, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
            return false;
    }
    return true;
}

/* Pure ASCII texts (most) need no UTF-8 check beyond one look at each byte's top bit. The
   scan goes 8 bytes at a time (the has-less-than test) because it sees every byte of every
   line. */
bool dsa_json_text_plain(const char *text, size_t len, bool check_escapes)
{
    const uint64_t spaces = UINT64_C(0x2020202020202020), highs = UINT64_C(0x8080808080808080);
    uint64_t high = 0, ctl = 0;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, text + i, 8);
        high |= w;
        ctl |= (w - spaces) & ~w; /* a byte below 0x20 sets its top bit (exact for "any") */
    }
    for (; i < len; i++) {
        high |= (unsigned char)text[i];
        ctl |= (unsigned char)text[i] < 0x20 ? highs : 0;
    }
    if (ctl & highs && !blanks_only_controls(text, len))
        return false;
    if (check_escapes && !escapes_plain(text, len))
        return false;
    return !(high & highs) || dsa_utf8_valid(text, len);
}

bool dsa_json_only_blanks_after(const char *text, size_t len, size_t end)
{
    if (!end)
        return false;
    for (size_t i = end; i < len; i++)
        if (text[i] != ' ' && text[i] != '\t' && text[i] != '\n' && text[i] != '\r')
            return false;
    return true;
}

size_t dsa_json_value_start(const char *text, size_t off)
{
    while (text[off] == ' ' || text[off] == '\t' || text[off] == '\n' || text[off] == '\r' ||
           text[off] == ':')
        off++;
    return off;
}

/* ---- the picker ---- */

struct pick {
    const char *text;
    size_t len;
    yajl_handle h;
    const char *const *names;
    json_t *out;
    int depth;
    size_t end; /* offset past the line's object */
    bool failed;
    uint32_t serial, *open; /* open[d]: serial of the object open at depth d (0: an array) */
    size_t open_cap;
    struct dsa_json_keys keys;
};

/* A named member's value starts at `start`: jansson reads it there and stops after it (the
   event parser checks the rest of the line). Read at its key, the value's end need not be
   seen, so the parser runs without a string callback and decodes no string (the prompt). */
static void read_member(struct pick *p, const unsigned char *key, size_t klen, size_t start)
{
    json_t *v = json_loadb(p->text + start, p->len - start,
                           JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK | JSON_REJECT_DUPLICATES, NULL);
    if (!v)
        p->failed = true;
    else
        json_object_setn_new(p->out, (const char *)key, klen, v);
}

static int scalar(struct pick *p)
{
    return p->depth > 0; /* the text must be an object: else jansson words the refusal */
}

static int on_null(void *ctx)
{
    return scalar(ctx);
}

static int on_boolean(void *ctx, int b)
{
    (void)b;
    return scalar(ctx);
}

static int on_number(void *ctx, const char *num, size_t len)
{
    return dsa_json_number_fits(num, len) && scalar(ctx);
}

static int open_container(struct pick *p, bool is_map)
{
    if ((p->depth == 0 && !is_map) || p->depth >= MAX_DEPTH)
        return 0;
    p->depth++;
    if ((size_t)p->depth >= p->open_cap) {
        p->open_cap *= 2;
        p->open = dsa_xrealloc(p->open, p->open_cap * sizeof *p->open);
    }
    p->open[p->depth] = is_map ? ++p->serial : 0;
    return 1;
}

static int on_start_map(void *ctx)
{
    return open_container(ctx, true);
}

static int on_start_array(void *ctx)
{
    return open_container(ctx, false);
}

static int on_end(void *ctx)
{
    struct pick *p = ctx;
    p->depth--;
    if (p->depth == 0)
        p->end = yajl_get_bytes_consumed(p->h);
    return 1;
}

static bool named(const char *const *names, const unsigned char *key, size_t len)
{
    for (; *names; names++)
        if (strlen(*names) == len && !memcmp(*names, key, len))
            return true;
    return false;
}

static int on_map_key(void *ctx, const unsigned char *key, size_t len)
{
    struct pick *p = ctx;
    if (memchr(key, '\0', len) || !dsa_json_keys_add(&p->keys, p->open[p->depth], key, len))
        return 0;
    if (p->depth == 1 && named(p->names, key, len))
        read_member(p, key, len, dsa_json_value_start(p->text, yajl_get_bytes_consumed(p->h)));
    return !p->failed;
}

static const yajl_callbacks pick_callbacks = {
    .yajl_null = on_null,
    .yajl_boolean = on_boolean,
    .yajl_number = on_number,
    /* no string callback: yajl then lexes strings without decoding them; a top-level string
       leaves end at 0, which declines the text */
    .yajl_start_map = on_start_map,
    .yajl_map_key = on_map_key,
    .yajl_end_map = on_end,
    .yajl_start_array = on_start_array,
    .yajl_end_array = on_end,
};

/* 0 with p->out filled, or -1: the text needs jansson. */
static int pick_stream(const char *text, size_t len, struct pick *p)
{
    if (!len || !dsa_json_text_plain(text, len, true))
        return -1;
    p->open_cap = 16;
    p->open = dsa_xmalloc(p->open_cap * sizeof *p->open);
    p->out = json_object();
    p->h = yajl_alloc(&pick_callbacks, NULL, p);
    yajl_config(p->h, yajl_dont_validate_strings, 1); /* checked above */
    int ret = -1;
    if (yajl_parse(p->h, (const unsigned char *)text, len) == yajl_status_ok &&
        yajl_complete_parse(p->h) == yajl_status_ok && !p->failed &&
        dsa_json_only_blanks_after(text, len, p->end))
        ret = 0;
    yajl_free(p->h);
    free(p->open);
    dsa_json_keys_release(&p->keys);
    if (ret) {
        json_decref(p->out);
        p->out = NULL;
    }
    return ret;
}

/* ---- the tree builder ---- */

struct build {
    yajl_handle h;
    json_t *root, **stack; /* the open containers */
    size_t depth, cap;
    struct dsa_buf key; /* the pending key of the innermost object (one buffer for all keys:
                           a message list has hundreds of objects) */
    bool has_key;
    size_t end;
    bool failed;
    const char *inner_key; /* dsa_json_load_fast_inner(): the member parsed in place */
    json_t *inner;
};

/* Hangs v under the innermost container (or makes it the root). */
static int add(struct build *b, json_t *v)
{
    if (!v) {
        b->failed = true;
        return 0;
    }
    if (!b->depth) {
        json_decref(v); /* a scalar text: jansson words the refusal */
        b->failed = true;
        return 0;
    }
    json_t *parent = b->stack[b->depth - 1];
    if (json_is_array(parent))
        return json_array_append_new(parent, v) == 0;
    /* duplicates: jansson keeps the last or refuses; either way it decides */
    if (!b->has_key || json_object_getn(parent, b->key.data, b->key.len)) {
        json_decref(v);
        b->failed = true;
        return 0;
    }
    int rc = json_object_setn_new_nocheck(parent, b->key.data, b->key.len, v);
    b->has_key = false;
    return rc == 0;
}

static int b_null(void *ctx)
{
    return add(ctx, json_null());
}

static int b_boolean(void *ctx, int v)
{
    return add(ctx, json_boolean(v));
}

/* jansson's conversions: strtoll for integers, strtod for reals (C locale), each refused on
   overflow */
static int b_number(void *ctx, const char *num, size_t len)
{
    char buf[128];
    if (len >= sizeof buf)
        return 0;
    memcpy(buf, num, len);
    buf[len] = '\0';
    errno = 0;
    if (!strpbrk(buf, ".eE")) {
        long long v = strtoll(buf, NULL, 10);
        return errno != ERANGE && add(ctx, json_integer(v));
    }
    double v = strtod(buf, NULL);
    if (errno == ERANGE && isinf(v))
        return 0;
    return add(ctx, json_real(v));
}

static int b_string(void *ctx, const unsigned char *s, size_t len)
{
    struct build *b = ctx;
    if (b->inner_key && b->depth == 1 && !b->inner && b->has_key &&
        b->key.len == strlen(b->inner_key) && !memcmp(b->key.data, b->inner_key, b->key.len) &&
        (b->inner = dsa_json_load_fast((const char *)s, len)))
        return add(b, json_string("")); /* the bytes live on as b->inner */
    /* the UTF-8 was checked strictly before the parse */
    return add(b, json_stringn_nocheck((const char *)s, len));
}

static int b_open(struct build *b, json_t *c)
{
    if (b->depth >= MAX_DEPTH) {
        json_decref(c);
        return 0;
    }
    if (b->depth) {
        if (!add(b, json_incref(c))) {
            json_decref(c);
            return 0;
        }
    } else {
        b->root = json_incref(c);
    }
    if (b->depth == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 16;
        b->stack = dsa_xrealloc(b->stack, b->cap * sizeof *b->stack);
    }
    b->stack[b->depth++] = c; /* the stack's reference */
    return 1;
}

static int b_start_map(void *ctx)
{
    return b_open(ctx, json_object());
}

static int b_start_array(void *ctx)
{
    return b_open(ctx, json_array());
}

static int b_end(void *ctx)
{
    struct build *b = ctx;
    json_decref(b->stack[--b->depth]);
    if (!b->depth)
        b->end = yajl_get_bytes_consumed(b->h);
    return 1;
}

static int b_map_key(void *ctx, const unsigned char *key, size_t len)
{
    struct build *b = ctx;
    if (memchr(key, '\0', len))
        return 0; /* jansson refuses NUL in keys */
    dsa_buf_reset(&b->key);
    dsa_buf_add(&b->key, key, len);
    b->has_key = true;
    return 1;
}

static const yajl_callbacks build_callbacks = {
    .yajl_null = b_null,
    .yajl_boolean = b_boolean,
    .yajl_number = b_number,
    .yajl_string = b_string,
    .yajl_start_map = b_start_map,
    .yajl_map_key = b_map_key,
    .yajl_end_map = b_end,
    .yajl_start_array = b_start_array,
    .yajl_end_array = b_end,
};

static json_t *load_fast(const char *text, size_t len, const char *inner_key, json_t **inner)
{
    if (!len || !dsa_json_text_plain(text, len, true))
        return NULL;
    struct build b = {.inner_key = inner_key};
    b.h = yajl_alloc(&build_callbacks, NULL, &b);
    yajl_config(b.h, yajl_dont_validate_strings, 1); /* checked above */
    bool ok = yajl_parse(b.h, (const unsigned char *)text, len) == yajl_status_ok &&
              yajl_complete_parse(b.h) == yajl_status_ok && !b.failed && b.root &&
              dsa_json_only_blanks_after(text, len, b.end);
    yajl_free(b.h);
    while (b.depth)
        json_decref(b.stack[--b.depth]);
    free(b.stack);
    dsa_buf_release(&b.key);
    if (!ok) {
        json_decref(b.root);
        json_decref(b.inner);
        return NULL;
    }
    if (inner)
        *inner = b.inner;
    return b.root;
}

json_t *dsa_json_load_fast(const char *text, size_t len)
{
    return load_fast(text, len, NULL, NULL);
}

json_t *dsa_json_load_fast_inner(const char *text, size_t len, const char *inner_key,
                                 json_t **inner)
{
    *inner = NULL;
    return load_fast(text, len, inner_key, inner);
}

DSA_UNITTEST json_t *dsa_json_pick_stream(const char *text, size_t len, const char *const *names)
{
    struct pick p = {.text = text, .len = len, .names = names};
    return pick_stream(text, len, &p) == 0 ? p.out : NULL;
}

json_t *dsa_json_pick_object(const char *text, size_t len, const char *const *names,
                             const struct dsa_json_where *w)
{
    json_t *v = dsa_json_pick_stream(text, len, names);
    return v ? v : dsa_json_parse_object(text, len, w);
}
