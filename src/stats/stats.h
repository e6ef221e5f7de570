/*
 * Statistics for paired comparisons of evaluation runs (docs/compare.md "Statistics").
 *
 * Everything here is pure computation over arrays: no files, no JSON. compare.h turns run
 * files into the arrays and the results into the comparison document.
 *
 *   dsa_stats_paired()        one bin: per-sample means over each arm's runs (Miller),
 *                             paired difference, percentile/BCa bootstrap CI, CLT SE, MDE80,
 *                             per-run differences from the same index stream, run-effect
 *                             F-tests, the two-level (samples x runs) CI when runs disagree,
 *                             the exact run-level permutation test, McNemar for 0/1 scores
 *   dsa_stats_median_ratio()  latency: median of per-request ratios with a percentile CI
 *   dsa_stats_perm_exact(), dsa_stats_mcnemar_exact(), dsa_stats_run_ftest(): the pieces
 *
 * Reproducibility: every bootstrap takes its own gsl_rng seeded by the caller, normally with
 * dsa_stats_stream_seed(S, "<comparison>/<bin>"), so a bin's numbers never depend on which
 * other bins or statistics were computed, nor on their order or thread. Index draws are
 * gsl_rng_uniform_int's integers (struct dsa_stats_draws: exact, so bit-identical on every
 * platform with IEEE-754 doubles).
 *
 * Ownership: inputs are borrowed; a dsa_paired_result owns its `runs` array, released by
 * dsa_paired_result_release().
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_STATS_STATS_H
#define DSA_STATS_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gsl/gsl_rng.h>

enum dsa_ci_method {
    DSA_CI_PERCENTILE = 0,
    DSA_CI_BCA = 1, /* means only; medians always use the percentile interval */
};

enum dsa_rng_kind {
    DSA_RNG_TAUS2 = 0, /* default: fast, period 2^88 */
    DSA_RNG_MT19937 = 1,
};

struct dsa_boot_cfg {
    long resamples;    /* B, default 10000 */
    double confidence; /* two-sided level, default 0.95 */
    enum dsa_ci_method ci;
    enum dsa_rng_kind rng;
    uint64_t seed; /* S of --seed, default 1 */
};

#define DSA_BOOT_CFG_INIT                                                                          \
    {                                                                                              \
        10000, 0.95, DSA_CI_PERCENTILE, DSA_RNG_TAUS2, 1                                           \
    }

/* z_{0.975} + z_{0.80}: MDE at 80 % power and two-sided 5 % = this factor times the SE */
#define DSA_STATS_MDE80_FACTOR 2.8015852181

const char *dsa_stats_rng_name(enum dsa_rng_kind k);
const char *dsa_stats_ci_name(enum dsa_ci_method m);
/* A generator of the given kind seeded with gsl_rng_set(r, seed). Free with gsl_rng_free. */
gsl_rng *dsa_stats_rng_new(enum dsa_rng_kind k, uint32_t seed);
/*
 * The index stream of every bootstrap here, draw by draw the integers gsl_rng_uniform_int(r, m)
 * returns: GSL's scaling k = x / (0xffffffff / m) of the generator's words x (both generators
 * have min 0 and max 0xffffffff), redrawn while k >= m, with the division done as a
 * multiplication (dsa_stats_draw_div) and the words read from a block.
 * For taus2 the block is DSA_STATS_LANES stretches of DSA_STATS_LANE_DRAWS consecutive words of
 * the one stream, made side by side (lane l starts DSA_STATS_LANE_DRAWS l words in, reached by
 * GSL's recurrence jumped ahead as a linear map over GF(2)), so the compiler steps the lanes
 * with vector instructions instead of one word at a time; the words, and so the integers, are
 * GSL's in GSL's order (tests/unit/test_stats.c pins them draw by draw). Other generators fill
 * the block one gsl_rng_get at a time.
 * Plain struct: _init borrows r, _release writes the state at the last word used back into r,
 * so GSL's later draws continue the same stream.
 */
#define DSA_STATS_LANES      4
#define DSA_STATS_LANE_DRAWS 512
struct dsa_stats_draws {
    gsl_rng *r;
    bool inline_taus;
    /* the next word and the end of the lane being read: lane l's word t is word[t * LANES + l] */
    const uint32_t *next, *end;
    unsigned lane;
    uint32_t start[3][DSA_STATS_LANES]; /* taus2: each lane's state before its first word */
    uint32_t after[3];                  /* taus2: the state after the block's last word */
    /* padded by one row: `end` of the last lane points past the last word */
    uint32_t word[(DSA_STATS_LANE_DRAWS + 1) * DSA_STATS_LANES];
};
void dsa_stats_draws_init(struct dsa_stats_draws *d, gsl_rng *r);
void dsa_stats_draws_release(struct dsa_stats_draws *d);
/* the next lane, or the next block when the last lane is used up (d->next == d->end) */
void dsa_stats_draws_next_lane(struct dsa_stats_draws *d);
/* GSL's scale for range m (1 <= m <= 0xffffffff), d = 0xffffffff / m, as the factor of the
   division k = floor(x / d) done as k = floor(x r) in doubles, r = (1/d)(1 + 2^-50): one
   multiplication, no divide instruction per draw. Exact for every 32-bit x: with correctly
   rounded double operations (FLT_EVAL_METHOD 0, checked in stats.c) r > (1/d)(1 + 2^-51), so the
   rounded product is > x/d (never below k, also where d divides x), and it is
   < (x/d)(1 + 2^-49) < x/d + 1/d <= k + 1, as x < 2^32 and x/d <= k + 1 - 1/d.
   tests/unit/test_stats.c checks it against x / d at the edges of every k it tries, and
   bench/bench_draw_div.c for every 32-bit x of the ranges it is given. */
static inline double dsa_stats_draw_scale(uint32_t m)
{
    return (1.0 / (double)(0xffffffffu / m)) * (1.0 + 0x1p-50);
}
/* floor(x / d) from r = dsa_stats_draw_scale() */
static inline uint32_t dsa_stats_draw_div(uint32_t x, double r)
{
    return (uint32_t)((double)x * r);
}
static inline uint32_t dsa_stats_draw(struct dsa_stats_draws *d, uint32_t m, double scale)
{
    for (;;) {
        if (d->next == d->end)
            dsa_stats_draws_next_lane(d);
        uint32_t k = dsa_stats_draw_div(*d->next, scale);
        d->next += DSA_STATS_LANES;
        if (k < m)
            return k;
    }
}

/* low32(splitmix64(S ^ fnv1a64(label))), 0 mapped to 1 (docs/compare.md "Seeds and random streams")
 */
uint32_t dsa_stats_stream_seed(uint64_t S, const char *label);

/* (z_{1-alpha/2} + z_{power}) * se: the smallest true difference detected with that power */
double dsa_stats_mde(double se, double confidence, double power);

/* Sample size per arm-pair to detect `delta` at two-sided `confidence` and `power` when a
   paired difference has variance var_d: (z_{1-a/2} + z_power)^2 var_d / delta^2 (real-valued:
   round up for a count). docs/compare.md "Power, MDE and runs needed". */
double dsa_stats_power_n(double var_d, double delta, double confidence, double power);

/* Standard errors of a mean with clustered samples (docs/compare.md "Clustered standard errors",
   TV6): out[0] Miller's SE_clustered, out[1] Liang-Zeger CR0, out[2] CR0 * sqrt(C/(C-1))
   (inspect_ai). cluster[i] < n_clusters. Returns -1 when n < 2. */
int dsa_stats_se_clustered(const double *s, const size_t *cluster, size_t n, size_t n_clusters,
                           double out[3]);

/* McNemar exact two-sided p on the discordant pairs: min(1, 2 P(Bin(b+c, 1/2) <= min(b,c))) */
double dsa_stats_mcnemar_exact(unsigned long b, unsigned long c);

/* Exact run-level permutation test of T = mean(cand) - mean(base) over all C(ra+rb, rb)
   relabellings; p = min(1, 2 min(#T>=Tobs, #T<=Tobs)/N), ties within 1e-12 * scale. */
struct dsa_perm_result {
    double t_obs;
    unsigned long n_ge, n_le; /* counts over all relabellings, the observed one included */
    unsigned long k, n_total; /* p = k / n_total with k = min(n_total, 2 min(n_ge, n_le)) */
    double p;
    bool cannot_reach_5pct; /* 2/N > 0.05: the test can never reject at 5 % */
};
/* Returns 0, or -1 when ra or rb < 2 or N exceeds 2e6 (no exact enumeration). */
int dsa_stats_perm_exact(const double *base, size_t ra, const double *cand, size_t rb,
                         struct dsa_perm_result *out);

/* Two-way ANOVA without replication of the run effect: y[r*n + i] for runs r < R, samples
   i < n (complete). F = MS_run / MS_resid ~ F(R-1, (n-1)(R-1)); *p = gsl_cdf_fdist_Q.
   Returns -1 (and NaNs) when R < 2 or n < 2. */
int dsa_stats_run_ftest(const double *y, size_t n, size_t R, double *F, double *p);

/* Percentile and BCa ends from sorted replicates (type-7 quantiles). BCa returns 1 when it
   fell back to the percentile interval (z0 argument 0 or 1), else 0. `accel` is the
   jackknife acceleration a. */
void dsa_stats_ci_percentile(const double *sorted, size_t B, double confidence, double *lo,
                             double *hi);
int dsa_stats_ci_bca(const double *sorted, size_t B, double theta_hat, double accel,
                     double confidence, double *lo, double *hi);
/* Closed-form jackknife acceleration of the mean: leave-one-out (S - d_i)/(n - 1). */
double dsa_stats_jackknife_accel_mean(const double *d, size_t n);

/* ---- planning: how many runs per side ----------------------------------------------------- */

/* Variance components of one arm from an n x R complete matrix y[r*n + i] (docs/compare.md
   "Coverage model": y = mu + alpha_i + beta_r + eps): var_sample = variance of the per-sample
   means; with R >= 2, var_resid = MS_resid (eps) and var_run = max(0, (MS_run - MS_resid)/n)
   (beta). With R == 1 the run-to-run noise is not identifiable: var_resid is bounded by
   the per-sample variance and var_run is 0, and `bound` is set. */
struct dsa_var_components {
    size_t n, R;
    double mean, var_sample, var_resid, var_run;
    bool bound;
};
int dsa_stats_var_components(const double *y, size_t n, size_t R, struct dsa_var_components *out);
/* Runs per side so that a true change `delta` is detected with `power` at two-sided
   `confidence` (real-valued; round up), and the MDE with a given number of runs. */
double dsa_stats_plan_runs(const struct dsa_var_components *vc, double delta, double confidence,
                           double power);
double dsa_stats_plan_mde(const struct dsa_var_components *vc, double runs, double confidence,
                          double power);

/* ---- one bin of a paired comparison ---------------------------------------------------- */

struct dsa_paired_input {
    size_t n;           /* samples; each must have >= 1 finished run in both arms */
    size_t rb, rc;      /* runs of the baseline and of the candidate (>= 1 each) */
    const double *base; /* rb x n, base[r*n + i]; NAN = sample i did not finish run r */
    const double *cand; /* rc x n, likewise */
    /* optional stratification ("all" over bins: resample within each bin, keep its size):
       stratum[i] < n_strata; NULL = one stratum */
    const size_t *stratum;
    size_t n_strata;
};

enum dsa_paired_flags {
    DSA_PAIRED_TWO_LEVEL_ALWAYS = (1 << 0), /* two-level CI even when runs agree (studies) */
    DSA_PAIRED_NO_TWO_LEVEL = (1 << 1),
};

/* per-run difference: candidate run cand_run against baseline run base_run (0-based indices
   into the input; run r pairs with run r, an arm with fewer runs repeats its last one) */
struct dsa_paired_run {
    size_t base_run, cand_run;
    size_t n; /* samples finished in both runs */
    double base_mean, cand_mean, diff, lo, hi;
};

struct dsa_paired_result {
    size_t n;
    double base_mean, cand_mean; /* means of the per-sample means */
    double diff, lo, hi;         /* D and its CI (NAN when n < 2) */
    double se, mde80, sd_d, rho, boot_sd;
    bool na, degenerate, small_n, bca_fallback;
    size_t rb_used, rc_used; /* runs with >= 1 finished sample in this bin */
    size_t n_runs;           /* per-run differences, only when some arm has >= 2 runs */
    struct dsa_paired_run *runs;
    /* run-effect F-test per arm (NAN when that arm has < 2 runs) */
    double f_base, p_base, f_cand, p_cand;
    bool runs_disagree; /* p < 0.01 in either arm */
    bool has_two_level;
    size_t two_level_n; /* samples complete in every run of both arms */
    double tl_lo, tl_hi;
    bool has_perm;
    struct dsa_perm_result perm;
    bool binary;              /* one run per arm and every score 0 or 1: McNemar below */
    unsigned long mc_b, mc_c; /* b = base right & cand wrong, c = base wrong & cand right */
    double mc_p;
};

/* Computes everything above for one bin. `seed` seeds the avg-first/per-run stream,
   `two_level_seed` the two-level stream. Returns 0, or -1 on a contract violation. */
int dsa_stats_paired(const struct dsa_paired_input *in, const struct dsa_boot_cfg *cfg,
                     uint32_t seed, uint32_t two_level_seed, unsigned flags,
                     struct dsa_paired_result *out);
void dsa_paired_result_release(struct dsa_paired_result *r);
/* The two-level CI on its own stream, so that a caller may run it on another thread beside
   dsa_stats_paired(in, ..., flags | DSA_PAIRED_NO_TWO_LEVEL, ...): _wants_ says whether
   dsa_stats_paired() would compute it (the F-tests only, cheap); _two_level fills only
   has_two_level, two_level_n, tl_lo and tl_hi of *out, with exactly the numbers
   dsa_stats_paired() gives for the same input, flags and two_level_seed. */
bool dsa_stats_paired_wants_two_level(const struct dsa_paired_input *in, unsigned flags);
void dsa_stats_paired_two_level(const struct dsa_paired_input *in, const struct dsa_boot_cfg *cfg,
                                uint32_t two_level_seed, unsigned flags,
                                struct dsa_paired_result *out);

/* ---- latency ---------------------------------------------------------------------------- */

/* theta = median_t(cand[t]/base[t]) over n > 0 paired positive latencies, with a percentile
   bootstrap CI (B = cfg->resamples, never BCa) drawn from a generator seeded with `seed`.
   Returns 0, or -1 if n == 0. */
int dsa_stats_median_ratio(const double *base, const double *cand, size_t n,
                           const struct dsa_boot_cfg *cfg, uint32_t seed, double *median,
                           double *lo, double *hi);

#endif
