/*
 * The proxy model: seeded, documented q/k/w for the indexer stack that depend only on
 * (token id, position, seed), so an in-process run needs no model weights yet index scores
 * carry lexical structure (docs/kernels.md "The proxy model"):
 *   e(tok)[d]       = N(0,1)                                   token embedding, d < 128
 *   k_raw(tok,p)[d] = bf16( a(p) * (e(tok)[d] + 0.5 n_k(p,d)) ),   a(p) = exp(0.5 N)
 *   q_raw(tok,p)[h,d] = bf16( b(p,h) * (c_h e(tok)[d] + n_q(p,h,d)) ),
 *                     b(p,h) = exp(0.75 N), c_h = 1 + 0.5 |N|   (per-head lexical gain)
 *   w_raw(tok,p)[h] = bf16( 0.5 + 0.5 N )                       mostly positive heads
 *   ln_w[d] = 1 + 0.1 N, ln_b[d] = 0.02 N
 *   cos/sin[p][i]   = cos/sin(p * 10000^(-2i/64)) in fp64, rounded to fp32 (plain theta)
 * Every N is a standard normal drawn by Box-Muller from splitmix64 of (seed, stream tag,
 * indices), so each value is a pure function of its coordinates. The amplitudes a and b vary
 * per vector, so fp8 scales vary; a question token and the same token in a needle share
 * e(tok), so their q.k is large (about 128 c_h b a' against a noise of about 11 c_h b a').
 * Ownership: callers own the output buffers.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_KERNELS_PROXY_H
#define DSA_KERNELS_PROXY_H

#include <stdint.h>

void dsa_proxy_rope_table(long max_pos, float *cos, float *sin);            /* [max_pos, 32] each */
void dsa_proxy_ln(uint64_t seed, float *ln_w, float *ln_b);                 /* [128] each */
void dsa_proxy_k(uint64_t seed, int64_t tok, int64_t pos, uint16_t *k_raw); /* [128] */
void dsa_proxy_q(uint64_t seed, int H, int64_t tok, int64_t pos, uint16_t *q_raw); /* [H,128] */
void dsa_proxy_w(uint64_t seed, int H, int64_t tok, int64_t pos, uint16_t *w_raw); /* [H] */
/* one standard normal for the coordinates (exposed for tests and the golden model) */
double dsa_proxy_normal(uint64_t seed, uint64_t tag, uint64_t a, uint64_t b);

#endif
