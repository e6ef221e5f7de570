/*
 * The RULER eval's run (`dsa-eval ruler`, docs/ruler.md): the samples of the selected tasks ×
 * lengths × --limit indices (evals/ruler.h makes each one from the seed), those of this shard
 * without a record sent through the run loop's drive, one record each:
 *
 *   endpoint   the input as the one user message (chat) or as the prompt (completions),
 *              max_tokens = the task's tokens to generate, temperature 0; the answer scored
 *              with RULER's string_match_all. Record keys beyond the store's: task, metric,
 *              references, output, input_sha256, tokens (built-in tokenizer), prompt_tokens,
 *              completion_tokens, finish_reason, usage, latency_ms, retries, endpoint;
 *              http_code when failed; a sample that does not fit the server's context is
 *              excluded (max_model_len).
 *   inprocess  a DSA_API_SELECT request with the needles' token spans: score = recall@k of
 *              the indexer's selection, needle_retention (answer needles in the last query
 *              row's selection) and its golden value, distractor_tokens, selection_sha256.
 *
 * Ownership: borrows the backend, the run, the haystack and the options.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_EVALS_RULER_EVAL_H
#define DSA_EVALS_RULER_EVAL_H

#include <stdbool.h>

#include "backend/backend.h"
#include "evals/evals.h"
#include "evals/ruler.h"
#include "store/store.h"
#include "util/progress.h"
#include "util/shard.h"

struct dsa_ruler_eval_opts {
    unsigned tasks_mask, lengths_mask;
    int limit; /* samples per (task, length) */
    unsigned long seed;
    const dsa_ruler_haystack *haystack;
    bool inprocess;     /* DSA_API_SELECT requests (else chat or completions) */
    bool completions;   /* endpoint: POST /v1/completions with the input as the prompt */
    bool stream;        /* endpoint: SSE */
    long max_model_len; /* endpoint: the server's context, -1 unknown */
    int max_query;      /* inprocess: query rows = the last N tokens (0 = all) */
    struct dsa_shard shard;
    volatile int *interrupted;
    dsa_eval_drive_fn drive;
};

/* the samples of this shard (for the progress meter and the resume note) */
long dsa_ruler_eval_count(const struct dsa_ruler_eval_opts *o);

/* Runs (or resumes) one run into `run`. Returns an enum dsa_exit: OK (every sample has a
   record; failed ones among them), INTERRUPTED, DATA (a sample could not be made; printed),
   IO, BACKEND (the server went away or the stack failed; printed). */
int dsa_ruler_eval_run(dsa_backend *b, dsa_run *run, const struct dsa_ruler_eval_opts *o,
                       dsa_progress *pg);

/* The text summary of in-process runs (records of every run: an array of arrays), printed
   to stdout in place of the endpoint table (whose columns are for answers, not selections):
 *
 *   bin      rows     recall@k   needle  needle(golden)
 *   4k          6       0.9910    1.000           1.000
 *   µs per context token: 788.3 = proxy 70.8 + S1 13.6 + … + host 1.3
 *
 * one row per length (ascending), the means over the ok records of every run. */
void dsa_ruler_inproc_summary_print(json_t *runs_records);

#endif
