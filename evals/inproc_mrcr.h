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

#include "backend/inprocess.h"
#include "evals/inproc_header.h"

/* Runs the whole evaluation into o->out_dir/run-001.jsonl (resuming finished ids) and prints
   a per-bin summary on stdout. Returns an enum dsa_exit. */
int dsa_inproc_mrcr_run(const struct dsa_inproc_run *o);

#endif
