/*
 * S3a paged decode logits and S3b ragged prefill logits, the C reference.
 * fp8 x fp8 products are exact in fp64 and a 128-term sum of them spans at most 43 bits, so
 * each dot below is exact; the head sum acc += w_h * relu(dot_h) runs in fp64 in head order,
 * and the logit is rounded to fp32 once (then to bf16 for the BF16 logits flag).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dsa_kernels.h"
#include "dsa_numeric.h"
#include "parallel.h"

static double e4m3_lut[256];
static int lut_ready;

static void lut_init(void)
{
    if (__atomic_load_n(&lut_ready, __ATOMIC_ACQUIRE))
        return;
    for (int c = 0; c < 256; c++)
        e4m3_lut[c] = (double)dsa_e4m3_to_f32((uint8_t)c);
    __atomic_store_n(&lut_ready, 1, __ATOMIC_RELEASE);
}

static double weight_at(const void *w, int dtype, size_t i)
{
    return dtype == DSA_K_BF16 ? (double)dsa_bf16_to_f32(((const uint16_t *)w)[i])
                               : (double)((const float *)w)[i];
}

static void store_logit(void *out, int dtype, size_t i, double v)
{
    float f = (float)v;
    if (dtype == DSA_K_BF16)
        ((uint16_t *)out)[i] = dsa_f32_to_bf16(f);
    else
        ((float *)out)[i] = f;
}

static void store_neg_inf(void *out, int dtype, size_t i)
{
    if (dtype == DSA_K_BF16)
        ((uint16_t *)out)[i] = 0xff80;
    else
        ((float *)out)[i] = -INFINITY;
}

static void decode_k(const uint8_t *k8, double *kd)
{
    for (int i = 0; i < DSA_K_HEAD_DIM; i++)
        kd[i] = e4m3_lut[k8[i]];
}

/* ---- S3a ---- */

struct decode_ctx {
    const struct dsa_k_flags *f;
    const struct dsa_logits_decode_args *a;
    const double *qd, *wd; /* [B*N][H][128], [B*N][H] */
    long max_ctx;
};

/* work item = (sequence b, page index) so that each page is decoded once for all N rows */
static void decode_range(void *p, long begin, long end)
{
    const struct decode_ctx *c = p;
    const struct dsa_logits_decode_args *a = c->a;
    int H = c->f->heads, N = a->N;
    long pages_per_seq = (c->max_ctx + DSA_K_PAGE - 1) / DSA_K_PAGE;
    double kd[DSA_K_HEAD_DIM];
    for (long item = begin; item < end; item++) {
        long b = item / pages_per_seq, pi = item % pages_per_seq;
        int seq_max = 0;
        for (int j = 0; j < N; j++)
            if (a->ctx[b * N + j] > seq_max)
                seq_max = a->ctx[b * N + j];
        if (pi * DSA_K_PAGE >= seq_max)
            continue;
        const uint8_t *page =
            a->cache + (size_t)a->block_table[b * a->max_blocks + pi] * DSA_K_PAGE_BYTES;
        for (int off = 0; off < DSA_K_PAGE; off++) {
            long s = pi * DSA_K_PAGE + off;
            if (s >= seq_max)
                break;
            decode_k(page + off * DSA_K_HEAD_DIM, kd);
            float ks;
            memcpy(&ks, page + DSA_K_SCALE_OFF + off * 4, 4);
            for (int j = 0; j < N; j++) {
                long r = b * N + j;
                if (s >= a->ctx[r])
                    continue;
                double acc = dsa_relu_score(c->qd + (size_t)r * H * DSA_K_HEAD_DIM,
                                            c->wd + (size_t)r * H, H, kd);
                store_logit(a->logits, c->f->logits, (size_t)r * a->stride + s, (double)ks * acc);
            }
        }
    }
}

static double *dequant_q(const uint8_t *q8, size_t n)
{
    double *q = malloc(n * sizeof *q);
    if (q)
        for (size_t i = 0; i < n; i++)
            q[i] = e4m3_lut[q8[i]];
    return q;
}

static double *weights_f64(const void *w, int dtype, size_t n)
{
    double *d = malloc((n ? n : 1) * sizeof *d);
    if (d)
        for (size_t i = 0; i < n; i++)
            d[i] = weight_at(w, dtype, i);
    return d;
}

int dsa_cpu_logits_decode(const struct dsa_k_flags *f, const struct dsa_logits_decode_args *a)
{
    if (a->N < 1 || a->N > 4 || a->B < 0 || (f->heads != 64 && f->heads != 32))
        return a->N > 4 ? DSA_K_UNSUPPORTED : DSA_K_EINVAL;
    lut_init();
    long rows = (long)a->B * a->N, max_ctx = 0;
    for (long r = 0; r < rows; r++) {
        if (a->ctx[r] < 0 || a->ctx[r] > a->stride || a->ctx[r] > (long)a->max_blocks * DSA_K_PAGE)
            return DSA_K_EINVAL;
        if (a->ctx[r] > max_ctx)
            max_ctx = a->ctx[r];
    }
    int H = f->heads;
    double *qd = dequant_q(a->q8, (size_t)rows * H * DSA_K_HEAD_DIM);
    double *wd = weights_f64(a->w, f->weights, (size_t)rows * H);
    if (!qd || !wd) {
        free(qd);
        free(wd);
        return DSA_K_EINVAL;
    }
    struct decode_ctx c = {f, a, qd, wd, max_ctx};
    long pages = (max_ctx + DSA_K_PAGE - 1) / DSA_K_PAGE;
    dsa_cpu_parallel_for((long)a->B * pages, 4, decode_range, &c);
    if (a->clean)
        for (long r = 0; r < rows; r++)
            for (long s = a->ctx[r]; s < a->stride; s++)
                store_neg_inf(a->logits, f->logits, (size_t)r * a->stride + s);
    free(qd);
    free(wd);
    return DSA_K_OK;
}

/* ---- S3b ---- */

struct prefill_ctx {
    const struct dsa_k_flags *f;
    const struct dsa_logits_prefill_args *a;
    const double *qd, *wd;
    int row_block;
};

/* work item = (key block of 64, rows): each key is decoded once per item for all rows */
static void prefill_range(void *p, long begin, long end)
{
    const struct prefill_ctx *c = p;
    const struct dsa_logits_prefill_args *a = c->a;
    int H = c->f->heads;
    double kd[DSA_K_HEAD_DIM];
    for (long blk = begin; blk < end; blk++) {
        for (long s = blk * 64; s < (blk + 1) * 64 && s < a->NK; s++) {
            decode_k(a->k8 + (size_t)s * DSA_K_HEAD_DIM, kd);
            for (int m = 0; m < a->M; m++) {
                if (s < a->row_start[m] || s >= a->row_end[m])
                    continue;
                double acc = dsa_relu_score(c->qd + (size_t)m * H * DSA_K_HEAD_DIM,
                                            c->wd + (size_t)m * H, H, kd);
                store_logit(a->logits, c->f->logits, (size_t)m * a->stride + s,
                            (double)a->ks[s] * acc);
            }
        }
    }
}

int dsa_cpu_logits_prefill(const struct dsa_k_flags *f, const struct dsa_logits_prefill_args *a)
{
    if (a->M < 0 || a->NK < 0 || a->stride < a->NK || (f->heads != 64 && f->heads != 32))
        return DSA_K_EINVAL;
    for (int m = 0; m < a->M; m++)
        if (a->row_start[m] < 0 || a->row_end[m] < a->row_start[m] || a->row_end[m] > a->NK)
            return DSA_K_EINVAL;
    lut_init();
    int H = f->heads;
    double *qd = dequant_q(a->q8, (size_t)a->M * H * DSA_K_HEAD_DIM);
    double *wd = weights_f64(a->w, f->weights, (size_t)a->M * H);
    if (!qd || !wd) {
        free(qd);
        free(wd);
        return DSA_K_EINVAL;
    }
    struct prefill_ctx c = {f, a, qd, wd, 0};
    dsa_cpu_parallel_for((a->NK + 63) / 64, 4, prefill_range, &c);
    if (a->clean)
        for (int m = 0; m < a->M; m++)
            for (long s = 0; s < a->stride; s++)
                if (s < a->row_start[m] || s >= a->row_end[m])
                    store_neg_inf(a->logits, f->logits, (size_t)m * a->stride + s);
    free(qd);
    free(wd);
    return DSA_K_OK;
}
