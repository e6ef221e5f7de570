/*
 * Coverage studies of the comparison CIs (bench/bench_coverage.c and the reduced unit test):
 * simulate many paired comparisons under a known truth and count how often each 95 % CI
 * contains it. Model (docs/compare.md "Coverage model"): score of sample i in run r of an arm
 *     y = alpha_i + [cand: delta + gamma_i] + beta_r + eps_ir
 * alpha: sample difficulty (shared by both arms: the pairing), gamma: per-sample effect of
 * the change (mean 0), beta: a shift shared by every sample of one run (run-to-run variance),
 * eps: per-sample per-run noise. The truth is delta: the mean difference over the
 * super-population of samples and runs. Binary scenarios draw y ~ Bernoulli(p_i) with
 * p_i ~ Beta(2, 1) in both arms (an A/A comparison: truth 0).
 * Ownership: nothing is retained.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_STATS_COVERAGE_H
#define DSA_STATS_COVERAGE_H

#include <stddef.h>
#include <stdint.h>

#include "stats/stats.h"

struct dsa_cov_scenario {
    const char *name;
    int binary; /* 1: Bernoulli A/A (delta, sd_* ignored) */
    size_t n, runs;
    double delta, sd_sample, sd_het, sd_noise, sd_run;
};

struct dsa_cov_result {
    size_t reps;
    /* how many CIs contained the truth */
    size_t pct;       /* pooled (avg-first) paired percentile bootstrap */
    size_t bca;       /* pooled BCa (computed when `bca` was asked) */
    size_t clt;       /* D +- z SE_CLT */
    size_t run1;      /* run 1 vs run 1 alone (single-run CI); = pct when runs == 1 */
    size_t two_level; /* two-level (samples x runs) bootstrap, runs >= 2 */
    size_t rule;      /* what compare recommends: two-level if the runs disagree (F-test
                         p < 0.01 on either side), else pooled percentile */
    size_t flagged;   /* comparisons where the runs disagreed */
    double width_pct, width_two_level; /* mean widths */
};

/* Runs `reps` simulated comparisons with B resamples each, seeded by `seed` (data) and the
   per-comparison stream seeds derived from it. */
void dsa_stats_coverage(const struct dsa_cov_scenario *sc, size_t reps, long B, int bca,
                        uint64_t seed, struct dsa_cov_result *out);

#endif
