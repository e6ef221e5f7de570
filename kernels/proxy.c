/*
 * The proxy model (proxy.h).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <math.h>
#include <stddef.h>

#include "dsa_numeric.h"
#include "kernels/kutil.h"
#include "kernels/proxy.h"

enum { TAG_E = 1, TAG_A, TAG_K, TAG_B, TAG_C, TAG_Q, TAG_W, TAG_LNW, TAG_LNB, TAG_U };

/* one standard normal for the coordinates */
static double proxy_normal(uint64_t seed, uint64_t tag, uint64_t a, uint64_t b)
{
    uint64_t h = dsa_kutil_splitmix64(seed ^ (tag << 56));
    h = dsa_kutil_splitmix64(h ^ a);
    h = dsa_kutil_splitmix64(h ^ b);
    uint64_t h2 = dsa_kutil_splitmix64(h ^ 0x9e3779b97f4a7c15ull);
    /* two uniforms in (0, 1] and [0, 1) from the top 53 bits */
    double u1 = ((double)(h >> 11) + 1.0) * 0x1p-53, u2 = (double)(h2 >> 11) * 0x1p-53;
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

void dsa_proxy_rope_table(long max_pos, float *cs, float *sn)
{
    for (long p = 0; p < max_pos; p++)
        for (int i = 0; i < 32; i++) {
            double ang = (double)p * pow(10000.0, -2.0 * i / 64.0);
            cs[p * 32 + i] = (float)cos(ang);
            sn[p * 32 + i] = (float)sin(ang);
        }
}

void dsa_proxy_ln(uint64_t seed, float *ln_w, float *ln_b)
{
    for (int d = 0; d < 128; d++) {
        ln_w[d] = (float)(1.0 + 0.1 * proxy_normal(seed, TAG_LNW, (uint64_t)d, 0));
        ln_b[d] = (float)(0.02 * proxy_normal(seed, TAG_LNB, (uint64_t)d, 0));
    }
}

void dsa_proxy_topic(uint64_t seed, uint64_t topic, double u[128])
{
    double mean = 0.0, norm = 0.0;
    for (int d = 0; d < 128; d++)
        u[d] = d < 64 ? 0.0 : proxy_normal(seed, TAG_U, topic, (uint64_t)d);
    for (int d = 64; d < 128; d++)
        mean += u[d] / 64.0;
    for (int d = 64; d < 128; d++) {
        u[d] -= mean;
        norm += u[d] * u[d];
    }
    for (int d = 64; d < 128; d++)
        u[d] /= sqrt(norm);
}

void dsa_proxy_k_planted(uint64_t seed, int64_t tok, int64_t pos, const double *u, uint16_t *k_raw)
{
    double a = exp(0.5 * proxy_normal(seed, TAG_A, (uint64_t)pos, 0));
    for (int d = 0; d < 128; d++) {
        double e = proxy_normal(seed, TAG_E, (uint64_t)tok, (uint64_t)d);
        double n = proxy_normal(seed, TAG_K, (uint64_t)pos, (uint64_t)d);
        double x = e + 0.5 * n;
        if (u)
            x += DSA_PROXY_KEY_GAIN * u[d];
        k_raw[d] = dsa_f32_to_bf16((float)(a * x));
    }
}

void dsa_proxy_k(uint64_t seed, int64_t tok, int64_t pos, uint16_t *k_raw)
{
    dsa_proxy_k_planted(seed, tok, pos, NULL, k_raw);
}

void dsa_proxy_q_planted(uint64_t seed, int H, int64_t tok, int64_t pos, const double *u,
                         uint16_t *q_raw)
{
    double e[128];
    for (int d = 0; d < 128; d++)
        e[d] = proxy_normal(seed, TAG_E, (uint64_t)tok, (uint64_t)d);
    for (int h = 0; h < H; h++) {
        double b = exp(0.75 * proxy_normal(seed, TAG_B, (uint64_t)pos, (uint64_t)h));
        double c = 1.0 + 0.5 * fabs(proxy_normal(seed, TAG_C, (uint64_t)h, 0));
        for (int d = 0; d < 128; d++) {
            double n = proxy_normal(seed, TAG_Q, (uint64_t)pos, (uint64_t)(h * 128 + d));
            double x = c * e[d] + n;
            if (u)
                x += DSA_PROXY_QUERY_GAIN * u[d];
            q_raw[h * 128 + d] = dsa_f32_to_bf16((float)(b * x));
        }
    }
}

void dsa_proxy_q(uint64_t seed, int H, int64_t tok, int64_t pos, uint16_t *q_raw)
{
    dsa_proxy_q_planted(seed, H, tok, pos, NULL, q_raw);
}

void dsa_proxy_w(uint64_t seed, int H, int64_t tok, int64_t pos, uint16_t *w_raw)
{
    (void)tok;
    for (int h = 0; h < H; h++)
        w_raw[h] = dsa_f32_to_bf16(
            (float)(0.5 + 0.5 * proxy_normal(seed, TAG_W, (uint64_t)pos, (uint64_t)h)));
}
