/*
 * Shared device helpers of the CUDA indexer kernels: error checks, the number formats of
 * dsa_numeric.h written with round-to-nearest intrinsics (never contracted into FMAs), and
 * the warp-level forms of the reference's fixed reductions.
 * Warp layout of one 128-vector: lane l holds x[l + 32*j] in slot j (j = 0..3).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_KERNELS_CUDA_COMMON_CUH
#define DSA_KERNELS_CUDA_COMMON_CUH

#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "dsa_kernels.h"

/* prints "dsa-eval: CUDA error in FILE:LINE: …" and returns DSA_K_EDEVICE from the caller */
#define CUDA_CHECK(call)                                                                           \
    do {                                                                                           \
        cudaError_t err_ = (call);                                                                 \
        if (err_ != cudaSuccess) {                                                                 \
            fprintf(stderr, "dsa-eval: CUDA error in %s:%d: %s\n", __FILE__, __LINE__,             \
                    cudaGetErrorString(err_));                                                     \
            return DSA_K_EDEVICE;                                                                  \
        }                                                                                          \
    } while (0)

/*
 * Programmatic dependent launch (Hopper). A kernel launched through d_pdl_config may start,
 * and run up to d_pdl_wait, while the kernel before it in the stream still runs; d_pdl_wait
 * (griddepcontrol.wait) returns once that grid has completed and its writes are visible, so a
 * kernel must call it before it reads what the previous kernel may write, or writes what the
 * previous kernel may read. d_pdl_launch_next lets the next such kernel be scheduled now.
 * Without the launch attribute both are no-ops. DSA_CUDA_PDL=0 turns the attribute off.
 */
__device__ __forceinline__ void d_pdl_wait(void)
{
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
}

__device__ __forceinline__ void d_pdl_launch_next(void)
{
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}

/* the launch configuration with the programmatic-serialization attribute in *attr (unless
   DSA_CUDA_PDL=0); for cudaLaunchKernelEx */
static inline cudaLaunchConfig_t d_pdl_config(dim3 grid, dim3 block, size_t smem, cudaStream_t st,
                                              cudaLaunchAttribute *attr)
{
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("DSA_CUDA_PDL");
        on = !(e && e[0] == '0' && !e[1]);
    }
    attr->id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr->val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t c = {};
    c.gridDim = grid;
    c.blockDim = block;
    c.dynamicSmemBytes = smem;
    c.stream = st;
    c.attrs = attr;
    c.numAttrs = on ? 1 : 0;
    return c;
}

#define DSA_INV_SQRT_128F 0.08838834764831845f

__device__ __forceinline__ uint16_t d_f32_to_bf16(float x)
{
    uint32_t u = __float_as_uint(x);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

__device__ __forceinline__ float d_bf16_to_f32(uint16_t h)
{
    return __uint_as_float((uint32_t)h << 16);
}

__device__ __forceinline__ float d_round_bf16(float x)
{
    return d_bf16_to_f32(d_f32_to_bf16(x));
}

/* One logit into the output row of either dtype: v (bf16: rounded to nearest even), or, for a
   position outside the row's context, the masked value (-inf; bf16 0xff80). */
__device__ __forceinline__ void d_logit_store(void *out, size_t o, bool lbf16, float v)
{
    if (lbf16)
        ((uint16_t *)out)[o] = d_f32_to_bf16(v);
    else
        ((float *)out)[o] = v;
}

__device__ __forceinline__ void d_logit_mask(void *out, size_t o, bool lbf16)
{
    if (lbf16)
        ((uint16_t *)out)[o] = 0xff80;
    else
        ((float *)out)[o] = -INFINITY;
}

/* e4m3fn encode: RNE, saturating to +-448 (cvt.rn.satfinite) */
__device__ __forceinline__ uint8_t d_f32_to_e4m3(float x)
{
    return (uint8_t)__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
}

__device__ __forceinline__ float d_e4m3_to_f32(uint8_t c)
{
    __half_raw h = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)c, __NV_E4M3);
    return __half2float(__half(h));
}

__device__ __forceinline__ float d_quant_scale(float amax, int ue8m0)
{
    float t = __fdiv_rn(fmaxf(amax, 1e-4f), 448.0f);
    if (!ue8m0)
        return t;
    uint32_t u = __float_as_uint(t);
    if (u & 0x7fffffu)
        u = (u & 0x7f800000u) + 0x800000u;
    return __uint_as_float(u);
}

__device__ __forceinline__ uint32_t d_order_key(float x)
{
    if (x == 0.0f)
        x = 0.0f;
    uint32_t u = __float_as_uint(x);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

/* the reference's tree_sum128: x[i] += x[i+64]; x[i] += x[i+32]; then w = 16 … 1 */
__device__ __forceinline__ float d_tree_sum128(const float v[4])
{
    float t0 = __fadd_rn(v[0], v[2]), t1 = __fadd_rn(v[1], v[3]);
    float u = __fadd_rn(t0, t1);
    for (int w = 16; w >= 1; w /= 2)
        u = __fadd_rn(u, __shfl_down_sync(0xffffffffu, u, w));
    return __shfl_sync(0xffffffffu, u, 0);
}

__device__ __forceinline__ float d_warp_max(float v)
{
    for (int w = 16; w >= 1; w /= 2)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, w));
    return v;
}

/* A count from the environment for a switch (unset, not a number or negative: 0). Callers keep
   it in a static of their own, so it is read once per process. */
static inline int d_env_count(const char *name)
{
    const char *e = getenv(name);
    int v = e ? atoi(e) : 0;
    return v < 0 ? 0 : v;
}

/* DSA_CUDA_DECODE_CTAS=N forces the decode kernels' grid (the check runs it small, so that
   the CTAs' page ranges cross sequences); 0: the grid follows the work */
static inline int d_forced_decode_ctas(void)
{
    static int v = -1;
    if (v < 0)
        v = d_env_count("DSA_CUDA_DECODE_CTAS");
    return v;
}

/* The paged decode kernels' (decode.cu, decode_wgmma.cu) view of one launch: the arguments of
   dsa_logits_decode_args with the flags' formats resolved, passed by value to the kernel. */
struct d_decode_params {
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

static inline d_decode_params d_decode_params_of(const dsa_k_flags *f,
                                                 const dsa_logits_decode_args *a)
{
    d_decode_params p = {a->q8,     a->w,           f->weights == DSA_K_BF16,
                         a->cache,  a->block_table, a->max_blocks,
                         a->ctx,    a->logits,      f->logits == DSA_K_BF16,
                         a->stride, a->clean,       (a->stride + DSA_K_PAGE - 1) / DSA_K_PAGE,
                         0};
    p.total = p.tiles_per_seq * a->B;
    return p;
}

#endif
