/*
 * S1 k_prep and S2 q_prep, the C reference (docs/kernels.md "Numerics").
 * Every fp32 operation is written out with its rounding: one operation per expression, the
 * file is compiled with -ffp-contract=off (no FMA), and the two reductions (the LayerNorm
 * sums) follow the fixed tree below, which a CUDA warp reproduces with shuffles, so the CUDA
 * kernels match these bytes exactly.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "dsa_kernels.h"
#include "dsa_numeric.h"
#include "parallel.h"

/* Sum of 128 floats along a fixed tree: x[i] += x[i + w] for w = 64, 32, …, 1. A warp holding
   x[lane + 32*slot] does the w = 64 and 32 steps in registers and w = 16 … 1 by shuffles. */
static float tree_sum128(const float *x)
{
    float t[64];
    for (int i = 0; i < 64; i++)
        t[i] = x[i] + x[i + 64];
    for (int w = 32; w >= 1; w /= 2)
        for (int i = 0; i < w; i++)
            t[i] = t[i] + t[i + w];
    return t[0];
}

static float maybe_bf16(float x, int on)
{
    return on ? dsa_round_bf16(x) : x;
}

/* RoPE on dims [0, 64): pair p uses cos/sin[pos][p]; out1 = x1*c - x2*s, out2 = x2*c + x1*s */
static void rope(float *x, const float *cs, const float *sn, int layout)
{
    for (int p = 0; p < DSA_K_ROPE_DIM / 2; p++) {
        int i1 = layout == DSA_K_ROPE_NEOX ? p : 2 * p;
        int i2 = layout == DSA_K_ROPE_NEOX ? p + 32 : 2 * p + 1;
        float x1 = x[i1], x2 = x[i2], c = cs[p], s = sn[p];
        float a = x1 * c, b = x2 * s, d = x2 * c, e = x1 * s;
        x[i1] = a - b;
        x[i2] = d + e;
    }
}

/* Walsh-Hadamard butterflies h = 1, 2, …, 64 (a+b, a-b), then each times 128^-0.5 */
static void hadamard(float *x)
{
    for (int h = 1; h < DSA_K_HEAD_DIM; h *= 2)
        for (int i = 0; i < DSA_K_HEAD_DIM; i++)
            if (!(i & h)) {
                float a = x[i], b = x[i + h];
                x[i] = a + b;
                x[i + h] = a - b;
            }
    for (int i = 0; i < DSA_K_HEAD_DIM; i++)
        x[i] = x[i] * DSA_INV_SQRT_128;
}

/* RoPE -> [Hadamard] -> quant of one 128-vector; returns the scale */
static float rope_rotate_quant(const struct dsa_k_flags *f, float *x, const float *cs,
                               const float *sn, uint8_t *out)
{
    rope(x, cs, sn, f->rope);
    if (f->bf16_round)
        for (int i = 0; i < DSA_K_HEAD_DIM; i++)
            x[i] = dsa_round_bf16(x[i]);
    if (f->hadamard) {
        hadamard(x);
        if (f->bf16_round)
            for (int i = 0; i < DSA_K_HEAD_DIM; i++)
                x[i] = dsa_round_bf16(x[i]);
    }
    float amax = 0.0f;
    for (int i = 0; i < DSA_K_HEAD_DIM; i++)
        amax = fmaxf(amax, fabsf(x[i]));
    float s = dsa_quant_scale(amax, f->scale == DSA_K_SCALE_UE8M0);
    for (int i = 0; i < DSA_K_HEAD_DIM; i++)
        out[i] = dsa_f32_to_e4m3(x[i] / s);
    return s;
}

static int flags_ok(const struct dsa_k_flags *f)
{
    return (f->heads == 64 || f->heads == 32) && (f->rope == 0 || f->rope == 1) &&
           (f->weights == DSA_K_F32 || f->weights == DSA_K_BF16) &&
           (f->logits == DSA_K_F32 || f->logits == DSA_K_BF16);
}

/* S1 of token t: LayerNorm -> RoPE -> [Hadamard] -> quant into its cache slot */
static void k_prep_token(const struct dsa_k_flags *f, const struct dsa_k_prep_args *a, long t)
{
    float x[DSA_K_HEAD_DIM], d[DSA_K_HEAD_DIM];
    for (int i = 0; i < DSA_K_HEAD_DIM; i++)
        x[i] = dsa_bf16_to_f32(a->k_raw[(size_t)t * DSA_K_HEAD_DIM + i]);
    /* LayerNorm in fp32: mean, centred values, biased variance, eps inside the sqrt */
    float mean = tree_sum128(x) / 128.0f;
    for (int i = 0; i < DSA_K_HEAD_DIM; i++)
        d[i] = x[i] - mean;
    float sq[DSA_K_HEAD_DIM];
    for (int i = 0; i < DSA_K_HEAD_DIM; i++)
        sq[i] = d[i] * d[i];
    float var = tree_sum128(sq) / 128.0f;
    float rstd = 1.0f / sqrtf(var + DSA_K_LN_EPS);
    for (int i = 0; i < DSA_K_HEAD_DIM; i++) {
        float y = d[i] * rstd;
        y = y * a->ln_w[i];
        y = y + a->ln_b[i];
        x[i] = maybe_bf16(y, f->bf16_round);
    }
    int64_t page = a->slot[t] / DSA_K_PAGE, off = a->slot[t] % DSA_K_PAGE;
    uint8_t *base = a->cache + (size_t)page * DSA_K_PAGE_BYTES;
    const float *cs = a->cos + (size_t)a->pos[t] * 32, *sn = a->sin + (size_t)a->pos[t] * 32;
    float s = rope_rotate_quant(f, x, cs, sn, base + off * DSA_K_HEAD_DIM);
    memcpy(base + DSA_K_SCALE_OFF + off * 4, &s, 4);
}

struct k_prep_ctx {
    const struct dsa_k_flags *f;
    const struct dsa_k_prep_args *a;
};

static void k_prep_range(void *p, long begin, long end)
{
    const struct k_prep_ctx *c = p;
    for (long t = begin; t < end; t++)
        if (c->a->slot[t] >= 0)
            k_prep_token(c->f, c->a, t);
}

/* Tokens are independent (each writes its own slot), so they are split over threads; all
   positions are checked first so that a bad one writes nothing. */
int dsa_cpu_k_prep(const struct dsa_k_flags *f, const struct dsa_k_prep_args *a)
{
    if (!flags_ok(f) || a->T < 0)
        return DSA_K_EINVAL;
    for (int t = 0; t < a->T; t++)
        if (a->slot[t] >= 0 && (a->pos[t] < 0 || a->pos[t] >= a->max_pos))
            return DSA_K_EINVAL;
    struct k_prep_ctx c = {f, a};
    dsa_cpu_parallel_for(a->T, 256, k_prep_range, &c);
    return DSA_K_OK;
}

struct q_prep_ctx {
    const struct dsa_k_flags *f;
    const struct dsa_q_prep_args *a;
};

/* work item = one (token, head) 128-vector and its weight */
static void q_prep_range(void *p, long begin, long end)
{
    const struct q_prep_ctx *c = p;
    const struct dsa_k_flags *f = c->f;
    const struct dsa_q_prep_args *a = c->a;
    int H = f->heads;
    float head_scale = H == 64 ? 0.125f : 0.1767766952966369f; /* H^-0.5 rounded to fp32 */
    for (long th = begin; th < end; th++) {
        long t = th / H;
        const float *cs = a->cos + (size_t)a->pos[t] * 32, *sn = a->sin + (size_t)a->pos[t] * 32;
        float x[DSA_K_HEAD_DIM];
        for (int i = 0; i < DSA_K_HEAD_DIM; i++)
            x[i] = dsa_bf16_to_f32(a->q_raw[(size_t)th * DSA_K_HEAD_DIM + i]);
        float s = rope_rotate_quant(f, x, cs, sn, a->q8 + (size_t)th * DSA_K_HEAD_DIM);
        a->qs[th] = s;
        float wr = a->w_raw_dtype == DSA_K_BF16 ? dsa_bf16_to_f32(((const uint16_t *)a->w_raw)[th])
                                                : ((const float *)a->w_raw)[th];
        float w = wr * s;
        w = w * DSA_INV_SQRT_128;
        w = w * head_scale;
        if (f->weights == DSA_K_BF16)
            ((uint16_t *)a->w)[th] = dsa_f32_to_bf16(w);
        else
            ((float *)a->w)[th] = w;
    }
}

int dsa_cpu_q_prep(const struct dsa_k_flags *f, const struct dsa_q_prep_args *a)
{
    if (!flags_ok(f) || a->T < 0)
        return DSA_K_EINVAL;
    for (int t = 0; t < a->T; t++)
        if (a->pos[t] < 0 || a->pos[t] >= a->max_pos)
            return DSA_K_EINVAL;
    struct q_prep_ctx c = {f, a};
    dsa_cpu_parallel_for((long)a->T * f->heads, 64, q_prep_range, &c);
    if (a->topk_fill)
        for (long i = 0; i < (long)a->T * a->topk_k; i++)
            a->topk_fill[i] = -1;
    return DSA_K_OK;
}

int dsa_cpu_prep(const struct dsa_k_flags *f, const struct dsa_k_prep_args *k,
                 const struct dsa_q_prep_args *q)
{
    int rc = dsa_cpu_k_prep(f, k);
    return rc ? rc : dsa_cpu_q_prep(f, q);
}
