/*
 * S4 top-k, the C reference: the golden selection, ordered by (value desc, index asc).
 * A radix select on the 32-bit order key of each value finds the k-th largest key T; every
 * column with a key above T is taken, then the columns equal to T in index order until k.
 * The k results are then sorted by (value desc, index asc).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdlib.h>
#include <string.h>

#include "dsa_kernels.h"
#include "dsa_numeric.h"
#include "parallel.h"

static uint32_t key_at(const void *logits, int dtype, size_t i)
{
    float v = dtype == DSA_K_BF16 ? dsa_bf16_to_f32(((const uint16_t *)logits)[i])
                                  : ((const float *)logits)[i];
    return dsa_f32_order_key(v);
}

struct sel {
    uint32_t key;
    int32_t idx;
};

static int cmp_sel(const void *pa, const void *pb)
{
    const struct sel *a = pa, *b = pb;
    if (a->key != b->key)
        return a->key > b->key ? -1 : 1;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

/* the k-th largest key of keys[0..n) (1 <= k <= n), by 4 radix passes of 8 bits */
static uint32_t kth_key(const uint32_t *keys, long n, long k)
{
    uint32_t prefix = 0, mask = 0;
    long need = k;
    for (int shift = 24; shift >= 0; shift -= 8) {
        long hist[256] = {0};
        for (long i = 0; i < n; i++)
            if ((keys[i] & mask) == prefix)
                hist[(keys[i] >> shift) & 255]++;
        int d = 255;
        while (hist[d] < need) {
            need -= hist[d];
            d--;
        }
        prefix |= (uint32_t)d << shift;
        mask |= 255u << shift;
    }
    return prefix;
}

/* row r: radix select of the k-th key, the columns above it, then the ties in index order */
static void topk_row(const struct dsa_k_flags *f, const struct dsa_topk_args *a, int r,
                     uint32_t *keys, struct sel *sel)
{
    long len = a->end[r] - a->start[r];
    size_t base = (size_t)r * a->stride + a->start[r];
    for (long i = 0; i < len; i++)
        keys[i] = key_at(a->logits, f->logits, base + i);
    long take = len < a->k ? len : a->k, n = 0;
    if (take > 0) {
        uint32_t t = kth_key(keys, len, take);
        for (long i = 0; i < len; i++)
            if (keys[i] > t)
                sel[n++] = (struct sel){keys[i], (int32_t)i};
        for (long i = 0; i < len && n < take; i++)
            if (keys[i] == t)
                sel[n++] = (struct sel){keys[i], (int32_t)i};
        qsort(sel, (size_t)n, sizeof *sel, cmp_sel);
    }
    int32_t *out = a->idx + (size_t)r * a->k;
    for (long i = 0; i < a->k; i++)
        out[i] = i < n ? sel[i].idx : -1;
}

struct topk_ctx {
    const struct dsa_k_flags *f;
    const struct dsa_topk_args *a;
    long maxlen;
    int failed; /* a chunk could not get its buffers */
};

/* work item = one row; each chunk owns its scratch buffers */
static void topk_range(void *p, long begin, long end)
{
    struct topk_ctx *c = p;
    uint32_t *keys = malloc((size_t)(c->maxlen ? c->maxlen : 1) * sizeof *keys);
    struct sel *sel = malloc((size_t)c->a->k * sizeof *sel);
    if (keys && sel)
        for (long r = begin; r < end; r++)
            topk_row(c->f, c->a, (int)r, keys, sel);
    else
        __atomic_store_n(&c->failed, 1, __ATOMIC_RELAXED);
    free(keys);
    free(sel);
}

int dsa_cpu_topk(const struct dsa_k_flags *f, const struct dsa_topk_args *a)
{
    if (a->k != 512 && a->k != 1024 && a->k != 2048)
        return DSA_K_UNSUPPORTED;
    if (a->rows < 0)
        return DSA_K_EINVAL;
    for (int r = 0; r < a->rows; r++)
        if (a->start[r] < 0 || a->end[r] < a->start[r] || a->end[r] > a->stride)
            return DSA_K_EINVAL;
    long maxlen = 0;
    for (int r = 0; r < a->rows; r++)
        if (a->end[r] - a->start[r] > maxlen)
            maxlen = a->end[r] - a->start[r];
    struct topk_ctx c = {f, a, maxlen, 0};
    dsa_cpu_parallel_for(a->rows, 1, topk_range, &c);
    return c.failed ? DSA_K_EINVAL : DSA_K_OK;
}
