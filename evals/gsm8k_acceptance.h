/*
 * The acceptance length of speculative decoding (MTP) for `compare` and `report`: GSM8K's hook
 * behind the eval table (evals/evals.c), so that stats/ computes no eval's statistic itself.
 * Per-request draft/accepted counts paired by id give each side's AL = 1 + sum(accepted) /
 * sum(drafts) with paired percentile bootstrap CIs of the difference and the ratio; without
 * them, the run headers' counter deltas (no CI). docs/compare.md "Acceptance length".
 *
 * Ownership: sides are borrowed; the result is a new reference.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_EVALS_GSM8K_ACCEPTANCE_H
#define DSA_EVALS_GSM8K_ACCEPTANCE_H

#include <jansson.h>

#include "stats/compare.h"

/* A dsa_cmp_acceptance_fn: {"source": "per-request"|"counters", "n", "base", "cand", "diff",
   "ratio", "diff_ci", "ratio_ci", "base_ci"?, "cand_ci"?}, or NULL when neither side has an
   acceptance length. */
json_t *dsa_gsm8k_acceptance(const struct dsa_cmp_side *base, const struct dsa_cmp_side *cand,
                             const struct dsa_boot_cfg *cfg);

#endif
