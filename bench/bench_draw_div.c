/*
 * bench_draw_div: the bootstrap's division k = floor(x / d) done as one double multiplication
 * (dsa_stats_draw_div, src/stats/stats.h) checked against the integer division for every 32-bit
 * x, for the ranges m given (d = 0xffffffff / m, GSL's scale), and the time of both per word.
 *
 *   build/bench/bench_draw_div [M ...]     (default: 800 6400)
 *
 * Prints one line per range: "m M d D: 4294967296 x checked, 0 differ; ..."; exits 1 if any
 * differs. About 10 CPU seconds per range.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "stats/stats.h"

static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* every 32-bit x; returns the number that differ, *sum keeps the loop from being dropped */
static uint64_t check(uint32_t m, uint64_t *sum, double *t_mul, double *t_div)
{
    uint32_t d = 0xffffffffu / m;
    double r = dsa_stats_draw_scale(m);
    uint64_t bad = 0, s = 0;
    double t0 = cpu_now();
    for (uint64_t x = 0; x <= 0xffffffffu; x++)
        s += dsa_stats_draw_div((uint32_t)x, r);
    double t1 = cpu_now();
    for (uint64_t x = 0; x <= 0xffffffffu; x++) {
        uint32_t k = (uint32_t)x / d;
        s -= k;
        bad += dsa_stats_draw_div((uint32_t)x, r) != k;
    }
    double t2 = cpu_now();
    *sum += s;
    *t_mul = t1 - t0;
    *t_div = t2 - t1;
    return bad;
}

int main(int argc, char **argv)
{
    static const char *const dflt[] = {"800", "6400"};
    int n = argc > 1 ? argc - 1 : 2;
    const char *const *ms = argc > 1 ? (const char *const *)argv + 1 : dflt;
    uint64_t sum = 0, bad_all = 0;
    for (int i = 0; i < n; i++) {
        char *end;
        unsigned long m = strtoul(ms[i], &end, 10);
        if (*end || m < 1 || m > 0xffffffffUL) {
            fprintf(stderr, "bench_draw_div: not a range 1..4294967295: '%s'\n", ms[i]);
            return 2;
        }
        double tm, td;
        uint64_t bad = check((uint32_t)m, &sum, &tm, &td);
        bad_all += bad;
        printf("m %lu d %u: 4294967296 x checked, %" PRIu64 " differ; %.2f ns per x "
               "(multiplication), %.2f ns (multiplication beside the divide)\n",
               m, 0xffffffffu / (uint32_t)m, bad, tm / 4294967296.0 * 1e9, td / 4294967296.0 * 1e9);
    }
    /* the sums of k cancel: 0 unless some k differed */
    return bad_all || sum ? 1 : 0;
}
