/* The built-in deterministic tokenizer (see tokenize.h for the definition).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "datasets/tokenize.h"

#include <pcre2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "util/hash.h"
#include "util/msg.h"

static pcre2_code *tok_code;
static pthread_once_t tok_once = PTHREAD_ONCE_INIT;

static void tok_compile(void)
{
    int err;
    PCRE2_SIZE off;
    /* MATCH_INVALID_UTF: invalid bytes simply never match (they become single-byte pieces)
       instead of making every match fail with an error. */
    tok_code = pcre2_compile((PCRE2_SPTR)DSA_TOK_PATTERN, PCRE2_ZERO_TERMINATED,
                             PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &err, &off, NULL);
    if (!tok_code) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        dsa_errorf("internal error: tokenizer pattern: %s at %zu", (const char *)msg, (size_t)off);
        abort();
    }
    /* JIT is an optimisation only: the interpreter gives the same matches */
    (void)pcre2_jit_compile(tok_code, PCRE2_JIT_COMPLETE);
}

/* One call = one piece. md is the caller's match data (one per thread). */
static int next_piece(pcre2_match_data *md, const char *text, size_t len, size_t *pos,
                      size_t *start, size_t *plen)
{
    if (*pos >= len)
        return 0;
    int rc = pcre2_match(tok_code, (PCRE2_SPTR)text, len, *pos, 0, md, NULL);
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    if (rc < 0 || ov[0] > *pos || ov[1] == ov[0]) {
        /* no match here: an invalid UTF-8 byte (the pattern covers every valid character) */
        *start = *pos;
        *plen = 1;
        *pos += 1;
        return 1;
    }
    *start = ov[0];
    *plen = ov[1] - ov[0];
    *pos = ov[1];
    return 1;
}

static size_t tokenize(const char *text, size_t len, uint32_t *ids, size_t *ends, size_t cap)
{
    pthread_once(&tok_once, tok_compile);
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    if (!md)
        abort();
    size_t pos = 0, start, plen, n = 0;
    while (next_piece(md, text, len, &pos, &start, &plen)) {
        if (n < cap && ids)
            ids[n] = (uint32_t)(dsa_fnv1a64(text + start, plen) % DSA_TOK_VOCAB);
        if (n < cap && ends)
            ends[n] = start + plen;
        n++;
    }
    pcre2_match_data_free(md);
    return n;
}

size_t dsa_tok_count(const char *text, size_t len)
{
    return tokenize(text, len, NULL, NULL, 0);
}

size_t dsa_tok_encode(const char *text, size_t len, uint32_t *ids, size_t cap)
{
    return tokenize(text, len, ids, NULL, ids ? cap : 0);
}

size_t dsa_tok_ends(const char *text, size_t len, size_t *ends, size_t cap)
{
    return tokenize(text, len, NULL, ends, ends ? cap : 0);
}

int dsa_tok_next_piece(const char *text, size_t len, size_t *pos, size_t *start, size_t *plen)
{
    pthread_once(&tok_once, tok_compile);
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    if (!md)
        abort();
    int r = next_piece(md, text, len, pos, start, plen);
    pcre2_match_data_free(md);
    return r;
}
