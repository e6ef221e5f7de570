/*
 * `dsa-eval kernels bench`: the CUDA indexer kernels timed at the shapes of issue #13 (S3a paged
 * decode logits, S3b ragged prefill logits, S4 top-k), each next to its floor on the device and
 * checked against the C reference on the same shape or a reduced one (docs/kernels.md
 * "Benchmarks: `dsa-eval kernels bench`").
 *
 * Timing: per shape, 3 warm-up calls, then `iters` calls each between two CUDA events; the
 * median and the minimum are reported. Inputs are rotated over enough copies that their total
 * exceeds three times the device's L2, so repeated calls read HBM, not the cache.
 * Floors: max(bytes / 4.8 TB/s, FLOPs / 1979 TFLOP/s), the H200's HBM3e and dense fp8 rates.
 *
 * Ownership: borrows the implementation and the stream; allocates and frees its own buffers.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_KERNELS_BENCH_H
#define DSA_KERNELS_BENCH_H

#include <stdint.h>
#include <stdio.h>

#include "dsa_kernels.h"

#define DSA_KBENCH_MIN_ITERS 20

struct dsa_kbench_opts {
    const struct dsa_kernels_api *impl; /* the built-in CUDA implementation */
    const char *filter;                 /* substring of "stage/shape", or NULL */
    int iters;                          /* timed calls per shape, >= DSA_KBENCH_MIN_ITERS */
    int json;                           /* 1: one JSON document instead of the table */
    uint64_t seed;                      /* seed of the random inputs */
};

struct dsa_kbench_result {
    int cases;  /* shapes timed */
    int failed; /* shapes whose check against the C reference failed */
};

/* Prints the table (or the JSON document) to out. Returns 0 when every selected shape ran,
   -1 on a device error (printed); res says how many ran and how many failed their check. */
int dsa_kbench_run(const struct dsa_kbench_opts *o, FILE *out, struct dsa_kbench_result *res);

#endif
