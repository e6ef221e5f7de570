/*
 * Fork-join over pthreads for the C reference (see parallel.h).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "parallel.h"

struct job {
    void (*fn)(void *ctx, long begin, long end);
    void *ctx;
    long begin, end;
};

static void *run_job(void *p)
{
    struct job *j = p;
    j->fn(j->ctx, j->begin, j->end);
    return NULL;
}

static int cpu_threads(void)
{
    const char *env = getenv("DSA_THREADS");
    long n = env ? strtol(env, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        n = 1;
    if (n > 64)
        n = 64;
    return (int)n;
}

void dsa_cpu_parallel_for(long n, long min_chunk, void (*fn)(void *ctx, long begin, long end),
                          void *ctx)
{
    if (n <= 0)
        return;
    long nt = cpu_threads();
    if (min_chunk < 1)
        min_chunk = 1;
    if (nt > n / min_chunk)
        nt = n / min_chunk;
    if (nt <= 1) {
        fn(ctx, 0, n);
        return;
    }
    struct job jobs[64];
    pthread_t tids[64];
    int started[64] = {0};
    for (long t = 0; t < nt; t++) {
        jobs[t] = (struct job){fn, ctx, n * t / nt, n * (t + 1) / nt};
        if (t > 0)
            started[t] = pthread_create(&tids[t], NULL, run_job, &jobs[t]) == 0;
    }
    run_job(&jobs[0]);
    for (long t = 1; t < nt; t++) {
        if (started[t])
            pthread_join(tids[t], NULL);
        else
            run_job(&jobs[t]); /* could not start a thread: do its share here */
    }
}
