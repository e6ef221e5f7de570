/*
 * S4 top-k on CUDA: one block per row, a radix select over the 32-bit order keys (4 passes
 * of 8 bits, shared-memory histograms, cub::BlockScan to find the digit), then a
 * deterministic compaction with cub::BlockScan: thread t owns a contiguous slice of the row,
 * so output positions follow the index order. The result is the golden set: every key above
 * the k-th largest, then the ties at it in index order. Output order: the keys above the
 * threshold in index order, then the ties.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <cub/block/block_scan.cuh>

#include "common.cuh"
#include "dsa_cuda.h"

#define TOPK_THREADS 1024

__device__ __forceinline__ uint32_t key_at(const void *l, int lbf16, size_t i)
{
    float v = lbf16 ? d_bf16_to_f32(((const uint16_t *)l)[i]) : ((const float *)l)[i];
    return d_order_key(v);
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
    for (int shift = 24; shift >= 0; shift -= 8) {
        if (tid < 256)
            hist[tid] = 0;
        __syncthreads();
        for (long i = tid; i < len; i += TOPK_THREADS) {
            uint32_t key = key_at(logits, lbf16, base + i);
            if ((key & mask) == prefix)
                atomicAdd(&hist[(key >> shift) & 255], 1);
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
    /* prefix = the k-th largest key; need = how many ties at it are taken */
    const long per = (len + TOPK_THREADS - 1) / TOPK_THREADS;
    const long lo = min(len, per * tid), hi = min(len, lo + per);
    int ngt = 0, neq = 0;
    for (long i = lo; i < hi; i++) {
        uint32_t key = key_at(logits, lbf16, base + i);
        ngt += key > prefix;
        neq += key == prefix;
    }
    int off_gt, off_eq, total_gt;
    scan_t(tmp).ExclusiveSum(ngt, off_gt, total_gt);
    __syncthreads();
    scan_t(tmp).ExclusiveSum(neq, off_eq);
    for (long i = lo; i < hi; i++) {
        uint32_t key = key_at(logits, lbf16, base + i);
        if (key > prefix)
            out[off_gt++] = (int32_t)i;
        else if (key == prefix) {
            if (off_eq < need)
                out[total_gt + off_eq] = (int32_t)i;
            off_eq++;
        }
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
