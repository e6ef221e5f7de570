/*
 * The GSM8K eval's run (`dsa-eval gsm8k`, docs/gsm8k.md): load the test (and train) split,
 * build each question's prompt (evals/gsm8k_prompt.c) and its sha256, then either
 *
 *   endpoint   read /metrics, send this shard's questions without a record in index order
 *              through the run loop's drive (at most --concurrency in flight), grade each
 *              answer as it lands (evals/gsm8k_extract.c) into its record in the run file,
 *              read /metrics again until it settles, print the summary and write it next to
 *              the run file (evals/gsm8k_run.h);
 *   inprocess  the MTP verify shapes of the indexer stack (evals/inproc_gsm8k.h);
 *   prompts    each prompt and one NUL byte (--print-prompts).
 *
 * Ownership: a dsa_gsm8k_eval borrows its options (they outlive it) and the backend it runs
 * on, and owns the splits, the prompts' hashes, the records and the run file.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_EVALS_GSM8K_EVAL_H
#define DSA_EVALS_GSM8K_EVAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "backend/backend.h"
#include "evals/evals.h"
#include "evals/gsm8k_extract.h"
#include "evals/gsm8k_prompt.h"
#include "evals/inproc_gsm8k.h"
#include "util/shard.h"

struct dsa_gsm8k_eval_opts {
    const struct dsa_gsm8k_mode *mode;
    enum dsa_gsm8k_extract_mode extract; /* the scoring mode */
    const char *data_dir;                /* test.jsonl, train.jsonl; NULL: the fetch cache */
    int limit;                           /* first N questions, 0: all */
    int max_tokens;                      /* 0: the mode's */
    long seed;
    bool token_ids, stream, mtp, expect_mtp, force_new, as_json;
    const char *out; /* the run folder; NULL: no run file */
    /* what the run header records of the command */
    const char *backend; /* the match's "backend" */
    int concurrency;
    double timeout_s;
    json_t *extra_body; /* NULL: none */
    struct dsa_shard shard;
    int argc;
    char **argv;
    volatile int *interrupted;
    dsa_eval_drive_fn drive;
};
typedef struct dsa_gsm8k_eval dsa_gsm8k_eval;

dsa_gsm8k_eval *dsa_gsm8k_eval_new(const struct dsa_gsm8k_eval_opts *o);
void dsa_gsm8k_eval_free(dsa_gsm8k_eval **ev);

/* Loads the splits and hashes the first --limit prompts. Returns 0 or an enum dsa_exit
   (DATA: no test split, a split unreadable, a prompt that cannot be built; printed). */
int dsa_gsm8k_eval_load(dsa_gsm8k_eval *ev);
/* Writes each loaded question's prompt and one NUL byte to out. Returns an enum dsa_exit. */
int dsa_gsm8k_eval_print_prompts(dsa_gsm8k_eval *ev, FILE *out);
/* The in-process run of the loaded questions with io's stack. Returns an enum dsa_exit. */
int dsa_gsm8k_eval_inprocess(dsa_gsm8k_eval *ev, const struct dsa_inproc_run *io);
/* Runs (or resumes) the endpoint run on b (an endpoint backend). Returns an enum dsa_exit:
   OK, FAIL (the summary's verdict), INTERRUPTED, IO, BACKEND, MISMATCH (resume over another
   prompt), each printed. */
int dsa_gsm8k_eval_run(dsa_gsm8k_eval *ev, dsa_backend *b);

#endif
