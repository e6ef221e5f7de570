/*
 * Scalar number formats of the indexer stack, shared by the C reference, the golden model,
 * the tests and (through the same definitions, reimplemented with intrinsics) the CUDA
 * kernels. Header-only: static inline, no state.
 *   bf16      round-to-nearest-even truncation of fp32 (NaN stays a quiet NaN)
 *   e4m3fn    1 sign, 4 exponent (bias 7), 3 mantissa bits; no infinities; 0x7f/0xff = NaN;
 *             max 448; subnormals m * 2^-9. Encode = RNE + saturate to +-448 (satfinite).
 *   UE8M0     scale 2^ceil(log2(max(amax,1e-4)/448)), computed exactly on the bits
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_NUMERIC_H
#define DSA_NUMERIC_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline uint32_t dsa_f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

static inline float dsa_bits_f32(uint32_t u)
{
    float x;
    memcpy(&x, &u, 4);
    return x;
}

static inline uint16_t dsa_f32_to_bf16(float x)
{
    uint32_t u = dsa_f32_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40); /* quiet NaN, sign kept */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline float dsa_bf16_to_f32(uint16_t h)
{
    return dsa_bits_f32((uint32_t)h << 16);
}

static inline float dsa_round_bf16(float x)
{
    return dsa_bf16_to_f32(dsa_f32_to_bf16(x));
}

/* e4m3fn encode: RNE, saturating (finite inputs beyond 448 give +-448), NaN -> 0x7f|sign */
static inline uint8_t dsa_f32_to_e4m3(float x)
{
    uint8_t sign = (dsa_f32_bits(x) >> 24) & 0x80;
    float a = fabsf(x);
    if (isnan(x))
        return (uint8_t)(sign | 0x7f);
    if (a >= 448.0f)
        return (uint8_t)(sign | 0x7e);
    int e;
    (void)frexpf(a, &e); /* a = m * 2^e, m in [0.5, 1) */
    e -= 1;              /* a = m' * 2^e, m' in [1, 2) */
    if (a == 0.0f || e < -6) {
        /* subnormal range: multiples of 2^-9; the scaling is exact, rintf rounds to even */
        float q = rintf(ldexpf(a, 9));
        return (uint8_t)(sign | (uint8_t)q); /* q == 8 is the smallest normal, code 0x08 */
    }
    float q = rintf(ldexpf(a, 3 - e)); /* in [8, 16] */
    if (q == 16.0f) {
        q = 8.0f;
        e += 1;
    }
    /* a < 448 keeps (e, q) at or below (8, 14) = 0x7e */
    return (uint8_t)(sign | (uint8_t)((e + 7) << 3) | (uint8_t)(q - 8.0f));
}

static inline float dsa_e4m3_to_f32(uint8_t c)
{
    int s = c >> 7, e = (c >> 3) & 15, m = c & 7;
    float v;
    if (e == 15 && m == 7)
        return s ? -NAN : NAN;
    if (e == 0)
        v = ldexpf((float)m, -9);
    else
        v = ldexpf((float)(8 + m), e - 10);
    return s ? -v : v;
}

/* the quant scale for one 128-element block (variant flag `scale`) */
static inline float dsa_quant_scale(float amax, int ue8m0)
{
    float t = fmaxf(amax, 1e-4f) / 448.0f;
    if (!ue8m0)
        return t;
    /* smallest power of two >= t, exactly (t is a positive normal float here) */
    uint32_t u = dsa_f32_bits(t);
    if (u & 0x7fffffu)
        u = (u & 0x7f800000u) + 0x800000u;
    return dsa_bits_f32(u);
}

/* A total order key of a float, larger = larger value; -0 and +0 map to one key. */
static inline uint32_t dsa_f32_order_key(float x)
{
    if (x == 0.0f)
        x = 0.0f;
    uint32_t u = dsa_f32_bits(x);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

#define DSA_INV_SQRT_128 0.08838834764831845f

/* sum_h w[h] * relu(q[h] . k) over H heads: q [H,128], w [H], k [128]. Each dot is four
   partial sums added (d0 + d1) + (d2 + d3), in this order everywhere: on dequantized fp8 codes
   (the C reference) every partial sum is exact, and on fp64 vectors (the golden model) the
   fixed order keeps the result the same bits in every caller. */
static inline double dsa_relu_score(const double *q, const double *w, int H, const double *k)
{
    double acc = 0.0;
    for (int h = 0; h < H; h++) {
        const double *qh = q + (size_t)h * 128;
        double d0 = 0.0, d1 = 0.0, d2 = 0.0, d3 = 0.0;
        for (int i = 0; i < 128; i += 4) {
            d0 += qh[i] * k[i];
            d1 += qh[i + 1] * k[i + 1];
            d2 += qh[i + 2] * k[i + 2];
            d3 += qh[i + 3] * k[i + 3];
        }
        double dot = (d0 + d1) + (d2 + d3);
        if (dot > 0.0)
            acc += w[h] * dot;
    }
    return acc;
}

#endif
