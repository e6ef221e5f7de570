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
    unsigned need;
    unsigned lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
        need = 1;
        cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        cp = c & 0x0F;
        if (c == 0xE0)
            lo = 0xA0; /* overlong below U+0800 */
        else if (c == 0xED)
            hi = 0x9F; /* U+D800..U+DFFF: surrogates are not encodable */
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        cp = c & 0x07;
        if (c == 0xF0)
            lo = 0x90; /* overlong below U+10000 */
        else if (c == 0xF4)
            hi = 0x8F; /* above U+10FFFF */
    } else {
        return UINT32_MAX; /* 0x80..0xC1 (continuation, overlong 2-byte), 0xF5..0xFF */
    }
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
