/*
 * MRCR in-process: selection fidelity of the indexer stack on MRCR prompts
 * (`dsa-eval mrcr --backend inprocess`). Per row: tokenize the conversation with the
 * built-in tokenizer, run the stack (src/backend/inprocess.h) for the final question's tokens
 * at the row's real context length, and write one record:
 *   score                    recall@k against the fp64 golden selection, mean over query rows
 *   recall_last              the same for the last query row alone
 *   needle_retention         share of the needle message's tokens in the last row's selection
 *   needle_retention_golden  the same for the golden selection
 *   selection_sha256         hash of the selected index sets (sorted per row, int32 LE)
 *   context_tokens, query_tokens, needle_tokens, distractor_tokens, topk, elapsed_ms
 *   stage_us_per_token       {proxy, s1_k_prep, …, host, total}: µs per context token by stage
 * q/k/w come from the proxy model with the row's retrieval structure planted ("proxy-v2",
 * kernels/proxy.h): the needle, the other replies to its request and the question share a topic.
 * Records bin and compare like endpoint runs (src/store/store.h).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_EVALS_INPROC_MRCR_H
#define DSA_EVALS_INPROC_MRCR_H

#include <jansson.h>
#include <stdbool.h>

#include "backend/backend.h"
#include "backend/inprocess.h"
#include "datasets/mrcr.h"

/* The DSA_API_SELECT body of a row: its messages, the needle message (docs/mrcr.md "The
   dataset": messages[desired_msg_index + 1]), the messages that carry its topic, and the
   query rows (the last max_query tokens, 0 = all). A new reference. */
json_t *dsa_inproc_mrcr_body(int max_query, json_t *messages, long desired_msg_index);
/* The record of an answered row (a new reference), keys as above. */
json_t *dsa_inproc_mrcr_record(const char *id, const char *bin_label, long bin_tokens,
                               const struct dsa_result *res);
/* The header of an in-process run (its "backend" already the stack's identity): "match" (the
   stack, the proxy, the files' sha256, max_query, the row filters) and "dataset" (name,
   files). The filters are `filters` (borrowed: the endpoint's match.filters object), or, when
   NULL, f as the masks older builds wrote (limit, bins_mask, needles_mask). */
void dsa_inproc_mrcr_header(json_t *header, const struct dsa_inproc_opts *stack, int max_query,
                            const struct dsa_mrcr_filter *f, json_t *filters,
                            const char *dataset_name, json_t *files, json_t *shas);
/* The line on stdout before a run: the proxy, its seed, the stack and the run file. */
void dsa_inproc_mrcr_banner(dsa_backend *b, const struct dsa_inproc_opts *stack, const char *path);
/* The text summary of the runs' records (an array of arrays), when print:
 *   bin      rows     recall@k   needle  needle(golden)
 *   ≤8K         3       0.9885    0.348           0.353
 *   µs per context token: 94.1 = proxy 3.0 + S1 2.1 + … + host 0.5
 * Returns DSA_EXIT_FAIL when a record is not ok, else DSA_EXIT_OK. */
int dsa_inproc_mrcr_summary(json_t *runs, bool print);

#endif
