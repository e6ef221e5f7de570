/*
 * S3b ragged prefill logits on Hopper's fp8 tensor-core path (wgmma e4m3 x e4m3 -> f32, SASS
 * QGMMA): the default at H = 32, and at H = 64 with DSA_CUDA_PREFILL=two (else prefill_wg4.cu's
 * four-warpgroup kernel runs there, launched from here; DSA_CUDA_LOGITS=mma selects the mma.sync
 * kernel of logits.cu, =simt its CUDA-core kernel).
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
 * with the 128-byte swizzle in shared memory; the accumulator is 64 keys x 256 columns (128
 * registers per thread), issued as two halves of 128 columns (4 m64n128k32 instructions each)
 * so that one half's epilogue can run under the other's wgmmas. A group of 256 q columns
 * reads each K tile from L2 once per 256 columns; the operand bytes per FLOP from shared
 * memory (A 2 KB + B 4 KB per 0.5 MFLOP instruction) stay under the SM's 128 B/cycle at the
 * fp8 rate.
 * - One CTA is one consumer warpgroup and one copy warp, persistent over a contiguous range
 *   of the flat list of groups * tiles (tiles = ceil(cols / 64), cols = stride when clean,
 *   else NK). q and w of a group stay in shared memory for all its tiles of the range
 *   (ceil(NK/64) tiles per group: 2,048 at 128K, so q is reloaded about once per CTA).
 * - A tile is live when it holds a key < NK that some row of the group sees ([kmin, kmax)
 *   over the group's rows: contiguous). Only live tiles are loaded (TMA, 2-D tensor map over
 *   k8, box 128 bytes x 64 rows; rows past NK are zero-filled by the copy engine) and
 *   multiplied; the others only get their masks (clean), written apart from the pipeline.
 *   Causal prefill leaves the tiles above each group's diagonal dead, a ragged batch those of
 *   the other requests, so they cost no copy and no tensor work.
 * - K tiles in STG stages, full / empty mbarrier pairs; each consumer thread arrives on the
 *   stage's empty barrier once its wgmma has completed (racecheck follows per-thread
 *   arrivals, decode_wgmma.cu says why).
 * - The two halves are two accumulators of 64 registers and two wgmma commit groups per
 *   tile, software-pipelined over chunks of live tiles (pf_chunk): a half's epilogue runs
 *   while the other half's or the next tile's wgmmas do, so the tensor cores are rarely idle
 *   through the epilogue.
 * Epilogue of a half: thread (warp w, g, c) holds keys 16w + g and 16w + g + 8 and, of each
 * row r, heads 8i + 2c + {0, 1}; relu(dot) * w over its H/4 heads in that order (one fma
 * chain), a reduce-scatter over the 4 lanes c (two xor-shuffle rounds), after which every lane
 * holds whole sums for its own (row, key) pairs and stores them times the key's scale, rounded
 * once to f32 (then bf16 when asked). A fixed order, so reruns are bitwise identical. The fp8
 * tensor core's partial sums are not the reference's exact dots, so the check holds the logits
 * to calc_diff <= 5e-6 and identical masks (as for the decode kernel), not bit equality.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdlib.h>
#include <string.h>

#include "prefill_common.cuh"
#include "wgmma_fp8.cuh"

#define PF_KEYS   64
#define PF_KBYTES (PF_KEYS * 128) /* one K tile: 8192 bytes */
#define PF_NC     256             /* q columns of a group: R * H */
#define PF_STG    6               /* K stages per CTA */

/* the shared layout: STG K stages (1024-byte aligned), q (NC rows of 128 bytes, 1024-aligned
   as the stages are), w, the group rows' key ranges (lo, hi: at most 8 rows each), the full
   and the empty barriers */
struct pf_layout {
    static constexpr size_t k = 0, q = (size_t)PF_STG * PF_KBYTES, w = q + (size_t)PF_NC * 128,
                            rng = w + (size_t)PF_NC * 4, bar = rng + 16 * 4,
                            bytes = bar + 2 * PF_STG * 8, alloc = bytes + 1024; /* for alignment */
};

/* The copy warp: the live tiles of each group segment of [t_begin, t_end) into the stage ring;
   for each, wait for the stage to be free (its empty barrier: the 128 consumer threads are done
   with it), then lane 0 issues the TMA. Dead tiles are never loaded nor waited for. */
template <int R>
__device__ __forceinline__ void pf_producer(const pf_params &p, const CUtensorMap *map,
                                            long t_begin, long t_end, uint8_t *kst, uint64_t *full,
                                            uint64_t *empty)
{
    const int lane = threadIdx.x & 31;
    pf_ring ring = {0, 0u};
    long n = 0; /* live tiles so far */
    for (long t = t_begin; t < t_end;) {
        pf_seg q = pf_seg_at(p, t, t_end);
        int kmin, kmax;
        pf_group_span<R>(p, q.g, kmin, kmax);
        pf_seg_live<PF_KEYS>(p, q, kmin, kmax);
        for (int tile = q.la; tile < q.lb; tile++, n++, pf_ring_next<PF_STG>(ring)) {
            if (n >= PF_STG) /* the consumers' release of the stage's previous use */
                dw_bar_wait_idle(&empty[ring.s], ring.phase ^ 1u);
            if (lane == 0) {
                dw_bar_expect(&full[ring.s], PF_KBYTES);
                pf_tma(kst + ring.s * PF_KBYTES, map, tile * PF_KEYS, &full[ring.s]);
            }
            __syncwarp();
        }
        t += q.tb - q.ta;
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

/* Four lanes tig hold v[0 .. N) each; afterwards v[u] (u < N / 4) of lane tig is the sum over
   the four of their v[4u + tig]: two xor-shuffle rounds, each lane sending the half it does not
   keep (N/2 + N/4 shuffles instead of 2N for a full reduction). Each sum is formed on one lane
   in a fixed order, so reruns are bitwise identical. */
template <int N> __device__ __forceinline__ void pf_reduce_scatter(float (&v)[N], int tig)
{
    const bool b0 = tig & 1, b1 = tig & 2;
#pragma unroll
    for (int k = 0; k < N / 2; k++) { /* v[k] becomes the pair sum of index 2k + b0 */
        const float a = v[2 * k], c = v[2 * k + 1];
        v[k] = __fadd_rn(b0 ? c : a, __shfl_xor_sync(0xffffffffu, b0 ? a : c, 1));
    }
#pragma unroll
    for (int k = 0; k < N / 4; k++) { /* v[k] becomes the sum of index 4k + 2 b1 + b0 */
        const float a = v[2 * k], c = v[2 * k + 1];
        v[k] = __fadd_rn(b1 ? c : a, __shfl_xor_sync(0xffffffffu, b1 ? a : c, 2));
    }
}

/* this lane's key in the tile from key t0 after the epilogue's reduce-scatter: 16 warp + grp,
   + 8 on odd lanes tig */
__device__ __forceinline__ int pf_key(int t0)
{
    const int lane = threadIdx.x & 31;
    return t0 + 16 * (threadIdx.x >> 5) + (lane >> 2) + 8 * (lane & 1);
}

/* that key's scale (0 past NK); loaded a tile ahead, so the load hides under the epilogue
   before it */
__device__ __forceinline__ float pf_kv(const pf_params &p, int t0)
{
    const int key = pf_key(t0);
    return key < p.NK ? __ldg(p.ks + key) : 0.0f;
}

/* the 4 k32 steps of half HALF of the q columns over K stage s into acc, one commit group */
template <int HALF>
__device__ __forceinline__ void pf_issue(float (&acc)[PF_NC / 4], int s, const uint8_t *kst,
                                         const uint8_t *qs)
{
    /* a k-step is 32 bytes further: 2 in the descriptor's address field (in 16 bytes) */
    const uint64_t da = dw_desc(dw_smem(kst + s * PF_KBYTES)),
                   db = dw_desc(dw_smem(qs + HALF * (PF_NC / 2) * 128));
    dw_fence_acc(acc);
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int k = 0; k < 4; k++)
        dw_mma<PF_NC / 2>::run(acc, da + 2 * k, db + 2 * k, k);
    dw_commit();
}

/*
 * The epilogue of half HALF of a live tile from key t0: its R/2 rows (columns rr * H + h of
 * acc, rows row0 + HALF * R/2 + rr), keys t0 + 16 warp + grp (+ 8). Head dots per row, a
 * reduce-scatter over the 4 lanes tig, after which lane tig holds key 8 (tig & 1) of rows
 * 2u + (tig >> 1): every lane stores R/8 logits (LB: bf16) or, when clean, the mask outside the
 * row's range, none idle. It runs while the other half's wgmmas are in flight, so it reads
 * nothing of theirs and has one store per logit rather than branches around several.
 */
template <int H, int R, int HALF, bool LB>
__device__ __forceinline__ void pf_epilogue(const pf_params &p, const float (&acc)[PF_NC / 4],
                                            const float *ws, int t0, float kv, int row0,
                                            const int *rng)
{
    constexpr int RH = R / 2; /* rows of the half */
    const int tig = threadIdx.x & 3;
    float v[2 * RH];
#pragma unroll
    for (int rr = 0; rr < RH; rr++)
        dw_head_dot<H>(acc, rr, ws + HALF * (PF_NC / 2), tig, v[2 * rr], v[2 * rr + 1]);
    pf_reduce_scatter<2 * RH>(v, tig);
    const int s = pf_key(t0);
#pragma unroll
    for (int u = 0; u < RH / 2; u++) {
        const int r = HALF * RH + 2 * u + (tig >> 1), m = row0 + r;
        const bool in = s >= rng[r] && s < rng[R + r];
        if (m < p.M && s < p.stride && (in || p.clean))
            d_logit_store(p.out, (size_t)m * p.stride + s, LB,
                          in ? __fmul_rn(kv, v[u]) : -INFINITY);
    }
}

/* the masks of the dead tiles [ta, tb) of the group at row0 (clean only): no key there is seen */
template <int R, bool LB>
__device__ __forceinline__ void pf_masks(const pf_params &p, int row0, int ta, int tb)
{
    for (int tile = ta; tile < tb; tile++)
        for (int e = threadIdx.x; e < R * PF_KEYS; e += DW_THREADS) {
            const int m = row0 + e / PF_KEYS;
            const long s = (long)tile * PF_KEYS + e % PF_KEYS;
            if (m < p.M && s < p.stride)
                d_logit_mask(p.out, (size_t)m * p.stride + s, LB);
        }
}

/*
 * NT consecutive live tiles from `tile`, software-pipelined over the two halves of the q
 * columns: half 0's epilogue of a tile runs under its half 1's wgmmas, half 1's under the next
 * tile's half 0; only the last half-epilogue of the chunk has no wgmma of this warpgroup beneath
 * it (the other CTA on the SM covers it). Unrolled: which waits and issues follow is fixed at
 * compile time, so no wgmma is under a branch, and the chunk retires its own wgmmas, so none is
 * in flight across a loop's back edge (either makes ptxas serialise every wgmma of the kernel:
 * ptxas -v reports C7514 / C7518 / C7520). Each tile's key scale is loaded a tile ahead.
 */
template <int H, int R, bool LB, int NT>
__device__ __forceinline__ void pf_chunk(const pf_params &p, int tile, pf_ring &ring,
                                         float (&acc0)[PF_NC / 4], float (&acc1)[PF_NC / 4],
                                         const uint8_t *kst, const uint8_t *qs, const float *ws,
                                         int row0, const int *rng, uint64_t *full, uint64_t *empty)
{
    float kv = pf_kv(p, tile * PF_KEYS);
    dw_bar_wait(&full[ring.s], ring.phase);
    pf_issue<0>(acc0, ring.s, kst, qs);
    pf_issue<1>(acc1, ring.s, kst, qs);
#pragma unroll
    for (int j = 0; j < NT; j++) {
        const int t0 = (tile + j) * PF_KEYS;
        pf_ring nxt = ring;
        pf_ring_next<PF_STG>(nxt);
        const float kv_next = j + 1 < NT ? pf_kv(p, t0 + PF_KEYS) : 0.0f;
        dw_wait<1>(); /* half 0 of tile j */
        dw_fence_acc(acc0);
        pf_epilogue<H, R, 0, LB>(p, acc0, ws, t0, kv, row0, rng);
        if (j + 1 < NT) {
            dw_bar_wait(&full[nxt.s], nxt.phase);
            pf_issue<0>(acc0, nxt.s, kst, qs);
            dw_wait<1>(); /* half 1 of tile j */
        } else {
            dw_wait<0>();
        }
        dw_fence_acc(acc1);
        dw_bar_arrive(&empty[ring.s]); /* this thread's reads of the stage are done */
        pf_epilogue<H, R, 1, LB>(p, acc1, ws, t0, kv, row0, rng);
        if (j + 1 < NT)
            pf_issue<1>(acc1, nxt.s, kst, qs);
        ring = nxt, kv = kv_next;
    }
}

/* the live tiles [la, lb) of one group: chunks of NT, then (NT = 4) one of 2, and one of 1 */
template <int H, int R, bool LB>
__device__ __forceinline__ void
pf_live_run(const pf_params &p, int la, int lb, pf_ring &ring, float (&acc0)[PF_NC / 4],
            float (&acc1)[PF_NC / 4], const uint8_t *kst, const uint8_t *qs, const float *ws,
            int row0, const int *rng, uint64_t *full, uint64_t *empty)
{
    constexpr int NT = H == 64 ? 4 : 2; /* at H = 32 a chunk of 4 spills (R = 8 rows) */
    int tile = la;
    for (; tile + NT <= lb; tile += NT)
        pf_chunk<H, R, LB, NT>(p, tile, ring, acc0, acc1, kst, qs, ws, row0, rng, full, empty);
    if (NT > 2 && tile + 2 <= lb) {
        pf_chunk<H, R, LB, 2>(p, tile, ring, acc0, acc1, kst, qs, ws, row0, rng, full, empty);
        tile += 2;
    }
    if (tile < lb)
        pf_chunk<H, R, LB, 1>(p, tile, ring, acc0, acc1, kst, qs, ws, row0, rng, full, empty);
}

/*
 * H heads, R = 256 / H rows per group, LB: bf16 logits. Built for 2 CTAs per SM (ptxas then
 * allots 168 registers a thread: the 128 accumulator registers plus the epilogue's). Per group
 * segment of the CTA's range: the group's q (all wgmmas of the last one are complete), the masks of
 * its dead tiles, then its live tiles, pipelined (pf_live_run).
 */
template <int H, bool LB>
__global__ static void __launch_bounds__(DW_THREADS + 32, 2)
    prefill_wgmma_kernel(const __grid_constant__ CUtensorMap map, const pf_params p)
{
    constexpr int R = PF_NC / H;
    using L = pf_layout;
    extern __shared__ unsigned char smem_raw[];
    uint8_t *sm = dw_align1024(smem_raw);
    uint8_t *kst = sm + L::k, *qs = sm + L::q;
    float *ws = (float *)(sm + L::w);
    int *rng = (int *)(sm + L::rng);
    uint64_t *full = (uint64_t *)(sm + L::bar), *empty = full + PF_STG;
    long t_begin, t_end;
    pf_cta_range(p, t_begin, t_end);

    if (threadIdx.x == 0) {
        for (int s = 0; s < PF_STG; s++) {
            dw_bar_init(&full[s], 1);
            dw_bar_init(&empty[s], DW_THREADS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x >= DW_THREADS) { /* the copy warp */
        pf_producer<R>(p, &map, t_begin, t_end, kst, full, empty);
        return;
    }

    float acc0[PF_NC / 4], acc1[PF_NC / 4];
#pragma unroll
    for (int r = 0; r < PF_NC / 4; r++) /* the first k-step overwrites them; defined inputs */
        acc0[r] = acc1[r] = 0.0f;
    pf_ring ring = {0, 0u};
    for (long t = t_begin; t < t_end;) {
        pf_seg q = pf_seg_at(p, t, t_end);
        int kmin, kmax;
        pf_load_group<H, R>(p, q.g, qs, ws, rng, kmin, kmax);
        pf_seg_live<PF_KEYS>(p, q, kmin, kmax);
        if (p.clean) {
            pf_masks<R, LB>(p, q.g * R, q.ta, q.la);
            pf_masks<R, LB>(p, q.g * R, q.lb, q.tb);
        }
        if (q.la < q.lb)
            pf_live_run<H, R, LB>(p, q.la, q.lb, ring, acc0, acc1, kst, qs, ws, q.g * R, rng, full,
                                  empty);
        t += q.tb - q.ta;
    }
}

template <int H, bool LB>
static int pf_launch(const pf_params &p, const CUtensorMap &map, cudaStream_t st)
{
    static int slots; /* resident CTAs on the whole device */
    int rc = pf_slots(prefill_wgmma_kernel<H, LB>, DW_THREADS + 32, pf_layout::alloc, slots);
    if (rc != DSA_K_OK)
        return rc;
    long grid = d_forced_decode_ctas() ? d_forced_decode_ctas() : slots;
    if (grid > p.total)
        grid = p.total;
    prefill_wgmma_kernel<H, LB><<<(unsigned)grid, DW_THREADS + 32, pf_layout::alloc, st>>>(map, p);
    return DSA_K_OK;
}

/* The four-warpgroup kernel (prefill_wg4.cu) is the default where it runs (H = 64): 3-6 %
   faster than this one at M = 1024, 2048 and 4096 on the H200 (bench/RESULTS.md, round 10).
   DSA_CUDA_PREFILL=two selects this one. */
static int pf_use_wg4(void)
{
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("DSA_CUDA_PREFILL");
        v = !(e && !strcmp(e, "two"));
    }
    return v;
}

int dsa_cuda_prefill_wgmma_launch(const dsa_k_flags *f, const dsa_logits_prefill_args *a,
                                  cudaStream_t st)
{
    const long cols = a->clean ? a->stride : a->NK, col_max = 0x7fffffffL - 256;
    if ((f->heads != 64 && f->heads != 32) || ((uintptr_t)a->k8 & 15) || a->NK <= 0 ||
        a->NK > col_max || cols > col_max)
        return DSA_K_UNSUPPORTED;
    if (pf_use_wg4()) {
        const int rc = dsa_cuda_prefill_wg4_launch(f, a, st);
        if (rc != DSA_K_UNSUPPORTED) /* else (2^31 tiles or more) the kernel below */
            return rc;
    }
    const int R = PF_NC / f->heads;
    const long groups = (a->M + R - 1) / R;
    pf_params p = pf_params_of(f, a);
    p.tiles = (int)((cols + PF_KEYS - 1) / PF_KEYS);
    p.total = p.tiles * groups;
    if (p.total <= 0)
        return DSA_K_OK;
    CUtensorMap map;
    int rc = pf_map(&map, a->k8, a->NK, PF_KEYS);
    if (rc != DSA_K_OK)
        return rc;
    if (f->heads == 64)
        return p.lbf16 ? pf_launch<64, true>(p, map, st) : pf_launch<64, false>(p, map, st);
    return p.lbf16 ? pf_launch<32, true>(p, map, st) : pf_launch<32, false>(p, map, st);
}
