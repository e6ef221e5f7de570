/*
 * The fp64 golden model of the indexer stack, written independently of the reference's
 * loop structure (flat arrays, full sorts), for `kernels check` and the tests:
 *   - unquantized q/k vectors in fp64 (LN, RoPE, Hadamard in double) to bound the fp8 error
 *     of S1/S2 in fp8 ULPs;
 *   - logits from quantized inputs in the reference's fp64 order (so the reference must
 *     match it bit for bit), and from unquantized fp64 inputs (the "ideal" indexer);
 *   - top-k by a full sort on (value desc, index asc);
 *   - calc_diff = 1 - 2 sum(xy) / sum(x^2 + y^2) (DeepGEMM's metric) over finite pairs.
 * Ownership: callers own every buffer.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_KERNELS_GOLDEN_H
#define DSA_KERNELS_GOLDEN_H

#include <stddef.h>
#include <stdint.h>

#include "dsa_kernels.h"

/* k: LayerNorm(bf16 k_raw) -> RoPE -> [Hadamard], all in fp64 (no bf16 rounding) */
void dsa_golden_k_vec(const uint16_t *k_raw, const float *ln_w, const float *ln_b, const float *cs,
                      const float *sn, int rope, int hadamard, double *out);
/* q: RoPE -> [Hadamard] in fp64 */
void dsa_golden_q_vec(const uint16_t *q_raw, const float *cs, const float *sn, int rope,
                      int hadamard, double *out);

/* the same from fp32 raw vectors (a float32 model's activations, before any bf16 rounding) */
void dsa_golden_k_vec_f32(const float *k_raw, const float *ln_w, const float *ln_b, const float *cs,
                          const float *sn, int rope, int hadamard, double *out);
void dsa_golden_q_vec_f32(const float *q_raw, const float *cs, const float *sn, int rope,
                          int hadamard, double *out);

/* logits[m, s] for s in [start[m], end[m]) from fp8 codes: ks[s] * sum_h w[m,h]*relu(dot);
   the others are -inf. w is f32 or bf16 (wdtype); out is f64 [M, NK] (the exact fp64 value
   before the fp32 rounding). */
void dsa_golden_logits_q8(int M, int H, long NK, const uint8_t *q8, const void *w, int wdtype,
                          const uint8_t *k8, const float *ks, const int32_t *start,
                          const int32_t *end, double *out);

/* top-k of v[0..len) by (value desc, index asc): writes min(k, len) indices, sorted that way,
   then -1 up to k. NaN-free input. */
void dsa_golden_topk_f64(const double *v, long len, int k, int32_t *idx);

/* calc_diff over pairs where both are finite; *mask_equal = 1 when x and y are -inf at the
   same positions (and nowhere else) */
double dsa_calc_diff(const double *x, const double *y, size_t n, int *mask_equal);

#endif
