/*
 * dsa_json_pick_object() (json_pick.h). The checks that make the event parser accept exactly
 * jansson's lines are those of evals/mrcr_grade_fields.c, for jansson's default flags plus
 * JSON_REJECT_DUPLICATES.
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

struct key_entry {
    uint32_t serial, hash;
    size_t off, len;
};

struct pick {
    const char *text;
    yajl_handle h;
    const char *const *names;
    json_t *out;
    int depth;
    bool picked;  /* the current depth-1 member is named */
    char *name;   /* its key */
    size_t start; /* offset of its value */
    size_t end;   /* offset past the line's object */
    bool failed;
    uint32_t serial, *open;
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

static void keys_grow(struct pick *p)
{
    size_t cap = p->keycap ? 2 * p->keycap : 64;
    struct key_entry *t = dsa_xcalloc(cap, sizeof *t);
    for (size_t i = 0; i < p->keycap; i++) {
        if (!p->keys[i].serial)
            continue;
        size_t j = p->keys[i].hash & (cap - 1);
        while (t[j].serial)
            j = (j + 1) & (cap - 1);
        t[j] = p->keys[i];
    }
    free(p->keys);
    p->keys = t;
    p->keycap = cap;
}

/* Adds the key to its object's set; false if the object already has it. */
static bool key_is_new(struct pick *p, const unsigned char *key, size_t len)
{
    if (2 * (p->nkeys + 1) > p->keycap)
        keys_grow(p);
    uint32_t serial = p->open[p->depth], h = key_hash(serial, key, len);
    size_t j = h & (p->keycap - 1);
    for (; p->keys[j].serial; j = (j + 1) & (p->keycap - 1)) {
        const struct key_entry *e = &p->keys[j];
        if (e->serial == serial && e->hash == h && e->len == len &&
            !memcmp(p->key_bytes.data + e->off, key, len))
            return false;
    }
    p->keys[j] = (struct key_entry){serial, h, p->key_bytes.len, len};
    dsa_buf_add(&p->key_bytes, key, len);
    p->nkeys++;
    return true;
}

/* A named member's value has ended at the parser's position: read it with jansson. */
static void end_member(struct pick *p)
{
    size_t end = yajl_get_bytes_consumed(p->h);
    json_t *v = json_loadb(p->text + p->start, end - p->start,
                           JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
    if (!v)
        p->failed = true;
    else
        json_object_set_new(p->out, p->name, v);
    p->picked = false;
}

static int scalar(struct pick *p)
{
    if (p->depth == 0) /* the text must be an object: else jansson words the refusal */
        return 0;
    if (p->depth == 1 && p->picked)
        end_member(p);
    return !p->failed;
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

/* jansson refuses integers outside long long and reals that overflow a double */
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
    return number_fits(num, len) && scalar(ctx);
}

static int on_string(void *ctx, const unsigned char *s, size_t len)
{
    (void)s;
    (void)len;
    return scalar(ctx);
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
    if (p->depth == 1 && p->picked)
        end_member(p);
    return !p->failed;
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
    if (memchr(key, '\0', len) || !key_is_new(p, key, len))
        return 0;
    if (p->depth == 1 && named(p->names, key, len)) {
        size_t off = yajl_get_bytes_consumed(p->h);
        while (p->text[off] == ' ' || p->text[off] == '\t' || p->text[off] == '\n' ||
               p->text[off] == '\r' || p->text[off] == ':')
            off++;
        free(p->name);
        p->name = dsa_xstrndup((const char *)key, len);
        p->start = off;
        p->picked = true;
    }
    return 1;
}

static const yajl_callbacks pick_callbacks = {
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

/* The \u escapes jansson (without JSON_ALLOW_NUL) refuses and yajl lets through: "\u0000"
   and lone surrogates. Escapes are scanned whole, from backslash to backslash (memchr), so
   an escaped backslash before "u" is no escape; a malformed one is left to jansson too. */
static bool escapes_plain(const char *text, size_t len)
{
    const char *end = text + len, *p = text;
    while ((p = memchr(p, '\\', (size_t)(end - p)))) {
        if (end - p < 2)
            return false;
        if (p[1] != 'u') {
            p += 2;
            continue;
        }
        long v = hex4(p + 2, end);
        if (v <= 0 || (v >= 0xDC00 && v <= 0xDFFF))
            return false;
        if (v >= 0xD800 && v <= 0xDBFF) {
            long lo = end - p >= 12 && p[6] == '\\' && p[7] == 'u' ? hex4(p + 8, end) : -1;
            if (lo < 0xDC00 || lo > 0xDFFF)
                return false;
            p += 12;
            continue;
        }
        p += 6;
    }
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

/* Valid UTF-8 (strictly: yajl's check lets overlong forms through), no control byte but the
   blanks, and none of the escapes above. The byte scan goes 8 bytes at a time (the
   has-less-than test). */
static bool plain_text(const char *text, size_t len)
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
    if (!escapes_plain(text, len))
        return false;
    return !(high & highs) || dsa_utf8_valid(text, len);
}

static bool only_blanks_after(const char *text, size_t len, size_t end)
{
    if (!end)
        return false;
    for (size_t i = end; i < len; i++)
        if (text[i] != ' ' && text[i] != '\t' && text[i] != '\n' && text[i] != '\r')
            return false;
    return true;
}

/* 0 with p->out filled, or -1: the text needs jansson. */
static int pick_stream(const char *text, size_t len, struct pick *p)
{
    if (!len || !plain_text(text, len))
        return -1;
    p->open_cap = 16;
    p->open = dsa_xmalloc(p->open_cap * sizeof *p->open);
    dsa_buf_init(&p->key_bytes);
    p->out = json_object();
    p->h = yajl_alloc(&pick_callbacks, NULL, p);
    yajl_config(p->h, yajl_dont_validate_strings, 1); /* checked above */
    int ret = -1;
    if (yajl_parse(p->h, (const unsigned char *)text, len) == yajl_status_ok &&
        yajl_complete_parse(p->h) == yajl_status_ok && !p->failed &&
        only_blanks_after(text, len, p->end))
        ret = 0;
    yajl_free(p->h);
    free(p->keys);
    free(p->open);
    free(p->name);
    dsa_buf_release(&p->key_bytes);
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
    char *key; /* the pending key of the innermost object */
    size_t end;
    bool failed;
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
    if (!b->key || json_object_get(parent, b->key)) {
        json_decref(v);
        b->failed = true;
        return 0;
    }
    int rc = json_object_set_new_nocheck(parent, b->key, v);
    free(b->key);
    b->key = NULL;
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
    /* the UTF-8 was checked strictly before the parse */
    return add(ctx, json_stringn_nocheck((const char *)s, len));
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
    free(b->key);
    b->key = dsa_xstrndup((const char *)key, len);
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

json_t *dsa_json_load_fast(const char *text, size_t len)
{
    if (!len || !plain_text(text, len))
        return NULL;
    struct build b = {0};
    b.h = yajl_alloc(&build_callbacks, NULL, &b);
    yajl_config(b.h, yajl_dont_validate_strings, 1); /* checked above */
    bool ok = yajl_parse(b.h, (const unsigned char *)text, len) == yajl_status_ok &&
              yajl_complete_parse(b.h) == yajl_status_ok && !b.failed && b.root &&
              only_blanks_after(text, len, b.end);
    yajl_free(b.h);
    while (b.depth)
        json_decref(b.stack[--b.depth]);
    free(b.stack);
    free(b.key);
    if (!ok) {
        json_decref(b.root);
        return NULL;
    }
    return b.root;
}

DSA_UNITTEST json_t *dsa_json_pick_stream(const char *text, size_t len, const char *const *names)
{
    struct pick p = {.text = text, .names = names};
    return pick_stream(text, len, &p) == 0 ? p.out : NULL;
}

json_t *dsa_json_pick_object(const char *text, size_t len, const char *const *names,
                             const struct dsa_json_where *w)
{
    json_t *v = dsa_json_pick_stream(text, len, names);
    return v ? v : dsa_json_parse_object(text, len, w);
}
