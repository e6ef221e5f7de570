/* Compact JSON output equal to json_dumps(JSON_COMPACT); see json_dump.h.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "util/json_dump.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/utf8.h"

/* jansson's escapes: the two-character ones it knows, else \u00XX in upper-case hex; bytes
   >= 0x80 (valid UTF-8) and '/' go out as they are. */
static void escape_byte(struct dsa_buf *out, unsigned char c)
{
    static const char hex[] = "0123456789ABCDEF";
    static const char two[] = {['"'] = '"',  ['\\'] = '\\', ['\b'] = 'b', ['\f'] = 'f',
                               ['\n'] = 'n', ['\r'] = 'r',  ['\t'] = 't'};
    char seq[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
    if (c < sizeof two && two[c]) {
        seq[1] = two[c];
        dsa_buf_add(out, seq, 2);
        return;
    }
    dsa_buf_add(out, seq, 6);
}

#define ONES  UINT64_C(0x0101010101010101)
#define HIGHS UINT64_C(0x8080808080808080)

/* Pure ASCII (most prompts): one look at each byte's top bit, 8 bytes at a time. */
static bool ascii(const char *s, size_t len)
{
    uint64_t high = 0, w;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        memcpy(&w, s + i, 8);
        high |= w;
    }
    for (; i < len; i++)
        high |= (unsigned char)s[i];
    return !(high & HIGHS);
}

/* Non-zero if a byte of w needs an escape: below 0x20 (the has-less-than test), '"' or '\\'
   (the has-zero-byte test on w xor the byte). Exact as to "any", which is all it is asked. */
static uint64_t needs_escape(uint64_t w)
{
    uint64_t q = w ^ (ONES * '"'), b = w ^ (ONES * '\\');
    return (((w - ONES * 0x20) & ~w) | ((q - ONES) & ~q) | ((b - ONES) & ~b)) & HIGHS;
}

int dsa_json_dump_string(const char *s, size_t len, struct dsa_buf *out)
{
    /* jansson refuses to dump what is not UTF-8 (json_stringn_nocheck can hold anything) */
    if (!ascii(s, len) && !dsa_utf8_valid(s, len))
        return -1;
    dsa_buf_grow(out, len + 2);
    dsa_buf_addch(out, '"');
    size_t run = 0, i = 0;
    while (i < len) {
        uint64_t w;
        if (i + 8 <= len && (memcpy(&w, s + i, 8), !needs_escape(w))) {
            i += 8; /* a prompt's text runs tens of bytes between escapes */
            continue;
        }
        size_t stop = i + 8 <= len ? i + 8 : len;
        for (; i < stop; i++) {
            unsigned char c = (unsigned char)s[i];
            if (c >= 0x20 && c != '"' && c != '\\')
                continue;
            dsa_buf_add(out, s + run, i - run);
            escape_byte(out, c);
            run = i + 1;
        }
    }
    dsa_buf_add(out, s + run, len - run);
    dsa_buf_addch(out, '"');
    return 0;
}

/* A number, true, false or null: few bytes, so jansson's own formatting costs nothing. */
static int dump_scalar(const json_t *v, struct dsa_buf *out)
{
    char small[64];
    size_t n = json_dumpb(v, small, sizeof small, JSON_COMPACT | JSON_ENCODE_ANY);
    if (n == 0)
        return -1;
    if (n <= sizeof small) {
        dsa_buf_add(out, small, n);
        return 0;
    }
    char *big = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!big)
        return -1;
    dsa_buf_adds(out, big);
    free(big);
    return 0;
}

static int dump(const json_t *v, struct dsa_buf *out, struct dsa_json_splice *sp);

static int dump_value(const json_t *v, struct dsa_buf *out, struct dsa_json_splice *sp)
{
    switch (json_typeof(v)) {
    case JSON_STRING:
        return dsa_json_dump_string(json_string_value(v), json_string_length(v), out);
    case JSON_ARRAY: {
        dsa_buf_addch(out, '[');
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i)
                dsa_buf_addch(out, ',');
            if (dump(json_array_get(v, i), out, sp) < 0)
                return -1;
        }
        dsa_buf_addch(out, ']');
        return 0;
    }
    case JSON_OBJECT: {
        dsa_buf_addch(out, '{');
        bool first = true;
        const char *key;
        size_t key_len;
        json_t *val;
        /* jansson's iteration order is insertion order, the order json_dumps writes */
        json_object_keylen_foreach((json_t *)v, key, key_len, val)
        {
            if (!first)
                dsa_buf_addch(out, ',');
            first = false;
            if (dsa_json_dump_string(key, key_len, out) < 0)
                return -1;
            dsa_buf_addch(out, ':');
            if (dump(val, out, sp) < 0)
                return -1;
        }
        dsa_buf_addch(out, '}');
        return 0;
    }
    default:
        return dump_scalar(v, out);
    }
}

static int dump(const json_t *v, struct dsa_buf *out, struct dsa_json_splice *sp)
{
    if (!sp || v != sp->v)
        return dump_value(v, out, sp);
    size_t off = out->len;
    if (sp->bytes && sp->hole && !sp->seen) {
        sp->off = off; /* a hole: the bytes stay where they are */
        sp->seen = true;
        return 0;
    }
    if (sp->bytes)
        dsa_buf_add(out, sp->bytes, sp->len);
    else if (dump_value(v, out, NULL) < 0)
        return -1;
    if (!sp->seen) {
        sp->off = off;
        sp->len = out->len - off;
    }
    sp->seen = true;
    return 0;
}

int dsa_json_dump_compact(const json_t *v, struct dsa_buf *out)
{
    return dump(v, out, NULL);
}

int dsa_json_dump_compact_splice(const json_t *v, struct dsa_buf *out, struct dsa_json_splice *sp)
{
    return dump(v, out, sp);
}
