/*
 * The MRCR eval (docs/mrcr.md "The dataset"), as hooks of the run loop: streams rows from the
 * reader (the loop skips ids the run file already holds), counts prompt tokens where the backend
 * can (over-context rows are EXCLUDED, never scored), sends the prompt's messages verbatim, grades
 * message.content with the official grader, and appends one record per row to the run file
 * as soon as it finishes. Memory holds only the rows in flight.
 *
 * Record keys (beyond the store's id/bin/bin_tokens/status/score/error):
 *   needles, prefix_hit, exact, output (exact content bytes), finish_reason, usage,
 *   prompt_tokens, completion_tokens, latency_ms, ttft_ms, decode_ms (streaming), retries,
 *   endpoint, reasoning_len + reasoning_sha256 (when the server sent reasoning),
 *   timings (llama-server's server-side split, when the response carries one),
 *   max_model_len (excluded rows: the context they were measured against),
 *   score_strip_think (with --strip-think), http_code (failed rows).
 *
 * A dataset argument is a file, a shipped sample ("sample:<name>") or the name of the
 * official data as `dsa-eval datasets fetch mrcr` stores it ("openai/mrcr[@REVISION]"), every
 * file checked and hashed before any request.
 *
 * Ownership: the run state borrows the options and owns the resolved dataset files and the
 * reader; a job owns copies of its row's messages and answer.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_EVALS_MRCR_EVAL_H
#define DSA_EVALS_MRCR_EVAL_H

#include <jansson.h>
#include <stdbool.h>

#include "datasets/mrcr.h"
#include "evals/evals.h"

/* The options of `dsa-eval mrcr` (src/cmd_mrcr.c fills the first part, check the rest). */
struct dsa_mrcr_eval_opts {
    const char *dataset;   /* PATH|NAME; NULL: openai/mrcr (endpoint), the shipped sample */
    const char *needles;   /* "2,4,8" */
    const char *bins;      /* "8k,16k", NULL: all */
    const char *max_bin;   /* "256k", NULL: none */
    const char *seed_text; /* the sampling seed sent (in-process: the proxy's), NULL: none */
    long limit;            /* rows per (needles, bin), 0 = all */
    long max_tokens;
    double temperature;
    bool stream;
    bool no_count;    /* skip the /tokenize pre-count */
    bool strip_think; /* add score_strip_think */
    int max_query;    /* inprocess: query rows = the last N question tokens (0 = all) */
    /* parsed by the check hook */
    struct dsa_mrcr_filter filter;
    bool has_seed;
    long long seed;
};

/* The hooks of MRCR's row in dsa_evals[] (both backends; in-process: evals/inproc_mrcr.h). */
extern const struct dsa_eval_hooks dsa_mrcr_hooks;

/* --strip-think: the text after the last "</think>" (all of it if none), without leading
   and trailing ASCII whitespace; a pointer into `s` and its length. */
const char *dsa_mrcr_eval_strip_think(const char *s, size_t len, size_t *out_len);

#endif
