/*
 * Paired bootstrap, run-level tests and latency ratios (docs/compare.md "Statistics"). See stats.h.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
/* inline gsl_rng_uniform_int and gsl_rng_get in the resampling loops (same integer code as
   the library's, about twice as fast) */
#define HAVE_INLINE 1

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_combination.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_sf_gamma.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "stats/stats.h"
#include "util/buf.h"
#include "util/hash.h"

const char *dsa_stats_rng_name(enum dsa_rng_kind k)
{
    return k == DSA_RNG_MT19937 ? "mt19937" : "taus2";
}

const char *dsa_stats_ci_name(enum dsa_ci_method m)
{
    return m == DSA_CI_BCA ? "bca" : "percentile";
}

gsl_rng *dsa_stats_rng_new(enum dsa_rng_kind k, uint32_t seed)
{
    /* never gsl_rng_env_setup(): GSL_RNG_TYPE/GSL_RNG_SEED would silently change results */
    gsl_rng *r = gsl_rng_alloc(k == DSA_RNG_MT19937 ? gsl_rng_mt19937 : gsl_rng_taus2);
    if (!r)
        abort();
    gsl_rng_set(r, seed);
    return r;
}

uint32_t dsa_stats_stream_seed(uint64_t S, const char *label)
{
    uint32_t v = (uint32_t)dsa_splitmix64(S ^ dsa_fnv1a64(label, strlen(label)));
    return v ? v : 1;
}

double dsa_stats_mde(double se, double confidence, double power)
{
    if (confidence == 0.95 && power == 0.8)
        return DSA_STATS_MDE80_FACTOR * se;
    return (gsl_cdf_ugaussian_Pinv(0.5 + confidence / 2) + gsl_cdf_ugaussian_Pinv(power)) * se;
}

double dsa_stats_power_n(double var_d, double delta, double confidence, double power)
{
    double z = gsl_cdf_ugaussian_Pinv(0.5 + confidence / 2) + gsl_cdf_ugaussian_Pinv(power);
    if (confidence == 0.95 && power == 0.8)
        z = DSA_STATS_MDE80_FACTOR;
    return z * z * var_d / (delta * delta);
}

int dsa_stats_se_clustered(const double *s, const size_t *cluster, size_t n, size_t n_clusters,
                           double out[3])
{
    out[0] = out[1] = out[2] = NAN;
    if (n < 2)
        return -1;
    double mean = gsl_stats_mean(s, 1, n);
    double ss = 0;
    for (size_t i = 0; i < n; i++)
        ss += (s[i] - mean) * (s[i] - mean);
    double se2 = ss / ((double)n * (double)(n - 1));
    /* Miller: SE_CLT^2 + (1/n^2) sum over clusters of the off-diagonal cross products;
       CR0: sum over clusters of (sum of residuals)^2 / n^2 */
    double *csum = dsa_xcalloc(n_clusters ? n_clusters : 1, sizeof *csum);
    double *csq = dsa_xcalloc(n_clusters ? n_clusters : 1, sizeof *csq);
    for (size_t i = 0; i < n; i++) {
        csum[cluster[i]] += s[i] - mean;
        csq[cluster[i]] += (s[i] - mean) * (s[i] - mean);
    }
    double cross = 0, cr0 = 0;
    for (size_t c = 0; c < n_clusters; c++) {
        cross += csum[c] * csum[c] - csq[c];
        cr0 += csum[c] * csum[c];
    }
    /* clusters present, even those whose residuals are all zero */
    size_t C = 0;
    unsigned char *seen = dsa_xcalloc(n_clusters ? n_clusters : 1, 1);
    for (size_t i = 0; i < n; i++)
        if (!seen[cluster[i]]) {
            seen[cluster[i]] = 1;
            C++;
        }
    free(seen);
    free(csum);
    free(csq);
    double v = se2 + cross / ((double)n * (double)n);
    out[0] = v > 0 ? sqrt(v) : 0;
    out[1] = sqrt(cr0) / (double)n;
    out[2] = C > 1 ? out[1] * sqrt((double)C / (double)(C - 1)) : NAN;
    return 0;
}

double dsa_stats_mcnemar_exact(unsigned long b, unsigned long c)
{
    if (b + c == 0)
        return 1.0;
    unsigned long m = b < c ? b : c;
    double p = 2.0 * gsl_cdf_binomial_P((unsigned)m, 0.5, (unsigned)(b + c));
    return p > 1.0 ? 1.0 : p;
}

int dsa_stats_perm_exact(const double *base, size_t ra, const double *cand, size_t rb,
                         struct dsa_perm_result *out)
{
    memset(out, 0, sizeof *out);
    out->p = NAN;
    out->t_obs = NAN;
    if (ra < 2 || rb < 2)
        return -1;
    size_t m = ra + rb;
    double N = gsl_sf_choose((unsigned)m, (unsigned)rb);
    if (N > 2e6)
        return -1;
    double *all = dsa_xmalloc(m * sizeof *all);
    double total = 0, scale = 0;
    for (size_t i = 0; i < m; i++) {
        all[i] = i < ra ? base[i] : cand[i - ra];
        total += all[i];
        if (fabs(all[i]) > scale)
            scale = fabs(all[i]);
    }
    double sum_c = 0, sum_b = 0;
    for (size_t i = 0; i < rb; i++)
        sum_c += cand[i];
    for (size_t i = 0; i < ra; i++)
        sum_b += base[i];
    out->t_obs = sum_c / (double)rb - sum_b / (double)ra;
    /* ties: relabellings whose T equals Tobs up to rounding count on both sides (scipy) */
    double tol = 1e-12 * (scale > 0 ? scale : 1.0);
    gsl_combination *c = gsl_combination_calloc(m, rb);
    unsigned long n = 0, ge = 0, le = 0;
    do {
        double sc = 0;
        for (size_t j = 0; j < rb; j++)
            sc += all[gsl_combination_get(c, j)];
        double t = sc / (double)rb - (total - sc) / (double)ra;
        if (t >= out->t_obs - tol)
            ge++;
        if (t <= out->t_obs + tol)
            le++;
        n++;
    } while (gsl_combination_next(c) == GSL_SUCCESS);
    gsl_combination_free(c);
    free(all);
    out->n_ge = ge;
    out->n_le = le;
    out->n_total = n;
    unsigned long k = 2 * (ge < le ? ge : le);
    out->k = k > n ? n : k;
    out->p = (double)out->k / (double)n;
    out->cannot_reach_5pct = 2.0 / (double)n > 0.05;
    return 0;
}

int dsa_stats_run_ftest(const double *y, size_t n, size_t R, double *F, double *p)
{
    *F = NAN;
    *p = NAN;
    if (R < 2 || n < 2)
        return -1;
    double grand = 0;
    for (size_t k = 0; k < n * R; k++)
        grand += y[k];
    grand /= (double)(n * R);
    double *row = dsa_xcalloc(n, sizeof *row);
    double *col = dsa_xcalloc(R, sizeof *col);
    for (size_t r = 0; r < R; r++)
        for (size_t i = 0; i < n; i++) {
            row[i] += y[r * n + i];
            col[r] += y[r * n + i];
        }
    for (size_t i = 0; i < n; i++)
        row[i] /= (double)R;
    double ss_run = 0, ss_res = 0;
    for (size_t r = 0; r < R; r++) {
        col[r] /= (double)n;
        ss_run += (col[r] - grand) * (col[r] - grand);
    }
    ss_run *= (double)n;
    for (size_t r = 0; r < R; r++)
        for (size_t i = 0; i < n; i++) {
            double e = y[r * n + i] - row[i] - col[r] + grand;
            ss_res += e * e;
        }
    free(row);
    free(col);
    double df1 = (double)(R - 1), df2 = (double)((n - 1) * (R - 1));
    /* exact arithmetic noise below 1e-24 is treated as zero residual */
    if (ss_res <= 1e-24) {
        *F = ss_run > 1e-24 ? INFINITY : NAN;
        *p = ss_run > 1e-24 ? 0.0 : 1.0;
        return 0;
    }
    *F = (ss_run / df1) / (ss_res / df2);
    *p = gsl_cdf_fdist_Q(*F, df1, df2);
    return 0;
}

void dsa_stats_ci_percentile(const double *sorted, size_t B, double confidence, double *lo,
                             double *hi)
{
    double alpha = 1 - confidence;
    *lo = gsl_stats_quantile_from_sorted_data(sorted, 1, B, alpha / 2);
    *hi = gsl_stats_quantile_from_sorted_data(sorted, 1, B, 1 - alpha / 2);
}

static double clamp01(double x)
{
    return x < 0 ? 0 : x > 1 ? 1 : x;
}

int dsa_stats_ci_bca(const double *sorted, size_t B, double theta_hat, double accel,
                     double confidence, double *lo, double *hi)
{
    size_t below = 0, equal = 0;
    for (size_t b = 0; b < B; b++) {
        if (sorted[b] < theta_hat)
            below++;
        else if (sorted[b] == theta_hat)
            equal++;
    }
    double arg = ((double)below + 0.5 * (double)equal) / (double)B;
    if (arg <= 0 || arg >= 1) {
        dsa_stats_ci_percentile(sorted, B, confidence, lo, hi);
        return 1;
    }
    double alpha = 1 - confidence;
    double z0 = gsl_cdf_ugaussian_Pinv(arg);
    double zl = gsl_cdf_ugaussian_Pinv(alpha / 2), zh = gsl_cdf_ugaussian_Pinv(1 - alpha / 2);
    double a1 = gsl_cdf_ugaussian_P(z0 + (z0 + zl) / (1 - accel * (z0 + zl)));
    double a2 = gsl_cdf_ugaussian_P(z0 + (z0 + zh) / (1 - accel * (z0 + zh)));
    /* GSL's quantile aborts outside [0,1] (its default error handler) */
    *lo = gsl_stats_quantile_from_sorted_data(sorted, 1, B, clamp01(a1));
    *hi = gsl_stats_quantile_from_sorted_data(sorted, 1, B, clamp01(a2));
    return 0;
}

double dsa_stats_jackknife_accel_mean(const double *d, size_t n)
{
    if (n < 3)
        return 0;
    double S = 0;
    for (size_t i = 0; i < n; i++)
        S += d[i];
    double mean_loo = 0;
    for (size_t i = 0; i < n; i++)
        mean_loo += (S - d[i]) / (double)(n - 1);
    mean_loo /= (double)n;
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double u = mean_loo - (S - d[i]) / (double)(n - 1);
        num += u * u * u;
        den += u * u;
    }
    if (den <= 0)
        return 0;
    return num / (6.0 * pow(den, 1.5));
}

static long gcd_l(long a, long b)
{
    while (b) {
        long t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/*
 * Exact arithmetic for tied statistics (docs/compare.md "Exact arithmetic for ties"): when every
 * value times a small integer L is an integer (0/1 scores: L = 1; means over 3 runs: L = 3 or 6),
 * the values are kept as those integers (exact in a double up to 2^53), so every sum is
 * exact and theta-hat and each replicate round the same way: sum / (count * L).
 * Returns L, or 0 when the values are not such rationals (then sums are plain doubles).
 */
static long find_scale(const double *v, const unsigned char *mask, size_t n, long max_den)
{
    for (long L = 1; L <= max_den; L++) {
        if (max_den % L)
            continue;
        bool ok = true;
        for (size_t i = 0; i < n && ok; i++) {
            if (mask && !mask[i])
                continue;
            double x = v[i] * (double)L;
            if (fabs(x - nearbyint(x)) > 1e-9 * (double)L || fabs(x) > 1e12)
                ok = false;
        }
        if (ok)
            return L;
    }
    return 0;
}

/* values scaled to integers when find_scale found L; *div = L (or 1). Only denominators that
   means of integer scores over at most rb and rc runs can have are tried (L divides
   lcm(1..rb) * lcm(1..rc)): continuous scores keep the plain floating-point path. */
static void apply_scale(double *v, const unsigned char *mask, size_t n, size_t rb, size_t rc,
                        double *div)
{
    long den = 1;
    for (size_t k = 2; k <= rb && den < 100000; k++)
        den = den / gcd_l(den, (long)k) * (long)k;
    long den_c = 1;
    for (size_t k = 2; k <= rc && den_c < 100000; k++)
        den_c = den_c / gcd_l(den_c, (long)k) * (long)k;
    long L = den * den_c <= 1000000 ? find_scale(v, mask, n, den * den_c) : 0;
    *div = L ? (double)L : 1.0;
    if (!L)
        return;
    for (size_t i = 0; i < n; i++)
        if (!mask || mask[i])
            v[i] = nearbyint(v[i] * (double)L);
}

/* the per-stratum index lists of the resampling */
struct strata {
    size_t k;
    size_t *size;
    size_t **idx;
};

static void strata_init(struct strata *s, const struct dsa_paired_input *in)
{
    s->k = in->stratum ? in->n_strata : 1;
    s->size = dsa_xcalloc(s->k, sizeof *s->size);
    s->idx = dsa_xcalloc(s->k, sizeof *s->idx);
    for (size_t i = 0; i < in->n; i++)
        s->size[in->stratum ? in->stratum[i] : 0]++;
    for (size_t j = 0; j < s->k; j++) {
        s->idx[j] = dsa_xmalloc((s->size[j] ? s->size[j] : 1) * sizeof **s->idx);
        s->size[j] = 0;
    }
    for (size_t i = 0; i < in->n; i++) {
        size_t j = in->stratum ? in->stratum[i] : 0;
        s->idx[j][s->size[j]++] = i;
    }
}

static void strata_release(struct strata *s)
{
    for (size_t j = 0; j < s->k; j++)
        free(s->idx[j]);
    free(s->idx);
    free(s->size);
}

/* ---- the index stream (stats.h, struct dsa_stats_draws) -------------------------------- */

/* dsa_stats_draw_div()'s exactness needs each double operation rounded once, to double */
_Static_assert(FLT_EVAL_METHOD == 0, "double arithmetic in double precision");

/* GSL's taus.c: TAUSWORTHE(s, a, b, c, d) on 32-bit words, component q of taus2 */
static inline uint32_t taus_step(unsigned q, uint32_t s)
{
    switch (q) {
    case 0:
        return ((s & 4294967294u) << 12) ^ (((s << 13) ^ s) >> 19);
    case 1:
        return ((s & 4294967288u) << 4) ^ (((s << 2) ^ s) >> 25);
    default:
        return ((s & 4294967280u) << 17) ^ (((s << 3) ^ s) >> 11);
    }
}

/* Each component's step is linear over GF(2) on its 32-bit word (masks, shifts, xors), so
   DSA_STATS_LANE_DRAWS steps are one 32 x 32 bit matrix: held as four tables of the images of
   each byte, jump[q][j][b] = step^LANE_DRAWS(b << 8j), built once per process. */
static uint32_t taus_jump[3][4][256];
static pthread_once_t taus_jump_once = PTHREAD_ONCE_INIT;

static void taus_jump_build(void)
{
    for (unsigned q = 0; q < 3; q++) {
        uint32_t col[32];
        for (unsigned i = 0; i < 32; i++) {
            uint32_t s = (uint32_t)1 << i;
            for (unsigned t = 0; t < DSA_STATS_LANE_DRAWS; t++)
                s = taus_step(q, s);
            col[i] = s;
        }
        for (unsigned j = 0; j < 4; j++)
            for (unsigned b = 0; b < 256; b++) {
                uint32_t v = 0;
                for (unsigned i = 0; i < 8; i++)
                    if (b >> i & 1)
                        v ^= col[8 * j + i];
                taus_jump[q][j][b] = v;
            }
    }
}

static uint32_t taus_jump_apply(unsigned q, uint32_t s)
{
    return taus_jump[q][0][s & 255] ^ taus_jump[q][1][s >> 8 & 255] ^
           taus_jump[q][2][s >> 16 & 255] ^ taus_jump[q][3][s >> 24];
}

/* The block: lane l's states start LANE_DRAWS l words after the block's first, and all lanes
   are stepped together (the inner loop over lanes is what the compiler vectorizes, the state
   staying in registers); word t of lane l lands in word[t * LANES + l]. */
static void taus_fill(struct dsa_stats_draws *d)
{
    enum { L = DSA_STATS_LANES };
    uint32_t a[L], b[L], c[L];
    for (unsigned q = 0; q < 3; q++) {
        d->start[q][0] = d->after[q];
        for (unsigned l = 1; l < L; l++)
            d->start[q][l] = taus_jump_apply(q, d->start[q][l - 1]);
    }
    memcpy(a, d->start[0], sizeof a);
    memcpy(b, d->start[1], sizeof b);
    memcpy(c, d->start[2], sizeof c);
    for (unsigned t = 0; t < DSA_STATS_LANE_DRAWS; t++)
        for (unsigned l = 0; l < L; l++) {
            a[l] = ((a[l] & 4294967294u) << 12) ^ (((a[l] << 13) ^ a[l]) >> 19);
            b[l] = ((b[l] & 4294967288u) << 4) ^ (((b[l] << 2) ^ b[l]) >> 25);
            c[l] = ((c[l] & 4294967280u) << 17) ^ (((c[l] << 3) ^ c[l]) >> 11);
            d->word[t * L + l] = a[l] ^ b[l] ^ c[l];
        }
    d->after[0] = a[L - 1];
    d->after[1] = b[L - 1];
    d->after[2] = c[L - 1];
}

void dsa_stats_draws_init(struct dsa_stats_draws *d, gsl_rng *r)
{
    d->r = r;
    /* GSL's taus_state_t is three unsigned longs holding 32-bit words */
    d->inline_taus = r->type == gsl_rng_taus2 && gsl_rng_size(r) == 3 * sizeof(unsigned long);
    /* the scaling of dsa_stats_draw() is gsl_rng_uniform_int's for words in [0, 2^32 - 1] */
    if (gsl_rng_min(r) != 0 || gsl_rng_max(r) != 0xffffffffUL)
        abort();
    /* empty: the "last lane" is used up at its first word, so the first draw fills a block */
    d->lane = DSA_STATS_LANES - 1;
    d->next = d->end = d->word + d->lane;
    if (d->inline_taus) {
        pthread_once(&taus_jump_once, taus_jump_build);
        const unsigned long *st = gsl_rng_state(r);
        for (unsigned q = 0; q < 3; q++)
            d->after[q] = d->start[q][d->lane] = (uint32_t)st[q];
    }
}

void dsa_stats_draws_next_lane(struct dsa_stats_draws *d)
{
    enum { L = DSA_STATS_LANES };
    if (!d->inline_taus) {
        /* one word at a time: the generator's state is never ahead of the draws */
        d->lane = 0;
        d->word[0] = (uint32_t)gsl_rng_get(d->r);
        d->next = d->word;
        d->end = d->word + L;
        return;
    }
    if (d->lane + 1 < L) {
        d->lane++;
    } else {
        taus_fill(d);
        d->lane = 0;
    }
    d->next = d->word + d->lane;
    d->end = d->next + DSA_STATS_LANE_DRAWS * L;
}

void dsa_stats_draws_release(struct dsa_stats_draws *d)
{
    if (d->inline_taus) {
        /* the state after the last word used: its lane's start stepped over the words read */
        size_t used = (size_t)(d->next - (d->word + d->lane)) / DSA_STATS_LANES;
        unsigned long *st = gsl_rng_state(d->r);
        for (unsigned q = 0; q < 3; q++) {
            uint32_t s = d->start[q][d->lane];
            for (size_t t = 0; t < used; t++)
                s = taus_step(q, s);
            st[q] = s;
        }
    }
    d->r = NULL;
}

/* the stratum sizes' draw scales, once per bootstrap */
static double *strata_scales(const struct strata *s)
{
    double *sc = dsa_xmalloc(s->k * sizeof *sc);
    for (size_t j = 0; j < s->k; j++)
        sc[j] = s->size[j] ? dsa_stats_draw_scale((uint32_t)s->size[j]) : 1;
    return sc;
}

static double mean_finite(const double *row, size_t n, size_t *count)
{
    double s = 0;
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        if (!isnan(row[i])) {
            s += row[i];
            c++;
        }
    if (count)
        *count = c;
    return c ? s / (double)c : NAN;
}

/* per-sample mean over an arm's finished runs, along one fixed summation order */
static double sample_mean(const double *m, size_t n, size_t i, const size_t *runs, size_t nr)
{
    double s = 0;
    size_t c = 0;
    for (size_t q = 0; q < nr; q++) {
        double x = m[runs[q] * n + i];
        if (!isnan(x)) {
            s += x;
            c++;
        }
    }
    return c ? s / (double)c : NAN;
}

static void finish_ci(double *reps, size_t B, double theta, double accel,
                      const struct dsa_boot_cfg *cfg, bool allow_bca, double *lo, double *hi,
                      bool *fallback)
{
    gsl_sort(reps, 1, B);
    if (allow_bca && cfg->ci == DSA_CI_BCA) {
        int fb = dsa_stats_ci_bca(reps, B, theta, accel, cfg->confidence, lo, hi);
        if (fallback)
            *fallback = fb != 0;
    } else {
        dsa_stats_ci_percentile(reps, B, cfg->confidence, lo, hi);
    }
}

/* complete-case matrix of an arm over its active runs, for the F-test and the two-level CI */
static double *arm_matrix(const double *m, size_t n, const size_t *runs, size_t nr,
                          const unsigned char *keep, size_t nk)
{
    double *y = dsa_xmalloc((nk ? nk : 1) * nr * sizeof *y);
    for (size_t q = 0; q < nr; q++) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (keep[i])
                y[q * nk + k++] = m[runs[q] * n + i];
    }
    return y;
}

/* one arm's sum over drawn runs of sample k: 0 + y[ix_0][k] + y[ix_1][k] + ... in draw order */
static double arm_sum(const double *y, size_t nk, const size_t *ix, size_t R, size_t k)
{
    double s = 0;
    for (size_t q = 0; q < R; q++)
        s += y[ix[q] * nk + k];
    return s;
}

/*
 * The two-level replicate's per-sample terms for every tuple of run draws, so that a
 * replicate only looks them up: table[t * nk + k] = factor * arm_sum(y, nk, ix, R, k) with
 * t = sum_q ix_q R^q (the same operations in the same order as forming them per draw). R^R
 * tuples: NULL when that would not fit in 16 MB (many runs), and the caller forms them per draw.
 */
static double *run_sum_table(const double *y, size_t nk, size_t R, double factor)
{
    size_t tuples = 1;
    for (size_t q = 0; q < R; q++) {
        tuples *= R;
        if (tuples > 4096 || tuples * nk > ((size_t)1 << 21))
            return NULL;
    }
    double *t = dsa_xmalloc(tuples * nk * sizeof *t);
    size_t *ix = dsa_xcalloc(R, sizeof *ix);
    for (size_t tp = 0; tp < tuples; tp++) {
        for (size_t q = 0, v = tp; q < R; q++, v /= R)
            ix[q] = v % R;
        for (size_t k = 0; k < nk; k++)
            t[tp * nk + k] = factor * arm_sum(y, nk, ix, R, k);
    }
    free(ix);
    return t;
}

/*
 * The next n integers of the stream for range m (scale = dsa_stats_draw_scale(m)) into u[0..n):
 * dsa_stats_draw() n times, in a loop of its own. The replicate loops take their indices from
 * here a batch at a time, so that their own loops hold no call (which would keep their sums in
 * memory rather than registers, every xmm register being the callee's to clobber) and the
 * draws and the sums are each a short loop the processor runs ahead on.
 */
enum { DRAW_BATCH = 512 };
static void draw_batch(struct dsa_stats_draws *d, uint32_t m, double scale, uint32_t *u, size_t n)
{
    size_t got = 0;
    while (got < n) {
        if (d->next == d->end)
            dsa_stats_draws_next_lane(d);
        const uint32_t *p = d->next;
        size_t avail = (size_t)(d->end - p) / DSA_STATS_LANES, lim = n - got;
        if (lim > avail)
            lim = avail;
        for (size_t i = 0; i < lim; i++) {
            /* a word whose k is out of range is redrawn: the next word overwrites u[got] */
            uint32_t k = dsa_stats_draw_div(p[i * DSA_STATS_LANES], scale);
            u[got] = k;
            got += k < m;
        }
        d->next = p + lim * DSA_STATS_LANES;
    }
}

/* One two-level replicate from the tables: the sum of wc[k] - wb[k] over the samples drawn,
   stratum by stratum, in draw order. */
static double two_level_sum(struct dsa_stats_draws *d, const struct strata *st, const double *scale,
                            bool strat, const double *wc, const double *wb)
{
    uint32_t u[DRAW_BATCH];
    double s = 0;
    for (size_t j = 0; j < st->k; j++) {
        const size_t *ix = st->idx[j];
        for (size_t t = 0; t < st->size[j]; t += DRAW_BATCH) {
            size_t nb = st->size[j] - t < DRAW_BATCH ? st->size[j] - t : DRAW_BATCH;
            draw_batch(d, (uint32_t)st->size[j], scale[j], u, nb);
            for (size_t i = 0; i < nb; i++) {
                size_t k = strat ? ix[u[i]] : u[i];
                double xc = wc[k], xb = wb[k];
                s += xc - xb;
            }
        }
    }
    return s;
}

/* the terms of a replicate whose tables did not fit (many runs): formed per draw */
struct tl_terms {
    const double *B, *C;
    size_t nk;
    const size_t *ib, *ic;
    size_t rb, rc;
    const double *wb, *wc; /* a table where one fits, else NULL */
};

static double two_level_sum_formed(struct dsa_stats_draws *d, const struct strata *st,
                                   const double *scale, bool strat, const struct tl_terms *w)
{
    uint32_t u[DRAW_BATCH];
    double s = 0;
    for (size_t j = 0; j < st->k; j++) {
        for (size_t t = 0; t < st->size[j]; t += DRAW_BATCH) {
            size_t nb = st->size[j] - t < DRAW_BATCH ? st->size[j] - t : DRAW_BATCH;
            draw_batch(d, (uint32_t)st->size[j], scale[j], u, nb);
            for (size_t i = 0; i < nb; i++) {
                size_t k = strat ? st->idx[j][u[i]] : u[i];
                double xc =
                    w->wc ? w->wc[k] : (double)w->rb * arm_sum(w->C, w->nk, w->ic, w->rc, k);
                double xb =
                    w->wb ? w->wb[k] : (double)w->rc * arm_sum(w->B, w->nk, w->ib, w->rb, k);
                s += xc - xb;
            }
        }
    }
    return s;
}

static void two_level(const struct dsa_paired_input *in, const size_t *brun, size_t rb,
                      const size_t *crun, size_t rc, const struct dsa_boot_cfg *cfg, uint32_t seed,
                      struct dsa_paired_result *out)
{
    size_t n = in->n;
    unsigned char *keep = dsa_xcalloc(n ? n : 1, 1);
    size_t nk = 0;
    for (size_t i = 0; i < n; i++) {
        bool ok = true;
        for (size_t q = 0; q < rb && ok; q++)
            ok = !isnan(in->base[brun[q] * n + i]);
        for (size_t q = 0; q < rc && ok; q++)
            ok = !isnan(in->cand[crun[q] * n + i]);
        keep[i] = ok;
        nk += ok;
    }
    out->two_level_n = nk;
    if (nk < 2) {
        free(keep);
        return;
    }
    double *B = arm_matrix(in->base, n, brun, rb, keep, nk);
    double *C = arm_matrix(in->cand, n, crun, rc, keep, nk);
    size_t *stratum = NULL;
    if (in->stratum) {
        stratum = dsa_xmalloc(nk * sizeof *stratum);
        for (size_t i = 0, k = 0; i < n; i++)
            if (keep[i])
                stratum[k++] = in->stratum[i];
    }
    struct dsa_paired_input sub = {nk, rb, rc, B, C, stratum, in->n_strata};
    struct strata st;
    strata_init(&st, &sub);
    size_t Bn = (size_t)cfg->resamples;
    double *reps = dsa_xmalloc(Bn * sizeof *reps);
    size_t *ib = dsa_xmalloc(rb * sizeof *ib), *ic = dsa_xmalloc(rc * sizeof *ic);
    double *tb = run_sum_table(B, nk, rb, (double)rc), *tc = run_sum_table(C, nk, rc, (double)rb);
    double *scale = strata_scales(&st);
    gsl_rng *r = dsa_stats_rng_new(cfg->rng, seed);
    struct dsa_stats_draws dr;
    dsa_stats_draws_init(&dr, r);
    for (size_t b = 0; b < Bn; b++) {
        /* draw order (spec): rb base-run indices, rc cand-run indices, then the samples */
        size_t tib = 0, tic = 0;
        for (size_t q = 0, f = 1; q < rb; q++, f *= rb) {
            ib[q] = dsa_stats_draw(&dr, (uint32_t)rb, dsa_stats_draw_scale((uint32_t)rb));
            tib += ib[q] * f;
        }
        for (size_t q = 0, f = 1; q < rc; q++, f *= rc) {
            ic[q] = dsa_stats_draw(&dr, (uint32_t)rc, dsa_stats_draw_scale((uint32_t)rc));
            tic += ic[q] * f;
        }
        /* w_i = rb * sum_q C[ic_q][i] - rc * sum_q B[ib_q][i] of each drawn sample, summed in
           draw order: from the tables when they fit, else formed per draw */
        double s;
        if (tb && tc) {
            s = two_level_sum(&dr, &st, scale, stratum != NULL, tc + tic * nk, tb + tib * nk);
        } else {
            struct tl_terms w = {
                B, C, nk, ib, ic, rb, rc, tb ? tb + tib * nk : NULL, tc ? tc + tic * nk : NULL};
            s = two_level_sum_formed(&dr, &st, scale, stratum != NULL, &w);
        }
        reps[b] = s / ((double)nk * (double)rb * (double)rc);
    }
    dsa_stats_draws_release(&dr);
    gsl_rng_free(r);
    gsl_sort(reps, 1, Bn);
    dsa_stats_ci_percentile(reps, Bn, cfg->confidence, &out->tl_lo, &out->tl_hi);
    out->has_two_level = true;
    free(reps);
    free(ib);
    free(ic);
    free(tb);
    free(tc);
    free(scale);
    free(stratum);
    strata_release(&st);
    free(B);
    free(C);
    free(keep);
}

/* what the pooled replicate loop reads: the statistic's values v (scaled by div), the per-run
   values sample-major (pvt, mask pmt, scales pdiv) */
struct pooled_loop {
    const struct strata *st;
    bool identity; /* one stratum holding samples 0..n-1 */
    const double *v;
    double div;
    const double *pvt;
    const unsigned char *pmt;
    bool full; /* every mask 1 */
    size_t npairs;
    const double *pdiv;
    size_t n;
};

/* the per-run sums of one drawn sample k */
static void pooled_add_runs(const struct pooled_loop *L, size_t k, double *psum, size_t *pcnt)
{
    const double *row = L->pvt + k * L->npairs;
    if (L->full) {
        for (size_t p = 0; p < L->npairs; p++)
            psum[p] += row[p];
        return;
    }
    const unsigned char *mrow = L->pmt + k * L->npairs;
    for (size_t p = 0; p < L->npairs; p++)
        if (mrow[p]) {
            psum[p] += row[p];
            pcnt[p]++;
        }
}

/* one replicate of pooled_replicates() over rows padded to 4 runs: the pooled sum returned,
   the per-run sums in psum[0..npairs-1], each in draw order */
static double replicate_rows4(struct dsa_stats_draws *dr, const struct pooled_loop *L,
                              const double *row4, const double *scale, double *psum)
{
    const struct strata *st = L->st;
    const double *v = L->v;
    bool identity = L->identity;
    uint32_t u[DRAW_BATCH];
    double s = 0, a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (size_t j = 0; j < st->k; j++) {
        const size_t *ix = st->idx[j];
        for (size_t t = 0; t < st->size[j]; t += DRAW_BATCH) {
            size_t nb = st->size[j] - t < DRAW_BATCH ? st->size[j] - t : DRAW_BATCH;
            draw_batch(dr, (uint32_t)st->size[j], scale[j], u, nb);
            for (size_t i = 0; i < nb; i++) {
                size_t k = identity ? u[i] : ix[u[i]];
                const double *row = row4 + 4 * k;
                s += v[k];
                a0 += row[0];
                a1 += row[1];
                a2 += row[2];
                a3 += row[3];
            }
        }
    }
    double a[4] = {a0, a1, a2, a3};
    memcpy(psum, a, L->npairs * sizeof *psum);
    return s;
}

/*
 * One index stream per bin: each replicate draws n indices (stratum by stratum, j = 0..size-1
 * in each) once and feeds every statistic of the bin, the pooled D and each run's D_r, while
 * the sample's row is in cache; every sum runs in draw order.
 */
static void pooled_replicates(const struct pooled_loop *L, const struct dsa_boot_cfg *cfg,
                              uint32_t seed, size_t Bn, double *reps, double **preps, double *psum,
                              size_t *pcnt)
{
    const struct strata *st = L->st;
    double *scale = strata_scales(st);
    gsl_rng *r = dsa_stats_rng_new(cfg->rng, seed);
    struct dsa_stats_draws dr;
    dsa_stats_draws_init(&dr, r);
    /* every sample finished every run, at most 4 runs: rows padded to 4 so that the per-run
       sums stay in registers (a sum through memory waits on its own store each draw) */
    double *row4 = NULL;
    if (L->full && L->npairs >= 1 && L->npairs <= 4) {
        row4 = dsa_xcalloc(L->n * 4, sizeof *row4);
        for (size_t k = 0; k < L->n; k++)
            memcpy(row4 + 4 * k, L->pvt + k * L->npairs, L->npairs * sizeof *row4);
    }
    for (size_t b = 0; b < Bn; b++) {
        double s;
        if (row4) {
            s = replicate_rows4(&dr, L, row4, scale, psum);
        } else {
            s = 0;
            if (L->npairs) { /* psum and pcnt are NULL without per-run pairs */
                memset(psum, 0, L->npairs * sizeof *psum);
                memset(pcnt, 0, L->npairs * sizeof *pcnt);
            }
            uint32_t u[DRAW_BATCH];
            for (size_t j = 0; j < st->k; j++) {
                for (size_t t = 0; t < st->size[j]; t += DRAW_BATCH) {
                    size_t nb = st->size[j] - t < DRAW_BATCH ? st->size[j] - t : DRAW_BATCH;
                    draw_batch(&dr, (uint32_t)st->size[j], scale[j], u, nb);
                    for (size_t i = 0; i < nb; i++) {
                        size_t k = L->identity ? u[i] : st->idx[j][u[i]];
                        s += L->v[k];
                        if (L->npairs)
                            pooled_add_runs(L, k, psum, pcnt);
                    }
                }
            }
        }
        reps[b] = s / ((double)L->n * L->div);
        for (size_t p = 0; p < L->npairs; p++) {
            /* every sample finished every run: count = n */
            size_t c = L->full ? L->n : pcnt[p];
            preps[p][b] = c ? psum[p] / ((double)c * L->pdiv[p]) : NAN;
        }
    }
    free(row4);
    dsa_stats_draws_release(&dr);
    gsl_rng_free(r);
    free(scale);
}

static void run_tests(const struct dsa_paired_input *in, const size_t *runs, size_t nr,
                      const double *m, double *F, double *p, double *summary)
{
    size_t n = in->n;
    unsigned char *keep = dsa_xcalloc(n ? n : 1, 1);
    size_t nk = 0;
    for (size_t i = 0; i < n; i++) {
        bool ok = true;
        for (size_t q = 0; q < nr && ok; q++)
            ok = !isnan(m[runs[q] * n + i]);
        keep[i] = ok;
        nk += ok;
    }
    *F = NAN;
    *p = NAN;
    if (nr >= 2 && nk >= 2) {
        double *y = arm_matrix(m, n, runs, nr, keep, nk);
        dsa_stats_run_ftest(y, nk, nr, F, p);
        free(y);
    }
    /* run summaries for the permutation test: each run's mean over its finished samples */
    for (size_t q = 0; q < nr; q++)
        summary[q] = mean_finite(m + runs[q] * n, n, NULL);
    free(keep);
}

/* the active runs of an arm: those with at least one finished sample here (a rerun of one
   bin only leaves the other bins' runs empty); returns their count */
static size_t active_runs(const double *m, size_t n, size_t R, size_t *runs)
{
    size_t nr = 0;
    for (size_t r = 0; r < R; r++) {
        size_t c;
        mean_finite(m + r * n, n, &c);
        if (c)
            runs[nr++] = r;
    }
    return nr;
}

/* the run-effect F-tests of both arms, runs_disagree and the run-level permutation test */
static void run_level(const struct dsa_paired_input *in, const size_t *brun, size_t rb,
                      const size_t *crun, size_t rc, struct dsa_paired_result *out)
{
    if (rb < 2 && rc < 2)
        return;
    double *sb = dsa_xmalloc((rb + 1) * sizeof *sb), *sc = dsa_xmalloc((rc + 1) * sizeof *sc);
    run_tests(in, brun, rb, in->base, &out->f_base, &out->p_base, sb);
    run_tests(in, crun, rc, in->cand, &out->f_cand, &out->p_cand, sc);
    out->runs_disagree =
        (!isnan(out->p_base) && out->p_base < 0.01) || (!isnan(out->p_cand) && out->p_cand < 0.01);
    if (rb >= 2 && rc >= 2 && dsa_stats_perm_exact(sb, rb, sc, rc, &out->perm) == 0)
        out->has_perm = true;
    free(sb);
    free(sc);
}

/* the part of dsa_stats_paired() that decides and computes the two-level CI, alone */
static bool two_level_part(const struct dsa_paired_input *in, const struct dsa_boot_cfg *cfg,
                           uint32_t seed, unsigned flags, bool compute,
                           struct dsa_paired_result *out)
{
    size_t n = in->n;
    if (in->rb < 1 || in->rc < 1 || n < 2 || (flags & DSA_PAIRED_NO_TWO_LEVEL))
        return false;
    size_t *brun = dsa_xmalloc(in->rb * sizeof *brun), *crun = dsa_xmalloc(in->rc * sizeof *crun);
    size_t rb = active_runs(in->base, n, in->rb, brun), rc = active_runs(in->cand, n, in->rc, crun);
    struct dsa_paired_result tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.p_base = tmp.p_cand = NAN;
    run_level(in, brun, rb, crun, rc, &tmp);
    bool want = tmp.runs_disagree || (flags & DSA_PAIRED_TWO_LEVEL_ALWAYS);
    if (want && compute)
        two_level(in, brun, rb, crun, rc, cfg, seed, out);
    free(brun);
    free(crun);
    return want;
}

bool dsa_stats_paired_wants_two_level(const struct dsa_paired_input *in, unsigned flags)
{
    return two_level_part(in, NULL, 0, flags, false, NULL);
}

void dsa_stats_paired_two_level(const struct dsa_paired_input *in, const struct dsa_boot_cfg *cfg,
                                uint32_t two_level_seed, unsigned flags,
                                struct dsa_paired_result *out)
{
    out->has_two_level = false;
    out->two_level_n = 0;
    out->tl_lo = out->tl_hi = NAN;
    two_level_part(in, cfg, two_level_seed, flags, true, out);
}

int dsa_stats_paired(const struct dsa_paired_input *in, const struct dsa_boot_cfg *cfg,
                     uint32_t seed, uint32_t two_level_seed, unsigned flags,
                     struct dsa_paired_result *out)
{
    memset(out, 0, sizeof *out);
    out->diff = out->lo = out->hi = out->se = out->mde80 = out->sd_d = out->rho = NAN;
    out->base_mean = out->cand_mean = out->boot_sd = NAN;
    out->f_base = out->p_base = out->f_cand = out->p_cand = NAN;
    out->tl_lo = out->tl_hi = out->mc_p = NAN;
    if (in->rb < 1 || in->rc < 1 || cfg->resamples < 1 || !(cfg->confidence > 0) ||
        !(cfg->confidence < 1))
        return -1;
    size_t n = in->n;
    out->n = n;

    /* active runs: those with at least one finished sample here (a rerun of one bin only
       leaves the other bins' runs empty) */
    size_t *brun = dsa_xmalloc(in->rb * sizeof *brun), *crun = dsa_xmalloc(in->rc * sizeof *crun);
    size_t rb = active_runs(in->base, n, in->rb, brun), rc = active_runs(in->cand, n, in->rc, crun);
    out->rb_used = rb;
    out->rc_used = rc;

    double *bm = dsa_xmalloc((n ? n : 1) * sizeof *bm), *cm = dsa_xmalloc((n ? n : 1) * sizeof *cm);
    double *d = dsa_xmalloc((n ? n : 1) * sizeof *d);
    bool binary = rb == 1 && rc == 1;
    for (size_t i = 0; i < n; i++) {
        bm[i] = sample_mean(in->base, n, i, brun, rb);
        cm[i] = sample_mean(in->cand, n, i, crun, rc);
        if (isnan(bm[i]) || isnan(cm[i])) {
            free(brun), free(crun), free(bm), free(cm), free(d);
            return -1;
        }
        d[i] = cm[i] - bm[i];
        if (binary && !((bm[i] == 0 || bm[i] == 1) && (cm[i] == 0 || cm[i] == 1)))
            binary = false;
    }
    if (n) {
        out->base_mean = gsl_stats_mean(bm, 1, n);
        out->cand_mean = gsl_stats_mean(cm, 1, n);
    }
    if (binary && n) {
        out->binary = true;
        for (size_t i = 0; i < n; i++) {
            out->mc_b += bm[i] == 1 && cm[i] == 0;
            out->mc_c += bm[i] == 0 && cm[i] == 1;
        }
        out->mc_p = dsa_stats_mcnemar_exact(out->mc_b, out->mc_c);
    }

    /* per-run pairs: run r with run r; the arm with fewer runs repeats its last run */
    size_t npairs = (rb > 1 || rc > 1) ? (rb > rc ? rb : rc) : 0;
    out->n_runs = npairs;
    out->runs = npairs ? dsa_xcalloc(npairs, sizeof *out->runs) : NULL;
    double **pv = npairs ? dsa_xcalloc(npairs, sizeof *pv) : NULL;
    unsigned char **pm = npairs ? dsa_xcalloc(npairs, sizeof *pm) : NULL;
    double *pdiv = npairs ? dsa_xcalloc(npairs, sizeof *pdiv) : NULL;
    for (size_t p = 0; p < npairs; p++) {
        struct dsa_paired_run *pr = &out->runs[p];
        pr->base_run = brun[p < rb ? p : rb - 1];
        pr->cand_run = crun[p < rc ? p : rc - 1];
        pv[p] = dsa_xmalloc((n ? n : 1) * sizeof **pv);
        pm[p] = dsa_xcalloc(n ? n : 1, 1);
        double sb = 0, sc = 0;
        for (size_t i = 0; i < n; i++) {
            double x = in->base[pr->base_run * n + i], y = in->cand[pr->cand_run * n + i];
            if (!isnan(x) && !isnan(y)) {
                pm[p][i] = 1;
                pv[p][i] = y - x;
                sb += x;
                sc += y;
                pr->n++;
            }
        }
        pr->base_mean = pr->n ? sb / (double)pr->n : NAN;
        pr->cand_mean = pr->n ? sc / (double)pr->n : NAN;
        apply_scale(pv[p], pm[p], n, 1, 1, &pdiv[p]);
        double s = 0;
        for (size_t i = 0; i < n; i++)
            if (pm[p][i])
                s += pv[p][i];
        pr->diff = pr->n ? s / ((double)pr->n * pdiv[p]) : NAN;
        pr->lo = pr->hi = NAN;
    }

    if (n >= 1) {
        double sd = n >= 2 ? gsl_stats_sd(d, 1, n) : NAN;
        out->sd_d = sd;
        out->se = sd / sqrt((double)n);
        out->mde80 = dsa_stats_mde(out->se, cfg->confidence, 0.8);
        if (n >= 3) {
            double r = gsl_stats_correlation(bm, 1, cm, 1, n);
            out->rho = isfinite(r) ? r : NAN;
        }
    }
    out->small_n = n < 30;
    /* the statistic along the replicate path: exact integer sums when the data allow */
    double *v = dsa_xmalloc((n ? n : 1) * sizeof *v), div = 1;
    memcpy(v, d, n * sizeof *v);
    apply_scale(v, NULL, n, rb, rc, &div);
    double S = 0;
    for (size_t i = 0; i < n; i++)
        S += v[i];
    out->diff = n ? S / ((double)n * div) : NAN;

    if (n < 2) {
        out->na = true;
    } else {
        bool all_equal = true;
        for (size_t i = 1; i < n && all_equal; i++)
            all_equal = d[i] == d[0];
        size_t Bn = (size_t)cfg->resamples;
        double *reps = dsa_xmalloc(Bn * sizeof *reps);
        double **preps = npairs ? dsa_xcalloc(npairs, sizeof *preps) : NULL;
        for (size_t p = 0; p < npairs; p++)
            preps[p] = dsa_xmalloc(Bn * sizeof **preps);
        double *psum = npairs ? dsa_xcalloc(npairs, sizeof *psum) : NULL;
        size_t *pcnt = npairs ? dsa_xcalloc(npairs, sizeof *pcnt) : NULL;
        struct strata st;
        strata_init(&st, in);
        /* per-run values sample-major (one cache line per drawn sample), 0 where masked */
        double *pvt = dsa_xcalloc(n * (npairs ? npairs : 1), sizeof *pvt);
        unsigned char *pmt = dsa_xcalloc(n * (npairs ? npairs : 1), 1);
        bool full = true;
        for (size_t p = 0; p < npairs; p++)
            for (size_t i = 0; i < n; i++) {
                pmt[i * npairs + p] = pm[p][i];
                pvt[i * npairs + p] = pm[p][i] ? pv[p][i] : 0;
                full = full && pm[p][i];
            }
        struct pooled_loop L = {&st, !in->stratum, v, div, pvt, pmt, full, npairs, pdiv, n};
        pooled_replicates(&L, cfg, seed, Bn, reps, preps, psum, pcnt);
        free(pvt);
        free(pmt);
        out->boot_sd = gsl_stats_sd(reps, 1, Bn);
        if (all_equal) {
            out->degenerate = true;
            out->lo = out->hi = out->diff;
        } else {
            double accel = dsa_stats_jackknife_accel_mean(d, n);
            finish_ci(reps, Bn, out->diff, accel, cfg, true, &out->lo, &out->hi,
                      &out->bca_fallback);
        }
        for (size_t p = 0; p < npairs; p++) {
            struct dsa_paired_run *pr = &out->runs[p];
            /* replicates that drew none of this run's samples are left out */
            size_t m = 0;
            for (size_t b = 0; b < Bn; b++)
                if (!isnan(preps[p][b]))
                    preps[p][m++] = preps[p][b];
            if (pr->n >= 2 && m > 0) {
                gsl_sort(preps[p], 1, m);
                dsa_stats_ci_percentile(preps[p], m, cfg->confidence, &pr->lo, &pr->hi);
            }
            free(preps[p]);
        }
        free(preps);
        free(psum);
        free(pcnt);
        free(reps);
        strata_release(&st);
    }

    /* run-level diagnostics */
    run_level(in, brun, rb, crun, rc, out);
    if (n >= 2 && !(flags & DSA_PAIRED_NO_TWO_LEVEL) &&
        (out->runs_disagree || (flags & DSA_PAIRED_TWO_LEVEL_ALWAYS)))
        two_level(in, brun, rb, crun, rc, cfg, two_level_seed, out);

    for (size_t p = 0; p < npairs; p++) {
        free(pv[p]);
        free(pm[p]);
    }
    free(pv);
    free(pm);
    free(pdiv);
    free(v);
    free(d);
    free(bm);
    free(cm);
    free(brun);
    free(crun);
    return 0;
}

void dsa_paired_result_release(struct dsa_paired_result *r)
{
    free(r->runs);
    r->runs = NULL;
    r->n_runs = 0;
}

int dsa_stats_median_ratio(const double *base, const double *cand, size_t n,
                           const struct dsa_boot_cfg *cfg, uint32_t seed, double *median,
                           double *lo, double *hi)
{
    *median = *lo = *hi = NAN;
    if (n == 0)
        return -1;
    double *ratio = dsa_xmalloc(n * sizeof *ratio), *tmp = dsa_xmalloc(n * sizeof *tmp);
    for (size_t t = 0; t < n; t++)
        ratio[t] = cand[t] / base[t];
    memcpy(tmp, ratio, n * sizeof *tmp);
    *median = gsl_stats_median(tmp, 1, n);
    size_t Bn = (size_t)cfg->resamples;
    double *reps = dsa_xmalloc(Bn * sizeof *reps);
    gsl_rng *r = dsa_stats_rng_new(cfg->rng, seed);
    for (size_t b = 0; b < Bn; b++) {
        for (size_t j = 0; j < n; j++)
            tmp[j] = ratio[gsl_rng_uniform_int(r, n)];
        reps[b] = gsl_stats_median(tmp, 1, n);
    }
    gsl_rng_free(r);
    gsl_sort(reps, 1, Bn);
    /* never BCa for a median: the jackknife is inconsistent there (docs/compare.md "Paired
     * bootstrap") */
    dsa_stats_ci_percentile(reps, Bn, cfg->confidence, lo, hi);
    free(reps);
    free(tmp);
    free(ratio);
    return 0;
}

int dsa_stats_var_components(const double *y, size_t n, size_t R, struct dsa_var_components *out)
{
    memset(out, 0, sizeof *out);
    out->n = n;
    out->R = R;
    out->mean = out->var_sample = out->var_resid = out->var_run = NAN;
    if (n < 2 || R < 1)
        return -1;
    double *row = dsa_xcalloc(n, sizeof *row);
    for (size_t r = 0; r < R; r++)
        for (size_t i = 0; i < n; i++)
            row[i] += y[r * n + i];
    for (size_t i = 0; i < n; i++)
        row[i] /= (double)R;
    out->mean = gsl_stats_mean(row, 1, n);
    out->var_sample = gsl_stats_variance(row, 1, n);
    free(row);
    if (R == 1) {
        /* Var(s) = Var(alpha) + sigma_eps^2 >= sigma_eps^2: an upper bound */
        out->var_resid = out->var_sample;
        out->var_run = 0;
        out->bound = true;
        return 0;
    }
    /* the two-way ANOVA mean squares, as in dsa_stats_run_ftest() */
    double grand = 0;
    for (size_t k = 0; k < n * R; k++)
        grand += y[k];
    grand /= (double)(n * R);
    double *rm = dsa_xcalloc(n, sizeof *rm), *cm = dsa_xcalloc(R, sizeof *cm);
    for (size_t r = 0; r < R; r++)
        for (size_t i = 0; i < n; i++) {
            rm[i] += y[r * n + i] / (double)R;
            cm[r] += y[r * n + i] / (double)n;
        }
    double ss_run = 0, ss_res = 0;
    for (size_t r = 0; r < R; r++)
        ss_run += (double)n * (cm[r] - grand) * (cm[r] - grand);
    for (size_t r = 0; r < R; r++)
        for (size_t i = 0; i < n; i++) {
            double e = y[r * n + i] - rm[i] - cm[r] + grand;
            ss_res += e * e;
        }
    free(rm);
    free(cm);
    double ms_run = ss_run / (double)(R - 1), ms_res = ss_res / (double)((n - 1) * (R - 1));
    out->var_resid = ms_res;
    out->var_run = ms_run > ms_res ? (ms_run - ms_res) / (double)n : 0;
    return 0;
}

/* Variance of the paired difference D of a future comparison with `runs` runs per side on the
   same n samples when nothing changed: 2 (var_resid / n + var_run) / runs. */
static double plan_var(const struct dsa_var_components *vc, double runs)
{
    return 2.0 * (vc->var_resid / (double)vc->n + vc->var_run) / runs;
}

double dsa_stats_plan_runs(const struct dsa_var_components *vc, double delta, double confidence,
                           double power)
{
    return dsa_stats_power_n(plan_var(vc, 1.0), delta, confidence, power);
}

double dsa_stats_plan_mde(const struct dsa_var_components *vc, double runs, double confidence,
                          double power)
{
    return dsa_stats_mde(sqrt(plan_var(vc, runs)), confidence, power);
}
