/*
 * Coverage simulation (see coverage.h).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>

#include "stats/coverage.h"
#include "util/buf.h"

static void simulate(const struct dsa_cov_scenario *sc, gsl_rng *g, double *B, double *C)
{
    size_t n = sc->n, R = sc->runs;
    if (sc->binary) {
        for (size_t i = 0; i < n; i++) {
            double p = gsl_ran_beta(g, 2.0, 1.0);
            for (size_t r = 0; r < R; r++) {
                B[r * n + i] = gsl_rng_uniform(g) < p;
                C[r * n + i] = gsl_rng_uniform(g) < p;
            }
        }
        return;
    }
    double *bb = dsa_xmalloc(R * sizeof *bb), *bc = dsa_xmalloc(R * sizeof *bc);
    for (size_t r = 0; r < R; r++) {
        bb[r] = sc->sd_run > 0 ? gsl_ran_gaussian(g, sc->sd_run) : 0;
        bc[r] = sc->sd_run > 0 ? gsl_ran_gaussian(g, sc->sd_run) : 0;
    }
    for (size_t i = 0; i < n; i++) {
        double a = 0.6 + gsl_ran_gaussian(g, sc->sd_sample);
        double h = sc->sd_het > 0 ? gsl_ran_gaussian(g, sc->sd_het) : 0;
        for (size_t r = 0; r < R; r++) {
            B[r * n + i] = a + bb[r] + gsl_ran_gaussian(g, sc->sd_noise);
            C[r * n + i] = a + sc->delta + h + bc[r] + gsl_ran_gaussian(g, sc->sd_noise);
        }
    }
    free(bb);
    free(bc);
}

static int covers(double lo, double hi, double truth)
{
    /* a degenerate interval [D, D] covers only an exact hit */
    return lo <= truth && truth <= hi;
}

void dsa_stats_coverage(const struct dsa_cov_scenario *sc, size_t reps, long B, int bca,
                        uint64_t seed, struct dsa_cov_result *out)
{
    memset(out, 0, sizeof *out);
    out->reps = reps;
    size_t n = sc->n, R = sc->runs;
    double *Bm = dsa_xmalloc(n * R * sizeof *Bm), *Cm = dsa_xmalloc(n * R * sizeof *Cm);
    gsl_rng *g = dsa_stats_rng_new(DSA_RNG_MT19937, (uint32_t)(seed ? seed : 1));
    struct dsa_boot_cfg cfg = DSA_BOOT_CFG_INIT;
    cfg.resamples = B;
    cfg.seed = seed;
    double truth = sc->binary ? 0 : sc->delta;
    for (size_t k = 0; k < reps; k++) {
        simulate(sc, g, Bm, Cm);
        struct dsa_paired_input in = {n, R, R, Bm, Cm, NULL, 0};
        char label[96];
        snprintf(label, sizeof label, "coverage/%s/%zu", sc->name, k);
        uint32_t s1 = dsa_stats_stream_seed(seed, label);
        uint32_t s2 = dsa_stats_stream_seed(seed ^ 0x5bd1e995u, label);
        struct dsa_paired_result r;
        cfg.ci = DSA_CI_PERCENTILE;
        dsa_stats_paired(&in, &cfg, s1, s2, R >= 2 ? DSA_PAIRED_TWO_LEVEL_ALWAYS : 0, &r);
        out->pct += covers(r.lo, r.hi, truth);
        out->width_pct += r.hi - r.lo;
        double z = 1.959963984540054;
        out->clt += covers(r.diff - z * r.se, r.diff + z * r.se, truth);
        if (R >= 2 && r.n_runs) {
            out->run1 += covers(r.runs[0].lo, r.runs[0].hi, truth);
            out->two_level += covers(r.tl_lo, r.tl_hi, truth);
            out->flagged += r.runs_disagree;
            out->rule +=
                r.runs_disagree ? covers(r.tl_lo, r.tl_hi, truth) : covers(r.lo, r.hi, truth);
            out->width_two_level += r.tl_hi - r.tl_lo;
        } else {
            out->run1 += covers(r.lo, r.hi, truth);
            out->rule += covers(r.lo, r.hi, truth);
        }
        dsa_paired_result_release(&r);
        if (bca) {
            cfg.ci = DSA_CI_BCA;
            dsa_stats_paired(&in, &cfg, s1, s2, DSA_PAIRED_NO_TWO_LEVEL, &r);
            out->bca += covers(r.lo, r.hi, truth);
            dsa_paired_result_release(&r);
        }
    }
    out->width_pct /= (double)reps;
    out->width_two_level /= (double)reps;
    gsl_rng_free(g);
    free(Bm);
    free(Cm);
}
