/*
 * The fp64 golden model (golden.h).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <math.h>
#include <stdlib.h>

#include "dsa_numeric.h"
#include "kernels/golden.h"

static void rope_f64(double *x, const float *cs, const float *sn, int layout)
{
    for (int p = 0; p < 32; p++) {
        int i1 = layout == DSA_K_ROPE_NEOX ? p : 2 * p;
        int i2 = layout == DSA_K_ROPE_NEOX ? p + 32 : 2 * p + 1;
        double x1 = x[i1], x2 = x[i2];
        x[i1] = x1 * cs[p] - x2 * sn[p];
        x[i2] = x2 * cs[p] + x1 * sn[p];
    }
}

/* Hadamard as a matrix product: H[i][j] = (-1)^popcount(i & j) / sqrt(128) */
static void hadamard_f64(double *x)
{
    double y[128];
    for (int i = 0; i < 128; i++) {
        double s = 0.0;
        for (int j = 0; j < 128; j++)
            s += (__builtin_popcount((unsigned)(i & j)) & 1) ? -x[j] : x[j];
        y[i] = s / sqrt(128.0);
    }
    for (int i = 0; i < 128; i++)
        x[i] = y[i];
}

/* LayerNorm -> RoPE -> [Hadamard] of one 128-vector already widened to fp64 */
static void k_vec_f64(const double *x, const float *ln_w, const float *ln_b, const float *cs,
                      const float *sn, int rope, int hadamard, double *out)
{
    double mean = 0.0, var = 0.0;
    for (int i = 0; i < 128; i++)
        mean += x[i];
    mean /= 128.0;
    for (int i = 0; i < 128; i++) {
        double d = x[i] - mean;
        var += d * d;
    }
    var /= 128.0;
    double rstd = 1.0 / sqrt(var + (double)DSA_K_LN_EPS);
    for (int i = 0; i < 128; i++)
        out[i] = (x[i] - mean) * rstd * ln_w[i] + ln_b[i];
    rope_f64(out, cs, sn, rope);
    if (hadamard)
        hadamard_f64(out);
}

void dsa_golden_k_vec(const uint16_t *k_raw, const float *ln_w, const float *ln_b, const float *cs,
                      const float *sn, int rope, int hadamard, double *out)
{
    double x[128];
    for (int i = 0; i < 128; i++)
        x[i] = dsa_bf16_to_f32(k_raw[i]);
    k_vec_f64(x, ln_w, ln_b, cs, sn, rope, hadamard, out);
}

void dsa_golden_k_vec_f32(const float *k_raw, const float *ln_w, const float *ln_b, const float *cs,
                          const float *sn, int rope, int hadamard, double *out)
{
    double x[128];
    for (int i = 0; i < 128; i++)
        x[i] = k_raw[i];
    k_vec_f64(x, ln_w, ln_b, cs, sn, rope, hadamard, out);
}

void dsa_golden_q_vec(const uint16_t *q_raw, const float *cs, const float *sn, int rope,
                      int hadamard, double *out)
{
    for (int i = 0; i < 128; i++)
        out[i] = dsa_bf16_to_f32(q_raw[i]);
    rope_f64(out, cs, sn, rope);
    if (hadamard)
        hadamard_f64(out);
}

void dsa_golden_q_vec_f32(const float *q_raw, const float *cs, const float *sn, int rope,
                          int hadamard, double *out)
{
    for (int i = 0; i < 128; i++)
        out[i] = q_raw[i];
    rope_f64(out, cs, sn, rope);
    if (hadamard)
        hadamard_f64(out);
}

void dsa_golden_logits_q8(int M, int H, long NK, const uint8_t *q8, const void *w, int wdtype,
                          const uint8_t *k8, const float *ks, const int32_t *start,
                          const int32_t *end, double *out)
{
    double lut[256];
    for (int i = 0; i < 256; i++)
        lut[i] = dsa_e4m3_to_f32((uint8_t)i);
    for (int m = 0; m < M; m++)
        for (long s = 0; s < NK; s++) {
            double *o = out + (size_t)m * NK + s;
            if (s < start[m] || s >= end[m]) {
                *o = -INFINITY;
                continue;
            }
            double acc = 0.0;
            for (int h = 0; h < H; h++) {
                double dot = 0.0;
                for (int i = 0; i < 128; i++)
                    dot += lut[q8[((size_t)m * H + h) * 128 + i]] * lut[k8[(size_t)s * 128 + i]];
                double wh = wdtype == DSA_K_BF16
                                ? dsa_bf16_to_f32(((const uint16_t *)w)[(size_t)m * H + h])
                                : ((const float *)w)[(size_t)m * H + h];
                if (dot > 0.0)
                    acc += wh * dot;
            }
            *o = (double)ks[s] * acc;
        }
}

struct vi {
    double v;
    long i;
};

static int cmp_vi(const void *pa, const void *pb)
{
    const struct vi *a = pa, *b = pb;
    if (a->v != b->v)
        return a->v > b->v ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

void dsa_golden_topk_f64(const double *v, long len, int k, int32_t *idx)
{
    struct vi *a = malloc((size_t)(len > 0 ? len : 1) * sizeof *a);
    if (!a)
        abort();
    for (long i = 0; i < len; i++)
        a[i] = (struct vi){v[i] == 0.0 ? 0.0 : v[i], i};
    qsort(a, (size_t)len, sizeof *a, cmp_vi);
    for (long i = 0; i < k; i++)
        idx[i] = i < len ? (int32_t)a[i].i : -1;
    free(a);
}

double dsa_calc_diff(const double *x, const double *y, size_t n, int *mask_equal)
{
    double sxy = 0.0, sxx = 0.0;
    int eq = 1;
    for (size_t i = 0; i < n; i++) {
        int xi = isinf(x[i]) && x[i] < 0, yi = isinf(y[i]) && y[i] < 0;
        if (xi != yi)
            eq = 0;
        if (xi || yi || !isfinite(x[i]) || !isfinite(y[i]))
            continue;
        sxy += x[i] * y[i];
        sxx += x[i] * x[i] + y[i] * y[i];
    }
    if (mask_equal)
        *mask_equal = eq;
    return sxx > 0.0 ? 1.0 - 2.0 * sxy / sxx : 0.0;
}
