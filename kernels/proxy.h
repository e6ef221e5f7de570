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
 * On top of that, an MRCR row's retrieval structure can be planted (dsa_proxy_topic below).
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

/* The retrieval structure ("proxy-v2", docs/kernels.md "The proxy model"): an MRCR row's topic
   (its needle's request) is a direction u(topic) in the non-rotary dims [64, 128) (zero mean,
   unit length; RoPE leaves it alone, so it matches at any distance). The keys of the needle, of
   the distractors (the other replies to the same request) and of the question carry
   DSA_PROXY_KEY_GAIN * u inside the amplitude, the question's query rows carry
   DSA_PROXY_QUERY_GAIN * u in every head:
     k_raw(tok,p)[d]   = bf16( a(p) * (e(tok)[d] + 0.5 n_k(p,d) + G_k u[d]) )
     q_raw(tok,p)[h,d] = bf16( b(p,h) * (c_h e(tok)[d] + n_q(p,h,d) + G_q u[d]) )
   The gains set the margin of a planted key over the noise of up to 1M others: calibrated so the
   fp64 golden top-2048 keeps >= 95% of the needle's tokens at every bin up to 1M
   (bench/RESULTS.md "Proxy retrieval"), not so much more that quantization could not lose them. */
#define DSA_PROXY_KEY_GAIN   16.0
#define DSA_PROXY_QUERY_GAIN 16.0
void dsa_proxy_topic(uint64_t seed, uint64_t topic, double u[128]);
/* k and q with the topic planted (u = NULL: none, the same as dsa_proxy_k / dsa_proxy_q) */
void dsa_proxy_k_planted(uint64_t seed, int64_t tok, int64_t pos, const double *u, uint16_t *k_raw);
void dsa_proxy_q_planted(uint64_t seed, int H, int64_t tok, int64_t pos, const double *u,
                         uint16_t *q_raw);

#endif
