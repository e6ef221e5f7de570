/*
 * MRCR and RULER in-process on captured traces (`dsa-eval mrcr|ruler --backend inprocess --traces
 * DIR`): the indexer stack runs on q/k/w that a real model computed (scripts/capture_traces.py,
 * docs/kernels.md "Capturing traces from a model") instead of the proxy model. DIR holds
 * manifest.jsonl, one line per row:
 *   {"id": "n8/r0000", "bin": "≤8K", "file": "n8_r0000.safetensors", "context_tokens": 2259,
 *    "needle": [lo, hi], "question": [lo, hi], "q_pos": [...], "layers": [...], "model": "..."}
 * (RULER: "id": "niah_single_2/4k/0000", "bin": "4k", "needles": [[lo, hi]...] the answer
 * needles) and one trace file per row (kernels/trace.h; per-layer tensors "layers.<L>.*" with the
 * model's own top-k "layers.<L>.topk"). The run loop (src/run/run.c) drives these runs like every
 * other: the manifest's kept rows are the samples, each one request of the in-process backend
 * (DSA_API_SELECT naming the trace, inprocess_backend.c), answered one at a time in manifest
 * order; the loop owns the run file, resume, --shard, the meter, signals and exit codes.
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

#include <jansson.h>

#include "backend/inprocess.h"
#include "evals/evals.h"

/*
 * What a --traces run takes of its eval's options: the eval's row fills it in its traces hook
 * (evals/evals.h), the run loop sets dir and stack and then drives dsa_traces_hooks with it.
 * Borrowed strings; filters is owned (a new reference, released by the loop).
 *   mrcr:  rows by bins_mask and needles_mask (from the id "n<N>/…"), limit per (needles, bin)
 *   ruler: rows by bins_mask (the lengths) and tasks_mask, limit per (task, length)
 *   gsm8k: every row, its query rows (consecutive positions) as MTP decode rows in verify steps
 *          of mtp+1 (as dsa_inproc_mtp): the batched selection must equal the
 *          one-row-at-a-time selection. One record per row: score (1 when every layer's steps
 *          select identically), identical, logits_identical, rows, mtp, topk, selection_sha256
 *          (over the layers' hashes), trace, layers [{layer, identical, logits_identical, steps,
 *          selection_sha256}]; the summary "identical selections: X/Y traces; …" and
 *          DSA_EXIT_FAIL when one differs.
 */
struct dsa_traces_opts {
    const char *eval; /* "mrcr", "ruler" or "gsm8k": the manifest's bins and ids, the records */
    const char *dir;  /* --traces DIR (holds manifest.jsonl) */
    long limit;       /* rows per (group, bin), 0 = all */
    unsigned bins_mask, needles_mask, tasks_mask; /* 0 = all */
    int mtp;                                      /* gsm8k: draft tokens N, 0..3 */
    json_t *filters;               /* the header's match.filters (the options as given), or NULL */
    struct dsa_inproc_opts *stack; /* the run's: load sets rope and index heads from the first
                                      kept row's trace, before the loop opens the backend */
};

/* The hooks of every traces run (load reads the manifest; the eval's check has run). One run
   file: --runs N and a missing --out are refused. */
extern const struct dsa_eval_hooks dsa_traces_hooks;

#ifdef DSA_UNITTEST_BUILD
/* One manifest line checked as the run of eval ("mrcr" or "ruler") checks it (the fuzz seam): 0,
   or -1 with the reason in why[cap]; nothing printed. */
int dsa_inproc_traces_parse_line(const char *eval, const char *text, size_t len, char *why,
                                 size_t cap);
#endif

#endif
