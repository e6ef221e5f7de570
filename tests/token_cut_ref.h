/*
 * The reference the endpoint's /tokenize token-list search is tested against (unit tests and
 * fuzz_response): the old two-pass cut that drop_token_list() made of a whole answer body,
 * kept here as plain code so the streamed and SIMD forms can be checked against it.
 * Header-only (static functions), for tests.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_TESTS_TOKEN_CUT_REF_H
#define DSA_TESTS_TOKEN_CUT_REF_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* The end of a plain token list starting at p: the first ']' (memchr), when every byte before
   it is a digit, '-', ',' or a blank; else NULL. */
static inline const char *ref_list_end(const char *p, const char *end)
{
    const char *close = memchr(p, ']', (size_t)(end - p));
    if (!close)
        return NULL;
    for (const char *q = p; q < close; q++)
        if (!strchr("0123456789-, \n\t\r", *q) || !*q)
            return NULL;
    return close;
}

/* The cut: the first "tokens" with a byte after it, blanks or ':', '[', a plain list to its
   ']'. *open and *close are the offsets just inside the brackets. */
static inline bool ref_token_cut(const char *body, size_t len, size_t *open, size_t *close)
{
    static const char key[] = "\"tokens\"";
    const char *end = body + len;
    for (const char *p = body; p + sizeof key - 1 < end; p++) {
        if (memcmp(p, key, sizeof key - 1))
            continue;
        const char *q = p + sizeof key - 1;
        while (q < end && (*q == ' ' || *q == ':' || *q == '\n' || *q == '\t' || *q == '\r'))
            q++;
        if (q == end || *q != '[')
            return false;
        const char *c = ref_list_end(q + 1, end);
        if (!c)
            return false;
        *open = (size_t)(q + 1 - body);
        *close = (size_t)(c - body);
        return true;
    }
    return false;
}

#endif
