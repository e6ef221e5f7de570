/*
 * A tiny fork-join helper for the C reference: split [0, n) into contiguous chunks over
 * threads. Results never depend on the thread count: every output element is computed by
 * exactly one thread with the same operations in the same order.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_KERNELS_CPU_PARALLEL_H
#define DSA_KERNELS_CPU_PARALLEL_H

/* fn(ctx, begin, end) for chunks covering [0, n); threads = $DSA_THREADS or the online CPUs
   (at most 64); runs inline when n is small or one thread is available. */
void dsa_cpu_parallel_for(long n, long min_chunk, void (*fn)(void *ctx, long begin, long end),
                          void *ctx);

#endif
