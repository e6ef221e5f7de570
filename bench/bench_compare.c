/*
 * bench_compare: speed of the paired bootstrap of `compare` against scipy.stats.bootstrap,
 * both timed in this run on the same data: 8 bins x 800 samples x 3 runs per side, B =
 * 10,000, 95 % percentile. dsa-eval computes, per bin and from one index stream, the pooled
 * difference and the 3 per-run differences (4 statistics); scipy computes only the pooled one
 * (paired=True, vectorized, method='percentile'). Both sides are timed in CPU seconds of one
 * thread (OMP/BLAS threads pinned to 1 for numpy). The ratio printed is scipy / dsa-eval.
 *
 *   bench_compare [--bins 8] [--n 800] [--runs 3] [--resamples 10000]
 *
 * scipy comes from $DSA_PYTHON, else /usr/bin/python3; without it only dsa-eval is timed.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "stats/stats.h"
#include "util/buf.h"

static const char *python(void)
{
    const char *p = getenv("DSA_PYTHON");
    return p && *p ? p : "/usr/bin/python3";
}

int main(int argc, char **argv)
{
    long bins = 8, n = 800, runs = 3, B = 10000;
    bench_args(argc, argv, "bench_compare [--bins 8] [--n 800] [--runs 3] [--resamples 10000]",
               (const struct bench_arg[]){
                   {"bins", &bins}, {"n", &n}, {"runs", &runs}, {"resamples", &B}, {NULL, NULL}});
    /* MRCR-like scores: per-sample difficulty, per-run noise, rounded to 1e-4 */
    gsl_rng *g = dsa_stats_rng_new(DSA_RNG_MT19937, 12345);
    size_t per = (size_t)(runs * n);
    double *base = dsa_xmalloc((size_t)bins * per * sizeof *base);
    double *cand = dsa_xmalloc((size_t)bins * per * sizeof *cand);
    for (long b = 0; b < bins; b++)
        for (long i = 0; i < n; i++) {
            double a = gsl_rng_uniform(g);
            for (long r = 0; r < runs; r++) {
                double x = a + 0.2 * (gsl_rng_uniform(g) - 0.5);
                double y = a + 0.2 * (gsl_rng_uniform(g) - 0.5) - 0.01;
                base[b * per + r * n + i] = round(fmin(1, fmax(0, x)) * 1e4) / 1e4;
                cand[b * per + r * n + i] = round(fmin(1, fmax(0, y)) * 1e4) / 1e4;
            }
        }
    gsl_rng_free(g);

    struct dsa_boot_cfg cfg = DSA_BOOT_CFG_INIT;
    cfg.resamples = B;
    double t0 = bench_cpu_seconds(), check = 0;
    for (long b = 0; b < bins; b++) {
        struct dsa_paired_input in = {
            (size_t)n, (size_t)runs, (size_t)runs, base + b * per, cand + b * per, NULL, 0};
        struct dsa_paired_result r;
        char label[64];
        snprintf(label, sizeof label, "main..cand/bin%ld", b);
        uint32_t s = dsa_stats_stream_seed(1, label);
        if (dsa_stats_paired(&in, &cfg, s, s, DSA_PAIRED_NO_TWO_LEVEL, &r) < 0)
            return 1;
        check += r.lo + r.hi;
        dsa_paired_result_release(&r);
    }
    double t_dsa = bench_cpu_seconds() - t0;
    printf("dsa-eval: %ld bins x %ld samples x %ld runs per side, B=%ld, taus2, 4 statistics "
           "per bin (pooled + %ld per-run): %.3f s CPU (checksum %.6f)\n",
           bins, n, runs, B, runs, t_dsa, check);

    /* scipy on the same per-sample means, timed inside Python (CPU time) */
    char path[] = "/tmp/bench_compare.XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        printf("scipy: cannot write the data file; ratio not measured\n");
        return 0;
    }
    for (long b = 0; b < bins; b++)
        for (long i = 0; i < n; i++) {
            double sb = 0, sc = 0;
            for (long r = 0; r < runs; r++) {
                sb += base[b * per + r * n + i];
                sc += cand[b * per + r * n + i];
            }
            fprintf(f, "%ld %.17g %.17g\n", b, sb / (double)runs, sc / (double)runs);
        }
    fclose(f);
    struct dsa_buf cmd = DSA_BUF_INIT;
    dsa_buf_addf(&cmd,
                 "OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 %s - %s %ld 2>&1 <<'PY'\n"
                 "import sys, time\n"
                 "import numpy as np\n"
                 "from scipy import stats\n"
                 "d = np.loadtxt(sys.argv[1]); B = int(sys.argv[2])\n"
                 "t0 = time.process_time()\n"
                 "for b in np.unique(d[:, 0]):\n"
                 "    x = d[d[:, 0] == b]\n"
                 "    stats.bootstrap((x[:, 2], x[:, 1]), lambda c, a, axis=-1: "
                 "np.mean(c - a, axis=axis), paired=True, vectorized=True, n_resamples=B, "
                 "method='percentile', random_state=1)\n"
                 "print('%%.6f' %% (time.process_time() - t0))\n"
                 "PY\n",
                 python(), path, B);
    FILE *p = popen(cmd.data, "r");
    char line[4096] = "";
    double t_sp = NAN;
    if (p) {
        while (fgets(line, sizeof line, p))
            if (sscanf(line, "%lf", &t_sp) != 1)
                t_sp = NAN;
        pclose(p);
    }
    unlink(path);
    dsa_buf_release(&cmd);
    if (isnan(t_sp)) {
        printf("scipy: not available (%s); ratio not measured\n", python());
        return 0;
    }
    printf("scipy.stats.bootstrap (paired, vectorized, percentile), pooled statistic only: "
           "%.3f s CPU\n",
           t_sp);
    printf("ratio scipy / dsa-eval: %.1fx (dsa-eval computing 4 statistics per bin, scipy 1)\n",
           t_sp / t_dsa);
    free(base);
    free(cand);
    return 0;
}
