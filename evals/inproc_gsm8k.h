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

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "backend/backend.h"
#include "backend/inprocess.h"

/* The DSA_API_MTP_VERIFY body of a question: the prompt's bytes, the gold solution (the
   continuation whose tokens are the decode rows) and the draft count. A new reference. */
json_t *dsa_inproc_gsm8k_body(const char *prompt, size_t prompt_len, const char *continuation,
                              size_t continuation_len, int mtp);
/* The record of an answered question (a new reference), keys as above; id "q0007". */
json_t *dsa_inproc_gsm8k_record(const char *id, const struct dsa_result *res);
/* The header's "match" of an in-process run (its "backend" already the stack's identity): the
   stack, the test split's sha256, the prompt mode, the draft count and --limit. */
void dsa_inproc_gsm8k_header(json_t *header, const struct dsa_inproc_opts *stack, const char *mode,
                             const char *dataset_sha256, int mtp, size_t limit);
/* The line on stdout before a run: next_n, the stack and the run file. */
void dsa_inproc_gsm8k_banner(dsa_backend *b, const struct dsa_inproc_opts *stack, int mtp,
                             const char *path);
/* "identical selections: 3/3 questions; bit-identical logits: 3/3" over the runs' records
   (an array of arrays), when print. Returns DSA_EXIT_FAIL when a question's batched and
   single-row selections differ, else DSA_EXIT_OK. */
int dsa_inproc_gsm8k_summary(json_t *runs, bool print);

#endif
