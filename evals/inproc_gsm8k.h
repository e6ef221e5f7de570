/*
 * GSM8K in-process (`dsa-eval gsm8k --backend inprocess --mtp N`): the MTP verify shapes of
 * the indexer. Per question, the prompt followed by its gold solution (standing in for the
 * generated continuation) is tokenized with the built-in tokenizer and put in the K cache;
 * the solution's tokens are the decode rows, taken in verify steps of next_n = N+1 rows. The
 * batched S3a (next_n = N+1) must select exactly what the same rows select one at a time
 * (next_n = 1). One record per question:
 *   score             1 when every step selects identically, else 0
 *   identical         the same, as a boolean; logits_identical: logits bit-identical too
 *   first_diff_step   the first differing step, or null
 *   steps, rows, prompt_tokens, context_tokens, mtp, topk
 *   selection_sha256  hash of the batched selections (sorted per row, int32 LE)
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_EVALS_INPROC_GSM8K_H
#define DSA_EVALS_INPROC_GSM8K_H

#include <stddef.h>

#include "backend/inprocess.h"
#include "evals/inproc_header.h"

struct dsa_inproc_gsm8k_item {
    size_t index;       /* test index: id "q%04zu" */
    const char *prompt; /* the prompt mode's bytes */
    size_t prompt_len;
    const char *continuation; /* the gold solution */
    size_t continuation_len;
};

/* o->mtp draft tokens (1..3), o->out_dir/run-001.jsonl (resumes), `mode` and `dataset_sha256`
   go into the header's match. Returns an enum dsa_exit (DSA_EXIT_FAIL when a question's
   batched and single-row selections differ). */
int dsa_inproc_gsm8k_run(const struct dsa_inproc_run *o, const char *mode,
                         const char *dataset_sha256, const struct dsa_inproc_gsm8k_item *items,
                         size_t n);

#endif
