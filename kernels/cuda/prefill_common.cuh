/*
 * What the two fp8 wgmma S3b kernels share (prefill_wgmma.cu: one consumer warpgroup per CTA,
 * 64-key tiles; prefill_wg4.cu: four math warpgroups and a store warpgroup, 256-key tiles): the
 * launch's parameters, the rows' key ranges, the split of the flat list of (row group, key tile)
 * into one contiguous range per CTA and its group segments with their live tiles, the ring of
 * a stage pipeline, and the tensor map of a 128-byte-row operand. Header-only (static inline),
 * as wgmma_pipe.cuh.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_KERNELS_CUDA_PREFILL_COMMON_CUH
#define DSA_KERNELS_CUDA_PREFILL_COMMON_CUH

#include "common.cuh"
#include "dsa_cuda.h"
#include "wgmma_pipe.cuh"

struct pf_params {
    const uint8_t *q8;
    const void *w;
    int wbf16;
    const float *ks;
    const int32_t *rs, *re; /* row start (NULL = 0) and end */
    void *out;
    int lbf16;
    int M;
    long NK, stride;
    int clean;
    int tiles;  /* per group (cols <= 2^31 - 256, so keys and tiles fit an int) */
    long total; /* groups * tiles */
};

/* the first key row m sees. The same functions for every role of a CTA (copy warp, consumers,
   store warps), so all agree on which tiles are live. */
__device__ __forceinline__ int pf_lo(const pf_params &p, int m)
{
    return p.rs ? p.rs[m] : 0;
}

/* group g's [kmin, kmax) (rows g*R .. g*R + R - 1 that are < M; kmax 0 when none sees a key),
   by one warp: lanes < R load a row's range, a warp reduction gives it to every lane */
template <int R>
__device__ __forceinline__ void pf_group_span(const pf_params &p, int g, int &kmin, int &kmax)
{
    const int lane = threadIdx.x & 31, m = g * R + lane;
    int lo = 0x7fffffff, hi = 0;
    if (lane < R && m < p.M) {
        const int a = pf_lo(p, m), b = p.re[m];
        if (b > a)
            lo = a, hi = b;
    }
#pragma unroll
    for (int o = 16; o; o >>= 1) {
        lo = min(lo, __shfl_xor_sync(0xffffffffu, lo, o));
        hi = max(hi, __shfl_xor_sync(0xffffffffu, hi, o));
    }
    kmin = lo, kmax = hi;
}

/* A stage ring's slot and phase, one step per use (both sides of a ring count the same uses) */
struct pf_ring {
    int s;
    uint32_t phase;
};

template <int STG> __device__ __forceinline__ void pf_ring_next(pf_ring &r)
{
    if (++r.s == STG)
        r.s = 0, r.phase ^= 1u;
}

/* One group's part of the CTA's range: its tiles [ta, tb), of which [la, lb) are live (la == lb
   when none is); computed the same way by every role. */
struct pf_seg {
    int g, ta, tb, la, lb;
};

/* the CTA's range of the flat list of groups * tiles: [t_begin, t_end) */
__device__ __forceinline__ void pf_cta_range(const pf_params &p, long &t_begin, long &t_end)
{
    t_begin = (long)blockIdx.x * p.total / gridDim.x;
    t_end = (long)(blockIdx.x + 1) * p.total / gridDim.x;
}

/* the segment starting at flat index t of a range ending at t_end (T: long, or int where the
   launch keeps the list under 2^31: a 32-bit division instead of a 64-bit one) */
template <typename T> __device__ __forceinline__ pf_seg pf_seg_at(const pf_params &p, T t, T t_end)
{
    pf_seg q;
    q.g = (int)(t / (T)p.tiles);
    q.ta = (int)(t - (T)q.g * p.tiles);
    q.tb = (int)min((T)p.tiles, q.ta + (t_end - t));
    return q;
}

/* [la, lb) of segment q (tiles of KEYS keys) whose rows see the keys [kmin, kmax): the tiles
   holding a key < NK in that span (none when kmax <= kmin), kept within [ta, tb) even when the
   span lies wholly before or after it, so that the masks of [ta, la) and [lb, tb) reach no tile
   of another CTA's range */
template <int KEYS>
__device__ __forceinline__ void pf_seg_live(const pf_params &p, pf_seg &q, int kmin, int kmax)
{
    q.la = q.lb = 0;
    if (kmax > kmin) {
        q.la = kmin / KEYS;
        q.lb = (int)((min((long)kmax, p.NK) + KEYS - 1) / KEYS);
    }
    q.la = min(max(q.la, q.ta), q.tb);
    q.lb = max(q.la, min(q.lb, q.tb));
}

/* a 2-D TMA of one box of map (pf_map: 128-byte rows) from row `row` into dst (1024-byte
   aligned), completing its bytes on bar */
__device__ __forceinline__ void pf_tma(void *dst, const CUtensorMap *map, int row, uint64_t *bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dw_smem(dst)),
                 "l"((uint64_t)map), "r"(0), "r"(row), "r"(dw_smem(bar))
                 : "memory");
}

/* the tensor map of `rows` rows of 128 bytes (128 apart) at base, box 128 x box_rows,
   128-byte swizzle, rows past the end zero-filled by the copy engine; encoded per launch (a
   host call of a few microseconds against milliseconds of kernel) */
static inline int pf_map(CUtensorMap *map, const uint8_t *base, long rows, int box_rows)
{
    const cuuint64_t dims[2] = {128, (cuuint64_t)rows}, strides[1] = {128};
    const cuuint32_t box[2] = {128, (cuuint32_t)box_rows};
    return dw_map_u8(map, 2, base, dims, strides, box);
}

/* the launch's parameters from the arguments (tiles and total left 0: each kernel's tile size
   sets them) */
static inline pf_params pf_params_of(const dsa_k_flags *f, const dsa_logits_prefill_args *a)
{
    pf_params p = {a->q8,
                   a->w,
                   f->weights == DSA_K_BF16,
                   a->ks,
                   a->row_start,
                   a->row_end,
                   a->logits,
                   f->logits == DSA_K_BF16,
                   a->M,
                   a->NK,
                   a->stride,
                   a->clean,
                   0,
                   0};
    return p;
}

/* the CTAs the device holds at once of kern with `threads` threads and `smem` bytes of dynamic
   shared memory (its attribute set on the first call; pass a static int as slots) */
template <typename K> static inline int pf_slots(K kern, int threads, size_t smem, int &slots)
{
    if (!slots) {
        int dev, sms, per_sm;
        CUDA_CHECK(cudaGetDevice(&dev));
        CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
        CUDA_CHECK(
            cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, threads, smem));
        slots = sms * (per_sm > 0 ? per_sm : 1);
    }
    return DSA_K_OK;
}

#endif
