/*
 * S4 top-k on CUDA: one block per row, a radix select over the 32-bit order keys (4 passes
 * of 8 bits, shared-memory histograms, cub::BlockScan to find the digit), then a
 * deterministic compaction: the row is walked in tiles of 4 keys per thread in index order,
 * cub::BlockScan gives each thread its output positions, so the output follows the index
 * order. The result is the golden set: every key above the k-th largest, then the ties at it
 * in index order. Output order: the keys above the threshold in index order, then the ties.
 * Loads are 16-byte vectors (after an unaligned head), several in flight per thread.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <cub/block/block_scan.cuh>

#include "common.cuh"
#include "dsa_cuda.h"

#define TOPK_THREADS 1024

/* the order keys of 4 consecutive elements i..i+3 (i a multiple of 4 from the row start);
   elements past len get key 0, which is below every real key */
__device__ __forceinline__ void keys4(const void *l, int lbf16, size_t base, long i, long len,
                                      uint32_t k[4])
{
    if (lbf16) {
        const uint16_t *row = (const uint16_t *)l + base;
        for (int j = 0; j < 4; j++)
            k[j] = i + j < len ? d_order_key(d_bf16_to_f32(row[i + j])) : 0u;
        return;
    }
    const float *row = (const float *)l + base;
    if (i + 3 < len && (((uintptr_t)(row + i)) & 15) == 0) {
        float4 v = *(const float4 *)(row + i);
        k[0] = d_order_key(v.x), k[1] = d_order_key(v.y), k[2] = d_order_key(v.z),
        k[3] = d_order_key(v.w);
        return;
    }
    for (int j = 0; j < 4; j++)
        k[j] = i + j < len ? d_order_key(row[i + j]) : 0u;
}

__global__ static void __launch_bounds__(TOPK_THREADS)
    topk_kernel(const void *logits, int lbf16, long stride, const int32_t *start,
                const int32_t *end, int k, int32_t *idx)
{
    typedef cub::BlockScan<int, TOPK_THREADS> scan_t;
    __shared__ typename scan_t::TempStorage tmp;
    __shared__ int hist[256];
    __shared__ uint32_t s_prefix;
    __shared__ int s_need;
    const int r = blockIdx.x, tid = threadIdx.x;
    const long st = start[r], len = end[r] - st;
    const size_t base = (size_t)r * stride + st;
    int32_t *out = idx + (size_t)r * k;
    if (len <= k) {
        for (long i = tid; i < k; i += TOPK_THREADS)
            out[i] = i < len ? (int32_t)i : -1;
        return;
    }
    uint32_t prefix = 0, mask = 0;
    int need = k;
    const long step = 4L * TOPK_THREADS;
    for (int shift = 24; shift >= 0; shift -= 8) {
        if (tid < 256)
            hist[tid] = 0;
        __syncthreads();
        for (long i0 = 0; i0 < len; i0 += 2 * step) {
            /* two 16-byte loads in flight per thread */
            uint32_t a[4], b[4];
            keys4(logits, lbf16, base, i0 + 4L * tid, len, a);
            keys4(logits, lbf16, base, i0 + step + 4L * tid, len, b);
            for (int j = 0; j < 4; j++) {
                if (a[j] && (a[j] & mask) == prefix)
                    atomicAdd(&hist[(a[j] >> shift) & 255], 1);
                if (b[j] && (b[j] & mask) == prefix)
                    atomicAdd(&hist[(b[j] >> shift) & 255], 1);
            }
        }
        __syncthreads();
        /* suffix sums from digit 255 down: thread t holds digit 255 - t */
        int c = tid < 256 ? hist[255 - tid] : 0, incl;
        scan_t(tmp).InclusiveSum(c, incl);
        if (tid < 256 && incl >= need && incl - c < need) {
            s_prefix = prefix | ((uint32_t)(255 - tid) << shift);
            s_need = need - (incl - c);
        }
        __syncthreads();
        prefix = s_prefix;
        need = s_need;
        mask |= 255u << shift;
        __syncthreads();
    }
    /* prefix = the k-th largest key; need = how many ties at it are taken. Compaction in
       tiles of 4 keys per thread, in index order. */
    int off_gt = 0, off_eq = 0;
    for (long i0 = 0; i0 < len; i0 += step) {
        uint32_t a[4];
        const long i = i0 + 4L * tid;
        keys4(logits, lbf16, base, i, len, a);
        int ngt = 0, neq = 0;
        for (int j = 0; j < 4; j++) {
            ngt += a[j] > prefix;
            neq += a[j] == prefix;
        }
        int pgt, peq, tgt, teq;
        scan_t(tmp).ExclusiveSum(ngt, pgt, tgt);
        __syncthreads();
        scan_t(tmp).ExclusiveSum(neq, peq, teq);
        __syncthreads();
        pgt += off_gt;
        peq += off_eq;
        for (int j = 0; j < 4; j++) {
            if (a[j] > prefix)
                out[pgt++] = (int32_t)(i + j);
            else if (a[j] == prefix) {
                if (peq < need)
                    out[(k - need) + peq] = (int32_t)(i + j);
                peq++;
            }
        }
        off_gt += tgt;
        off_eq += teq;
    }
}

int dsa_cuda_topk_launch(const dsa_k_flags *f, const dsa_topk_args *a, cudaStream_t st)
{
    if (a->rows <= 0)
        return DSA_K_OK;
    topk_kernel<<<a->rows, TOPK_THREADS, 0, st>>>(a->logits, f->logits == DSA_K_BF16, a->stride,
                                                  a->start, a->end, a->k, a->idx);
    return DSA_K_OK;
}
