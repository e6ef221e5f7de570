/*
 * `dsa-eval kernels check`: every stage of the indexer stack over many shapes, one table row
 * per case. Two modes:
 *   - implementation vs the C reference (CUDA, or a plugin): S1/S2 byte-exact, S3 calc_diff
 *     and -inf mask, S4 value multisets, determinism over 20 reruns;
 *   - the C reference vs the fp64 golden model (--device cpu): S1/S2 within 1 fp8 ULP of
 *     the fp64 vector, S3 bit-identical to the golden fp64 order, S4 identical to a full sort.
 * Ownership: borrows the api and the stream.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_KERNELS_CHECK_H
#define DSA_KERNELS_CHECK_H

#include <stdint.h>
#include <stdio.h>

#include "dsa_kernels.h"

struct dsa_kcheck_opts {
    const struct dsa_kernels_api *impl; /* the implementation under test */
    int vs_golden;                      /* 1: impl is the reference, compare with the golden */
    const char *filter;                 /* substring of "stage/case", or NULL */
    int reruns;                         /* determinism reruns (20) */
    uint64_t seed;
    int quick; /* 1: skip the largest shapes (64K contexts, T = 4096) */
};

struct dsa_kcheck_result {
    int passed, failed, skipped;
};

/* Prints the table to out; returns 0 when every case ran (pass/fail/skip in *res), -1 on a
   device error (printed). */
int dsa_kcheck_run(const struct dsa_kcheck_opts *o, FILE *out, struct dsa_kcheck_result *res);

#endif
