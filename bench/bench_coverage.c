/*
 * bench_coverage: coverage study of the comparison CIs (docs/compare.md "Coverage model"). For each
 * scenario, simulate REPS paired comparisons with a known truth (stats/coverage.h) and report how
 * often each 95 % CI contains it, with the binomial standard error of that rate. The methods we
 * recommend must be within 95 +- 1.5 %; the run-variance scenarios show where single-run and
 * sample-only CIs undercover. "as advised" is what `compare` tells the reader to use: the
 * two-level CI when the runs disagree (F-test p < 0.01 on either side), else the pooled
 * percentile CI; "flagged" is how often the runs were found to disagree.
 *
 *   bench_coverage [--reps 2000] [--resamples 2000] [--seed 1]
 *
 * Results and the command: bench/RESULTS.md, "## Statistics".
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"
#include "stats/coverage.h"

static void pct(size_t k, size_t n)
{
    double p = (double)k / (double)n;
    printf("  %5.1f%% (±%.1f)", 100 * p, 100 * sqrt(p * (1 - p) / (double)n));
}

int main(int argc, char **argv)
{
    long reps = 2000, B = 2000, seed = 1;
    bench_args(argc, argv, "bench_coverage [--reps 2000] [--resamples 2000] [--seed 1]",
               (const struct bench_arg[]){
                   {"reps", &reps}, {"resamples", &B}, {"seed", &seed}, {NULL, NULL}});
    /*                 name               bin n   R  delta  sd_a  sd_het sd_eps sd_run */
    const struct dsa_cov_scenario sc[] = {
        {"A/A binary, 1 run", 1, 200, 1, 0, 0, 0, 0, 0},
        {"A/A binary, 3 runs", 1, 200, 3, 0, 0, 0, 0, 0},
        {"shift 0.03, 1 run", 0, 200, 1, 0.03, 0.15, 0.15, 0.15, 0},
        {"shift 0.03, 3 runs", 0, 200, 3, 0.03, 0.15, 0.15, 0.15, 0},
        {"shift 0.03, n=30", 0, 30, 1, 0.03, 0.15, 0.15, 0.15, 0},
        {"run var, 1 run", 0, 200, 1, 0.03, 0.15, 0.15, 0.15, 0.02},
        {"run var, 3 runs", 0, 200, 3, 0.03, 0.15, 0.15, 0.15, 0.02},
        {"run var, 5 runs", 0, 200, 5, 0.03, 0.15, 0.15, 0.15, 0.02},
        {"run var, 8 runs", 0, 200, 8, 0.03, 0.15, 0.15, 0.15, 0.02},
        {"big run var, 3 runs", 0, 200, 3, 0.03, 0.15, 0.15, 0.15, 0.05},
    };
    printf("coverage of 95%% CIs, %ld comparisons per scenario, B=%ld, seed %ld "
           "(± = binomial SE)\n",
           reps, B, seed);
    printf("%-20s %4s %2s %14s %14s %14s %14s %14s %14s %8s\n", "scenario", "n", "R", "pooled pct",
           "pooled BCa", "CLT", "run 1 alone", "two-level", "as advised", "flagged");
    for (size_t k = 0; k < sizeof sc / sizeof sc[0]; k++) {
        struct dsa_cov_result r;
        clock_t t0 = clock();
        int bca = sc[k].runs == 1;
        dsa_stats_coverage(&sc[k], (size_t)reps, B, bca, (uint64_t)seed, &r);
        printf("%-20s %4zu %2zu", sc[k].name, sc[k].n, sc[k].runs);
        pct(r.pct, r.reps);
        if (bca)
            pct(r.bca, r.reps);
        else
            printf(" %14s", "-");
        pct(r.clt, r.reps);
        pct(r.run1, r.reps);
        if (sc[k].runs >= 2)
            pct(r.two_level, r.reps);
        else
            printf(" %14s", "-");
        pct(r.rule, r.reps);
        printf(" %7.1f%%  [%.1f s]\n", 100.0 * (double)r.flagged / (double)r.reps,
               (double)(clock() - t0) / CLOCKS_PER_SEC);
        fflush(stdout);
    }
    return 0;
}
