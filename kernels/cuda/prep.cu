/*
 * S1 k_prep and S2 q_prep on CUDA: one warp per 128-vector (a token's k, a (token, head)'s
 * q), reproducing the C reference (kernels/cpu/prep.c) operation for operation, so the fp8
 * bytes, scales and weights are bit-identical to it.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdlib.h>
#include <string.h>

#include "common.cuh"
#include "dsa_cuda.h"

/* RoPE -> [bf16] -> [Hadamard -> [bf16]] -> quant; q[j] = the fp8 byte of element
   lane + 32 j (the caller stores them); returns the scale (all lanes) */
__device__ static float rope_rotate_quant(const dsa_k_flags f, float v[4], const float *cs,
                                          const float *sn, uint8_t q[4])
{
    const int lane = threadIdx.x & 31;
    if (f.rope == DSA_K_ROPE_NEOX) {
        float c = cs[lane], s = sn[lane];
        float x1 = v[0], x2 = v[1];
        v[0] = __fsub_rn(__fmul_rn(x1, c), __fmul_rn(x2, s));
        v[1] = __fadd_rn(__fmul_rn(x2, c), __fmul_rn(x1, s));
    } else {
        for (int j = 0; j < 2; j++) {
            int p = (lane + 32 * j) / 2;
            float c = cs[p], s = sn[p];
            float mine = v[j], other = __shfl_xor_sync(0xffffffffu, v[j], 1);
            if (!(lane & 1)) /* x1: x1*c - x2*s */
                v[j] = __fsub_rn(__fmul_rn(mine, c), __fmul_rn(other, s));
            else /* x2: x2*c + x1*s */
                v[j] = __fadd_rn(__fmul_rn(mine, c), __fmul_rn(other, s));
        }
    }
    if (f.bf16_round)
        for (int j = 0; j < 4; j++)
            v[j] = d_round_bf16(v[j]);
    if (f.hadamard) {
        for (int h = 1; h < 32; h *= 2)
            for (int j = 0; j < 4; j++) {
                float other = __shfl_xor_sync(0xffffffffu, v[j], h);
                v[j] = (lane & h) ? __fsub_rn(other, v[j]) : __fadd_rn(v[j], other);
            }
        float a, b;
        a = v[0], b = v[1], v[0] = __fadd_rn(a, b), v[1] = __fsub_rn(a, b); /* h = 32 */
        a = v[2], b = v[3], v[2] = __fadd_rn(a, b), v[3] = __fsub_rn(a, b);
        a = v[0], b = v[2], v[0] = __fadd_rn(a, b), v[2] = __fsub_rn(a, b); /* h = 64 */
        a = v[1], b = v[3], v[1] = __fadd_rn(a, b), v[3] = __fsub_rn(a, b);
        for (int j = 0; j < 4; j++) {
            v[j] = __fmul_rn(v[j], DSA_INV_SQRT_128F);
            if (f.bf16_round)
                v[j] = d_round_bf16(v[j]);
        }
    }
    float amax = fmaxf(fmaxf(fabsf(v[0]), fabsf(v[1])), fmaxf(fabsf(v[2]), fabsf(v[3])));
    amax = d_warp_max(amax);
    float s = d_quant_scale(amax, f.scale == DSA_K_SCALE_UE8M0);
    for (int j = 0; j < 4; j++)
        q[j] = d_f32_to_e4m3(__fdiv_rn(v[j], s));
    return s;
}

__device__ __forceinline__ void store_q(uint8_t *out, const uint8_t q[4])
{
    const int lane = threadIdx.x & 31;
    for (int j = 0; j < 4; j++)
        out[lane + 32 * j] = q[j];
}

/* Both prep kernels are launched as programmatic dependents (common.cuh): they read their
   inputs and do all the arithmetic while the kernel before them may still run, and wait for it
   (it may read the cache, q8 or w they write) only before their first store. Their inputs
   (raw k/q, weights, positions, slots, RoPE tables) are never written by a kernel of this API,
   only uploaded; dsa_cuda.h states it. */
__device__ __forceinline__ void k_prep_block(const dsa_k_flags &f, const dsa_k_prep_args &a,
                                             unsigned blk)
{
    const int lane = threadIdx.x & 31;
    const int t = blk * (blockDim.x / 32) + threadIdx.x / 32;
    if (t >= a.T || a.slot[t] < 0) {
        d_pdl_wait(); /* so that this grid ends after the one before (see topk.cu) */
        return;
    }
    float v[4], d[4], sq[4];
    for (int j = 0; j < 4; j++)
        v[j] = d_bf16_to_f32(a.k_raw[(size_t)t * 128 + lane + 32 * j]);
    float mean = __fdiv_rn(d_tree_sum128(v), 128.0f);
    for (int j = 0; j < 4; j++) {
        d[j] = __fsub_rn(v[j], mean);
        sq[j] = __fmul_rn(d[j], d[j]);
    }
    float var = __fdiv_rn(d_tree_sum128(sq), 128.0f);
    float rstd = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(var, DSA_K_LN_EPS)));
    for (int j = 0; j < 4; j++) {
        int i = lane + 32 * j;
        float y = __fmul_rn(d[j], rstd);
        y = __fmul_rn(y, a.ln_w[i]);
        y = __fadd_rn(y, a.ln_b[i]);
        v[j] = f.bf16_round ? d_round_bf16(y) : y;
    }
    int64_t page = a.slot[t] / DSA_K_PAGE, off = a.slot[t] % DSA_K_PAGE;
    uint8_t *base = a.cache + (size_t)page * DSA_K_PAGE_BYTES, q[4];
    float s = rope_rotate_quant(f, v, a.cos + a.pos[t] * 32, a.sin + a.pos[t] * 32, q);
    d_pdl_wait();
    store_q(base + off * DSA_K_HEAD_DIM, q);
    if (lane == 0)
        *(float *)(base + DSA_K_SCALE_OFF + off * 4) = s;
}

__global__ static void k_prep_kernel(const dsa_k_flags f, dsa_k_prep_args a)
{
    d_pdl_launch_next();
    k_prep_block(f, a, blockIdx.x);
}

/* The whole-warp layout (lane l holds elements l + 32 j), QV (token, head) vectors a warp,
   their loads in flight together: DSA_CUDA_PREP_QV=1|2|4 (q_qv; the default is the half-warp
   layout below). 4 was the default until round 11, when 2 measured 0.2-1.5 us faster at T =
   256 / 64 tokens on the H200 (bench/RESULTS.md) and 1 no faster than 2. */
template <int QV>
__device__ __forceinline__ void q_prep_block(const dsa_k_flags &f, const dsa_q_prep_args &a,
                                             unsigned blk)
{
    const int lane = threadIdx.x & 31, H = f.heads;
    const long n = (long)a.T * H, th0 = ((long)blk * (blockDim.x / 32) + threadIdx.x / 32) * QV;
    float v[QV][4], s[QV], w[QV];
    uint8_t q[QV][4];
#pragma unroll
    for (int u = 0; u < QV; u++)
        for (int j = 0; j < 4; j++)
            v[u][j] = th0 + u < n ? d_bf16_to_f32(a.q_raw[(th0 + u) * 128 + lane + 32 * j]) : 0.0f;
    const float hs = H == 64 ? 0.125f : 0.1767766952966369f;
#pragma unroll
    for (int u = 0; u < QV; u++) {
        const long th = th0 + u, t = th / H;
        if (th >= n) /* the same for the whole warp */
            break;
        s[u] = rope_rotate_quant(f, v[u], a.cos + a.pos[t] * 32, a.sin + a.pos[t] * 32, q[u]);
        float wr = a.w_raw_dtype == DSA_K_BF16 ? d_bf16_to_f32(((const uint16_t *)a.w_raw)[th])
                                               : ((const float *)a.w_raw)[th];
        w[u] = __fmul_rn(__fmul_rn(__fmul_rn(wr, s[u]), DSA_INV_SQRT_128F), hs);
    }
    d_pdl_wait();
#pragma unroll
    for (int u = 0; u < QV; u++) {
        const long th = th0 + u;
        if (th >= n)
            break;
        store_q(a.q8 + th * DSA_K_HEAD_DIM, q[u]);
        if (lane == 0) {
            a.qs[th] = s[u];
            if (f.weights == DSA_K_BF16)
                ((uint16_t *)a.w)[th] = d_f32_to_bf16(w[u]);
            else
                ((float *)a.w)[th] = w[u];
        }
    }
}

/* ---- S2 in the half-warp layout: lane L (0..15) of each half-warp holds elements 8L .. 8L+7
   of one vector, so a warp works on two vectors with one 16-byte load and one 8-byte store a
   lane, three of the Hadamard's seven stages in registers and four over the half's lanes
   (xor 1 .. 8), and the per-vector work (scale, weight, position) shared by 16 lanes, not 32.
   Every element gets the same operations in the same order as rope_rotate_quant (each stage
   h: the element with bit h clear becomes lower + upper, the other lower - upper; the stages
   in the order h = 1, 2, ..., 64), so the bytes are the same. All 32 lanes call the shuffles,
   an out-of-range half on a copy of the last vector. */
__device__ static float rope_rotate_quant8(const dsa_k_flags f, float v[8], const float *cs,
                                           const float *sn, uint8_t q[8])
{
    const int L = threadIdx.x & 15;
    if (f.rope == DSA_K_ROPE_NEOX) { /* pairs (i, i + 32): lanes 0-3 hold x1, lanes 4-7 x2 */
        float o[8];
#pragma unroll
        for (int r = 0; r < 8; r++)
            o[r] = __shfl_xor_sync(0xffffffffu, v[r], 4);
        if (L < 8)
#pragma unroll
            for (int r = 0; r < 8; r++) {
                const int i = 8 * (L & 3) + r;
                const float c = cs[i], sn_i = sn[i];
                v[r] = L < 4 ? __fsub_rn(__fmul_rn(v[r], c), __fmul_rn(o[r], sn_i))
                             : __fadd_rn(__fmul_rn(v[r], c), __fmul_rn(o[r], sn_i));
            }
    } else if (L < 8) { /* pairs (2p, 2p + 1), p < 32: in this lane's registers */
#pragma unroll
        for (int r = 0; r < 8; r += 2) {
            const int pi = 4 * L + r / 2;
            const float c = cs[pi], sn_i = sn[pi], x1 = v[r], x2 = v[r + 1];
            v[r] = __fsub_rn(__fmul_rn(x1, c), __fmul_rn(x2, sn_i));
            v[r + 1] = __fadd_rn(__fmul_rn(x2, c), __fmul_rn(x1, sn_i));
        }
    }
    if (f.bf16_round)
#pragma unroll
        for (int r = 0; r < 8; r++)
            v[r] = d_round_bf16(v[r]);
    if (f.hadamard) {
#pragma unroll
        for (int h = 1; h < 8; h *= 2)
#pragma unroll
            for (int r = 0; r < 8; r++)
                if (!(r & h)) {
                    const float a = v[r], b = v[r | h];
                    v[r] = __fadd_rn(a, b);
                    v[r | h] = __fsub_rn(a, b);
                }
#pragma unroll
        for (int m = 1; m < 16; m *= 2)
#pragma unroll
            for (int r = 0; r < 8; r++) {
                const float other = __shfl_xor_sync(0xffffffffu, v[r], m);
                v[r] = (L & m) ? __fsub_rn(other, v[r]) : __fadd_rn(v[r], other);
            }
#pragma unroll
        for (int r = 0; r < 8; r++) {
            v[r] = __fmul_rn(v[r], DSA_INV_SQRT_128F);
            if (f.bf16_round)
                v[r] = d_round_bf16(v[r]);
        }
    }
    float amax = fabsf(v[0]);
#pragma unroll
    for (int r = 1; r < 8; r++)
        amax = fmaxf(amax, fabsf(v[r]));
#pragma unroll
    for (int m = 8; m >= 1; m /= 2)
        amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, m));
    const float sc = d_quant_scale(amax, f.scale == DSA_K_SCALE_UE8M0);
#pragma unroll
    for (int r = 0; r < 8; r++)
        q[r] = d_f32_to_e4m3(__fdiv_rn(v[r], sc));
    return sc;
}

__device__ __forceinline__ void q_prep_half(const dsa_k_flags &f, const dsa_q_prep_args &a,
                                            unsigned blk)
{
    const int L = threadIdx.x & 15, H = f.heads;
    const long n = (long)a.T * H, th = ((long)blk * (blockDim.x / 32) + threadIdx.x / 32) * 2 +
                                       ((threadIdx.x >> 4) & 1);
    const long tc = th < n ? th : n - 1; /* the other half may be in range: it computes too */
    const uint16_t *src = a.q_raw + tc * 128 + 8 * L;
    float v[8];
    if (!((uintptr_t)a.q_raw & 15)) {
        const uint4 w4 = __ldg((const uint4 *)src);
        const uint32_t w[4] = {w4.x, w4.y, w4.z, w4.w};
#pragma unroll
        for (int r = 0; r < 4; r++) {
            v[2 * r] = d_bf16_to_f32((uint16_t)(w[r] & 0xffffu));
            v[2 * r + 1] = d_bf16_to_f32((uint16_t)(w[r] >> 16));
        }
    } else
#pragma unroll
        for (int r = 0; r < 8; r++)
            v[r] = d_bf16_to_f32(src[r]);
    const long t = tc / H;
    uint8_t q[8];
    const float sc = rope_rotate_quant8(f, v, a.cos + a.pos[t] * 32, a.sin + a.pos[t] * 32, q);
    const float wr = a.w_raw_dtype == DSA_K_BF16 ? d_bf16_to_f32(((const uint16_t *)a.w_raw)[tc])
                                                 : ((const float *)a.w_raw)[tc];
    const float hs = H == 64 ? 0.125f : 0.1767766952966369f;
    const float wv = __fmul_rn(__fmul_rn(__fmul_rn(wr, sc), DSA_INV_SQRT_128F), hs);
    d_pdl_wait();
    if (th >= n)
        return;
    uint8_t *dst = a.q8 + th * DSA_K_HEAD_DIM + 8 * L;
    if (!((uintptr_t)a.q8 & 7)) {
        uint2 o;
        o.x = q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
        o.y = q[4] | (uint32_t)q[5] << 8 | (uint32_t)q[6] << 16 | (uint32_t)q[7] << 24;
        *(uint2 *)dst = o;
    } else
#pragma unroll
        for (int r = 0; r < 8; r++)
            dst[r] = q[r];
    if (L == 0) {
        a.qs[th] = sc;
        if (f.weights == DSA_K_BF16)
            ((uint16_t *)a.w)[th] = d_f32_to_bf16(wv);
        else
            ((float *)a.w)[th] = wv;
    }
}

/* QV = 0: the half-warp layout (q_prep_half), else QV vectors a warp (q_prep_block) */
template <int QV>
__device__ __forceinline__ void q_prep_any(const dsa_k_flags &f, const dsa_q_prep_args &a,
                                           unsigned blk)
{
    if constexpr (QV == 0)
        q_prep_half(f, a, blk);
    else
        q_prep_block<QV>(f, a, blk);
}

template <int QV> __global__ static void q_prep_kernel(const dsa_k_flags f, dsa_q_prep_args a)
{
    d_pdl_launch_next();
    q_prep_any<QV>(f, a, blockIdx.x);
}

/* S1 and S2 of a step in one grid: blocks [0, kb) are k_prep's, the rest q_prep's. The two
   write disjoint buffers (the API's contract), so their blocks need no order; in one launch
   the short k chains run beside the q chains instead of after a second launch's latency */
template <int QV>
__global__ static void prep_kernel(const dsa_k_flags f, dsa_k_prep_args k, dsa_q_prep_args q,
                                   unsigned kb)
{
    d_pdl_launch_next();
    if (blockIdx.x < kb)
        k_prep_block(f, k, blockIdx.x);
    else
        q_prep_any<QV>(f, q, blockIdx.x - kb);
}

__global__ static void fill_kernel(int32_t *p, long n)
{
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long)gridDim.x * blockDim.x)
        p[i] = -1;
}

/* blocks of 128 threads (4 warps) for each side: k one token a warp, q two vectors a warp (the
   half-warp layout) or QV (DSA_CUDA_PREP_QV) */
static unsigned k_blocks(const dsa_k_prep_args *a)
{
    return a->T > 0 ? (unsigned)((a->T + 3) / 4) : 0;
}

static int q_qv(void)
{
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("DSA_CUDA_PREP_QV");
        v = e && (atoi(e) == 1 || atoi(e) == 2 || atoi(e) == 4) ? atoi(e) : 0;
    }
    return v;
}

static unsigned q_blocks(const dsa_k_flags *f, const dsa_q_prep_args *a)
{
    const int qv = q_qv() ? q_qv() : 2; /* the half-warp layout: 2 vectors a warp */
    long warps = a->T > 0 ? ((long)a->T * f->heads + qv - 1) / qv : 0;
    return (unsigned)((warps + 3) / 4);
}

typedef void (*q_kern_t)(const dsa_k_flags, dsa_q_prep_args);
typedef void (*p_kern_t)(const dsa_k_flags, dsa_k_prep_args, dsa_q_prep_args, unsigned);
static q_kern_t q_kern(void)
{
    const int v = q_qv();
    return v == 1   ? q_prep_kernel<1>
           : v == 2 ? q_prep_kernel<2>
           : v == 4 ? q_prep_kernel<4>
                    : q_prep_kernel<0>;
}
static p_kern_t p_kern(void)
{
    const int v = q_qv();
    return v == 1   ? prep_kernel<1>
           : v == 2 ? prep_kernel<2>
           : v == 4 ? prep_kernel<4>
                    : prep_kernel<0>;
}

/* q_prep's -1 fill of the top-k buffer, after its kernel */
static void fill_topk(const dsa_q_prep_args *a, cudaStream_t st)
{
    if (a->T <= 0 || !a->topk_fill || a->topk_k <= 0)
        return;
    long n = (long)a->T * a->topk_k;
    fill_kernel<<<(unsigned)((n + 255) / 256 < 4096 ? (n + 255) / 256 : 4096), 256, 0, st>>>(
        a->topk_fill, n);
}

int dsa_cuda_k_prep_launch(const dsa_k_flags *f, const dsa_k_prep_args *a, cudaStream_t st)
{
    if (a->T <= 0)
        return DSA_K_OK;
    cudaLaunchAttribute pdl;
    const cudaLaunchConfig_t c = d_pdl_config(dim3(k_blocks(a)), dim3(128), 0, st, &pdl);
    CUDA_CHECK(cudaLaunchKernelEx(&c, k_prep_kernel, *f, *a));
    return DSA_K_OK;
}

int dsa_cuda_q_prep_launch(const dsa_k_flags *f, const dsa_q_prep_args *a, cudaStream_t st)
{
    if (a->T <= 0)
        return DSA_K_OK;
    cudaLaunchAttribute pdl;
    const cudaLaunchConfig_t c = d_pdl_config(dim3(q_blocks(f, a)), dim3(128), 0, st, &pdl);
    CUDA_CHECK(cudaLaunchKernelEx(&c, q_kern(), *f, *a));
    fill_topk(a, st);
    return DSA_K_OK;
}

int dsa_cuda_prep_launch(const dsa_k_flags *f, const dsa_k_prep_args *k, const dsa_q_prep_args *q,
                         cudaStream_t st)
{
    /* DSA_CUDA_PREP=split: the two launches, to time one form against the other */
    static int split = -1;
    if (split < 0) {
        const char *e = getenv("DSA_CUDA_PREP");
        split = e && !strcmp(e, "split");
    }
    const unsigned kb = k_blocks(k), qb = q_blocks(f, q);
    if (split) {
        int rc = dsa_cuda_k_prep_launch(f, k, st);
        return rc ? rc : dsa_cuda_q_prep_launch(f, q, st);
    }
    if (!kb || !qb) /* one side only: its own kernel */
        return kb ? dsa_cuda_k_prep_launch(f, k, st) : dsa_cuda_q_prep_launch(f, q, st);
    cudaLaunchAttribute pdl;
    const cudaLaunchConfig_t c = d_pdl_config(dim3(kb + qb), dim3(128), 0, st, &pdl);
    CUDA_CHECK(cudaLaunchKernelEx(&c, p_kern(), *f, *k, *q, kb));
    fill_topk(q, st);
    return DSA_K_OK;
}
