/*
 * S3a paged decode logits on Hopper's fp8 tensor-core path (wgmma e4m3 x e4m3 -> f32, SASS
 * QGMMA): the default for next_n 1..4 at H = 32 or 64 (DSA_CUDA_LOGITS=pipe selects the
 * mma.sync kernel of decode.cu instead, =mma|simt those of logits.cu).
 *
 * Contract (dsa_kernels.h, dsa_logits_decode_args): q8 [B,N,H,128] e4m3, w [B*N,H] f32|bf16,
 * paged cache (page p: 64 x 128 e4m3 at p*8448, 64 fp32 scales at p*8448 + 8192), block_table
 * [B,max_blocks] i32, ctx [B,N] i32 -> logits [B*N, stride] f32|bf16, -inf past ctx when clean.
 *
 * Why this shape. The mma.sync kernel of decode.cu widens fp8 to f16 (half the fp8 rate) and
 * spends most of its issue slots on conversions and fragment loads; here the tensor cores
 * read both operands from shared memory as they are stored:
 * - One CTA is one consumer warpgroup (128 threads) and one copy warp, persistent over a
 *   contiguous range of the flat list of B * ceil(stride/64) page tiles, as in decode.cu
 *   (split-K over the context for small batches, q amortised over hundreds of pages for
 *   large ones; no merge needed, each logit is written by one thread).
 * - The K page is wgmma's A (M = 64 keys, K = 128), the sequence's N*H q rows its B (n = N*H
 *   columns, the q row j*H + h): one m64nNCk32 instruction per 32 bytes of the contraction,
 *   4 per page (n = 64..192 at H = 64, next_n 1..3; next_n 4 in two passes of n = 128, 8 per
 *   page), the accumulator 64 keys x n.
 *   Both operands are K-major with the 128-byte swizzle: a K row (128 e4m3) is one swizzle
 *   row, so TMA lands the page directly in wgmma's layout.
 * - K pages come in by TMA (a 3-D tensor map over the cache: 128 bytes x 64 rows x pages,
 *   page stride 8448) and their scales by a 256-byte bulk copy, both completing on the stage's
 *   "full" mbarrier, STG stages per CTA. The copy warp looks up 32 tiles' page ids at once
 *   (one block-table load in the first version, serial in front of every copy, held each
 *   CTA to about one page per load latency), waits for a stage's "empty" barrier (each
 *   consumer thread arrives once it has read the stage, before its epilogue: one arrive per
 *   warp after __syncwarp was as correct but compute-sanitizer's racecheck does not follow
 *   it) and refills it;
 *   a tile whose keys are all past the sequence's context is not loaded (plain arrive).
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
#include "wgmma_pipe.cuh"

#define DW_KBYTES (DSA_K_PAGE * 128) /* the K rows of a page: 8192 bytes */

/* the 64 K rows of cache page `page` into dst (1024-byte aligned), 128-byte swizzled */
__device__ __forceinline__ void dw_tma_page(void *dst, const CUtensorMap *map, int page,
                                            uint64_t *bar)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dw_smem(dst)),
                 "l"((uint64_t)map), "r"(0), "r"(0), "r"(page), "r"(dw_smem(bar))
                 : "memory");
}

template <int N> __device__ __forceinline__ int dw_kmax(const d_decode_params &p, int b)
{
    int k = 0; /* the most keys any row of sequence b sees */
#pragma unroll
    for (int j = 0; j < N; j++)
        k = max(k, p.ctx[(size_t)b * N + j]);
    return k;
}

/* stage `bar`'s copies of cache page `page`: its K rows by TMA and its scales by a bulk copy,
   one expected-bytes arrival (lane 0 of the copy warp) */
__device__ __forceinline__ void dw_issue(const CUtensorMap *map, const uint8_t *cache, int page,
                                         uint8_t *kdst, float *sdst, uint64_t *bar)
{
    dw_bar_expect(bar, DW_KBYTES + DSA_K_PAGE * 4);
    dw_tma_page(kdst, map, page, bar);
    dw_bulk(sdst, cache + (size_t)page * DSA_K_PAGE_BYTES + DSA_K_SCALE_OFF, DSA_K_PAGE * 4, bar);
}

/*
 * The copy warp: tiles [t_begin, t_end) into the STG-stage ring. Its 32 lanes look up the page
 * ids (and whether any key of the tile is visible) of 32 tiles at once, so the block-table
 * loads overlap each other instead of delaying every copy; then, tile by tile, the warp waits
 * for the stage to be free (empty barrier: the 128 consumer threads have read it) and lane 0
 * issues the copies, or a plain arrive for a tile with no visible key (never loaded).
 */
template <int N, int STG>
__device__ __forceinline__ void dw_producer(const d_decode_params &p, const CUtensorMap *map,
                                            long t_begin, long t_end, uint8_t *kst, float *sc,
                                            uint64_t *full, uint64_t *empty)
{
    const int lane = threadIdx.x & 31;
    for (long t0 = t_begin; t0 < t_end; t0 += 32) {
        const long t = t0 + lane;
        int page = 0, live = 0;
        if (t < t_end) {
            const int b = (int)(t / p.tiles_per_seq), pg = (int)(t % p.tiles_per_seq);
            /* the page id is loaded beside the context lengths, not after them: one load
               latency before the first copy instead of two (the entry exists for every
               pg < max_blocks; it is used only when the tile is visible) */
            const int id = pg < p.max_blocks ? p.bt[(size_t)b * p.max_blocks + pg] : 0;
            live = (long)pg * DSA_K_PAGE < dw_kmax<N>(p, b);
            page = live ? id : 0;
        }
        const int nt = (int)min(32L, t_end - t0);
        for (int j = 0; j < nt; j++) {
            const long i = t0 + j - t_begin;
            const int s = (int)(i % STG);
            const int pj = __shfl_sync(0xffffffffu, page, j);
            const int lj = __shfl_sync(0xffffffffu, live, j);
            if (i >= STG) /* the consumers' release of the stage's previous use */
                dw_bar_wait(&empty[s], (uint32_t)(i / STG - 1) & 1u);
            if (lane == 0) {
                if (lj)
                    dw_issue(map, p.cache, pj, kst + s * DW_KBYTES, sc + s * DSA_K_PAGE, &full[s]);
                else
                    dw_bar_arrive(&full[s]);
            }
            __syncwarp();
        }
    }
}

/* the shared layout: STG K stages (1024-byte aligned), q, the stages' scales, w, the full and
   the empty barriers */
template <int NC, int STG> struct dw_smem_layout {
    static constexpr size_t k = 0, q = (size_t)STG * DW_KBYTES, s = q + (size_t)NC * 128,
                            w = s + (size_t)STG * DSA_K_PAGE * 4, bar = w + (size_t)NC * 4,
                            bytes = bar + 2 * STG * 8, alloc = bytes + 1024; /* for alignment */
};

/* q rows and w of sequence b into shared memory (q 128-byte swizzled, as TMA would place it),
   visible to the tensor cores' (async) proxy afterwards. q goes global -> shared by cp.async
   (no registers: the accumulators are live throughout), issued in full before the weights'
   loads, so the copy costs about one load latency instead of one per round of the loop. */
template <int H, int N>
__device__ __forceinline__ void dw_load_q(const d_decode_params &p, int b, uint8_t *qs, float *ws)
{
    constexpr int NC = N * H;
    const uint4 *src = (const uint4 *)(p.q8 + (size_t)b * NC * 128);
    for (int u = threadIdx.x; u < NC * 8; u += DW_THREADS) {
        const int row = u >> 3, c = u & 7;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(
                         dw_smem(qs + row * 128 + ((c ^ (row & 7)) << 4))),
                     "l"(src + u)
                     : "memory");
    }
    for (int u = threadIdx.x; u < NC; u += DW_THREADS) {
        const size_t wi = (size_t)b * NC + u;
        ws[u] = p.wbf16 ? d_bf16_to_f32(((const uint16_t *)p.w)[wi]) : ((const float *)p.w)[wi];
    }
    asm volatile("cp.async.wait_all;\n" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

/* the scales of this thread's two keys (16 warp + grp, + 8) in stage scales ks */
__device__ __forceinline__ void dw_key_scales(const float *ks, int warp, int grp, float &kv0,
                                              float &kv1)
{
    kv0 = ks[16 * warp + grp], kv1 = ks[16 * warp + grp + 8];
}

/* the wgmma of one pass over one page: K stage at shared address ka (A), q rows at qa (B), 4
   k32 steps into acc, one commit group */
template <int NCP>
__device__ __forceinline__ void dw_mma_page(float (&acc)[NCP / 2], uint32_t ka, uint32_t qa)
{
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int k = 0; k < 4; k++)
        dw_mma<NCP>::run(acc, dw_desc(ka + 32 * k), dw_desc(qa + 32 * k), k);
}

/* ctx_r[j] for a run-time j without indexing the register array (no local memory) */
template <int N> __device__ __forceinline__ int dw_pick(const int (&ctx_r)[N], int j)
{
    int c = ctx_r[0];
#pragma unroll
    for (int r = 1; r < N; r++)
        c = j == r ? ctx_r[r] : c;
    return c;
}

/*
 * The epilogue of one pass: q rows j0 .. j0 + NP - 1 of page tile pg of sequence b from acc
 * (NP * H columns; wsp: their weights). relu(dot) * w over the thread's H/4 heads in one fma
 * chain, two xor-shuffles over the 4 lanes c, times the key's scale; lanes c 0 and 1 store
 * keys grp and grp + 8 (or the mask past ctx when clean). Not live: masks only.
 */
template <int H, int N, int NP>
__device__ __forceinline__ void
dw_epilogue(const d_decode_params &p, const float (&acc)[NP * H / 2], const float *wsp, bool live,
            float kv0, float kv1, int b, int pg, int j0, const int (&ctx_r)[N])
{
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, grp = lane >> 2, tig = lane & 3;
#pragma unroll
    for (int jl = 0; jl < NP; jl++) {
        const int j = j0 + jl;            /* the q row */
        float part0 = 0.0f, part1 = 0.0f; /* keys 16 warp + grp and + 8 */
        if (live) {
            dw_head_sum<H>(acc, jl, wsp, tig, part0, part1);
        }
        if (tig >= 2)
            continue;
        const int key = 16 * warp + grp + 8 * tig; /* lane tig 0 stores key grp, 1 grp+8 */
        const long sp = (long)pg * DSA_K_PAGE + key;
        if (sp >= p.stride)
            continue;
        const size_t o = ((size_t)b * N + j) * p.stride + sp;
        if (sp < dw_pick<N>(ctx_r, j))
            d_logit_store(p.out, o, p.lbf16, __fmul_rn(tig ? kv1 : kv0, tig ? part1 : part0));
        else if (p.clean)
            d_logit_mask(p.out, o, p.lbf16);
    }
}

/* q and w of sequence b into shared memory and its context lengths into ctx_r (kmax: the
   longest), between two barriers of the consumer warps: every consumer is done with the last
   sequence's q before it is overwritten, and sees the new one before its next wgmma */
template <int H, int N>
__device__ __forceinline__ void dw_load_seq(const d_decode_params &p, int b, uint8_t *qs, float *ws,
                                            int (&ctx_r)[N], int &kmax)
{
    dw_consumers_sync();
    kmax = 0; /* the context lengths first: their loads then overlap q's */
#pragma unroll
    for (int j = 0; j < N; j++)
        kmax = max(kmax, ctx_r[j] = p.ctx[(size_t)b * N + j]);
    dw_load_q<H, N>(p, b, qs, ws);
    dw_consumers_sync();
}

/*
 * The serial kernel (the default): H heads, N = next_n rows, P passes, STG stages, built for
 * MINB CTAs per SM (a register cap; 0: none). The N*H q rows are the B operand in P passes of N/P
 * rows (n = NCP = N*H/P columns): P = 2 halves the accumulator (N=4: 64 registers instead of 128),
 * so more CTAs share an SM, at the price of a second wgmma wait per page. Each pass waits for
 * its wgmma (wait_group 0) before its epilogue, so a CTA's tensor work and epilogue alternate
 * and the CTAs beside it on the SM fill the gaps.
 */
template <int H, int N, int P, int STG, int MINB>
__global__ static void __launch_bounds__(DW_THREADS + 32, MINB)
    decode_wgmma_kernel(const __grid_constant__ CUtensorMap map, const d_decode_params p)
{
    constexpr int NC = N * H, NCP = NC / P, NP = N / P;
    using L = dw_smem_layout<NC, STG>;
    extern __shared__ unsigned char smem_raw[];
    uint8_t *sm = dw_align1024(smem_raw);
    uint8_t *kst = sm + L::k, *qs = sm + L::q;
    float *sc = (float *)(sm + L::s), *ws = (float *)(sm + L::w);
    uint64_t *full = (uint64_t *)(sm + L::bar), *empty = full + STG;
    const int warp = threadIdx.x >> 5, grp = (threadIdx.x & 31) >> 2;
    const long t_begin = (long)blockIdx.x * p.total / gridDim.x;
    const long t_end = (long)(blockIdx.x + 1) * p.total / gridDim.x;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STG; s++) {
            dw_bar_init(&full[s], 1);
            dw_bar_init(&empty[s], DW_THREADS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (warp == DW_THREADS / 32) { /* the copy warp */
        dw_producer<N, STG>(p, &map, t_begin, t_end, kst, sc, full, empty);
        return;
    }

    float acc[NCP / 2];
#pragma unroll
    for (int r = 0; r < NCP / 2; r++)
        acc[r] = 0.0f;
    int cur_b = -1, kmax = 0, ctx_r[N];
    int b = (int)(t_begin / p.tiles_per_seq), pg = (int)(t_begin % p.tiles_per_seq);
    for (long t = t_begin, i = 0; t < t_end; t++, i++) {
        const int s = (int)(i % STG);
        if (b != cur_b) { /* a new sequence: every consumer warp is done with the last one's q, w */
            cur_b = b;
            dw_load_seq<H, N>(p, b, qs, ws, ctx_r, kmax);
        }
        dw_bar_wait(&full[s], (uint32_t)(i / STG) & 1u);
        const bool live = (long)pg * DSA_K_PAGE < kmax; /* uniform: the tile was loaded */
        float kv0 = 0.0f, kv1 = 0.0f;
        if (live)
            dw_key_scales(sc + s * DSA_K_PAGE, warp, grp, kv0, kv1);
#pragma unroll
        for (int pp = 0; pp < P; pp++) {
            if (live) {
                dw_mma_page<NCP>(acc, dw_smem(kst + s * DW_KBYTES), dw_smem(qs + pp * NCP * 128));
                dw_commit();
                dw_wait<0>();
            }
            if (pp == P - 1) /* this thread's reads of stage s are done: release it */
                dw_bar_arrive(&empty[s]);
            dw_epilogue<H, N, NP>(p, acc, ws + pp * NCP, live, kv0, kv1, b, pg, pp * NP, ctx_r);
        }
        if (++pg == p.tiles_per_seq)
            pg = 0, b++;
    }
}

/* where one unit of the overlapped consumer stands: pass pp of tile i of the CTA's range, the
   tile being page tile pg of sequence b */
struct dw_unit {
    int i, pp, b, pg;
};

template <int P> __device__ __forceinline__ dw_unit dw_next(dw_unit u, long tiles_per_seq)
{
    if (++u.pp == P) {
        u.pp = 0, u.i++;
        if (++u.pg == tiles_per_seq)
            u.pg = 0, u.b++;
    }
    return u;
}

/* The overlapped consumer's state: the current sequence's context lengths, the current tile's
   key scales, and the shared-memory addresses it works from. */
template <int N, int STG> struct dw_cons {
    const d_decode_params *p;
    uint8_t *kst, *qs;
    float *sc, *ws;
    uint64_t *full, *empty;
    int ctx_r[N], kmax;
    float kv0, kv1;
};

/* unit u's wgmma into acc, after waiting for its stage's K when it is the tile's first pass;
   nothing for a tile with no visible key (not loaded) */
template <int H, int N, int P, int STG>
__device__ __forceinline__ void dw_issue_unit(dw_cons<N, STG> &c, const dw_unit &u,
                                              float (&acc)[N * H / P / 2])
{
    constexpr int NCP = N * H / P;
    const int s = u.i % STG;
    if (u.pp == 0)
        dw_bar_wait(&c.full[s], (uint32_t)(u.i / STG) & 1u);
    dw_fence_acc(acc);
    if ((long)u.pg * DSA_K_PAGE < c.kmax) {
        dw_mma_page<NCP>(acc, dw_smem(c.kst + s * DW_KBYTES), dw_smem(c.qs + u.pp * NCP * 128));
        dw_commit();
    }
}

/* every wgmma of this thread done, acc's results readable */
template <int R> __device__ __forceinline__ void dw_retire(float (&acc)[R])
{
    dw_wait<0>();
    dw_fence_acc(acc);
}

/*
 * One unit of the overlapped consumer. On entry unit u's wgmma is complete and its result in
 * cur. Release u's stage after its last pass, issue the next unit's wgmma into nxt when it is
 * of the same sequence, run u's epilogue while the tensor cores run it, then wait for it: no
 * wgmma is in flight across a loop iteration (ptxas serialises them otherwise). At the end
 * of a sequence: u's epilogue, the next sequence's q, then the next unit's wgmma.
 */
template <int H, int N, int P, int STG>
__device__ __forceinline__ void dw_step(dw_cons<N, STG> &c, dw_unit &u, int k, int nu,
                                        float (&cur)[N * H / P / 2], float (&nxt)[N * H / P / 2])
{
    const int warp = threadIdx.x >> 5, grp = (threadIdx.x & 31) >> 2, s = u.i % STG;
    const dw_unit v = dw_next<P>(u, c.p->tiles_per_seq);
    const bool more = k + 1 < nu, same = more && v.b == u.b;
    const bool live = (long)u.pg * DSA_K_PAGE < c.kmax; /* uniform: the tile was loaded */
    if (u.pp == 0 && live)                              /* before the stage is released */
        dw_key_scales(c.sc + s * DSA_K_PAGE, warp, grp, c.kv0, c.kv1);
    if (u.pp == P - 1) /* this thread's reads of stage s are done */
        dw_bar_arrive(&c.empty[s]);
    if (same)
        dw_issue_unit<H, N, P, STG>(c, v, nxt);
    dw_epilogue<H, N, N / P>(*c.p, cur, c.ws + u.pp * (N * H / P), live, c.kv0, c.kv1, u.b, u.pg,
                             u.pp * (N / P), c.ctx_r);
    dw_retire(nxt);
    if (more && !same) {
        dw_load_seq<H, N>(*c.p, v.b, c.qs, c.ws, c.ctx_r, c.kmax);
        dw_issue_unit<H, N, P, STG>(c, v, nxt);
        dw_retire(nxt);
    }
    u = v;
}

/* the CTAs per SM the overlapped kernel is built for (a register cap, so that the device's
   ptxas cannot drift above it): 4 with one q row per pass (96 registers), 3 at next_n 4 (100),
   2 with two q rows per pass (168) */
template <int N, int P> constexpr int dw_ovl_ctas(void)
{
    return N / P == 2 ? 2 : N == 4 ? 3 : 4;
}

/*
 * The overlapped kernel (the default): as decode_wgmma_kernel, but the consumer's work is a
 * stream of units (tile, pass) with two accumulators, and unit u + 1's wgmma runs on the
 * tensor cores while unit u's epilogue runs on the ALUs. P passes of N/P
 * q rows (n = N*H/P columns per accumulator); the loop is unrolled by two units so that each
 * accumulator is a fixed register set.
 */
template <int H, int N, int P, int STG>
__global__ static void __launch_bounds__(DW_THREADS + 32, dw_ovl_ctas<N, P>())
    decode_wgmma_ovl_kernel(const __grid_constant__ CUtensorMap map, const d_decode_params p)
{
    constexpr int NC = N * H, NCP = NC / P;
    using L = dw_smem_layout<NC, STG>;
    extern __shared__ unsigned char smem_raw[];
    uint8_t *sm = dw_align1024(smem_raw);
    dw_cons<N, STG> c;
    c.p = &p;
    c.kst = sm + L::k, c.qs = sm + L::q;
    c.sc = (float *)(sm + L::s), c.ws = (float *)(sm + L::w);
    c.full = (uint64_t *)(sm + L::bar), c.empty = c.full + STG;
    c.kv0 = c.kv1 = 0.0f;
    const long t_begin = (long)blockIdx.x * p.total / gridDim.x;
    const long t_end = (long)(blockIdx.x + 1) * p.total / gridDim.x;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STG; s++) {
            dw_bar_init(&c.full[s], 1);
            dw_bar_init(&c.empty[s], DW_THREADS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x >= DW_THREADS) { /* the copy warp */
        dw_producer<N, STG>(p, &map, t_begin, t_end, c.kst, c.sc, c.full, c.empty);
        return;
    }

    float acc0[NCP / 2], acc1[NCP / 2];
#pragma unroll
    for (int r = 0; r < NCP / 2; r++)
        acc0[r] = acc1[r] = 0.0f;
    dw_unit u = {0, 0, (int)(t_begin / p.tiles_per_seq), (int)(t_begin % p.tiles_per_seq)};
    const int nu = (int)(t_end - t_begin) * P;
    dw_load_seq<H, N>(p, u.b, c.qs, c.ws, c.ctx_r, c.kmax);
    dw_issue_unit<H, N, P, STG>(c, u, acc0);
    dw_retire(acc0);
    for (int k = 0; k < nu; k += 2) {
        dw_step<H, N, P, STG>(c, u, k, nu, acc0, acc1);
        if (k + 1 < nu)
            dw_step<H, N, P, STG>(c, u, k + 1, nu, acc1, acc0);
    }
}

/* the tensor map of the cache's K rows: 128 bytes x 64 rows (128 apart) x pages (8448 apart),
   one page per box, 128-byte swizzle; the page extent is the most an int32 page id of an
   H200-sized cache needs (no access goes past a page the block table names) */
static int dw_map(CUtensorMap *map, const uint8_t *cache)
{
    const cuuint64_t dims[3] = {128, DSA_K_PAGE, 1u << 25};
    const cuuint64_t strides[2] = {128, DSA_K_PAGE_BYTES};
    const cuuint32_t box[3] = {128, DSA_K_PAGE, 1};
    return dw_map_u8(map, 3, cache, dims, strides, box);
}

/* The maps of the last DW_MAPS caches, by address: a serving stack calls the indexer once per
   layer, each layer with its own cache (61 in DeepSeek-V3.2), and the benchmark rotates
   copies; a map is encoded (a driver call on the host, in front of every launch when it was
   one map for the last cache) only for a cache not seen recently. Replaced round-robin. Not
   thread-safe, as the launch statics beside it. */
#define DW_MAPS 64
static int dw_map_for(const uint8_t *cache, const CUtensorMap **out)
{
    static CUtensorMap maps[DW_MAPS];
    static const uint8_t *keys[DW_MAPS];
    static int next;
    for (int i = 0; i < DW_MAPS; i++)
        if (keys[i] == cache) {
            *out = &maps[i];
            return DSA_K_OK;
        }
    int rc = dw_map(&maps[next], cache);
    if (rc != DSA_K_OK)
        return rc;
    keys[next] = cache;
    *out = &maps[next];
    next = (next + 1) % DW_MAPS;
    return DSA_K_OK;
}

/* the default stages (round 4's, no register cap): as many as let the CTAs that the
   registers allow share an SM (ptxas, H=64: N=1 64 registers, 4 CTAs of 52 KB;
   N=2 126, 3 of 69 KB; N=3, 4 150-168, 2 of 85-102 KB; N=4 in two passes 127, 3 of 69 KB) */
template <int N, int P> constexpr int dw_stages(void)
{
    return N == 1 ? 5 : N == 2 ? 6 : (N == 4 && P == 2) ? 4 : 8;
}

/* DSA_CUDA_DECODE_OCC=1: more consumer warpgroups per SM, fewer stages each, on the view
   that a CTA's serial path per page (wgmma, wait, epilogue) is hidden by the CTAs beside it.
   CTAs per SM by accumulator size (a register cap: N=1 6 CTAs at 64 registers, n = 128 4
   CTAs at 96; n = 192 and 256 2, as by default: 3 would spill). Measured in round 5 call 2:
   N=1 and N=2 within 1 % of the default, N=4 7 % slower (2 stages) ... */
template <int N, int P> constexpr int dw_ctas(void)
{
    return N == 1 ? 6 : N / P == 2 ? 4 : 2;
}

/* ... and as many stages as fit beside q, w and the barriers in 1/dw_ctas of the SM's 228 KB
   (1 KB per CTA reserved, 1 KB of alignment slack), at most 8: H=64 N=1 3, N=2 4, N=3 8,
   N=4 two passes 2, one pass 8 */
template <int H, int N, int P> constexpr int dw_occ_stages(void)
{
    constexpr long room = 233472L / dw_ctas<N, P>() - 2048 - (long)N * H * 132;
    constexpr long stg = room / (DW_KBYTES + DSA_K_PAGE * 4 + 16);
    return stg > 8 ? 8 : stg < 2 ? 2 : (int)stg;
}

/* the overlapped kernel's stages: as many as fit beside q in the shared memory of its
   dw_ovl_ctas CTAs per SM (H=64: 4 CTAs of 52 KB with 5, 4, 3 stages at N = 1, 2, 3; N=4
   3 CTAs of 69 KB with 4) */
template <int N> constexpr int dw_ovl_stages(void)
{
    return N == 1 ? 5 : N == 2 ? 4 : 3 + (N == 4);
}

enum dw_kind { DW_SERIAL, DW_SERIAL_MANY, DW_OVERLAP };

template <int H, int N, int P, dw_kind K>
static int dw_launch(const d_decode_params &p, const CUtensorMap &map, cudaStream_t st)
{
    constexpr int STG = K == DW_OVERLAP       ? dw_ovl_stages<N>()
                        : K == DW_SERIAL_MANY ? dw_occ_stages<H, N, P>()
                                              : dw_stages<N, P>();
    using L = dw_smem_layout<N * H, STG>;
    void (*kern)(const CUtensorMap, const d_decode_params);
    if constexpr (K == DW_OVERLAP)
        kern = decode_wgmma_ovl_kernel<H, N, P, STG>;
    else if constexpr (K == DW_SERIAL_MANY)
        kern = decode_wgmma_kernel<H, N, P, STG, dw_ctas<N, P>()>;
    else
        kern = decode_wgmma_kernel<H, N, P, STG, 0>;
    static int slots; /* resident CTAs on the whole device */
    if (!slots) {
        int dev, sms, per_sm;
        CUDA_CHECK(cudaGetDevice(&dev));
        CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
        CUDA_CHECK(
            cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)L::alloc));
        CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, DW_THREADS + 32,
                                                                 L::alloc));
        slots = sms * (per_sm > 0 ? per_sm : 1);
    }
    long grid = d_forced_decode_ctas() ? d_forced_decode_ctas() : slots;
    if (grid > p.total)
        grid = p.total;
    kern<<<(unsigned)grid, DW_THREADS + 32, L::alloc, st>>>(map, p);
    return DSA_K_OK;
}

/* an integer switch read once: the value of env, or dflt when unset or not a number */
static int dw_env(const char *env, int dflt)
{
    const char *e = getenv(env);
    return e && *e >= '0' && *e <= '9' ? atoi(e) : dflt;
}

/* the serial kernel: next_n 4 in two passes of two q rows: 690 us against 889 in one pass at
   B=64 L=128K on the H200 (round 4, bench/RESULTS.md); DSA_CUDA_DECODE_PASSES=1 selects one */
template <int H, dw_kind K>
static int dw_serial(const d_decode_params &p, const CUtensorMap &map, int N, int passes,
                     cudaStream_t st)
{
    switch (N) {
    case 1:
        return dw_launch<H, 1, 1, K>(p, map, st);
    case 2:
        return dw_launch<H, 2, 1, K>(p, map, st);
    case 3:
        return dw_launch<H, 3, 1, K>(p, map, st);
    default:
        return passes == 1 ? dw_launch<H, 4, 1, K>(p, map, st) : dw_launch<H, 4, 2, K>(p, map, st);
    }
}

/* the overlapped kernel (DSA_CUDA_DECODE_OVERLAP=1): one q row per pass (n = H) */
template <int H>
static int dw_overlap(const d_decode_params &p, const CUtensorMap &map, int N, cudaStream_t st)
{
    switch (N) {
    case 1:
        return dw_launch<H, 1, 1, DW_OVERLAP>(p, map, st);
    case 2:
        return dw_launch<H, 2, 2, DW_OVERLAP>(p, map, st);
    case 3:
        return dw_launch<H, 3, 3, DW_OVERLAP>(p, map, st);
    default:
        return dw_launch<H, 4, 4, DW_OVERLAP>(p, map, st);
    }
}

/* DSA_CUDA_DECODE_OVERLAP=1 selects the overlapped kernel, DSA_CUDA_DECODE_OCC=1 the serial
   kernel at many CTAs per SM; both measured no faster on the H200 (bench/RESULTS.md, round 5) */
template <int H>
static int dw_heads(const d_decode_params &p, const CUtensorMap &map, int N, cudaStream_t st)
{
    static int overlap = -1, occ, passes;
    if (overlap < 0) {
        overlap = dw_env("DSA_CUDA_DECODE_OVERLAP", 0) != 0;
        occ = dw_env("DSA_CUDA_DECODE_OCC", 0) != 0;
        passes = dw_env("DSA_CUDA_DECODE_PASSES", 2);
    }
    if (overlap)
        return dw_overlap<H>(p, map, N, st);
    return occ ? dw_serial<H, DW_SERIAL_MANY>(p, map, N, passes, st)
               : dw_serial<H, DW_SERIAL>(p, map, N, passes, st);
}

int dsa_cuda_decode_wgmma_launch(const dsa_k_flags *f, const dsa_logits_decode_args *a,
                                 cudaStream_t st)
{
    if (a->N < 1 || a->N > 4 || (f->heads != 64 && f->heads != 32))
        return DSA_K_UNSUPPORTED;
    d_decode_params p = d_decode_params_of(f, a);
    if (p.total <= 0)
        return DSA_K_OK;
    const CUtensorMap *map;
    int rc = dw_map_for(a->cache, &map);
    if (rc != DSA_K_OK)
        return rc;
    return f->heads == 64 ? dw_heads<64>(p, *map, a->N, st) : dw_heads<32>(p, *map, a->N, st);
}
