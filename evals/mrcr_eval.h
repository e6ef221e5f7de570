/*
 * The MRCR evaluation loop (docs/mrcr.md "The dataset"): streams rows from the reader, skips
 * ids the run file already holds, counts prompt tokens where the backend can (over-context
 * rows are EXCLUDED, never scored), sends the prompt's messages verbatim, grades
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
 * Ownership: the loop borrows the backend, the run and the options; it owns nothing the
 * caller sees after it returns.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_EVALS_MRCR_EVAL_H
#define DSA_EVALS_MRCR_EVAL_H

#include <jansson.h>
#include <stdbool.h>

#include "backend/backend.h"
#include "datasets/mrcr.h"
#include "evals/evals.h"
#include "store/store.h"
#include "util/shard.h"

struct dsa_mrcr_eval_opts {
    const char *const *dataset_paths; /* read in order (the cache keeps one file per needle
                                         count; ids stay (needles, row) either way) */
    int n_datasets;
    struct dsa_mrcr_filter filter;
    long max_tokens;
    double temperature;
    bool has_seed;
    long long seed;
    bool stream;
    long max_model_len;        /* server context (tokens), -1 unknown: no pre-count then */
    bool count_tokens;         /* ask the backend to count prompt tokens before sending */
    bool strip_think;          /* add score_strip_think */
    struct dsa_shard shard;    /* --shard i/n: the rows of one shard (n = 0: all) */
    volatile int *interrupted; /* set by SIGINT/SIGTERM, or NULL */
    dsa_eval_drive_fn drive;   /* the run loop's drive (dsa_loop_drive) */
};

struct dsa_mrcr_eval_counts {
    long resumed; /* rows already in the run file */
    long done;    /* rows finished in this invocation (ok + failed + excluded) */
    long ok, failed, excluded;
    long in_flight;
    long retries, errors; /* backend totals */
    bool reader_done;     /* every row has been read: resumed + done + in_flight is the total */
};

typedef void (*dsa_mrcr_eval_progress_fn)(void *ud, const struct dsa_mrcr_eval_counts *c);

/*
 * Runs (or resumes) one run. Returns an enum dsa_exit: OK (every row has a record),
 * INTERRUPTED (*o->interrupted was set: in-flight requests aborted, finished records are on
 * disk), DATA (the dataset is bad; printed), IO (a record could not be written; printed),
 * BACKEND (the event loop failed; printed). Failed rows do not change the return value:
 * the caller reads them from the run.
 */
int dsa_mrcr_eval_run(dsa_backend *b, dsa_run *run, const struct dsa_mrcr_eval_opts *o,
                      dsa_mrcr_eval_progress_fn progress, void *progress_ud,
                      struct dsa_mrcr_eval_counts *counts);

/* The request body for one row (messages verbatim + sampling parameters); a new reference.
   Exposed so tests and the request-log checks build the same bytes. */
json_t *dsa_mrcr_eval_body(const struct dsa_mrcr_eval_opts *o, json_t *messages);

/* --strip-think: the text after the last "</think>" (all of it if none), without leading
   and trailing ASCII whitespace; a pointer into `s` and its length. */
const char *dsa_mrcr_eval_strip_think(const char *s, size_t len, size_t *out_len);

#endif
