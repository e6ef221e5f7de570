/* Unit tests of src/stats/stats.c: the test vectors of docs/compare.md "Test vectors" (TV1..TV7 and
 * the RNG smoke vectors), seed-free bands, and a reduced coverage study. Tolerances
 * (docs/compare.md "Test vectors"): deterministic values 1e-9 (or the digits the docs print),
 * seeded GSL vectors 1e-12, seed-free checks the atom/order-statistic bands of the docs.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <gsl/gsl_sort.h>

#include "stats/coverage.h"
#include "stats/stats.h"

#define assert_near(got, want, tol)                                                                \
    do {                                                                                           \
        double g_ = (got), w_ = (want);                                                            \
        if (!(fabs(g_ - w_) <= (tol))) {                                                           \
            print_error("%s = %.17g, want %.17g (tol %g)\n", #got, g_, w_, (double)(tol));         \
            fail();                                                                                \
        }                                                                                          \
    } while (0)

/* TV1: 524 both right, 28 base-only right, 41 cand-only right, 207 both wrong (n = 800) */
static void tv1_data(double *base, double *cand)
{
    size_t k = 0;
    for (int i = 0; i < 524; i++, k++)
        base[k] = 1, cand[k] = 1;
    for (int i = 0; i < 28; i++, k++)
        base[k] = 1, cand[k] = 0;
    for (int i = 0; i < 41; i++, k++)
        base[k] = 0, cand[k] = 1;
    for (int i = 0; i < 207; i++, k++)
        base[k] = 0, cand[k] = 0;
}

static struct dsa_boot_cfg cfg_of(enum dsa_rng_kind rng, enum dsa_ci_method ci)
{
    struct dsa_boot_cfg c = DSA_BOOT_CFG_INIT;
    c.rng = rng;
    c.ci = ci;
    return c;
}

static void paired1(const double *base, const double *cand, size_t n, enum dsa_rng_kind rng,
                    enum dsa_ci_method ci, uint32_t seed, struct dsa_paired_result *res)
{
    struct dsa_paired_input in = {n, 1, 1, base, cand, NULL, 0};
    struct dsa_boot_cfg cfg = cfg_of(rng, ci);
    assert_int_equal(dsa_stats_paired(&in, &cfg, seed, seed, 0, res), 0);
}

static void test_rng_smoke(void **state)
{
    (void)state;
    static const unsigned long mt[10] = {299, 637, 760, 146, 585, 623, 478, 477, 124, 356};
    static const unsigned long ta[10] = {636, 495, 595, 797, 481, 399, 18, 226, 117, 391};
    gsl_rng *r = dsa_stats_rng_new(DSA_RNG_MT19937, 42);
    assert_int_equal(gsl_rng_get(r), 1608637542UL);
    gsl_rng_set(r, 42);
    for (int i = 0; i < 10; i++)
        assert_int_equal(gsl_rng_uniform_int(r, 800), mt[i]);
    gsl_rng_set(r, 0);
    assert_int_equal(gsl_rng_get(r), 4293858116UL);
    gsl_rng_free(r);
    r = dsa_stats_rng_new(DSA_RNG_TAUS2, 42);
    assert_int_equal(gsl_rng_get(r), 3414959125UL);
    gsl_rng_set(r, 42);
    for (int i = 0; i < 10; i++)
        assert_int_equal(gsl_rng_uniform_int(r, 800), ta[i]);
    gsl_rng_free(r);
    assert_int_equal(dsa_stats_stream_seed(1, "main..cand/<=8K"), 3811829139u);
    assert_int_equal(dsa_stats_stream_seed(1, "main..cand/256K"), 2007255372u);
    assert_int_equal(dsa_stats_stream_seed(42, "main..cand/<=8K"), 2280725362u);
}

/* the taus2 stream made in lanes and its division by multiplication give GSL's integers, draw
   by draw, for ranges that exercise every scale (d = 1 included), and hand the state back */
static void test_draws_match_gsl(void **state)
{
    (void)state;
    static const uint32_t ms[] = {1,    2,     3,          7,           800,         6400,
                                  6401, 65537, 2147483647, 2147483649u, 4294967294u, 4294967295u};
    for (int kind = 0; kind < 2; kind++)
        for (size_t t = 0; t < sizeof ms / sizeof *ms; t++) {
            enum dsa_rng_kind k = kind ? DSA_RNG_MT19937 : DSA_RNG_TAUS2;
            gsl_rng *a = dsa_stats_rng_new(k, 1000u + (uint32_t)t);
            gsl_rng *b = dsa_stats_rng_new(k, 1000u + (uint32_t)t);
            struct dsa_stats_draws d;
            dsa_stats_draws_init(&d, a);
            assert_int_equal(d.inline_taus, kind == 0);
            double sc = dsa_stats_draw_scale(ms[t]);
            for (int i = 0; i < 20000; i++)
                assert_int_equal(dsa_stats_draw(&d, ms[t], sc), gsl_rng_uniform_int(b, ms[t]));
            dsa_stats_draws_release(&d);
            assert_int_equal(gsl_rng_get(a), gsl_rng_get(b));
            gsl_rng_free(a);
            gsl_rng_free(b);
        }
    /* the state handed back at every edge of a lane and of a block of lanes (m = 1: each draw
       is one word, but for the word 0xffffffff once in 2^32) */
    static const size_t used[] = {0,
                                  1,
                                  DSA_STATS_LANE_DRAWS - 1,
                                  DSA_STATS_LANE_DRAWS,
                                  DSA_STATS_LANE_DRAWS + 1,
                                  DSA_STATS_LANES * DSA_STATS_LANE_DRAWS - 1,
                                  DSA_STATS_LANES * DSA_STATS_LANE_DRAWS,
                                  DSA_STATS_LANES * DSA_STATS_LANE_DRAWS + 1,
                                  3 * DSA_STATS_LANES * DSA_STATS_LANE_DRAWS + 7};
    for (size_t t = 0; t < sizeof used / sizeof *used; t++) {
        gsl_rng *a = dsa_stats_rng_new(DSA_RNG_TAUS2, 77),
                *b = dsa_stats_rng_new(DSA_RNG_TAUS2, 77);
        struct dsa_stats_draws d;
        dsa_stats_draws_init(&d, a);
        for (size_t i = 0; i < used[t]; i++) {
            uint32_t x = (uint32_t)gsl_rng_get(b);
            assert_int_equal(dsa_stats_draw(&d, 1, dsa_stats_draw_scale(1)), 0);
            assert_true(x != 0xffffffffu);
        }
        dsa_stats_draws_release(&d);
        for (int i = 0; i < 3; i++)
            assert_int_equal(gsl_rng_get(a), gsl_rng_get(b));
        gsl_rng_free(a);
        gsl_rng_free(b);
    }
    /* the division alone, at the edges of the 32-bit words: floor(x / d) */
    static const uint32_t xs[] = {0, 1, 5368708, 5368709, 5368710, 4294967294u, 4294967295u};
    for (size_t t = 0; t < sizeof ms / sizeof *ms; t++) {
        uint32_t dv = 0xffffffffu / ms[t];
        for (size_t i = 0; i < sizeof xs / sizeof *xs; i++)
            assert_int_equal(dsa_stats_draw_div(xs[i], dsa_stats_draw_scale(ms[t])), xs[i] / dv);
    }
    /* and where the product comes closest to an integer: x = k d - 1, k d, k d + d - 1 for the
       first and last 3000 k of each range (the rounding would show there first) */
    static const uint32_t more[] = {1,     2,     3,          5,           100,        799,
                                    800,   801,   2400,       6400,        12800,      1000003,
                                    65536, 65537, 2147483647, 2147483648u, 4294967295u};
    for (size_t t = 0; t < sizeof more / sizeof *more; t++) {
        uint64_t dv = 0xffffffffu / more[t];
        double r = dsa_stats_draw_scale(more[t]);
        uint64_t top = 0xffffffffu / dv; /* the largest k with k d in range */
        for (uint64_t k = 0; k <= top; k++) {
            if (k == 3000 && top > 6000)
                k = top - 3000;
            uint64_t at[3] = {k * dv - 1, k * dv, k * dv + dv - 1};
            for (int e = 0; e < 3; e++)
                if (at[e] <= 0xffffffffu)
                    assert_int_equal(dsa_stats_draw_div((uint32_t)at[e], r), at[e] / dv);
        }
    }
}

static void test_tv1_deterministic(void **state)
{
    (void)state;
    double base[800], cand[800];
    tv1_data(base, cand);
    struct dsa_paired_result r;
    paired1(base, cand, 800, DSA_RNG_TAUS2, DSA_CI_PERCENTILE, 42, &r);
    assert_near(r.base_mean, 0.69, 1e-12);
    assert_near(r.cand_mean, 0.70625, 1e-12);
    assert_near(r.diff, 0.01625, 1e-12);
    assert_near(r.sd_d, 0.2934170316, 1e-9);
    assert_near(r.se, 0.0103738586, 1e-9);
    assert_near(r.diff - 1.959963984540054 * r.se, -0.0040823893, 1e-9);
    assert_near(r.rho, 0.796026, 1e-6);
    assert_near(r.mde80, 0.0290632489, 1e-9);
    assert_true(r.binary);
    assert_int_equal(r.mc_b, 28);
    assert_int_equal(r.mc_c, 41);
    assert_near(r.mc_p, 0.1480321807, 1e-9);
    assert_near(dsa_stats_mcnemar_exact(41, 28), 0.1480321807, 1e-9);
    assert_near(dsa_stats_mcnemar_exact(0, 0), 1.0, 0);
    assert_false(r.small_n);
    assert_int_equal(r.n_runs, 0);
    dsa_paired_result_release(&r);
}

static void test_tv1_seeded(void **state)
{
    (void)state;
    double base[800], cand[800];
    tv1_data(base, cand);
    struct dsa_paired_result r;
    paired1(base, cand, 800, DSA_RNG_TAUS2, DSA_CI_PERCENTILE, 42, &r);
    assert_near(r.lo, -0.00375, 1e-12);
    assert_near(r.hi, 0.03750, 1e-12);
    assert_near(r.boot_sd, 0.0104649440, 1e-10);
    dsa_paired_result_release(&r);
    paired1(base, cand, 800, DSA_RNG_TAUS2, DSA_CI_BCA, 42, &r);
    assert_near(r.lo, -0.00375, 1e-12);
    assert_near(r.hi, 0.03750, 1e-12);
    dsa_paired_result_release(&r);
    paired1(base, cand, 800, DSA_RNG_MT19937, DSA_CI_PERCENTILE, 42, &r);
    assert_near(r.lo, -0.00375, 1e-12);
    assert_near(r.hi, 0.03625, 1e-12);
    dsa_paired_result_release(&r);
    paired1(base, cand, 800, DSA_RNG_MT19937, DSA_CI_BCA, 42, &r);
    assert_near(r.lo, -0.00375, 1e-12);
    assert_near(r.hi, 0.03750, 1e-12);
    dsa_paired_result_release(&r);
}

/* seed-free band: each end within one atom (1/800, spec: ±0.0013) of the ideal bootstrap
   [-0.00375, +0.03625], for both methods and generators over a few seeds */
static void test_tv1_seed_free(void **state)
{
    (void)state;
    double base[800], cand[800];
    tv1_data(base, cand);
    for (uint32_t seed = 1; seed <= 6; seed++)
        for (int m = 0; m < 2; m++) {
            struct dsa_paired_result r;
            paired1(base, cand, 800, seed % 2 ? DSA_RNG_TAUS2 : DSA_RNG_MT19937,
                    m ? DSA_CI_BCA : DSA_CI_PERCENTILE, seed * 7919u, &r);
            assert_near(r.lo, -0.00375, 0.0013);
            assert_near(r.hi, 0.03625, 0.0013);
            dsa_paired_result_release(&r);
        }
}

static const double tv2_d[10] = {0.12, -0.05, 0.30, 0.00, 0.45, -0.20, 0.08, 0.25, -0.10, 0.15};

static void test_tv2(void **state)
{
    (void)state;
    double zero[10] = {0};
    struct dsa_paired_result r;
    paired1(zero, tv2_d, 10, DSA_RNG_TAUS2, DSA_CI_PERCENTILE, 42, &r);
    assert_near(r.diff, 0.1, 1e-12);
    assert_near(r.sd_d, 0.1974279053, 1e-9);
    assert_near(r.se, 0.0624321854, 1e-9);
    assert_near(r.diff + 1.959963984540054 * r.se, 0.2223648349, 1e-9);
    assert_true(r.small_n);
    assert_false(r.binary);
    assert_near(r.lo, -0.014, 1e-12);
    assert_near(r.hi, 0.215, 1e-12);
    dsa_paired_result_release(&r);
    paired1(zero, tv2_d, 10, DSA_RNG_TAUS2, DSA_CI_BCA, 42, &r);
    assert_near(r.lo, -0.009, 1e-12);
    assert_near(r.hi, 0.221, 1e-12);
    dsa_paired_result_release(&r);
    paired1(zero, tv2_d, 10, DSA_RNG_MT19937, DSA_CI_PERCENTILE, 42, &r);
    assert_near(r.lo, -0.010, 1e-12);
    assert_near(r.hi, 0.217025, 1e-12);
    dsa_paired_result_release(&r);
    paired1(zero, tv2_d, 10, DSA_RNG_MT19937, DSA_CI_BCA, 42, &r);
    assert_near(r.lo, -0.004, 1e-12);
    assert_near(r.hi, 0.2255668229, 1e-10);
    dsa_paired_result_release(&r);
    /* ideal BCa acceleration a = 0.012032 */
    assert_near(dsa_stats_jackknife_accel_mean(tv2_d, 10), 0.012032, 1e-6);
    /* seed-free bands around the ideal: percentile [-0.014, 0.218] ±0.006, BCa [-0.010,
       0.222] ±0.008 */
    for (uint32_t seed = 1; seed <= 20; seed++) {
        paired1(zero, tv2_d, 10, DSA_RNG_TAUS2, DSA_CI_PERCENTILE, seed, &r);
        assert_near(r.lo, -0.014, 0.006);
        assert_near(r.hi, 0.218, 0.006);
        dsa_paired_result_release(&r);
        paired1(zero, tv2_d, 10, DSA_RNG_TAUS2, DSA_CI_BCA, seed, &r);
        assert_near(r.lo, -0.010, 0.008);
        assert_near(r.hi, 0.222, 0.008);
        dsa_paired_result_release(&r);
    }
}

static void test_tv3_median_ratio(void **state)
{
    (void)state;
    static const double base[15] = {812, 1040, 955, 1203, 760,  890, 1105, 998,
                                    870, 1320, 940, 1015, 1150, 905, 980};
    static const double cand[15] = {790, 1001, 960, 1150, 741,  872, 1090, 950,
                                    861, 1270, 925, 1020, 1108, 880, 951};
    struct dsa_boot_cfg cfg = DSA_BOOT_CFG_INIT;
    double med, lo, hi;
    assert_int_equal(dsa_stats_median_ratio(base, cand, 15, &cfg, 42, &med, &lo, &hi), 0);
    assert_near(med, 0.9729064039, 1e-9);
    assert_near(lo, 0.963478, 1e-6);
    assert_near(hi, 0.984043, 1e-6);
    cfg.rng = DSA_RNG_MT19937;
    assert_int_equal(dsa_stats_median_ratio(base, cand, 15, &cfg, 42, &med, &lo, &hi), 0);
    assert_near(lo, 0.963478, 1e-6);
    assert_near(hi, 0.986425, 1e-6);
    /* seed-free: each end within one adjacent order statistic of [r(4), r(12)] */
    double r[15];
    for (int t = 0; t < 15; t++)
        r[t] = cand[t] / base[t];
    gsl_sort(r, 1, 15);
    cfg.rng = DSA_RNG_TAUS2;
    for (uint32_t seed = 1; seed <= 10; seed++) {
        dsa_stats_median_ratio(base, cand, 15, &cfg, seed, &med, &lo, &hi);
        assert_true(lo >= r[2] - 1e-12 && lo <= r[4] + 1e-12);
        assert_true(hi >= r[10] - 1e-12 && hi <= r[12] + 1e-12);
    }
    assert_int_equal(dsa_stats_median_ratio(base, cand, 0, &cfg, 1, &med, &lo, &hi), -1);
}

static void test_tv4_permutation(void **state)
{
    (void)state;
    struct dsa_perm_result p;
    const double b4[4] = {0.700, 0.705, 0.698, 0.702}, c4[4] = {0.710, 0.712, 0.709, 0.715};
    assert_int_equal(dsa_stats_perm_exact(b4, 4, c4, 4, &p), 0);
    assert_near(p.t_obs, 0.010250, 1e-12);
    assert_int_equal(p.n_ge, 1);
    assert_int_equal(p.n_le, 70);
    assert_int_equal(p.k, 2);
    assert_int_equal(p.n_total, 70);
    assert_near(p.p, 2.0 / 70, 1e-12);
    assert_false(p.cannot_reach_5pct);
    const double b4o[4] = {0.700, 0.705, 0.698, 0.711};
    dsa_stats_perm_exact(b4o, 4, c4, 4, &p);
    assert_near(p.t_obs, 0.008, 1e-12);
    assert_int_equal(p.n_ge, 3);
    assert_int_equal(p.n_le, 68);
    assert_near(p.p, 6.0 / 70, 1e-12);
    const double b3[3] = {0.700, 0.705, 0.698}, c3[3] = {0.710, 0.712, 0.709};
    dsa_stats_perm_exact(b3, 3, c3, 3, &p);
    assert_int_equal(p.n_ge, 1);
    assert_int_equal(p.n_le, 20);
    assert_near(p.p, 0.1, 1e-12);
    assert_true(p.cannot_reach_5pct);
    const double b5[5] = {0.70, 0.701, 0.702, 0.703, 0.704};
    const double c5[5] = {0.71, 0.711, 0.712, 0.713, 0.714};
    dsa_stats_perm_exact(b5, 5, c5, 5, &p);
    assert_near(p.t_obs, 0.01, 1e-12);
    assert_int_equal(p.n_total, 252);
    assert_near(p.p, 2.0 / 252, 1e-12);
    assert_int_equal(dsa_stats_perm_exact(b5, 1, c5, 5, &p), -1);
}

/* TV5: rows = samples, columns = runs; the input wants runs x samples */
static const int tv5_base[12][3] = {{1, 1, 1}, {1, 1, 0}, {0, 0, 0}, {1, 1, 1},
                                    {0, 1, 0}, {1, 1, 1}, {1, 0, 1}, {0, 0, 0},
                                    {1, 1, 1}, {0, 0, 1}, {1, 1, 1}, {1, 1, 0}};
static const int tv5_cand[12][3] = {{1, 1, 0}, {1, 1, 0}, {0, 1, 0}, {1, 1, 1},
                                    {1, 1, 0}, {1, 1, 0}, {1, 1, 0}, {0, 0, 0},
                                    {1, 1, 1}, {0, 1, 0}, {1, 1, 0}, {1, 1, 1}};

static void test_tv5_runs(void **state)
{
    (void)state;
    double B[36], C[36];
    for (int i = 0; i < 12; i++)
        for (int r = 0; r < 3; r++) {
            B[r * 12 + i] = tv5_base[i][r];
            C[r * 12 + i] = tv5_cand[i][r];
        }
    struct dsa_paired_input in = {12, 3, 3, B, C, NULL, 0};
    struct dsa_boot_cfg cfg = DSA_BOOT_CFG_INIT;
    struct dsa_paired_result r;
    assert_int_equal(dsa_stats_paired(&in, &cfg, 42, 42, 0, &r), 0);
    assert_int_equal(r.n_runs, 3);
    const double bacc[3] = {0.666667, 0.666667, 0.583333}, cacc[3] = {0.75, 0.916667, 0.25};
    const double dr[3] = {0.083333, 0.25, -0.333333};
    for (int q = 0; q < 3; q++) {
        assert_near(r.runs[q].base_mean, bacc[q], 1e-6);
        assert_near(r.runs[q].cand_mean, cacc[q], 1e-6);
        assert_near(r.runs[q].diff, dr[q], 1e-6);
        assert_int_equal(r.runs[q].n, 12);
    }
    assert_near(r.diff, 0, 1e-15);
    assert_near(r.se, 0.0710669055, 1e-9);
    assert_near(r.lo, -0.138889, 1e-6);
    assert_near(r.hi, 0.138889, 1e-6);
    assert_near(r.lo, -5.0 / 36, 1e-12);
    assert_near(r.f_base, 0.186441, 1e-6);
    assert_near(r.p_base, 0.831, 1e-3);
    assert_near(r.f_cand, 13.0, 1e-9);
    assert_near(r.p_cand, 0.000187, 1e-6);
    assert_true(r.runs_disagree);
    assert_true(r.has_two_level);
    assert_int_equal(r.two_level_n, 12);
    assert_near(r.tl_lo, -0.388889, 1e-6);
    assert_near(r.tl_hi, 0.361111, 1e-6);
    assert_near(r.tl_lo, -14.0 / 36, 1e-12);
    assert_near(r.tl_hi, 13.0 / 36, 1e-12);
    assert_true(r.has_perm);
    assert_int_equal(r.perm.n_total, 20);
    assert_true(r.perm.cannot_reach_5pct);
    assert_false(r.binary);
    dsa_paired_result_release(&r);
    /* F-test on its own, cand arm */
    double F, p;
    assert_int_equal(dsa_stats_run_ftest(C, 12, 3, &F, &p), 0);
    assert_near(F, 13.0, 1e-9);
    assert_int_equal(dsa_stats_run_ftest(C, 12, 1, &F, &p), -1);
}

static void test_tv6_clustered(void **state)
{
    (void)state;
    const double s[10] = {1, 1, 0, 1, 0, 0, 0, 0, 1, 1};
    const size_t cl[10] = {0, 0, 0, 1, 1, 2, 2, 2, 2, 3};
    double se[3];
    assert_int_equal(dsa_stats_se_clustered(s, cl, 10, 4, se), 0);
    assert_near(se[0], 0.1333333333, 1e-9);
    assert_near(se[1], 0.1224744871, 1e-9);
    assert_near(se[2], 0.1414213562, 1e-9);
}

static void test_tv7_power(void **state)
{
    (void)state;
    const double rho[3] = {0, 0.5, 0.8}, want[3] = {4360.49, 2180.24, 872.10};
    const double ceil_want[3] = {4361, 2181, 873};
    for (int k = 0; k < 3; k++) {
        double n = dsa_stats_power_n(0.5 * (1 - rho[k]), 0.03, 0.95, 0.8);
        assert_near(n, want[k], 0.006);
        assert_near(ceil(n), ceil_want[k], 0);
    }
    /* MDE80 = 2.8016 SE, and the generic path agrees with the constant */
    assert_near(dsa_stats_mde(1.0, 0.95, 0.8), 2.8015852181, 1e-10);
    assert_near(dsa_stats_mde(1.0, 0.950000001, 0.8), 2.8015852181, 1e-7);
}

/* Degenerate and tiny inputs: n < 2 -> n/a; all d equal -> [D, D] */
static void test_edge_cases(void **state)
{
    (void)state;
    struct dsa_paired_result r;
    const double one[1] = {1}, zero[1] = {0};
    paired1(zero, one, 1, DSA_RNG_TAUS2, DSA_CI_PERCENTILE, 1, &r);
    assert_true(r.na);
    assert_near(r.diff, 1, 0);
    dsa_paired_result_release(&r);
    const double b[5] = {0, 0, 0, 0, 0}, c[5] = {0.5, 0.5, 0.5, 0.5, 0.5};
    paired1(b, c, 5, DSA_RNG_TAUS2, DSA_CI_BCA, 1, &r);
    assert_true(r.degenerate);
    assert_near(r.lo, 0.5, 0);
    assert_near(r.hi, 0.5, 0);
    dsa_paired_result_release(&r);
    /* a sample that finished no run of an arm breaks the contract */
    const double bn[2] = {NAN, 1}, cn[2] = {1, 1};
    struct dsa_paired_input in = {2, 1, 1, bn, cn, NULL, 0};
    struct dsa_boot_cfg cfg = DSA_BOOT_CFG_INIT;
    assert_int_equal(dsa_stats_paired(&in, &cfg, 1, 1, 0, &r), -1);
}

/* Results depend only on the bin's own stream: stratified "all" reproduces the per-stratum
   draw order, and identical inputs give identical replicates */
static void test_reproducible(void **state)
{
    (void)state;
    double base[800], cand[800];
    tv1_data(base, cand);
    struct dsa_paired_result a, b;
    paired1(base, cand, 800, DSA_RNG_TAUS2, DSA_CI_BCA, 99, &a);
    paired1(base, cand, 800, DSA_RNG_TAUS2, DSA_CI_BCA, 99, &b);
    assert_memory_equal(&a.lo, &b.lo, sizeof a.lo);
    assert_memory_equal(&a.hi, &b.hi, sizeof a.hi);
    /* one stratum given explicitly equals no stratification */
    size_t st[800] = {0};
    struct dsa_paired_input in = {800, 1, 1, base, cand, st, 1};
    struct dsa_boot_cfg cfg = cfg_of(DSA_RNG_TAUS2, DSA_CI_BCA);
    struct dsa_paired_result c;
    dsa_stats_paired(&in, &cfg, 99, 99, 0, &c);
    assert_memory_equal(&a.lo, &c.lo, sizeof a.lo);
    assert_memory_equal(&a.hi, &c.hi, sizeof a.hi);
    dsa_paired_result_release(&a);
    dsa_paired_result_release(&b);
    dsa_paired_result_release(&c);
}

/*
 * Exact parity with scipy.stats.bootstrap (docs/compare.md "Test vectors"): scipy with
 * random_state=s draws from the legacy MT19937 (the same stream as gsl_rng_mt19937 seeded s != 0)
 * and maps each 32-bit draw to an index by masked rejection (u & 1023 until < 800). With those
 * indices the ends of our percentile and BCa functions must equal scipy's for TV1 (B = 9999,
 * paired). The scipy values are checked in (scipy 1.10.1) and, when $DSA_PYTHON has scipy,
 * recomputed here.
 */
static void scipy_style_ci(uint32_t seed, int bca, double *lo, double *hi)
{
    double base[800], cand[800], d[800];
    tv1_data(base, cand);
    for (int i = 0; i < 800; i++)
        d[i] = cand[i] - base[i];
    enum { B = 9999 };
    static double reps[B];
    gsl_rng *r = dsa_stats_rng_new(DSA_RNG_MT19937, seed);
    for (int b = 0; b < B; b++) {
        double s = 0;
        for (int j = 0; j < 800; j++) {
            unsigned long u;
            while ((u = gsl_rng_get(r) & 1023UL) > 799)
                ;
            s += d[u];
        }
        reps[b] = s / 800;
    }
    gsl_rng_free(r);
    gsl_sort(reps, 1, B);
    if (bca)
        dsa_stats_ci_bca(reps, B, 13.0 / 800, dsa_stats_jackknife_accel_mean(d, 800), 0.95, lo, hi);
    else
        dsa_stats_ci_percentile(reps, B, 0.95, lo, hi);
}

static void test_scipy_parity(void **state)
{
    (void)state;
    /* seed, method, scipy 1.10.1 low, high */
    static const struct {
        uint32_t seed;
        int bca;
        double lo, hi;
    } want[] = {
        {1, 0, -0.00375, 0.03625}, {1, 1, -0.00375, 0.03625},     {7, 0, -0.00375, 0.03625},
        {7, 1, -0.005, 0.03625},   {12345, 0, -0.00375, 0.03625}, {12345, 1, -0.00375, 0.03625},
    };
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        double lo, hi;
        scipy_style_ci(want[k].seed, want[k].bca, &lo, &hi);
        assert_near(lo, want[k].lo, 1e-15);
        assert_near(hi, want[k].hi, 1e-15);
    }
    const char *py = getenv("DSA_PYTHON");
    if (!py || !*py)
        return;
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "%s -c \"import numpy as np; from scipy import stats\n"
             "b = np.array([1]*552+[0]*248, float); c = np.array([1]*524+[0]*28+[1]*41+[0]*207, "
             "float)\n"
             "for s in (3, 7, 99):\n"
             "  for m in ('percentile', 'BCa'):\n"
             "    r = stats.bootstrap((c, b), lambda x, y, axis=-1: np.mean(x - y, axis=axis), "
             "paired=True, vectorized=True, n_resamples=9999, method=m, random_state=s)\n"
             "    print(s, int(m == 'BCa'), repr(r.confidence_interval.low), "
             "repr(r.confidence_interval.high))\" 2>/dev/null",
             py);
    FILE *p = popen(cmd, "r");
    if (!p)
        return;
    unsigned seed;
    int bca, got = 0;
    double lo, hi;
    while (fscanf(p, "%u %d %lf %lf", &seed, &bca, &lo, &hi) == 4) {
        double mlo, mhi;
        scipy_style_ci(seed, bca, &mlo, &mhi);
        assert_near(mlo, lo, 1e-15);
        assert_near(mhi, hi, 1e-15);
        got++;
    }
    pclose(p);
    print_message("scipy parity: %d intervals recomputed with scipy\n", got);
    /* scipy missing from this python: nothing recomputed, the fixed vectors above still ran */
    assert_true(got == 0 || got == 6);
}

/*
 * Reduced coverage study (the full one is bench/bench_coverage.c, bench/RESULTS.md). 200
 * simulated comparisons per scenario, B = 500, fixed seeds (so the test is deterministic).
 * Bands: the binomial SE of a rate near 95 % over 200 comparisons is 1.5 %, so [88 %, 100 %]
 * is more than 4 SE below nominal: a correct method essentially never fails it (p < 1e-4 for
 * any seed), while a CI too narrow by a factor 1.5 (coverage ~80 %) does. The undercoverage
 * checks use the same margin on the other side: the single-run CI under run-to-run variance
 * covers ~72 % (model: SE 0.018 vs run shift sd 0.028), asserted < 85 %; the sample-only
 * pooled CI with 3 runs ~82 %, asserted < 90 %, while the two-level CI covers ~95 %.
 */
static void test_coverage_reduced(void **state)
{
    (void)state;
    const struct dsa_cov_scenario shift = {"shift", 0, 100, 1, 0.03, 0.15, 0.15, 0.15, 0};
    const struct dsa_cov_scenario aa = {"aa", 1, 100, 1, 0, 0, 0, 0, 0};
    const struct dsa_cov_scenario rv1 = {"rv1", 0, 100, 1, 0.03, 0.15, 0.15, 0.15, 0.03};
    const struct dsa_cov_scenario rv3 = {"rv3", 0, 100, 3, 0.03, 0.15, 0.15, 0.15, 0.03};
    struct dsa_cov_result r;
    dsa_stats_coverage(&shift, 200, 500, 1, 1, &r);
    assert_in_range(r.pct, 176, 200);
    assert_in_range(r.bca, 176, 200);
    dsa_stats_coverage(&aa, 200, 500, 0, 2, &r);
    assert_in_range(r.pct, 176, 200);
    dsa_stats_coverage(&rv1, 200, 500, 0, 3, &r);
    assert_in_range(r.pct, 0, 169);
    dsa_stats_coverage(&rv3, 200, 500, 0, 4, &r);
    assert_in_range(r.pct, 0, 179);
    assert_in_range(r.two_level, 176, 200);
    assert_in_range(r.run1, 0, 169);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rng_smoke),         cmocka_unit_test(test_draws_match_gsl),
        cmocka_unit_test(test_tv1_deterministic), cmocka_unit_test(test_tv1_seeded),
        cmocka_unit_test(test_tv1_seed_free),     cmocka_unit_test(test_tv2),
        cmocka_unit_test(test_tv3_median_ratio),  cmocka_unit_test(test_tv4_permutation),
        cmocka_unit_test(test_tv5_runs),          cmocka_unit_test(test_tv6_clustered),
        cmocka_unit_test(test_tv7_power),         cmocka_unit_test(test_edge_cases),
        cmocka_unit_test(test_reproducible),      cmocka_unit_test(test_scipy_parity),
        cmocka_unit_test(test_coverage_reduced),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
