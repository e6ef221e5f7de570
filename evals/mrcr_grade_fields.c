/*
 * The two readers of a `grade mrcr` line (mrcr_grade_fields.h). Why an event parser: a log
 * line is mostly text that grading never looks at (the "input" context, the response's
 * neighbours), and jansson always builds the whole tree, copying every string twice on the
 * way; yajl lexes the line once and hands each string over in place (measured in
 * bench/RESULTS.md "grade mrcr, whole command"; the choice is in docs/design.md).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "evals/mrcr_grade_fields.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <yajl/yajl_parse.h>

#include "util/utf8.h"

const char *const dsa_mrcr_field_names[DSA_MF_COUNT] = {
    "response",      "model_response", "answer",
    "ground_truth",  "prefix",         "random_string_to_prepend",
    "error",         "input",          "id",
    "dataset_index", "needle_count",   "n_needles",
};

/* jansson's JSON_PARSER_MAX_DEPTH: a deeper line goes to the tree reader, which refuses it */
#define MAX_DEPTH 2048

void dsa_mrcr_fields_init(struct dsa_mrcr_fields *mf)
{
    memset(mf, 0, sizeof *mf);
    dsa_buf_init(&mf->arena);
}

void dsa_mrcr_fields_release(struct dsa_mrcr_fields *mf)
{
    for (int k = 0; k < DSA_MF_COUNT; k++)
        json_decref(mf->f[k].value);
    dsa_buf_release(&mf->arena);
    memset(mf, 0, sizeof *mf);
}

/* Only these strings are kept: the others are lexed and dropped. */
static bool is_text_field(int k)
{
    return k == DSA_MF_RESPONSE || k == DSA_MF_MODEL_RESPONSE || k == DSA_MF_ANSWER ||
           k == DSA_MF_GROUND_TRUTH || k == DSA_MF_PREFIX || k == DSA_MF_RANDOM_STRING;
}

static bool is_id_field(int k)
{
    return k >= DSA_MF_ID && k <= DSA_MF_N_NEEDLES;
}

static void keep_string(struct dsa_mrcr_fields *mf, struct dsa_mrcr_fvalue *v, const char *s,
                        size_t len)
{
    v->type = DSA_MT_STRING;
    v->off = mf->arena.len;
    v->len = len;
    dsa_buf_add(&mf->arena, s, len);
    dsa_buf_addch(&mf->arena, '\0');
}

/* ---- the stream reader ---- */

/* Keys seen on the line, for refusing duplicates as jansson does (JSON_REJECT_DUPLICATES):
   an open-addressing set of (object serial, key bytes). */
struct key_entry {
    uint32_t serial, hash;
    size_t off, len; /* bytes in key_bytes */
};

struct scan {
    const char *text;
    yajl_handle h;
    struct dsa_mrcr_fields *mf;
    int depth;         /* containers open */
    int member;        /* the depth-1 key whose value is being read, or -1 */
    char input_kind;   /* 'a' or 'o': "input" opened as an array or an object */
    int content_depth; /* depth of the last "content" key inside "input", or 0 */
    size_t id_start;   /* offset of the identity value being read */
    size_t end;        /* offset just past the line's object, once it closed */
    bool failed;       /* a callback declined the line */
    uint32_t serial;
    uint32_t *open; /* open[d]: serial of the object open at depth d (0: an array) */
    size_t open_cap;
    struct key_entry *keys;
    size_t nkeys, keycap;
    struct dsa_buf key_bytes;
};

static uint32_t key_hash(uint32_t serial, const unsigned char *s, size_t len)
{
    uint32_t h = 2166136261u ^ serial; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ s[i]) * 16777619u;
    return h;
}

static void keys_grow(struct scan *s)
{
    size_t cap = s->keycap ? 2 * s->keycap : 64;
    struct key_entry *t = dsa_xcalloc(cap, sizeof *t);
    for (size_t i = 0; i < s->keycap; i++) {
        if (!s->keys[i].serial)
            continue;
        size_t j = s->keys[i].hash & (cap - 1);
        while (t[j].serial)
            j = (j + 1) & (cap - 1);
        t[j] = s->keys[i];
    }
    free(s->keys);
    s->keys = t;
    s->keycap = cap;
}

/* Adds the key to its object's set; false if the object already has it. */
static bool key_is_new(struct scan *s, const unsigned char *key, size_t len)
{
    if (2 * (s->nkeys + 1) > s->keycap)
        keys_grow(s);
    uint32_t serial = s->open[s->depth], h = key_hash(serial, key, len);
    size_t j = h & (s->keycap - 1);
    for (; s->keys[j].serial; j = (j + 1) & (s->keycap - 1)) {
        const struct key_entry *e = &s->keys[j];
        if (e->serial == serial && e->hash == h && e->len == len &&
            !memcmp(s->key_bytes.data + e->off, key, len))
            return false;
    }
    s->keys[j] = (struct key_entry){serial, h, s->key_bytes.len, len};
    dsa_buf_add(&s->key_bytes, key, len);
    s->nkeys++;
    return true;
}

static int member_of(const unsigned char *key, size_t len)
{
    for (int k = 0; k < DSA_MF_COUNT; k++)
        if (strlen(dsa_mrcr_field_names[k]) == len && !memcmp(dsa_mrcr_field_names[k], key, len))
            return k;
    return -1;
}

/* The offset of the value after a key that ends at `off`: past blanks, ':' and blanks. */
static size_t value_start(const char *text, size_t off)
{
    while (text[off] == ' ' || text[off] == '\t' || text[off] == '\n' || text[off] == '\r' ||
           text[off] == ':')
        off++;
    return off;
}

/* An identity value has ended at the parser's position: keep it as jansson reads it. */
static void end_id_value(struct scan *s)
{
    size_t end = yajl_get_bytes_consumed(s->h);
    json_t *v = json_loadb(s->text + s->id_start, end - s->id_start,
                           JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, NULL);
    if (!v) {
        s->failed = true;
        return;
    }
    json_decref(s->mf->f[s->member].value);
    s->mf->f[s->member].value = v;
}

static void set_question(struct scan *s, enum dsa_mrcr_ftype t, const unsigned char *str,
                         size_t len)
{
    if (t == DSA_MT_STRING)
        keep_string(s->mf, &s->mf->question, (const char *)str, len);
    else
        s->mf->question = (struct dsa_mrcr_fvalue){DSA_MT_ABSENT, 0, 0, NULL};
}

/* Every value (a scalar, or a container as it opens) at the depth it appears at. */
static void note_value(struct scan *s, enum dsa_mrcr_ftype t, const unsigned char *str, size_t len)
{
    int d = s->depth;
    if (d == 0) { /* the line itself must be an object: else jansson words the refusal */
        s->failed = true;
        return;
    }
    if (d == 1) {
        if (s->member < 0)
            return;
        struct dsa_mrcr_fvalue *v = &s->mf->f[s->member];
        v->type = t;
        if (t == DSA_MT_STRING && is_text_field(s->member))
            keep_string(s->mf, v, (const char *)str, len);
        if (s->member == DSA_MF_INPUT)
            set_question(s, t, str, len);
        return;
    }
    if (s->member != DSA_MF_INPUT)
        return;
    if (d == 2 && s->input_kind == 'a') { /* a new element: the question is the last one's */
        s->content_depth = 0;
        set_question(s, t, str, len);
    } else if (d == s->content_depth) {
        set_question(s, t, str, len);
    }
}

/* A scalar's value has been read: identity values at depth 1 end here. */
static int scalar(struct scan *s, enum dsa_mrcr_ftype t, const unsigned char *str, size_t len)
{
    note_value(s, t, str, len);
    if (s->depth == 1 && s->member >= 0 && is_id_field(s->member))
        end_id_value(s);
    return !s->failed;
}

static int on_null(void *ctx)
{
    return scalar(ctx, DSA_MT_NULL, NULL, 0);
}

static int on_boolean(void *ctx, int b)
{
    (void)b;
    return scalar(ctx, DSA_MT_OTHER, NULL, 0);
}

/* jansson refuses integers outside long long and reals that overflow a double: so do we,
   by handing such lines to the tree reader for its message */
static bool number_fits(const char *num, size_t len)
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

static int on_number(void *ctx, const char *num, size_t len)
{
    struct scan *s = ctx;
    if (!number_fits(num, len))
        return 0;
    return scalar(s, DSA_MT_OTHER, NULL, 0);
}

static int on_string(void *ctx, const unsigned char *str, size_t len)
{
    return scalar(ctx, DSA_MT_STRING, str, len);
}

static int open_container(struct scan *s, bool is_map)
{
    if (s->depth || !is_map) /* the line's own object is no value of a member */
        note_value(s, DSA_MT_OTHER, NULL, 0);
    if (s->failed || s->depth >= MAX_DEPTH)
        return 0;
    if (s->depth == 1 && s->member == DSA_MF_INPUT)
        s->input_kind = is_map ? 'o' : 'a';
    s->depth++;
    if ((size_t)s->depth >= s->open_cap) {
        s->open_cap *= 2;
        s->open = dsa_xrealloc(s->open, s->open_cap * sizeof *s->open);
    }
    s->open[s->depth] = is_map ? ++s->serial : 0;
    return 1;
}

static int close_container(struct scan *s)
{
    s->depth--;
    if (s->depth == 0)
        s->end = yajl_get_bytes_consumed(s->h);
    if (s->depth == 1 && s->member >= 0 && is_id_field(s->member))
        end_id_value(s);
    return !s->failed;
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
    return close_container(ctx);
}

static int on_map_key(void *ctx, const unsigned char *key, size_t len)
{
    struct scan *s = ctx;
    if (memchr(key, '\0', len) || !key_is_new(s, key, len))
        return 0; /* jansson refuses both, with its own words */
    if (s->depth == 1) {
        s->member = member_of(key, len);
        if (s->member >= 0 && is_id_field(s->member))
            s->id_start = value_start(s->text, yajl_get_bytes_consumed(s->h));
        return 1;
    }
    if (s->member == DSA_MF_INPUT &&
        ((s->depth == 2 && s->input_kind == 'o') || (s->depth == 3 && s->input_kind == 'a')))
        s->content_depth = len == 7 && !memcmp(key, "content", 7) ? s->depth : 0;
    return 1;
}

static const yajl_callbacks scan_callbacks = {
    .yajl_null = on_null,
    .yajl_boolean = on_boolean,
    .yajl_number = on_number,
    .yajl_string = on_string,
    .yajl_start_map = on_start_map,
    .yajl_map_key = on_map_key,
    .yajl_end_map = on_end,
    .yajl_start_array = on_start_array,
    .yajl_end_array = on_end,
};

/* yajl's complete_parse lets an unfinished token after the value through ("{}\"x"): only
   blanks may follow the object, as for jansson. */
static bool only_blanks_after(const char *text, size_t len, size_t end)
{
    if (!end)
        return false;
    for (size_t i = end; i < len; i++)
        if (text[i] != ' ' && text[i] != '\t' && text[i] != '\n' && text[i] != '\r')
            return false;
    return true;
}

/* Control bytes other than the JSON blanks \t \n \r: yajl also skips \v and \f between
   tokens, and jansson reads past a NUL; both refuse them inside strings. */
static bool blanks_only_controls(const char *text, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
            return false;
    }
    return true;
}

/* Pure ASCII lines (most) need no UTF-8 check beyond one look at each byte's top bit. Lines
   with control bytes other than blanks are left to jansson (above). The scan goes 8 bytes at
   a time (the classic has-less-than test) because it sees every byte of every line. */
static bool valid_text(const char *text, size_t len)
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
    return !(high & highs) || dsa_utf8_valid(text, len);
}

int dsa_mrcr_fields_stream(const char *text, size_t len, struct dsa_mrcr_fields *mf)
{
    if (!len || !valid_text(text, len))
        return -1;
    struct scan sc = {0}, *s = &sc;
    s->open_cap = 16;
    s->open = dsa_xmalloc(s->open_cap * sizeof *s->open);
    s->text = text;
    s->mf = mf;
    s->member = -1;
    dsa_buf_init(&s->key_bytes);
    s->h = yajl_alloc(&scan_callbacks, NULL, s);
    /* UTF-8 was checked above, strictly (yajl's own check lets overlong forms through) */
    yajl_config(s->h, yajl_dont_validate_strings, 1);
    int ret = -1;
    if (yajl_parse(s->h, (const unsigned char *)text, len) == yajl_status_ok &&
        yajl_complete_parse(s->h) == yajl_status_ok && !s->failed &&
        only_blanks_after(text, len, s->end))
        ret = 0;
    yajl_free(s->h);
    free(s->keys);
    free(s->open);
    dsa_buf_release(&s->key_bytes);
    return ret;
}

/* ---- the tree reader ---- */

static enum dsa_mrcr_ftype type_of(const json_t *v)
{
    if (!v)
        return DSA_MT_ABSENT;
    if (json_is_string(v))
        return DSA_MT_STRING;
    return json_is_null(v) ? DSA_MT_NULL : DSA_MT_OTHER;
}

/* The question text inside "input": a string, {"content": "..."} or a message list. */
static json_t *question_of(json_t *input)
{
    if (json_is_array(input))
        input = json_array_get(input, json_array_size(input) - 1);
    if (json_is_object(input))
        input = json_object_get(input, "content");
    return json_is_string(input) ? input : NULL;
}

int dsa_mrcr_fields_tree(const char *text, size_t len, struct dsa_mrcr_fields *mf)
{
    json_error_t err;
    /* JSON_ALLOW_NUL: "\u0000" is a code point like any other for json.loads */
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &err);
    if (!root) {
        snprintf(mf->error, sizeof mf->error, "%s", len ? err.text : "empty line");
        return -1;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        return -2;
    }
    for (int k = 0; k < DSA_MF_COUNT; k++) {
        json_t *v = json_object_get(root, dsa_mrcr_field_names[k]);
        struct dsa_mrcr_fvalue *fv = &mf->f[k];
        fv->type = type_of(v);
        if (fv->type == DSA_MT_STRING && is_text_field(k))
            keep_string(mf, fv, json_string_value(v), json_string_length(v));
        if (v && is_id_field(k))
            fv->value = json_incref(v);
    }
    json_t *q = question_of(json_object_get(root, "input"));
    if (q)
        keep_string(mf, &mf->question, json_string_value(q), json_string_length(q));
    json_decref(root);
    return 0;
}
