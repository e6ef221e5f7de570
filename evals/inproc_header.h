/*
 * What the in-process evaluations share (mrcr, gsm8k, ruler, the traces runs): their match
 * keys, the keys of a selection's record and the by-bin summary.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_EVALS_INPROC_HEADER_H
#define DSA_EVALS_INPROC_HEADER_H

#include <jansson.h>

#include "backend/backend.h"
#include "backend/inprocess.h"
#include "evals/evals.h"
#include "store/store.h"
#include "util/shard.h"

/* The match keys every in-process run has (eval, backend, device, kernels, variant, top-k,
   proxy and its seed) set in match: the stack's identity from `backend` (dsa_backend_describe;
   borrowed) and options. Callers add their eval's own match keys. */
void dsa_inproc_match_set(json_t *match, json_t *backend, const char *eval,
                          const struct dsa_inproc_opts *stack);

/* The keys of an answered DSA_API_SELECT (raw, inprocess_backend.c) in a record: score =
   recall@k, error null, recall_last, needle_retention(_golden), selection_sha256,
   context/query/needle/distractor tokens, topk, elapsed_ms, stage_us_per_token. */
void dsa_inproc_select_fields(json_t *rec, json_t *raw);

/* The records' time per stage ("stage_us_per_token") summed over rows for the text summary:
   Σ µs·context_tokens per stage and Σ context_tokens, so the line shows total time over total
   tokens. Plain values, zero-initialised by the caller. */
struct dsa_inproc_stage_sum {
    double us[DSA_INPROC_NT];
    long tokens;
};
/* adds one record (a record without the key, from an older build, adds nothing) */
void dsa_inproc_stage_sum_add(struct dsa_inproc_stage_sum *s, json_t *rec);
/* prints "µs per context token: 94.1 = proxy 3.0 + S1 2.1 + … + host 0.5" (nothing when no
   record had times) */
void dsa_inproc_stage_sum_print(const struct dsa_inproc_stage_sum *s);

/* One bin's sums of in-process records for the text summary: rows, and Σ of score (recall@k),
   needle_retention and needle_retention_golden. Plain values, zero-initialised. */
struct dsa_inproc_bin_sum {
    int n;
    double score, needle, needle_gold;
};
void dsa_inproc_bin_sum_add(struct dsa_inproc_bin_sum *s, json_t *rec);
/*
 *   bin      rows     recall@k   needle  needle(golden)
 *   ≤8K         3       0.9885    0.348           0.353
 *   µs per context token: 94.1 = proxy 3.0 + S1 2.1 + … + host 0.5
 * the bins with rows, in the given order (labels[b] for sums[b]), then the stage line
 */
void dsa_inproc_bin_table_print(const char *const *labels, const struct dsa_inproc_bin_sum *sums,
                                int nbins, const struct dsa_inproc_stage_sum *stages);

#endif
