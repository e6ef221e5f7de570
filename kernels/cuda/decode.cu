/*
 * S3a paged decode logits, the pipelined mma.sync kernel (DSA_CUDA_LOGITS=pipe, next_n 1, 2
 * and 4; the default is the fp8 wgmma kernel of decode_wgmma.cu).
 *
 * Contract (dsa_kernels.h, dsa_logits_decode_args): q8 [B,N,H,128] e4m3, w [B*N,H] f32|bf16,
 * paged cache (page p: 64 x 128 e4m3 at p*8448, 64 fp32 scales at p*8448 + 8192), block_table
 * [B,max_blocks] i32, ctx [B,N] i32 -> logits [B*N, stride] f32|bf16, -inf past ctx when clean.
 *
 * Why this shape. At N = 1 the stage is bound by HBM (132 bytes of K per key against 16K FLOPs),
 * so the K pages must stream while the tensor cores work, and q must not be re-read per page:
 * - The work is one flat list of B * ceil(stride/64) page tiles, cut into gridDim.x contiguous
 *   ranges; the grid is one wave of resident CTAs (persistent), so small batches fill every SM
 *   (split-K over the context: the positions of one sequence spread over many CTAs, each logit
 *   still written by one warp, so no merge is needed) and large ones amortise the q load over
 *   hundreds of pages. A range may cross into the next sequence; q is then reloaded.
 * - K pages go global -> shared through cp.async (LDGSTS), STG - 1 pages in flight per CTA
 *   (STG = 5 stages; DSA_CUDA_DECODE_STAGES=8 gives the split kernel 8).
 * - Each pair of warps keeps one q row of every head in registers, half the heads each, as
 *   the B operand of mma.m16n8k16 f16 (4 n-tiles of 8 heads per warp, 8 k-steps), and takes
 *   16 keys of a page as the A operand (both warps of the pair read the same keys). Holding
 *   all 64 heads in one warp (DSA_CUDA_DECODE_SPLIT=1, the round-2 kernel) takes 234
 *   registers, so only 2 CTAs of 4 warps fit an SM; the pair split is at 128 registers, 2
 *   CTAs of 8 warps. fp8 e4m3 goes to f16 (exact) once per K element, by the conversion unit
 *   (cvt.rn.f16x2.e4m3x2 = F2FP, one instruction per pair). DSA_CUDA_DECODE_CVT=0 selects bit
 *   moves instead (PRMT + SHF + 2 LOP3 per pair: the 7 low bits of an e4m3 code placed under
 *   the f16 exponent give x * 2^-8 exactly, subnormals too, so q and K carry 2^-8 and the
 *   weights 2^16, powers of two: exact); on the H200 the F2FP form was 0.5-6 % faster
 *   (bench/RESULTS.md). The contraction dims are permuted (thread tig takes 16 contiguous
 *   bytes per half row), the same way for q and K, so one 16-byte shared load feeds four
 *   k-steps.
 * - The sum over heads is one chain over the 8 n-tiles in order (the first warp of a pair
 *   hands its part to the second through shared memory), then two xor-shuffles over the 4
 *   lanes of a key: a fixed order, so reruns are bitwise identical, and the split kernel's
 *   logits are bitwise those of the one-warp kernel.
 * Shared layout per stage: the page as it is in memory (8448 bytes), except that odd key rows
 * swap their two 64-byte halves, so the 16-byte fragment loads of a quarter-warp (two keys x
 * four chunks) hit 32 distinct banks.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdlib.h>
#include <string.h>

#include "common.cuh"
#include "dsa_cuda.h"

#define DP_THREADS 128

__device__ __forceinline__ void cp_async16(void *dst, const void *src)
{
    unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src));
}

__device__ __forceinline__ void cp_async_commit(void)
{
    asm volatile("cp.async.commit_group;\n" ::);
}

template <int N> __device__ __forceinline__ void cp_async_wait(void)
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

/* e4m3 bytes (b0, b1) of x -> f16x2 of (b0, b1) * 2^-8, exact: sign to bit 15, the 7 low bits
   under the f16 exponent. sel 0x1404 takes bytes 0, 1; 0x3424 bytes 2, 3. */
template <unsigned SEL> __device__ __forceinline__ uint32_t e4m3x2_to_f16x2(uint32_t x)
{
    uint32_t t = __byte_perm(x, 0, SEL);
    return (t & 0x80008000u) | ((t >> 1) & 0x3f803f80u);
}

/* the same pair through the conversion unit (cvt.rn.f16x2.e4m3x2, F2FP in SASS): the exact
   value x, not x * 2^-8. The default; DSA_CUDA_DECODE_CVT=0 selects the bit moves above. */
template <unsigned SEL> __device__ __forceinline__ uint32_t e4m3x2_cvt(uint32_t x)
{
    const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(
        (__nv_fp8x2_storage_t)(SEL == 0x1404 ? x & 0xffffu : x >> 16), __NV_E4M3);
    return (uint32_t)h.x | ((uint32_t)h.y << 16);
}

template <bool CVT, unsigned SEL> __device__ __forceinline__ uint32_t to_f16x2(uint32_t x)
{
    if constexpr (CVT)
        return e4m3x2_cvt<SEL>(x);
    else
        return e4m3x2_to_f16x2<SEL>(x);
}

__device__ __forceinline__ void mma_f16(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                        uint32_t a3, uint32_t b0, uint32_t b1)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/* the 16-byte word c (0..7) of key row `key` within a stage: odd rows swap their halves */
__device__ __forceinline__ int dp_swz(int key, int c)
{
    return key * 128 + ((c ^ ((key & 1) << 2)) << 4);
}

/*
 * The copy side's cursor: the next tile to issue (sequence b, page pg), with its page id and
 * its sequence's largest context loaded one tile ahead, so that the loads' latency passes
 * while the current tile is scored instead of stalling the copy issue.
 */
struct dp_cursor {
    long t;
    int b, pg, kmax, page;
};

/* loads what issuing tile c.t needs; kmax only when c.t starts a sequence (or fresh) */
template <int N>
__device__ __forceinline__ void dp_fetch(const d_decode_params &p, dp_cursor &c, long t_end,
                                         bool fresh)
{
    if (c.t >= t_end)
        return;
    if (fresh || c.pg == 0) {
        int kmax = 0; /* the most keys any row of the sequence sees */
#pragma unroll
        for (int j = 0; j < N; j++)
            kmax = max(kmax, p.ctx[(size_t)c.b * N + j]);
        c.kmax = kmax;
    }
    c.page = c.pg < p.max_blocks ? p.bt[(size_t)c.b * p.max_blocks + c.pg] : 0;
}

/*
 * Issues the copy of tile c.t into stage buffer dst (nothing when it is past the range or its
 * page holds no visible key), commits one group (one per tile, empty or not), then moves the
 * cursor on and fetches the next tile's page id. Of a CTA of T threads, thread tid copies the
 * K words tid + T*k (k < 512/T: key tid/8 + (T/8)*k, word tid%8; T/8 is even, so every word of
 * the thread has the parity of key tid/8 and its swizzled place is soff + 16*T*k) and, for
 * tid < 16, scale word tid.
 */
template <int N, int T>
__device__ __forceinline__ void dp_issue(const d_decode_params &p, dp_cursor &c, long t_end,
                                         uint8_t *dst, int soff)
{
    if (c.t < t_end && (long)c.pg * DSA_K_PAGE < c.kmax) {
        const uint8_t *src = p.cache + (size_t)c.page * DSA_K_PAGE_BYTES + threadIdx.x * 16;
#pragma unroll
        for (int k = 0; k < 512 / T; k++)
            cp_async16(dst + soff + k * 16 * T, src + k * 16 * T);
        if (threadIdx.x < 16)
            cp_async16(dst + DSA_K_SCALE_OFF + threadIdx.x * 16, src + DSA_K_SCALE_OFF);
    }
    cp_async_commit();
    c.t++;
    if (++c.pg == p.tiles_per_seq)
        c.pg = 0, c.b++;
    dp_fetch<N>(p, c, t_end, false);
}

/* a barrier of the two warps of pair v (ids 1..4; 0 is __syncthreads'): the first warp passes
   it once its partial sums of a chunk are in shared memory, the second before reading them.
   Both wait (bar.sync, not bar.arrive), so the first cannot arrive twice ahead of the second. */
__device__ __forceinline__ void pair_sync(int v)
{
    asm volatile("bar.sync %0, 64;\n" ::"r"(1 + v) : "memory");
}

/*
 * NT = H / 8 n-tiles of heads; N = next_n; SPL = warps per q row (1 or 2). A CTA has 4 * SPL
 * warps; warp w belongs to pair (or single) v = w / SPL, which scores row v % N over N of the
 * page's four 16-key chunks, and holds the q fragments of heads [h * H/SPL, (h+1) * H/SPL),
 * h = w % SPL. With SPL = 2 each warp keeps half the q registers (64 instead of 128), so two
 * CTAs of 8 warps fit an SM (4 warps per scheduler instead of 2) to cover the HMMA latency.
 * The relu·w sum over heads stays one chain in head order: the first warp of a pair runs it
 * over its heads and leaves every lane's partial sum in shared memory, the second (after
 * pair_sync) continues the same chain over its heads, reduces over the 4 lanes of a key and
 * stores: bitwise the SPL = 1 result. One pair barrier per 16-key chunk.
 */
template <int NT, int N, bool CVT, int SPL, int STG>
__global__ static void __launch_bounds__(DP_THREADS *SPL, 2)
    decode_pipe_kernel(const d_decode_params p)
{
    extern __shared__ __align__(128) unsigned char smem[];
    constexpr int H = NT * 8, NTW = NT / SPL, T = DP_THREADS * SPL;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, grp = lane >> 2, tig = lane & 3;
    const int v = warp / SPL, half = warp % SPL;
    const int jrow = v % N, chunk0 = (v / N) * N;
    const long t_begin = (long)blockIdx.x * p.total / gridDim.x;
    const long t_end = (long)(blockIdx.x + 1) * p.total / gridDim.x;
    const int soff = dp_swz(threadIdx.x >> 3, threadIdx.x & 7); /* this thread's copy slot */
    /* SPL = 2: the first warps' partial sums, [pair][chunk][lane][key grp, grp + 8] */
    float2 *red = (float2 *)(smem + STG * DSA_K_PAGE_BYTES) + (v * N) * 32 + lane;

    dp_cursor cur = {t_begin, (int)(t_begin / p.tiles_per_seq), (int)(t_begin % p.tiles_per_seq), 0,
                     0};
    dp_fetch<N>(p, cur, t_end, true);
#pragma unroll
    for (int s = 0; s < STG - 1; s++)
        dp_issue<N, T>(p, cur, t_end, smem + s * DSA_K_PAGE_BYTES, soff);

    /* B fragments of q: [n-tile][k-step][b0, b1], f16 (x 2^-8 unless CVT), and w of heads
       (h*NTW + nt)*8 + 2*tig + {0, 1} (x 2^16 unless CVT) */
    uint32_t qf[NTW][8][2];
    float wr[NTW][2];
    long cur_b = -1;
    int ctx_r = 0;
    int b = (int)(t_begin / p.tiles_per_seq), pg = (int)(t_begin % p.tiles_per_seq);
    for (long t = t_begin, i = 0; t < t_end; t++, i++) {
        cp_async_wait<STG - 2>(); /* tile t has landed (this thread's copies) */
        __syncthreads();          /* everyone's copies of tile t; tile t-1's buffer is free */
        dp_issue<N, T>(p, cur, t_end, smem + ((i + STG - 1) % STG) * DSA_K_PAGE_BYTES, soff);
        const long row = (long)b * N + jrow;
        if (b != cur_b) { /* a new sequence: its q row into registers */
            cur_b = b;
            ctx_r = p.ctx[row];
#pragma unroll
            for (int nt = 0; nt < NTW; nt++) {
                const int h0 = (half * NTW + nt) * 8; /* first head of the n-tile */
                const uint8_t *qh = p.q8 + ((size_t)row * H + h0 + grp) * 128;
                const uint4 u0 = *(const uint4 *)(qh + 16 * tig);
                const uint4 u1 = *(const uint4 *)(qh + 64 + 16 * tig);
                const uint32_t wd[8] = {u0.x, u0.y, u0.z, u0.w, u1.x, u1.y, u1.z, u1.w};
#pragma unroll
                for (int s = 0; s < 8; s++) {
                    qf[nt][s][0] = to_f16x2<CVT, 0x1404>(wd[s]);
                    qf[nt][s][1] = to_f16x2<CVT, 0x3424>(wd[s]);
                }
#pragma unroll
                for (int j = 0; j < 2; j++) {
                    const size_t wi = (size_t)row * H + h0 + 2 * tig + j;
                    const float wv = p.wbf16 ? d_bf16_to_f32(((const uint16_t *)p.w)[wi])
                                             : ((const float *)p.w)[wi];
                    wr[nt][j] = CVT ? wv : wv * 65536.0f;
                }
            }
        }
        const uint8_t *st = smem + (i % STG) * DSA_K_PAGE_BYTES;
#pragma unroll
        for (int c = 0; c < N; c++) {
            const int kb = (chunk0 + c) * 16; /* first key of the chunk within the page */
            const long s0 = (long)pg * DSA_K_PAGE + kb;
            if (s0 >= p.stride)
                break;                        /* uniform over the warp and its pair */
            float part0 = 0.0f, part1 = 0.0f; /* keys kb + grp and kb + grp + 8 */
            if (s0 < ctx_r) {                 /* uniform over the pair too (same row) */
                float acc[NTW][4];
#pragma unroll
                for (int nt = 0; nt < NTW; nt++)
                    acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.0f;
                const int k0 = kb + grp, k1 = k0 + 8;
                const uint4 x00 = *(const uint4 *)(st + dp_swz(k0, tig));
                const uint4 x01 = *(const uint4 *)(st + dp_swz(k0, tig + 4));
                const uint4 x10 = *(const uint4 *)(st + dp_swz(k1, tig));
                const uint4 x11 = *(const uint4 *)(st + dp_swz(k1, tig + 4));
                const uint32_t w0[8] = {x00.x, x00.y, x00.z, x00.w, x01.x, x01.y, x01.z, x01.w};
                const uint32_t w1[8] = {x10.x, x10.y, x10.z, x10.w, x11.x, x11.y, x11.z, x11.w};
#pragma unroll
                for (int s = 0; s < 8; s++) {
                    const uint32_t a0 = to_f16x2<CVT, 0x1404>(w0[s]);
                    const uint32_t a1 = to_f16x2<CVT, 0x1404>(w1[s]);
                    const uint32_t a2 = to_f16x2<CVT, 0x3424>(w0[s]);
                    const uint32_t a3 = to_f16x2<CVT, 0x3424>(w1[s]);
#pragma unroll
                    for (int nt = 0; nt < NTW; nt++)
                        mma_f16(acc[nt], a0, a1, a2, a3, qf[nt][s][0], qf[nt][s][1]);
                }
                if (SPL == 2 && half == 1) { /* the chain so far, from the first warp */
                    pair_sync(v);
                    const float2 r = red[c * 32];
                    part0 = r.x, part1 = r.y;
                }
#pragma unroll
                for (int nt = 0; nt < NTW; nt++) {
                    part0 = __fmaf_rn(wr[nt][0], fmaxf(acc[nt][0], 0.0f), part0);
                    part0 = __fmaf_rn(wr[nt][1], fmaxf(acc[nt][1], 0.0f), part0);
                    part1 = __fmaf_rn(wr[nt][0], fmaxf(acc[nt][2], 0.0f), part1);
                    part1 = __fmaf_rn(wr[nt][1], fmaxf(acc[nt][3], 0.0f), part1);
                }
                if (SPL == 2 && half == 0) { /* handed on; the next tile's __syncthreads
                                                orders the slot's reuse */
                    red[c * 32] = make_float2(part0, part1);
                    pair_sync(v);
                    continue;
                }
                part0 = __fadd_rn(part0, __shfl_xor_sync(0xffffffffu, part0, 1));
                part1 = __fadd_rn(part1, __shfl_xor_sync(0xffffffffu, part1, 1));
                part0 = __fadd_rn(part0, __shfl_xor_sync(0xffffffffu, part0, 2));
                part1 = __fadd_rn(part1, __shfl_xor_sync(0xffffffffu, part1, 2));
            }
            if ((SPL == 2 && half == 0) || tig >= 2)
                continue;                       /* the second warp of a pair stores */
            const int key = kb + grp + 8 * tig; /* lane tig 0 writes key grp, tig 1 key grp+8 */
            const long s = (long)pg * DSA_K_PAGE + key;
            if (s >= p.stride)
                continue;
            const size_t o = (size_t)row * p.stride + s;
            if (s < ctx_r) {
                const float ks = *(const float *)(st + DSA_K_SCALE_OFF + key * 4);
                const float val = __fmul_rn(ks, tig ? part1 : part0);
                d_logit_store(p.out, o, p.lbf16, val);
            } else if (p.clean) {
                d_logit_mask(p.out, o, p.lbf16);
            }
        }
        if (++pg == p.tiles_per_seq)
            pg = 0, b++;
    }
    cp_async_wait<0>(); /* only empty groups remain; nothing in flight at exit */
}

template <int NT, int N, bool CVT, int SPL, int STG>
static int launch_pipe(const d_decode_params &p, cudaStream_t st)
{
    static int slots; /* resident CTAs on the whole device */
    const size_t smem = (size_t)STG * DSA_K_PAGE_BYTES + (SPL > 1 ? 4 * N * 32 * 8 : 0);
    if (!slots) {
        int dev, sms, per_sm;
        CUDA_CHECK(cudaGetDevice(&dev));
        CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
        if (smem > 48 * 1024) /* the 8-stage kernel: 71 KB */
            CUDA_CHECK(cudaFuncSetAttribute(decode_pipe_kernel<NT, N, CVT, SPL, STG>,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            (int)smem));
        CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &per_sm, decode_pipe_kernel<NT, N, CVT, SPL, STG>, DP_THREADS * SPL, smem));
        slots = sms * (per_sm > 0 ? per_sm : 1);
    }
    if (p.total <= 0)
        return DSA_K_OK;
    long grid = d_forced_decode_ctas() ? d_forced_decode_ctas() : slots;
    if (grid > p.total)
        grid = p.total;
    decode_pipe_kernel<NT, N, CVT, SPL, STG><<<(unsigned)grid, DP_THREADS * SPL, smem, st>>>(p);
    return DSA_K_OK;
}

template <int NT, bool CVT, int SPL, int STG = 5>
static int launch_heads(const d_decode_params &p, int N, cudaStream_t st)
{
    return N == 1   ? launch_pipe<NT, 1, CVT, SPL, STG>(p, st)
           : N == 2 ? launch_pipe<NT, 2, CVT, SPL, STG>(p, st)
                    : launch_pipe<NT, 4, CVT, SPL, STG>(p, st);
}

/* a switch read once: unset or anything but "0" (CVT) / "1" (SPLIT) keeps the default */
static int env_is(const char *name, const char *val)
{
    const char *e = getenv(name);
    return e && !strcmp(e, val);
}

int dsa_cuda_decode_pipe_launch(const dsa_k_flags *f, const dsa_logits_decode_args *a,
                                cudaStream_t st)
{
    if ((a->N != 1 && a->N != 2 && a->N != 4) || (f->heads != 64 && f->heads != 32))
        return DSA_K_UNSUPPORTED;
    d_decode_params p = d_decode_params_of(f, a);
    /* default: one warp per q row (the round-2 kernel); DSA_CUDA_DECODE_SPLIT=2: the heads over
       warp pairs (DSA_CUDA_DECODE_STAGES=8 with it: 8 stages, racecheck not clean, do not use);
       DSA_CUDA_DECODE_CVT=0: fp8 -> f16 by bit moves (with one warp per row) */
    static int bits = -1, whole = -1, deep = -1;
    if (bits < 0) { /* the split measured slower on the H200 (bench/RESULTS.md): off by default */
        bits = env_is("DSA_CUDA_DECODE_CVT", "0");
        whole = !env_is("DSA_CUDA_DECODE_SPLIT", "2");
        deep = env_is("DSA_CUDA_DECODE_STAGES", "8");
    }
    const bool h64 = f->heads == 64;
    if (bits)
        return h64 ? launch_heads<8, false, 1>(p, a->N, st)
                   : launch_heads<4, false, 1>(p, a->N, st);
    if (whole)
        return h64 ? launch_heads<8, true, 1>(p, a->N, st) : launch_heads<4, true, 1>(p, a->N, st);
    if (deep)
        return h64 ? launch_heads<8, true, 2, 8>(p, a->N, st)
                   : launch_heads<4, true, 2, 8>(p, a->N, st);
    return h64 ? launch_heads<8, true, 2>(p, a->N, st) : launch_heads<4, true, 2>(p, a->N, st);
}
