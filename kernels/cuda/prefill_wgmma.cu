/*
 * S3b ragged prefill logits on Hopper's fp8 tensor-core path (wgmma e4m3 x e4m3 -> f32, SASS
 * QGMMA): the default at H = 32 or 64 (DSA_CUDA_LOGITS=mma selects the mma.sync kernel of
 * logits.cu, =simt its CUDA-core kernel).
 *
 * Contract (dsa_kernels.h, dsa_logits_prefill_args): q8 [M,H,128] e4m3, w [M,H] f32|bf16,
 * k8 [NK,128] e4m3 (16-byte aligned, else the mma.sync kernel runs), ks [NK] f32, row_start /
 * row_end [M] i32 -> logits [M, stride] f32|bf16: for key n in [start[m], end[m])
 * sum_h w[m,h] * relu(q[m,h,:] . k[n,:]) * ks[n], -inf for the other columns < stride when
 * clean (else they are left untouched).
 *
 * Why this shape. Per (row group, 64-key tile) the work is R*H dot products of 128 bytes
 * followed by relu, a weighted sum over the heads and the key's scale: a GEMM of
 * [64 keys x 128] by [128 x R*H] whose reduction over heads happens in the epilogue. So, as
 * in the decode kernel (decode_wgmma.cu), the K tile is wgmma's A (M = 64 keys) and the
 * group's R*H q rows its B (n = R*H = 256: R = 4 rows at H = 64, 8 at H = 32), both K-major
 * with the 128-byte swizzle in shared memory; 4 m64n256k32 instructions per tile, the
 * accumulator 64 keys x 256 columns (128 registers per thread). n = 256 is wgmma's largest
 * shape: it reads the K tile once per 256 q columns, and the operand bytes per FLOP from
 * shared memory (A 2 KB + B 8 KB per 1 MFLOP instruction) stay under the SM's 128 B/cycle at
 * the fp8 rate.
 * - One CTA is one consumer warpgroup and one copy warp, persistent over a contiguous range
 *   of the flat list of groups * tiles (tiles = ceil(cols / 64), cols = stride when clean,
 *   else NK). q and w of a group stay in shared memory for all its tiles of the range
 *   (ceil(NK/64) tiles per group: 2,048 at 128K, so q is reloaded about once per CTA).
 * - A tile is live when it holds a key < NK that some row of the group sees ([kmin, kmax)
 *   over the group's rows). Only live tiles are loaded (TMA, 2-D tensor map over k8, box 128
 *   bytes x 64 rows; rows past NK are zero-filled by the copy engine) and multiplied; the
 *   others only write their masks (clean). Causal prefill leaves the tiles above each
 *   group's diagonal dead, so they cost no copy and no tensor work.
 * - K tiles in STG stages, full / empty mbarrier pairs; each consumer thread arrives on the
 *   stage's empty barrier once its wgmma has completed (racecheck follows per-thread
 *   arrivals, decode_wgmma.cu says why).
 * Epilogue: thread (warp w, g, c) holds keys 16w + g and 16w + g + 8 and, of each row r of
 * the group, heads 8i + 2c + {0, 1}; relu(dot) * w over its H/4 heads in that order (one fma
 * chain), two xor-shuffles over the 4 lanes c, times the key's scale, rounded once to f32
 * (then bf16 when asked). A fixed order, so reruns are bitwise identical. The fp8 tensor
 * core's partial sums are not the reference's exact dots, so the check holds the logits to
 * calc_diff <= 5e-6 and identical masks (as for the decode kernel), not bit equality.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdlib.h>
#include <string.h>

#include "common.cuh"
#include "dsa_cuda.h"
#include "wgmma_fp8.cuh"
#include "wgmma_pipe.cuh"

#define PF_KEYS   64
#define PF_KBYTES (PF_KEYS * 128) /* one K tile: 8192 bytes */
#define PF_NC     256             /* q columns of a group: R * H */
#define PF_STG    6               /* K stages per CTA */

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
    long tiles, total; /* tiles per group, groups * tiles */
};

/* the shared layout: STG K stages (1024-byte aligned), q (NC rows of 128 bytes, 1024-aligned
   as the stages are), w, the group rows' key ranges (lo, hi: at most 8 rows each), the full
   and the empty barriers */
struct pf_layout {
    static constexpr size_t k = 0, q = (size_t)PF_STG * PF_KBYTES, w = q + (size_t)PF_NC * 128,
                            rng = w + (size_t)PF_NC * 4, bar = rng + 16 * 4,
                            bytes = bar + 2 * PF_STG * 8, alloc = bytes + 1024; /* for alignment */
};

/* [kmin, kmax) of the keys that the rows row0 .. row0 + R - 1 (those < M) see; kmax 0 when
   none sees any. The same function for the copy warp and the consumers, so both agree on
   which tiles are live. */
__device__ __forceinline__ int pf_lo(const pf_params &p, int m)
{
    return p.rs ? p.rs[m] : 0;
}

__device__ __forceinline__ bool pf_live(long tile, int kmin, int kmax, long NK)
{
    const long t0 = tile * PF_KEYS;
    return t0 < kmax && t0 + PF_KEYS > kmin && t0 < NK;
}

/* the 64 K rows from key t0 into dst (1024-byte aligned), 128-byte swizzled */
__device__ __forceinline__ void pf_tma(void *dst, const CUtensorMap *map, int t0, uint64_t *bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dw_smem(dst)),
                 "l"((uint64_t)map), "r"(0), "r"(t0), "r"(dw_smem(bar))
                 : "memory");
}

/* the copy warp's view of group g: lanes < R load a row's range, a warp reduction gives
   [kmin, kmax) (every lane gets it) */
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

/* The copy warp: tiles [t_begin, t_end) into the stage ring; for each, wait for the stage to
   be free (its empty barrier: the 128 consumer threads are done with it), then lane 0 issues
   the TMA (live tile) or a plain arrive (dead tile, never loaded). */
template <int R>
__device__ __forceinline__ void pf_producer(const pf_params &p, const CUtensorMap *map,
                                            long t_begin, long t_end, uint8_t *kst, uint64_t *full,
                                            uint64_t *empty)
{
    const int lane = threadIdx.x & 31;
    int cur_g = -1, kmin = 0, kmax = 0;
    for (long t = t_begin, i = 0; t < t_end; t++, i++) {
        const int g = (int)(t / p.tiles), s = (int)(i % PF_STG);
        const long tile = t % p.tiles;
        if (g != cur_g) {
            cur_g = g;
            pf_group_span<R>(p, g, kmin, kmax);
        }
        if (i >= PF_STG) /* the consumers' release of the stage's previous use */
            dw_bar_wait(&empty[s], (uint32_t)(i / PF_STG - 1) & 1u);
        if (lane == 0) {
            if (pf_live(tile, kmin, kmax, p.NK)) {
                dw_bar_expect(&full[s], PF_KBYTES);
                pf_tma(kst + s * PF_KBYTES, map, (int)(tile * PF_KEYS), &full[s]);
            } else {
                dw_bar_arrive(&full[s]);
            }
        }
        __syncwarp();
    }
}

/* Group g's q rows (swizzled as TMA would place them; rows past M zero), weights and rows'
   ranges into shared memory (qs, ws, rng: lo[R] then hi[R], empty past M; in shared memory,
   not registers, which the accumulator needs) and their union into kmin / kmax, between two
   barriers of the consumer warps (the last group's q is no longer read before it is overwritten,
   and the new one is complete before the next wgmma). q goes by cp.async, issued in full before the
   weights' loads. */
template <int H, int R>
__device__ __forceinline__ void pf_load_group(const pf_params &p, int g, uint8_t *qs, float *ws,
                                              int *rng, int &kmin, int &kmax)
{
    dw_consumers_sync();
    const int row0 = g * R;
    kmin = 0x7fffffff, kmax = 0;
#pragma unroll
    for (int r = 0; r < R; r++) {
        const int m = row0 + r, lo = m < p.M ? pf_lo(p, m) : 0, hi = m < p.M ? p.re[m] : 0;
        if (hi > lo)
            kmin = min(kmin, lo), kmax = max(kmax, hi);
        if (threadIdx.x == 0)
            rng[r] = lo, rng[R + r] = hi;
    }
    const long rows = (long)min(R, p.M - row0) * H; /* q rows (m, h) that exist */
    const uint4 *src = (const uint4 *)(p.q8 + (size_t)row0 * H * 128);
    for (int u = threadIdx.x; u < PF_NC * 8; u += DW_THREADS) {
        const int row = u >> 3, c = u & 7;
        uint8_t *dst = qs + row * 128 + ((c ^ (row & 7)) << 4);
        if (row < rows)
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dw_smem(dst)),
                         "l"(src + u)
                         : "memory");
        else
            *(uint4 *)dst = make_uint4(0, 0, 0, 0);
    }
    for (int u = threadIdx.x; u < PF_NC; u += DW_THREADS) {
        const size_t wi = (size_t)row0 * H + u;
        ws[u] = u >= rows ? 0.0f
                : p.wbf16 ? d_bf16_to_f32(((const uint16_t *)p.w)[wi])
                          : ((const float *)p.w)[wi];
    }
    asm volatile("cp.async.wait_all;\n" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    dw_consumers_sync();
}

/* The epilogue of one tile: rows row0 .. row0 + R - 1 from acc (column r * H + h), keys
   t0 + 16 warp + grp (+ 8); lanes c 0 and 1 store keys grp and grp + 8, or the mask outside
   the row's range when clean. Not live: masks only. */
template <int H, int R>
__device__ __forceinline__ void pf_epilogue(const pf_params &p, const float (&acc)[PF_NC / 2],
                                            const float *ws, bool live, float kv0, float kv1,
                                            int row0, long t0, const int *rng)
{
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, grp = lane >> 2, tig = lane & 3;
#pragma unroll
    for (int r = 0; r < R; r++) {
        float part0 = 0.0f, part1 = 0.0f; /* keys 16 warp + grp and + 8 */
        if (live) {
            dw_head_sum<H>(acc, r, ws, tig, part0, part1);
        }
        const int m = row0 + r;
        if (tig >= 2 || m >= p.M)
            continue;
        const long s = t0 + 16 * warp + grp + 8 * tig; /* lane tig 0 stores key grp, 1 grp+8 */
        if (s >= p.stride)
            continue;
        const size_t o = (size_t)m * p.stride + s;
        if (s >= rng[r] && s < rng[R + r])
            d_logit_store(p.out, o, p.lbf16, __fmul_rn(tig ? kv1 : kv0, tig ? part1 : part0));
        else if (p.clean)
            d_logit_mask(p.out, o, p.lbf16);
    }
}

/*
 * H heads, R = 256 / H rows per group. Built for 2 CTAs per SM (a register cap of 204: the
 * 128 accumulator registers plus the epilogue's), so one CTA's epilogue runs while the
 * other's wgmmas do. Each tile: wait for its stage, 4 wgmma k32 steps, wait for them,
 * release the stage, epilogue.
 */
template <int H>
__global__ static void __launch_bounds__(DW_THREADS + 32, 2)
    prefill_wgmma_kernel(const __grid_constant__ CUtensorMap map, const pf_params p)
{
    constexpr int R = PF_NC / H;
    using L = pf_layout;
    extern __shared__ unsigned char smem_raw[];
    uint8_t *sm = (uint8_t *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
    uint8_t *kst = sm + L::k, *qs = sm + L::q;
    float *ws = (float *)(sm + L::w);
    int *rng = (int *)(sm + L::rng);
    uint64_t *full = (uint64_t *)(sm + L::bar), *empty = full + PF_STG;
    const int warp = threadIdx.x >> 5, grp = (threadIdx.x & 31) >> 2;
    const long t_begin = (long)blockIdx.x * p.total / gridDim.x;
    const long t_end = (long)(blockIdx.x + 1) * p.total / gridDim.x;

    if (threadIdx.x == 0) {
        for (int s = 0; s < PF_STG; s++) {
            dw_bar_init(&full[s], 1);
            dw_bar_init(&empty[s], DW_THREADS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (warp == DW_THREADS / 32) { /* the copy warp */
        pf_producer<R>(p, &map, t_begin, t_end, kst, full, empty);
        return;
    }

    float acc[PF_NC / 2];
#pragma unroll
    for (int r = 0; r < PF_NC / 2; r++)
        acc[r] = 0.0f;
    int cur_g = -1, kmin = 0, kmax = 0;
    for (long t = t_begin, i = 0; t < t_end; t++, i++) {
        const int g = (int)(t / p.tiles), s = (int)(i % PF_STG);
        const long tile = t % p.tiles, t0 = tile * PF_KEYS;
        if (g != cur_g) {
            cur_g = g;
            pf_load_group<H, R>(p, g, qs, ws, rng, kmin, kmax);
        }
        const bool live = pf_live(tile, kmin, kmax, p.NK); /* uniform: the tile was loaded */
        float kv0 = 0.0f, kv1 = 0.0f;
        if (live) { /* the scales' loads overlap the stage wait and the wgmma */
            const long k0 = t0 + 16 * warp + grp, k1 = k0 + 8;
            kv0 = k0 < p.NK ? __ldg(p.ks + k0) : 0.0f;
            kv1 = k1 < p.NK ? __ldg(p.ks + k1) : 0.0f;
        }
        dw_bar_wait(&full[s], (uint32_t)(i / PF_STG) & 1u);
        if (live) {
            const uint32_t ka = dw_smem(kst + s * PF_KBYTES), qa = dw_smem(qs);
            asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
            for (int k = 0; k < 4; k++)
                dw_mma<PF_NC>::run(acc, dw_desc(ka + 32 * k), dw_desc(qa + 32 * k), k);
            dw_commit();
            dw_wait<0>();
        }
        dw_bar_arrive(&empty[s]); /* this thread's reads of stage s are done */
        pf_epilogue<H, R>(p, acc, ws, live, kv0, kv1, g * R, t0, rng);
    }
}

/* the tensor map of k8: 128 bytes x NK rows (128 apart), box 128 x 64, 128-byte swizzle;
   encoded per launch (a host call of a few microseconds against milliseconds of kernel) */
static int pf_map(CUtensorMap *map, const uint8_t *k8, long NK)
{
    PFN_cuTensorMapEncodeTiled_v12000 encode = dw_encoder();
    if (!encode)
        return DSA_K_EDEVICE;
    const cuuint64_t dims[2] = {128, (cuuint64_t)NK};
    const cuuint64_t strides[1] = {128};
    const cuuint32_t box[2] = {128, PF_KEYS}, estr[2] = {1, 1};
    CUresult r = encode(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, (void *)k8, dims, strides, box, estr,
                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "dsa-eval: cuTensorMapEncodeTiled failed (%d)\n", (int)r);
        return DSA_K_EDEVICE;
    }
    return DSA_K_OK;
}

template <int H> static int pf_launch(const pf_params &p, const CUtensorMap &map, cudaStream_t st)
{
    static int slots; /* resident CTAs on the whole device */
    if (!slots) {
        int dev, sms, per_sm;
        CUDA_CHECK(cudaGetDevice(&dev));
        CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
        CUDA_CHECK(cudaFuncSetAttribute(prefill_wgmma_kernel<H>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)pf_layout::alloc));
        CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &per_sm, prefill_wgmma_kernel<H>, DW_THREADS + 32, pf_layout::alloc));
        slots = sms * (per_sm > 0 ? per_sm : 1);
    }
    long grid = d_forced_decode_ctas() ? d_forced_decode_ctas() : slots;
    if (grid > p.total)
        grid = p.total;
    prefill_wgmma_kernel<H><<<(unsigned)grid, DW_THREADS + 32, pf_layout::alloc, st>>>(map, p);
    return DSA_K_OK;
}

int dsa_cuda_prefill_wgmma_launch(const dsa_k_flags *f, const dsa_logits_prefill_args *a,
                                  cudaStream_t st)
{
    if ((f->heads != 64 && f->heads != 32) || ((uintptr_t)a->k8 & 15) || a->NK <= 0 ||
        a->NK > 0x7fffffffL)
        return DSA_K_UNSUPPORTED;
    const int R = PF_NC / f->heads;
    const long cols = a->clean ? a->stride : a->NK, groups = (a->M + R - 1) / R;
    pf_params p = {a->q8,      a->w,      f->weights == DSA_K_BF16,       a->ks, a->row_start,
                   a->row_end, a->logits, f->logits == DSA_K_BF16,        a->M,  a->NK,
                   a->stride,  a->clean,  (cols + PF_KEYS - 1) / PF_KEYS, 0};
    p.total = p.tiles * groups;
    if (p.total <= 0)
        return DSA_K_OK;
    CUtensorMap map;
    int rc = pf_map(&map, a->k8, a->NK);
    if (rc != DSA_K_OK)
        return rc;
    return f->heads == 64 ? pf_launch<64>(p, map, st) : pf_launch<32>(p, map, st);
}
