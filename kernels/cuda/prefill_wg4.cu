/*
 * S3b ragged prefill logits on Hopper's fp8 tensor cores with four math warpgroups and a store
 * warpgroup per SM: the default at H = 64 (prefill_wgmma.cu's kernel at H = 32, and with
 * DSA_CUDA_PREFILL=two).
 *
 * Contract: as prefill_wgmma.cu (dsa_kernels.h, dsa_logits_prefill_args): q8 [M,H,128] e4m3,
 * w [M,H] f32|bf16, k8 [NK,128] e4m3 (16-byte aligned), ks [NK] f32, row_start / row_end [M]
 * i32 -> logits [M, stride] f32|bf16: for key n in [start[m], end[m])
 * sum_h w[m,h] * relu(q[m,h,:] . k[n,:]) * ks[n], -inf for the other columns < stride when
 * clean (else they are left untouched).
 *
 * Why this shape. prefill_wgmma.cu's consumer warpgroup multiplies, reduces over the heads,
 * reduces over its 4 lanes and stores, with 128 accumulator registers of a 256-column group;
 * the weights do not fit beside them, so every tile reads them again from shared memory, and
 * two such warpgroups share an SM (2 warps a scheduler to hide the epilogue's latencies). Here
 * (H = 64 only) a group is 2 rows (128 q columns) and a tile 256 keys:
 * - Four math warpgroups (512 threads) each own 64 keys of the tile (wgmma's A: M = 64 keys,
 *   K = 128) against the group's 128 q columns (B), as two halves of n = 64 (m64n64k32):
 *   64 accumulator registers, and the thread's 32 weights (16 heads of 2 rows) in registers for
 *   all the group's tiles. Both halves are waited for at once, then summed: the other three
 *   warpgroups keep the tensor cores busy meanwhile (4 warps a scheduler).
 * - The head sum of a thread (its 16 heads of a row, keys 16w + g and + 8) goes to shared
 *   memory as one partial per lane c; the store warpgroup adds the 4 partials of a (row, key)
 *   in a fixed order, times the key's scale, and writes the logit (or the mask) with the keys
 *   of a warp consecutive. So the math warps do no shuffles, no index arithmetic and no global
 *   stores.
 * - A copy warp (its warpgroup's other warps exit) loads q by TMA (128 rows of 128 bytes,
 *   128-byte swizzle; rows past M zero-filled) and the live tiles' K by TMA (256 rows, rows
 *   past NK zero-filled), 4 stages; full / empty mbarrier pairs for K, q and the partials'
 *   stages, each consumer thread arriving for itself.
 * - Registers by warpgroup (setmaxnreg, which only moves registers within the CTA's allotment
 *   at launch: 768 x 80): math 104, store 40, copy 24. One CTA per SM, persistent over a
 *   contiguous range of the flat list of groups * tiles (prefill_common.cuh: the segments and
 *   live tiles of the other kernel, for 256 keys).
 * What bounds it (bench/RESULTS.md, round 10): with the sums' arithmetic removed it is only
 *   7.5 % faster, so the feed of the tensor cores is the limit, not the epilogue; that feed is
 *   not L2's bandwidth (2-row groups read each K tile twice as often as the other kernel, yet a
 *   version sharing K tiles between the 2 CTAs of a cluster by TMA multicast, halving the L2
 *   reads, ran 20 % slower: each stage then waits for both SMs).
 * Numerics: per (row, key) the tensor core's 16 head dots of each lane are relu'd and weighted
 * in two interleaved fma chains (even and odd heads), added, then the store warp adds the
 * lanes' partials ((c0 + c1) + (c2 + c3)) and multiplies by the key scale: a fixed order, so
 * reruns are bitwise identical; within calc_diff of the reference as the other kernel.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdlib.h>

#include "prefill_common.cuh"
#include "wgmma_fp8.cuh"

#define P4_KEYS    256             /* keys per tile, 64 per math warpgroup */
#define P4_NC      128             /* q columns per group: R * H */
#define P4_KBYTES  (P4_KEYS * 128) /* one K tile: 32 KB */
#define P4_QBYTES  (P4_NC * 128)   /* one group's q: 16 KB */
#define P4_STG     4               /* K stages, and the partials' stages (a power of 2) */
#define P4_MATH    512             /* math threads: warpgroups 0-3 */
#define P4_STORE   P4_MATH         /* first thread of the store warpgroup */
#define P4_COPY    (P4_MATH + 128) /* first thread of the copy warpgroup */
#define P4_THREADS (P4_MATH + 256)
/* registers of a math thread, of a store thread and of a copy thread: setmaxnreg moves them
   within the CTA's allotment at launch (768 threads x 80), so 512 * 104 + 128 * 40 + 128 * 24
   = 61440 (a request past it waits forever) */
#define P4_MREGS 104
#define P4_SREGS 40
#define P4_CREGS 24

/* the shared layout for R rows a group: K stages, q stages (both 1024-byte aligned), the
   partials' stages (per key 4R partials and one pad float: 4R + 1 is odd, so the store warp's
   reads of 32 consecutive keys hit 32 banks), then the barriers. One K stage and one partials'
   stage per live tile, so both rings step together (one ring state in the math threads); q
   has 2 stages at R = 2 and 1 at R = 4, where the partials take 17 KB a stage (the next group's
   q is then loaded after the last one's wgmmas: once per group segment, ~500 tiles apart).
   R = 4 (H = 32) is laid out but not launched: its math threads spill 8 bytes at 104. */
template <int R> struct p4_layout {
    static constexpr int es = 4 * R + 1, qstg = R == 2 ? 2 : 1;
    static constexpr size_t ebytes = (size_t)P4_KEYS * es * 4;
    static constexpr size_t k = 0, q = (size_t)P4_STG * P4_KBYTES, e = q + (size_t)qstg * P4_QBYTES,
                            kfull = e + P4_STG * ebytes, kempty = kfull + 8 * P4_STG,
                            efull = kempty + 8 * P4_STG, eempty = efull + 8 * P4_STG,
                            qfull = eempty + 8 * P4_STG, qempty = qfull + 8 * qstg,
                            bytes = qempty + 8 * qstg, alloc = bytes + 1024;
};

/* barrier s of the ring at offset off of the layout (full: completed by the copy engine or the
   math threads; empty: by the threads that read the stage), from the aligned shared base: an
   address computed where it is used rather than six pointers held in registers */
__device__ __forceinline__ uint64_t *p4_b(uint8_t *sm, size_t off, int s)
{
    return (uint64_t *)(sm + off) + s;
}

template <int N> __device__ __forceinline__ void p4_regs_inc(void)
{
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}

template <int N> __device__ __forceinline__ void p4_regs_dec(void)
{
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}

/* the CTA's range of the flat list in int (the launch takes no shape with 2^31 tiles or more):
   fewer registers in the math threads, which have none to spare */
__device__ __forceinline__ void p4_range(const pf_params &p, int &t, int &t_end)
{
    long a, b;
    pf_cta_range(p, a, b);
    t = (int)a, t_end = (int)b;
}

/* v of lane 0, which the compiler then knows to be the same on every lane of the warp: it keeps
   such values in the warp's uniform registers, outside the registers a thread has (104 for a
   math thread, 40 for a store thread) */
__device__ __forceinline__ int p4_uniform(int v)
{
    return __shfl_sync(0xffffffffu, v, 0);
}

/* Rings as use counters: use n of a ring of STG stages (a power of 2) is stage n % STG in phase
   (n / STG) & 1 (one register per ring instead of a slot and a phase) */
template <int STG> __device__ __forceinline__ int p4_slot(int n)
{
    return n & (STG - 1);
}

template <int STG> __device__ __forceinline__ uint32_t p4_phase(int n)
{
    return (uint32_t)(n / STG) & 1u;
}

/* before use n of a ring's stage: wait for the release of its use STG ago */
template <int STG> __device__ __forceinline__ void p4_wait_free(uint8_t *sm, size_t empty, int n)
{
    if (n >= STG)
        dw_bar_wait_idle(p4_b(sm, empty, p4_slot<STG>(n)), p4_phase<STG>(n) ^ 1u);
}

/* the group segment at t with its live tiles, t moved past it; the same for every role, the
   span made warp-uniform (uniform registers) */
template <int R>
__device__ __forceinline__ pf_seg p4_next_seg(const pf_params &p, int &t, int t_end)
{
    pf_seg q = pf_seg_at(p, t, t_end);
    int kmin, kmax;
    pf_group_span<R>(p, q.g, kmin, kmax);
    pf_seg_live<P4_KEYS>(p, q, p4_uniform(kmin), p4_uniform(kmax));
    t += q.tb - q.ta;
    return q;
}

/* The copy warp: per group segment with live tiles, the group's q, then its live K tiles. */
template <int R>
__device__ __forceinline__ void p4_copy(const pf_params &p, const CUtensorMap *kmap,
                                        const CUtensorMap *qmap, uint8_t *sm)
{
    using L = p4_layout<R>;
    const bool lead = (threadIdx.x & 31) == 0;
    int t, t_end, nk = 0, nq = 0; /* uses of the K ring and of the q ring */
    p4_range(p, t, t_end);
    while (t < t_end) {
        const pf_seg q = p4_next_seg<R>(p, t, t_end);
        if (q.la == q.lb)
            continue;
        p4_wait_free<L::qstg>(sm, L::qempty, nq);
        if (lead) {
            const int s = p4_slot<L::qstg>(nq);
            dw_bar_expect(p4_b(sm, L::qfull, s), P4_QBYTES);
            pf_tma(sm + L::q + s * P4_QBYTES, qmap, q.g * P4_NC, p4_b(sm, L::qfull, s));
        }
        nq++;
        for (int tile = q.la; tile < q.lb; tile++, nk++) {
            p4_wait_free<P4_STG>(sm, L::kempty, nk);
            if (lead) {
                const int s = p4_slot<P4_STG>(nk);
                dw_bar_expect(p4_b(sm, L::kfull, s), P4_KBYTES);
                pf_tma(sm + L::k + s * P4_KBYTES, kmap, tile * P4_KEYS, p4_b(sm, L::kfull, s));
            }
        }
        __syncwarp();
    }
}

/* the weights of this thread's heads (8i + 2c + {0, 1}) of group g's rows: wr[r][2i + b] for
   head 8i + 2c + b of row g*R + r, 0 past M */
template <int H, int R>
__device__ __forceinline__ void p4_weights(const pf_params &p, int g, float (&wr)[R][H / 4])
{
    const int tig = threadIdx.x & 3;
#pragma unroll
    for (int r = 0; r < R; r++) {
        const int m = g * R + r;
#pragma unroll
        for (int i = 0; i < H / 4; i++) {
            const size_t wi = (size_t)m * H + 8 * (i / 2) + 2 * tig + (i & 1);
            wr[r][i] = m >= p.M  ? 0.0f
                       : p.wbf16 ? d_bf16_to_f32(((const uint16_t *)p.w)[wi])
                                 : __ldg((const float *)p.w + wi);
        }
    }
}

/* the 4 k32 steps of half HALF (q rows 64 HALF .. + 63) over the warpgroup's 64 keys at ka,
   q at qa, into acc, one commit group */
template <int HALF>
__device__ __forceinline__ void p4_issue(float (&acc)[32], uint32_t ka, uint32_t qa)
{
    const uint64_t da = dw_desc(ka), db = dw_desc(qa + HALF * 64 * 128);
    dw_fence_acc(acc);
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int k = 0; k < 4; k++)
        dw_mma<64>::run(acc, da + 2 * k, db + 2 * k, k);
    dw_commit();
}

/* Half HALF's head sums into the partials' stage ep: for its R/2 rows r, the thread's keys kw
   (and kw + 8) get relu(dot) * w over the thread's H/4 heads, even and odd heads in two chains,
   added, at slot r*4 + c. */
template <int H, int R, int HALF>
__device__ __forceinline__ void p4_partials(const float (&acc)[32], const float (&wr)[R][H / 4],
                                            float *ep, int kw)
{
    using L = p4_layout<R>;
    static_assert(H == 64, "launched at H = 64 only (H = 32 spills at 104 registers)");
    const int tig = threadIdx.x & 3;
#pragma unroll
    for (int rr = 0; rr < R / 2; rr++) {
        const int r = HALF * (R / 2) + rr;
        float a0 = 0.0f, b0 = 0.0f, a1 = 0.0f, b1 = 0.0f;
#pragma unroll
        for (int i = 0; i < H / 8; i++) {
            const int n8 = rr * (H / 8) + i;
            a0 = __fmaf_rn(wr[r][2 * i], fmaxf(acc[4 * n8], 0.0f), a0);
            a1 = __fmaf_rn(wr[r][2 * i], fmaxf(acc[4 * n8 + 2], 0.0f), a1);
            b0 = __fmaf_rn(wr[r][2 * i + 1], fmaxf(acc[4 * n8 + 1], 0.0f), b0);
            b1 = __fmaf_rn(wr[r][2 * i + 1], fmaxf(acc[4 * n8 + 3], 0.0f), b1);
        }
        ep[kw * L::es + 4 * r + tig] = __fadd_rn(a0, b0);
        ep[(kw + 8) * L::es + 4 * r + tig] = __fadd_rn(a1, b1);
    }
}

/* Math warpgroup wg: per group segment with live tiles, the weights and q, then per live tile
   both halves' wgmmas, the partials of half 0 under half 1's, then half 1's. */
template <int H, int R> __device__ __forceinline__ void p4_math(const pf_params &p, uint8_t *sm)
{
    using L = p4_layout<R>;
    const int wg = p4_uniform(threadIdx.x >> 7), w = (threadIdx.x >> 5) & 3;
    const int kw = 64 * wg + 16 * w + ((threadIdx.x & 31) >> 2); /* the thread's first key */
    float acc0[32], acc1[32], wr[R][H / 4];
#pragma unroll
    for (int i = 0; i < 32; i++) /* the first k-step overwrites them; defined inputs */
        acc0[i] = acc1[i] = 0.0f;
    int t, t_end, n = 0; /* n: live tiles so far; K and partials' stage n % 4, phase n / 4 */
    p4_range(p, t, t_end);
    int nq = 0; /* uses of the q ring */
    while (t < t_end) {
        const pf_seg q = p4_next_seg<R>(p, t, t_end);
        if (q.la == q.lb)
            continue;
        p4_weights<H, R>(p, q.g, wr);
        const int qs = p4_slot<L::qstg>(nq);
        const uint32_t qa = dw_smem(sm + L::q + qs * P4_QBYTES);
        dw_bar_wait(p4_b(sm, L::qfull, qs), p4_phase<L::qstg>(nq));
        /* only the count of live tiles matters here: the copy warp and the store warps know
           which keys they are */
        for (const int n_end = n + q.lb - q.la; n < n_end; n++) {
            const int s = p4_slot<P4_STG>(n);
            const uint32_t ph = p4_phase<P4_STG>(n);
            const uint32_t ka = dw_smem(sm + L::k + s * P4_KBYTES + wg * 64 * 128);
            float *ep = (float *)(sm + L::e + s * L::ebytes);
            dw_bar_wait(p4_b(sm, L::kfull, s), ph);
            p4_issue<0>(acc0, ka, qa);
            p4_issue<1>(acc1, ka, qa);
            if (n >= P4_STG) /* the store warps are done with this partials' stage */
                dw_bar_wait(p4_b(sm, L::eempty, s), ph ^ 1u);
            /* both halves at once, then both sums: measured faster than half 0's sums under
               half 1's wgmmas (bench/RESULTS.md, round 10; the other three warpgroups keep the
               tensor cores busy meanwhile) */
            dw_wait<0>();
            dw_fence_acc(acc0);
            dw_fence_acc(acc1);
            dw_bar_arrive(p4_b(sm, L::kempty, s)); /* this thread's wgmmas on the stage are done */
            p4_partials<H, R, 0>(acc0, wr, ep, kw);
            p4_partials<H, R, 1>(acc1, wr, ep, kw);
            dw_bar_arrive(p4_b(sm, L::efull, s));
        }
        dw_bar_arrive(p4_b(sm, L::qempty, qs)); /* every wgmma on this q is complete */
        nq++;
    }
}

/* the masks of the dead tiles [ta, tb) of the group's rows (clean only), by the store warps:
   the R rows' 256 keys of a tile as one flat loop (consecutive threads, consecutive keys) */
template <int R, bool LB>
__device__ __forceinline__ void p4_masks(const pf_params &p, int row0, int ta, int tb, int tid)
{
    for (int tile = ta; tile < tb; tile++)
        for (int e = tid; e < R * P4_KEYS; e += 128) {
            const int m = row0 + e / P4_KEYS, s = tile * P4_KEYS + e % P4_KEYS;
            if (m < p.M && s < p.stride)
                d_logit_mask(p.out, (size_t)m * p.stride + s, LB);
        }
}

/* one live tile's logits from the partials' stage ep: the store thread's keys tid and tid + 128
   of each row, ((c0 + c1) + (c2 + c3)) * scale, or the mask outside the row's range (clean).
   One row at a time (not unrolled): 40 registers do not hold all the rows' loads at once. */
template <int R, bool LB>
__device__ __forceinline__ void p4_store_tile(const pf_params &p, const float *ep, int tile,
                                              int row0, const float (&kv)[2], int tid)
{
    using L = p4_layout<R>;
    const int rows = min(R, p.M - row0);
#pragma unroll 1
    for (int r = 0; r < rows; r++) {
        const int m = row0 + r;
        const int lo = pf_lo(p, m), hi = p.re[m]; /* again per tile: L1 hits */
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int kk = tid + 128 * h, s = tile * P4_KEYS + kk;
            const float *e = ep + kk * L::es + 4 * r;
            const float v = __fadd_rn(__fadd_rn(e[0], e[1]), __fadd_rn(e[2], e[3]));
            const bool in = s >= lo && s < hi;
            if (s < p.stride && (in || p.clean))
                d_logit_store(p.out, (size_t)m * p.stride + s, LB,
                              in ? __fmul_rn(v, kv[h]) : -INFINITY);
        }
    }
}

/* the key scales of the store thread's keys of a tile (0 past NK) */
__device__ __forceinline__ void p4_scales(const pf_params &p, int tile, int tid, float (&kv)[2])
{
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int s = tile * P4_KEYS + tid + 128 * h;
        kv[h] = s < p.NK ? __ldg(p.ks + s) : 0.0f;
    }
}

/* The store warpgroup: per group segment the dead tiles' masks (clean), then each live tile's
   logits once the math warps' partials are in. */
template <int R, bool LB> __device__ __forceinline__ void p4_store(const pf_params &p, uint8_t *sm)
{
    using L = p4_layout<R>;
    const int tid = threadIdx.x - P4_STORE;
    int t, t_end;
    p4_range(p, t, t_end);
    int n = 0; /* uses of the partials' ring */
    while (t < t_end) {
        const pf_seg q = p4_next_seg<R>(p, t, t_end);
        const int row0 = q.g * R;
        if (p.clean) {
            p4_masks<R, LB>(p, row0, q.ta, q.la, tid);
            p4_masks<R, LB>(p, row0, q.lb, q.tb, tid);
        }
        for (int tile = q.la; tile < q.lb; tile++, n++) {
            const int s = p4_slot<P4_STG>(n);
            float kv[2];
            p4_scales(p, tile, tid, kv);
            dw_bar_wait(p4_b(sm, L::efull, s), p4_phase<P4_STG>(n));
            p4_store_tile<R, LB>(p, (const float *)(sm + L::e + s * L::ebytes), tile, row0, kv,
                                 tid);
            dw_bar_arrive(p4_b(sm, L::eempty, s));
        }
    }
}

template <int H, bool LB>
__global__ static void __launch_bounds__(P4_THREADS, 1)
    prefill_wg4_kernel(const __grid_constant__ CUtensorMap kmap,
                       const __grid_constant__ CUtensorMap qmap, const pf_params p)
{
    constexpr int R = P4_NC / H;
    using L = p4_layout<R>;
    extern __shared__ unsigned char smem_raw[];
    uint8_t *sm = dw_align1024(smem_raw);
    if (threadIdx.x == 0) {
        for (int s = 0; s < P4_STG; s++) {
            dw_bar_init(p4_b(sm, L::kfull, s), 1), dw_bar_init(p4_b(sm, L::kempty, s), P4_MATH);
            dw_bar_init(p4_b(sm, L::efull, s), P4_MATH), dw_bar_init(p4_b(sm, L::eempty, s), 128);
        }
        for (int s = 0; s < L::qstg; s++)
            dw_bar_init(p4_b(sm, L::qfull, s), 1), dw_bar_init(p4_b(sm, L::qempty, s), P4_MATH);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x >= P4_COPY) {
        p4_regs_dec<P4_CREGS>();
        if (threadIdx.x < P4_COPY + 32)
            p4_copy<R>(p, &kmap, &qmap, sm);
    } else if (threadIdx.x >= P4_STORE) {
        p4_regs_dec<P4_SREGS>();
        p4_store<R, LB>(p, sm);
    } else {
        p4_regs_inc<P4_MREGS>();
        p4_math<H, R>(p, sm);
    }
}

template <int H, bool LB>
static int p4_launch(const pf_params &p, const CUtensorMap &kmap, const CUtensorMap &qmap,
                     cudaStream_t st)
{
    using L = p4_layout<P4_NC / H>;
    static int slots; /* resident CTAs on the whole device: one per SM */
    static int regs;  /* registers a thread at launch, as the compiler built the kernel */
    if (!regs) {
        cudaFuncAttributes fa;
        CUDA_CHECK(cudaFuncGetAttributes(&fa, prefill_wg4_kernel<H, LB>));
        regs = fa.numRegs;
    }
    /* the setmaxnreg moves need the CTA's allotment to hold them, else the math threads' increase
       waits forever: another compiler's count takes the other kernel rather than hang */
    if (regs * P4_THREADS < P4_MATH * P4_MREGS + 128 * (P4_SREGS + P4_CREGS))
        return DSA_K_UNSUPPORTED;
    int rc = pf_slots(prefill_wg4_kernel<H, LB>, P4_THREADS, L::alloc, slots);
    if (rc != DSA_K_OK)
        return rc;
    long grid = d_forced_decode_ctas() ? d_forced_decode_ctas() : slots;
    if (grid > p.total)
        grid = p.total;
    prefill_wg4_kernel<H, LB><<<(unsigned)grid, P4_THREADS, L::alloc, st>>>(kmap, qmap, p);
    return DSA_K_OK;
}

int dsa_cuda_prefill_wg4_launch(const dsa_k_flags *f, const dsa_logits_prefill_args *a,
                                cudaStream_t st)
{
    if (f->heads != 64) /* H = 32 (R = 4) spills 8 bytes at 104 registers: the other kernel */
        return DSA_K_UNSUPPORTED;
    const long cols = a->clean ? a->stride : a->NK;
    pf_params p = pf_params_of(f, a);
    p.tiles = (int)((cols + P4_KEYS - 1) / P4_KEYS);
    p.total = p.tiles * ((a->M + 1) / 2);
    if (p.total <= 0)
        return DSA_K_OK;
    if (p.total > 0x7fffffffL) /* the kernel counts tiles in int */
        return DSA_K_UNSUPPORTED;
    CUtensorMap kmap, qmap;
    int rc = pf_map(&kmap, a->k8, a->NK, P4_KEYS);
    if (rc == DSA_K_OK)
        rc = pf_map(&qmap, a->q8, (long)a->M * 64, P4_NC);
    if (rc != DSA_K_OK)
        return rc;
    return p.lbf16 ? p4_launch<64, true>(p, kmap, qmap, st)
                   : p4_launch<64, false>(p, kmap, qmap, st);
}
