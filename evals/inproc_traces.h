/*
 * MRCR and RULER in-process on captured traces (`dsa-eval mrcr|ruler --backend inprocess --traces
 * DIR`): the indexer stack runs on q/k/w that a real model computed (scripts/capture_traces.py,
 * docs/kernels.md "Capturing traces from a model") instead of the proxy model. DIR holds
 * manifest.jsonl, one line per row:
 *   {"id": "n8/r0000", "bin": "≤8K", "file": "n8_r0000.safetensors", "context_tokens": 2259,
 *    "needle": [lo, hi], "question": [lo, hi], "q_pos": [...], "layers": [...], "model": "..."}
 * (RULER: "id": "niah_single_2/4k/0000", "bin": "4k", "needles": [[lo, hi]...] the answer
 * needles) and one trace file per row (kernels/trace.h; per-layer tensors "layers.<L>.*" with the
 * model's own top-k "layers.<L>.topk"). Each row is one request of the in-process backend
 * (DSA_API_SELECT naming the trace, inprocess_backend.c), run one at a time in manifest order.
 * Per row and layer: recall@k of the stack against the fp64 golden selection, agreement of the
 * stack and of the golden selection with the model's selection, needle retention of the last query
 * row (stack, golden, model) over the manifest's needle span(s), and the selection hash. One
 * record per row:
 *   score                      recall@k, mean over layers (and query rows)
 *   recall_last                the same for the last query row
 *   model_agreement            |stack ∩ model| / |model|, mean over layers and rows (null: none)
 *   model_agreement_golden     the same for the golden selection
 *   needle_retention[_golden|_model]   share of the needle's tokens in the last row's selection
 *   selection_sha256           hash of every layer's selected sets, in layer order
 *   layers                     [{layer, recall, model_agreement, model_agreement_golden,
 *                                needle_retention, needle_retention_golden,
 *                                needle_retention_model, selection_sha256}]
 *   context_tokens, query_tokens, needle_tokens, topk, trace, elapsed_ms
 *   stage_us_per_token  µs per context token by stage, all layers together (inprocess.h)
 *   task                       RULER: the sample's task
 * Records bin (MRCR's bins, RULER's lengths) and compare like the proxy's in-process runs.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_EVALS_INPROC_TRACES_H
#define DSA_EVALS_INPROC_TRACES_H

#include "backend/inprocess.h"
#include "evals/inproc_header.h"

/* Runs every selected row of o->traces_dir (o->eval "ruler": RULER rows selected by
   o->tasks_mask, o->bins_mask as lengths and o->limit per (task, length); else MRCR rows by
   bins, needles and limit) into o->out_dir/run-001.jsonl (resuming finished ids) and prints a
   per-bin summary on stdout. Returns an enum dsa_exit. */
int dsa_inproc_traces_run(const struct dsa_inproc_run *o);

/* `dsa-eval gsm8k --backend inprocess --mtp N --traces DIR`: per trace and layer, the query rows
   (consecutive positions) as MTP decode rows in verify steps of N+1 (as dsa_inproc_mtp): the
   batched selection must equal the one-row-at-a-time selection. One record per row: score (1 when
   every layer's steps select identically), identical, logits_identical, rows, mtp, topk,
   selection_sha256 (over the layers' hashes), trace, layers [{layer, identical, logits_identical,
   steps, selection_sha256}]. Prints "identical selections: X/Y traces; …"; DSA_EXIT_FAIL when one
   differs. */
int dsa_inproc_traces_mtp_run(const struct dsa_inproc_run *o);

#ifdef DSA_UNITTEST_BUILD
/* One manifest line checked as the run of eval ("mrcr" or "ruler") checks it (the fuzz seam): 0,
   or -1 with the reason in why[cap]; nothing printed. */
int dsa_inproc_traces_parse_line(const char *eval, const char *text, size_t len, char *why,
                                 size_t cap);
#endif

#endif
