/*
 * The GSM8K eval (`dsa-eval gsm8k`, docs/gsm8k.md), as hooks of the run loop: load the test
 * (and train) split, build each question's prompt (evals/gsm8k_prompt.c) and its sha256, then
 * either
 *
 *   endpoint   read /metrics, send this shard's questions without a record in index order
 *              (the run loop keeps at most --concurrency in flight), grade each
 *              answer as it lands (evals/gsm8k_extract.c) into its record in the run file,
 *              read /metrics again until it settles, print the summary and write it next to
 *              the run file (evals/gsm8k_run.h);
 *   inprocess  the MTP verify shapes of the indexer stack (evals/inproc_gsm8k.h);
 *   prompts    each prompt and one NUL byte (--print-prompts).
 *
 * Ownership: the run state borrows its options (they outlive it) and the backend it runs on,
 * and owns the splits, the prompts' hashes and the records.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_EVALS_GSM8K_EVAL_H
#define DSA_EVALS_GSM8K_EVAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "evals/evals.h"
#include "evals/gsm8k_extract.h"
#include "evals/gsm8k_prompt.h"

/* The options of `dsa-eval gsm8k` (src/cmd_gsm8k.c fills the first part, check the rest). */
struct dsa_gsm8k_eval_opts {
    const char *prompt;   /* the prompt mode's name: vllm5, cot8, gsm8k, sglang5, chat */
    const char *extract;  /* the scoring mode's name, NULL: the prompt mode's */
    const char *data_dir; /* test.jsonl, train.jsonl; NULL: the fetch cache */
    int limit;            /* first N questions, 0: all */
    int max_tokens;       /* 0: the mode's */
    long seed;
    bool token_ids, stream, mtp, expect_mtp;
    bool print_prompts; /* write the prompts, send nothing */
    int mtp_n;          /* in-process: draft tokens (1..3); rows per verify step = N + 1 */
    /* parsed by the check hook */
    const struct dsa_gsm8k_mode *mode;
    enum dsa_gsm8k_extract_mode extract_mode;
};

/* The hooks of GSM8K's row in dsa_evals[] (both backends; in-process: evals/inproc_gsm8k.h). */
extern const struct dsa_eval_hooks dsa_gsm8k_hooks;

#endif
