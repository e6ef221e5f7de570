/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "util/utf8.h"

#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

/* Decodes the sequence at s[*i] (i < len) and advances *i. Returns the code point, or
   UINT32_MAX if the sequence is invalid (then *i is left at its start). The ranges follow
   RFC 3629 §4's table, which excludes overlong forms and surrogates by the allowed second
   byte ranges rather than by checking the decoded value afterwards. */
static inline uint32_t decode_one(const unsigned char *s, size_t len, size_t *i)
{
    size_t p = *i;
    unsigned c = s[p];
    if (c < 0x80) {
        *i = p + 1;
        return c;
    }
    if (c < 0xC2 || c > 0xF4)
        return UINT32_MAX; /* 0x80..0xC1 (continuation, overlong 2-byte), 0xF5..0xFF */
    /* continuation bytes: 1 for C2..DF, 2 for E0..EF, 3 for F0..F4; the lead keeps 5, 4, 3 bits */
    unsigned need = 1 + (c >= 0xE0) + (c >= 0xF0);
    uint32_t cp = c & (0x3Fu >> need);
    /* the allowed range of the second byte: E0 and F0 would be overlong (below U+0800,
       U+10000), ED a surrogate (U+D800..U+DFFF are not encodable), F4 above U+10FFFF */
    unsigned lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
    unsigned hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
    if (len - p - 1 < need)
        return UINT32_MAX;
    unsigned b = s[p + 1];
    if (b < lo || b > hi)
        return UINT32_MAX;
    cp = (cp << 6) | (b & 0x3F);
    for (unsigned k = 2; k <= need; k++) {
        b = s[p + k];
        if ((b & 0xC0) != 0x80)
            return UINT32_MAX;
        cp = (cp << 6) | (b & 0x3F);
    }
    *i = p + 1 + need;
    return cp;
}

long dsa_utf8_decode(const char *s, size_t len, uint32_t *out, size_t *bad_offset)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, n = 0;
    while (i < len) {
        /* ASCII fast path, 8 bytes at a time: most of every MRCR string */
        while (len - i >= 8) {
            uint64_t w;
            memcpy(&w, u + i, 8);
            if (w & UINT64_C(0x8080808080808080))
                break;
            for (int k = 0; k < 8; k++)
                out[n + k] = u[i + k];
            n += 8;
            i += 8;
        }
        if (i == len)
            break;
        if (u[i] < 0x80) {
            out[n++] = u[i++];
            continue;
        }
        uint32_t cp = decode_one(u, len, &i);
        if (cp == UINT32_MAX) {
            if (bad_offset)
                *bad_offset = i;
            return -1;
        }
        out[n++] = cp;
    }
    return (long)n;
}

uint32_t *dsa_utf8_decode_alloc(const char *s, size_t len, size_t *n_out, size_t *bad_offset)
{
    uint32_t *out = dsa_xmalloc((len ? len : 1) * sizeof *out);
    long n = dsa_utf8_decode(s, len, out, bad_offset);
    if (n < 0) {
        free(out);
        return NULL;
    }
    *n_out = (size_t)n;
    return out;
}

long dsa_utf8_length(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    long n = 0;
    while (i < len) {
        if (u[i] < 0x80)
            i++;
        else if (decode_one(u, len, &i) == UINT32_MAX)
            return -1;
        n++;
    }
    return n;
}

void dsa_utf8_scrub(char *s)
{
    unsigned char *u = (unsigned char *)s;
    size_t len = strlen(s), i = 0;
    while (i < len) {
        if (u[i] < 0x80)
            i++;
        else if (decode_one(u, len, &i) == UINT32_MAX)
            u[i++] = '?';
    }
}

bool dsa_utf8_valid(const char *s, size_t len)
{
    return dsa_utf8_length(s, len) >= 0;
}

int dsa_utf8_encode(uint32_t cp, char out[4])
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    if (cp <= 0x10FFFF) {
        out[0] = (char)(0xF0 | (cp >> 18));
        out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[3] = (char)(0x80 | (cp & 0x3F));
        return 4;
    }
    return 0;
}
