/*
 * How the test server makes a completion: a list of answerers tried in order (answer.c's
 * table); the first that recognises the prompt writes the text. MRCR questions are answered by
 * doing the task (mrcr.c); anything else gets a hash-derived text. Another answerer (GSM8K for
 * /v1/completions, say) is one new file plus one row in the table.
 *
 * Everything here is a pure function of (request content, srv_answer_cfg): no clock, no
 * request order, no global state, so answers are identical at any concurrency
 * (docs/test-server.md "Determinism contract").
 * Ownership: the caller owns `out`; answerers only append to it.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_SRV_ANSWER_H
#define DSA_SRV_ANSWER_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/buf.h"

#define SRV_PTABLE_MAX 16

/* A probability by prompt length: the first row whose limit is >= the prompt's token count
   applies; none → 0. "0.1" is one row with no limit. */
struct srv_ptable {
    int n;
    long upto[SRV_PTABLE_MAX]; /* tokens; LONG_MAX for "no limit" */
    double p[SRV_PTABLE_MAX];
};

struct srv_answer_cfg {
    uint64_t seed;             /* --seed */
    struct srv_ptable wrong;   /* --mrcr-wrong: answer another needle */
    struct srv_ptable garble;  /* --mrcr-garble: answer a damaged needle */
    const char *build;         /* --build: "" is the base build */
    double build_fraction;     /* --build-fraction: share of answers this build changes */
    long gsm8k_build_question; /* --gsm8k-build-question: the GSM8K question a build changes */
};

/* What one request asks for, already parsed and validated by the HTTP layer. */
struct srv_answer_in {
    const char *endpoint;   /* "chat", "completions" or "generate" */
    const json_t *messages; /* chat: the message array (borrowed); NULL otherwise */
    const char *prompt;     /* completions/generate: the prompt text; NULL for chat */
    size_t prompt_len;
    long prompt_tokens; /* from tok.h */
};

/* Which answerer answered, and what the MRCR one decided (for the request log). */
struct srv_answer_info {
    const char *answerer; /* "mrcr", "hash", ... (static) */
    bool wrong, garbled, build_changed;
};

typedef bool (*srv_answer_fn)(const struct srv_answer_in *in, const struct srv_answer_cfg *cfg,
                              struct dsa_buf *out, struct srv_answer_info *info);

/* Runs the table; always produces an answer (the hash answerer accepts anything). */
void srv_answer(const struct srv_answer_in *in, const struct srv_answer_cfg *cfg,
                struct dsa_buf *out, struct srv_answer_info *info);

/* The answerers */
bool srv_answer_mrcr(const struct srv_answer_in *in, const struct srv_answer_cfg *cfg,
                     struct dsa_buf *out, struct srv_answer_info *info);
bool srv_answer_hash(const struct srv_answer_in *in, const struct srv_answer_cfg *cfg,
                     struct dsa_buf *out, struct srv_answer_info *info);

/* Parses "0.1" or "8k:0,32k:0.05,inf:0.2" (limits ascending, probabilities in [0,1]).
   Returns 0, or -1 with the reason in err[errlen]. */
int srv_ptable_parse(const char *s, struct srv_ptable *t, char *err, size_t errlen);
double srv_ptable_get(const struct srv_ptable *t, long tokens);

/* The decision primitive: a uniform double in [0,1) from (seed, content hash, tag):
   x = splitmix64(splitmix64(seed) ^ h ^ fnv1a64(tag)); u = (x >> 11) * 2^-53. */
uint64_t srv_decide_bits(uint64_t seed, uint64_t h, const char *tag);
double srv_decide_u(uint64_t seed, uint64_t h, const char *tag);

#endif
