/*
 * The RULER eval's run (`dsa-eval ruler`, docs/ruler.md): the samples of the selected tasks ×
 * lengths × --limit indices (evals/ruler.h makes each one from the seed), those of this shard
 * without a record sent by the run loop (src/run/run.h), one record each:
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
 * The text summary of in-process runs replaces the endpoint table (whose columns are for
 * answers, not selections):
 *
 *   bin      rows     recall@k   needle  needle(golden)
 *   4k          6       0.9910    1.000           1.000
 *   µs per context token: 788.3 = proxy 70.8 + S1 13.6 + … + host 1.3
 *
 * one row per length (ascending), the means over the ok records of every run.
 *
 * Ownership: the run state borrows the options and owns the haystack; a job owns its sample.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_EVALS_RULER_EVAL_H
#define DSA_EVALS_RULER_EVAL_H

#include <stdbool.h>

#include "evals/evals.h"

/* The options of `dsa-eval ruler` (src/cmd_ruler.c fills the first part, check the rest). */
struct dsa_ruler_eval_opts {
    const char *tasks, *lengths; /* "all" or lists */
    const char *haystack;        /* FILE, or NULL: the shipped substitute */
    const char *api;             /* endpoint: "chat" or "completions" */
    const char *seed_text;       /* NULL: seed 0 */
    int limit;                   /* samples per (task, length) */
    int max_query;               /* inprocess: query rows = the last N tokens (0 = all) */
    bool stream;                 /* endpoint: SSE */
    /* parsed by the check hook */
    unsigned tasks_mask, lengths_mask;
    unsigned long seed;
};

/* The hooks of RULER's row in dsa_evals[]. */
extern const struct dsa_eval_hooks dsa_ruler_hooks;

#endif
