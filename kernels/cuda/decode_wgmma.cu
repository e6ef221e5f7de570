/*
 * S3a paged decode logits on Hopper's fp8 tensor-core path (wgmma e4m3 x e4m3 -> f32, SASS
 * QGMMA), selected with DSA_CUDA_LOGITS=wgmma (next_n 1..4, H = 32 or 64).
 *
 * Contract (dsa_kernels.h, dsa_logits_decode_args): q8 [B,N,H,128] e4m3, w [B*N,H] f32|bf16,
 * paged cache (page p: 64 x 128 e4m3 at p*8448, 64 fp32 scales at p*8448 + 8192), block_table
 * [B,max_blocks] i32, ctx [B,N] i32 -> logits [B*N, stride] f32|bf16, -inf past ctx when clean.
 *
 * Why this shape. The mma.sync kernel of decode.cu widens fp8 to f16 (half the fp8 rate) and
 * spends most of its issue slots on conversions and fragment loads; here the tensor cores
 * read both operands from shared memory as they are stored:
 * - One CTA is one warpgroup (128 threads), persistent over a contiguous range of the flat
 *   list of B * ceil(stride/64) page tiles, as in decode.cu (split-K over the context for
 *   small batches, q amortised over hundreds of pages for large ones; no merge needed, each
 *   logit is written by one thread).
 * - The K page is wgmma's A (M = 64 keys, K = 128), the sequence's N*H q rows its B (n = N*H
 *   columns, the q row j*H + h): one m64nNCk32 instruction per 32 bytes of the contraction,
 *   4 per page for every next_n (n = 64..256 at H = 64), the accumulator 64 keys x N*H.
 *   Both operands are K-major with the 128-byte swizzle: a K row (128 e4m3) is one swizzle
 *   row, so TMA lands the page directly in wgmma's layout.
 * - K pages come in by TMA (a 3-D tensor map over the cache: 128 bytes x 64 rows x pages,
 *   page stride 8448) and their scales by a 256-byte bulk copy, both completing on the stage's
 *   mbarrier, STG stages in flight per CTA; thread 0 issues, a tile whose keys are all past
 *   the sequence's context is not loaded (its barrier gets a plain arrive).
 * - q (N*H x 128 bytes) and w (N*H floats) of the current sequence sit in shared memory,
 *   reloaded when a range crosses into the next sequence.
 * Epilogue: thread (warp w, g, c) holds keys 16w + g and 16w + g + 8 and, of each q row j,
 * heads 8i + 2c + {0, 1}; relu(dot) * w is summed over its H/4 heads in that order (one fma
 * chain), then over the 4 lanes c by two xor-shuffles, times the key's scale, rounded once
 * to f32 (then bf16 when asked). A fixed order, so reruns are bitwise identical.
 * Numerics: the tensor core's fp8 products and partial sums are not those of the fp64
 * reference (the hardware aligns and truncates the partial sums of a k32 step to fewer bits
 * than f32), so the logits match the reference within calc_diff, not bit for bit; the check
 * (kernels/check.c) holds them to calc_diff <= 5e-6 and identical masks, as the mma kernels.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdlib.h>
#include <string.h>

#include "common.cuh"
#include "dsa_cuda.h"
#include "wgmma_fp8.cuh"

#define DW_THREADS 128
#define DW_KBYTES  (DSA_K_PAGE * 128) /* the K rows of a page: 8192 bytes */
#define DW_STAGES  8

struct dw_params {
    const uint8_t *q8;
    const void *w;
    int wbf16;
    const uint8_t *cache;
    const int32_t *bt;
    int max_blocks;
    const int32_t *ctx;
    void *out;
    int lbf16;
    long stride;
    int clean;
    long tiles_per_seq, total; /* page tiles per sequence (ceil(stride/64)) and in all */
};

__device__ __forceinline__ uint32_t dw_smem(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void dw_bar_init(uint64_t *bar)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(dw_smem(bar)) : "memory");
}

/* the expected bytes of the stage and the issuing thread's arrival */
__device__ __forceinline__ void dw_bar_expect(uint64_t *bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(dw_smem(bar)),
                 "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ void dw_bar_arrive(uint64_t *bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(dw_smem(bar)) : "memory");
}

__device__ __forceinline__ void dw_bar_wait(uint64_t *bar, uint32_t parity)
{
    uint32_t done;
    do {
        asm volatile("{\n.reg .pred p;\n"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(dw_smem(bar)), "r"(parity)
                     : "memory");
    } while (!done);
}

/* the 64 K rows of cache page `page` into dst (1024-byte aligned), 128-byte swizzled */
__device__ __forceinline__ void dw_tma_page(void *dst, const CUtensorMap *map, int page,
                                            uint64_t *bar)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dw_smem(dst)),
                 "l"((uint64_t)map), "r"(0), "r"(0), "r"(page), "r"(dw_smem(bar))
                 : "memory");
}

__device__ __forceinline__ void dw_bulk(void *dst, const void *src, uint32_t bytes, uint64_t *bar)
{
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, "
        "[%3];\n" ::"r"(dw_smem(dst)),
        "l"(src), "r"(bytes), "r"(dw_smem(bar))
        : "memory");
}

/* a K-major operand of 128-byte rows, 128-byte swizzle, 8-row groups 1024 bytes apart (SBO),
   starting at shared address a (1024-byte aligned plus the k-step's 32-byte offset) */
__device__ __forceinline__ uint64_t dw_desc(uint32_t a)
{
    return (uint64_t)((a & 0x3ffffu) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}

/* the copy side's cursor (thread 0): the next tile to issue, its page and its sequence's
   largest context (the most keys any of its rows sees) */
struct dw_cursor {
    long t;
    int b, pg, kmax;
};

template <int N> __device__ __forceinline__ int dw_kmax(const dw_params &p, int b)
{
    int k = 0;
#pragma unroll
    for (int j = 0; j < N; j++)
        k = max(k, p.ctx[(size_t)b * N + j]);
    return k;
}

/* issues tile c.t into stage s (TMA + bulk copy, or a plain arrive when none of its keys is
   visible), then moves the cursor on; nothing past the range */
template <int N>
__device__ __forceinline__ void dw_issue(const dw_params &p, const CUtensorMap *map, dw_cursor &c,
                                         long t_end, uint8_t *kdst, float *sdst, uint64_t *bar)
{
    if (c.t >= t_end)
        return;
    if ((long)c.pg * DSA_K_PAGE < c.kmax) {
        const int page = p.bt[(size_t)c.b * p.max_blocks + c.pg];
        dw_bar_expect(bar, DW_KBYTES + DSA_K_PAGE * 4);
        dw_tma_page(kdst, map, page, bar);
        dw_bulk(sdst, p.cache + (size_t)page * DSA_K_PAGE_BYTES + DSA_K_SCALE_OFF, DSA_K_PAGE * 4,
                bar);
    } else {
        dw_bar_arrive(bar);
    }
    c.t++;
    if (++c.pg == p.tiles_per_seq) {
        c.pg = 0, c.b++;
        if (c.t < t_end)
            c.kmax = dw_kmax<N>(p, c.b);
    }
}

/* the shared layout: STG K stages (1024-byte aligned), q, the stages' scales, w, barriers */
template <int NC, int STG> struct dw_smem_layout {
    static constexpr size_t k = 0, q = (size_t)STG * DW_KBYTES, s = q + (size_t)NC * 128,
                            w = s + (size_t)STG * DSA_K_PAGE * 4, bar = w + (size_t)NC * 4,
                            bytes = bar + STG * 8, alloc = bytes + 1024; /* for the alignment */
};

/* q rows and w of sequence b into shared memory (q 128-byte swizzled, as TMA would place it),
   visible to the tensor cores' (async) proxy afterwards */
template <int H, int N>
__device__ __forceinline__ void dw_load_q(const dw_params &p, int b, uint8_t *qs, float *ws)
{
    constexpr int NC = N * H;
    const uint4 *src = (const uint4 *)(p.q8 + (size_t)b * NC * 128);
    for (int u = threadIdx.x; u < NC * 8; u += DW_THREADS) {
        const int row = u >> 3, c = u & 7;
        *(uint4 *)(qs + row * 128 + ((c ^ (row & 7)) << 4)) = src[u];
    }
    for (int u = threadIdx.x; u < NC; u += DW_THREADS) {
        const size_t wi = (size_t)b * NC + u;
        ws[u] = p.wbf16 ? d_bf16_to_f32(((const uint16_t *)p.w)[wi]) : ((const float *)p.w)[wi];
    }
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

template <int H, int N, int STG>
__global__ static void __launch_bounds__(DW_THREADS)
    decode_wgmma_kernel(const __grid_constant__ CUtensorMap map, const dw_params p)
{
    constexpr int NC = N * H;
    using L = dw_smem_layout<NC, STG>;
    extern __shared__ unsigned char smem_raw[];
    uint8_t *sm = (uint8_t *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
    uint8_t *kst = sm + L::k, *qs = sm + L::q;
    float *sc = (float *)(sm + L::s), *ws = (float *)(sm + L::w);
    uint64_t *bar = (uint64_t *)(sm + L::bar);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, grp = lane >> 2, tig = lane & 3;
    const long t_begin = (long)blockIdx.x * p.total / gridDim.x;
    const long t_end = (long)(blockIdx.x + 1) * p.total / gridDim.x;

    dw_cursor cur = {t_begin, (int)(t_begin / p.tiles_per_seq), (int)(t_begin % p.tiles_per_seq),
                     0};
    if (threadIdx.x == 0) {
        for (int s = 0; s < STG; s++)
            dw_bar_init(&bar[s]);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        cur.kmax = dw_kmax<N>(p, cur.b);
        for (int s = 0; s < STG; s++)
            dw_issue<N>(p, &map, cur, t_end, kst + s * DW_KBYTES, sc + s * DSA_K_PAGE, &bar[s]);
    }
    __syncthreads();

    float acc[NC / 2];
#pragma unroll
    for (int r = 0; r < NC / 2; r++)
        acc[r] = 0.0f;
    int cur_b = -1, kmax = 0, ctx_r[N];
    int b = (int)(t_begin / p.tiles_per_seq), pg = (int)(t_begin % p.tiles_per_seq);
    for (long t = t_begin, i = 0; t < t_end; t++, i++) {
        const int s = (int)(i % STG);
        if (b != cur_b) { /* a new sequence; the last tile's wgmmas are complete */
            cur_b = b;
            dw_load_q<H, N>(p, b, qs, ws);
            kmax = 0;
#pragma unroll
            for (int j = 0; j < N; j++)
                kmax = max(kmax, ctx_r[j] = p.ctx[(size_t)b * N + j]);
            __syncthreads();
        }
        dw_bar_wait(&bar[s], (uint32_t)(i / STG) & 1u);
        const bool live = (long)pg * DSA_K_PAGE < kmax; /* uniform: the tile was loaded */
        if (live) {
            const uint32_t ka = dw_smem(kst + s * DW_KBYTES), qa = dw_smem(qs);
            asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
            for (int k = 0; k < 4; k++)
                dw_mma<NC>::run(acc, dw_desc(ka + 32 * k), dw_desc(qa + 32 * k), k);
            asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
            asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
        }
        const float *ks = sc + s * DSA_K_PAGE;
#pragma unroll
        for (int j = 0; j < N; j++) {
            float part0 = 0.0f, part1 = 0.0f; /* keys 16 warp + grp and + 8 */
            if (live) {
#pragma unroll
                for (int q = 0; q < H / 8; q++) { /* n-tile n8 of the accumulator */
                    const int n8 = j * (H / 8) + q;
                    const float2 wv = *(const float2 *)(ws + 8 * n8 + 2 * tig);
                    part0 = __fmaf_rn(wv.x, fmaxf(acc[4 * n8], 0.0f), part0);
                    part0 = __fmaf_rn(wv.y, fmaxf(acc[4 * n8 + 1], 0.0f), part0);
                    part1 = __fmaf_rn(wv.x, fmaxf(acc[4 * n8 + 2], 0.0f), part1);
                    part1 = __fmaf_rn(wv.y, fmaxf(acc[4 * n8 + 3], 0.0f), part1);
                }
                part0 = __fadd_rn(part0, __shfl_xor_sync(0xffffffffu, part0, 1));
                part1 = __fadd_rn(part1, __shfl_xor_sync(0xffffffffu, part1, 1));
                part0 = __fadd_rn(part0, __shfl_xor_sync(0xffffffffu, part0, 2));
                part1 = __fadd_rn(part1, __shfl_xor_sync(0xffffffffu, part1, 2));
            }
            if (tig >= 2)
                continue;
            const int key = 16 * warp + grp + 8 * tig; /* lane tig 0 stores key grp, 1 grp + 8 */
            const long sp = (long)pg * DSA_K_PAGE + key;
            if (sp >= p.stride)
                continue;
            const size_t o = ((size_t)b * N + j) * p.stride + sp;
            if (sp < ctx_r[j])
                d_logit_store(p.out, o, p.lbf16, __fmul_rn(ks[key], tig ? part1 : part0));
            else if (p.clean)
                d_logit_mask(p.out, o, p.lbf16);
        }
        __syncthreads(); /* stage s is read (wgmmas waited for, scales loaded) */
        if (threadIdx.x == 0)
            dw_issue<N>(p, &map, cur, t_end, kst + s * DW_KBYTES, sc + s * DSA_K_PAGE, &bar[s]);
        if (++pg == p.tiles_per_seq)
            pg = 0, b++;
    }
}

/* the tensor map of the cache's K rows: 128 bytes x 64 rows (128 apart) x pages (8448 apart),
   one page per box, 128-byte swizzle; the page extent is the most an int32 page id of an
   H200-sized cache needs (no access goes past a page the block table names) */
static int dw_map(CUtensorMap *map, const uint8_t *cache)
{
    static PFN_cuTensorMapEncodeTiled_v12000 encode;
    if (!encode) {
        cudaDriverEntryPointQueryResult q;
        void *fn = NULL;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000,
                                             cudaEnableDefault, &q) != cudaSuccess ||
            q != cudaDriverEntryPointSuccess || !fn) {
            fprintf(stderr, "dsa-eval: CUDA driver has no cuTensorMapEncodeTiled\n");
            return DSA_K_EDEVICE;
        }
        encode = (PFN_cuTensorMapEncodeTiled_v12000)fn;
    }
    const cuuint64_t dims[3] = {128, DSA_K_PAGE, 1u << 25};
    const cuuint64_t strides[2] = {128, DSA_K_PAGE_BYTES};
    const cuuint32_t box[3] = {128, DSA_K_PAGE, 1}, estr[3] = {1, 1, 1};
    CUresult r = encode(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, (void *)cache, dims, strides, box,
                        estr, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "dsa-eval: cuTensorMapEncodeTiled failed (%d)\n", (int)r);
        return DSA_K_EDEVICE;
    }
    return DSA_K_OK;
}

/* DSA_CUDA_DECODE_CTAS=N forces the grid (the check runs it small, so ranges cross sequences) */
static int dw_forced_ctas(void)
{
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("DSA_CUDA_DECODE_CTAS");
        v = e ? atoi(e) : 0;
        if (v < 0)
            v = 0;
    }
    return v;
}

template <int H, int N>
static int dw_launch(const dw_params &p, const CUtensorMap &map, cudaStream_t st)
{
    using L = dw_smem_layout<N * H, DW_STAGES>;
    static int slots; /* resident CTAs on the whole device */
    if (!slots) {
        int dev, sms, per_sm;
        CUDA_CHECK(cudaGetDevice(&dev));
        CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
        CUDA_CHECK(cudaFuncSetAttribute(decode_wgmma_kernel<H, N, DW_STAGES>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)L::alloc));
        CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &per_sm, decode_wgmma_kernel<H, N, DW_STAGES>, DW_THREADS, L::alloc));
        slots = sms * (per_sm > 0 ? per_sm : 1);
    }
    long grid = dw_forced_ctas() ? dw_forced_ctas() : slots;
    if (grid > p.total)
        grid = p.total;
    decode_wgmma_kernel<H, N, DW_STAGES><<<(unsigned)grid, DW_THREADS, L::alloc, st>>>(map, p);
    return DSA_K_OK;
}

template <int H>
static int dw_heads(const dw_params &p, const CUtensorMap &map, int N, cudaStream_t st)
{
    switch (N) {
    case 1:
        return dw_launch<H, 1>(p, map, st);
    case 2:
        return dw_launch<H, 2>(p, map, st);
    case 3:
        return dw_launch<H, 3>(p, map, st);
    default:
        return dw_launch<H, 4>(p, map, st);
    }
}

int dsa_cuda_decode_wgmma_launch(const dsa_k_flags *f, const dsa_logits_decode_args *a,
                                 cudaStream_t st)
{
    if (a->N < 1 || a->N > 4 || (f->heads != 64 && f->heads != 32))
        return DSA_K_UNSUPPORTED;
    dw_params p = {a->q8,     a->w,           f->weights == DSA_K_BF16,
                   a->cache,  a->block_table, a->max_blocks,
                   a->ctx,    a->logits,      f->logits == DSA_K_BF16,
                   a->stride, a->clean,       (a->stride + DSA_K_PAGE - 1) / DSA_K_PAGE,
                   0};
    p.total = p.tiles_per_seq * a->B;
    if (p.total <= 0)
        return DSA_K_OK;
    /* the map names the cache's address: encoded again only when the cache moves */
    static CUtensorMap map;
    static const uint8_t *mapped;
    if (mapped != a->cache) {
        int rc = dw_map(&map, a->cache);
        if (rc != DSA_K_OK)
            return rc;
        mapped = a->cache;
    }
    return f->heads == 64 ? dw_heads<64>(p, map, a->N, st) : dw_heads<32>(p, map, a->N, st);
}
