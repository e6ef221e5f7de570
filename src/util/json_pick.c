/*
 * dsa_json_pick_object() and the tree builders (json_pick.h) over util/json_simd.h, and the
 * checks shared with evals/mrcr_grade_fields.c that make an event parser accept exactly
 * jansson's texts, for jansson's default flags plus JSON_REJECT_DUPLICATES.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "util/json_pick.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/json_simd.h"
#include "util/utf8.h"

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
    /* a token of any length: jansson reads 0.777… of 200 digits as a real, so a short buffer
       that refused long tokens made the two readers of a line disagree */
    char small[128];
    char *buf = len < sizeof small ? small : dsa_xmalloc(len + 1);
    memcpy(buf, num, len);
    buf[len] = '\0';
    errno = 0;
    bool fits;
    if (!strpbrk(buf, ".eE")) {
        (void)strtoll(buf, NULL, 10);
        fits = errno != ERANGE;
    } else {
        double v = strtod(buf, NULL);
        fits = !(errno == ERANGE && isinf(v));
    }
    if (buf != small)
        free(buf);
    return fits;
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

/* ---- the picker and the tree builders: simdjson (util/json_simd.h) ---- */

DSA_UNITTEST json_t *dsa_json_pick_stream(const char *text, size_t len, const char *const *names)
{
    return dsa_jsimd_pick(text, len, false, names);
}

json_t *dsa_json_load_fast(const char *text, size_t len)
{
    return dsa_jsimd_load(text, len, false, NULL, NULL);
}

json_t *dsa_json_load_fast_inner(const char *text, size_t len, const char *inner_key,
                                 json_t **inner)
{
    return dsa_jsimd_load(text, len, false, inner_key, inner);
}
