/*
 * Output identity of two GSM8K runs (the seed's "same outputs (32/32) and the same
 * acceptance length (3.4904)"), for `dsa-eval compare A B` when both are GSM8K runs.
 *
 * Checks first that both runs asked the same questions with the same prompts (sha256 per
 * question), then counts byte-identical outputs (and identical token ids when both runs
 * have them), names the first differing question with the byte offset and an excerpt of
 * both sides, compares accuracy (McNemar's exact test on the discordant pairs: two-sided,
 * p = min(1, 2 P[X <= min(b, c)]) for X ~ Binomial(b + c, 1/2), GSL's binomial cdf) and the
 * acceptance lengths of the runs' summaries.
 *
 * Ownership: sides are borrowed; *doc is a new reference.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_EVALS_GSM8K_COMPARE_H
#define DSA_EVALS_GSM8K_COMPARE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

/* One run as loaded by dsa_run_load() plus its summary file (NULL when absent). */
struct dsa_gsm8k_side {
    const char *name; /* as the user named it, for messages */
    json_t *header;
    json_t *records; /* array */
    json_t *summary; /* DIR/run-001.summary.json, or NULL */
};

/*
 * Compares and prints the report to `out`; *doc (if doc is not NULL) receives the result as
 * JSON. Returns DSA_EXIT_OK when every output is identical, DSA_EXIT_FAIL when some differ
 * (or failed on one side), DSA_EXIT_DATA when the runs are not comparable (different
 * question sets or prompts), with the reason printed.
 *
 *   gsm8k: runs/main-gsm8k (A) vs runs/pr-gsm8k (B)
 *   questions           32, same set and prompts (vllm5)
 *   identical outputs   31/32
 *   first difference    question 17 at byte 112
 *     A  "...ys 4 x 3 = 12 dollars.\n#### 12"
 *     B  "...ys 4 x 3 = 13 dollars.\n#### 13"
 *   accuracy            A 0.9375 (30/32)   B 0.9063 (29/32)   McNemar exact p 1.0000 (1 vs 0)
 *   acceptance length   A 3.4904   B 3.4904   same
 *   result              outputs differ: 31/32 identical
 */
int dsa_gsm8k_compare(const struct dsa_gsm8k_side *a, const struct dsa_gsm8k_side *b, FILE *out,
                      json_t **doc);

/* Loads a run folder (DIR/run-001.jsonl) or run file and its summary. Returns 0 or a
   dsa_exit code with the error printed; release with dsa_gsm8k_side_release(). */
int dsa_gsm8k_side_load(const char *path, struct dsa_gsm8k_side *side);
void dsa_gsm8k_side_release(struct dsa_gsm8k_side *side);

struct dsa_cmp_side;
/*
 * The identity hook of `dsa-eval compare` (stats/compare.c dsa_cmp_identity_hooks[]): compares
 * the first run of each side and returns compare's "identity" object (docs/compare.md) with
 * the details above and "report", the text block compare prints under its "outputs" line.
 * Runs that are not comparable (reason printed) give {"identical": false, "comparable":
 * false, "error": ...}. New reference, or NULL when a side has no runs.
 */
json_t *dsa_gsm8k_compare_identity(const struct dsa_cmp_side *base,
                                   const struct dsa_cmp_side *cand);

/* Two-sided exact McNemar p-value for b and c discordant pairs. */
double dsa_gsm8k_mcnemar_p(unsigned b, unsigned c);

#endif
