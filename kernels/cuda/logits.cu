/*
 * S3a paged decode logits and S3b ragged prefill logits on CUDA.
 * One kernel for both: a block owns 128 consecutive keys of one row group (the N rows of a
 * decode sequence, or up to 4 prefill rows) and each thread one key. The key's 128 fp8
 * values are loaded once into registers and used for every row and head of the group, so a
 * decode sequence reads its K once for all next_n rows. q (fp8 values are exact in fp16)
 * and the weights of the group sit in shared memory. Each output element is computed by one
 * thread in a fixed order (fp32 FMA dot over d, then acc += w*relu(dot) over heads, then
 * * k_scale), so reruns are bitwise identical.
 * Speed is the next issue's: the dot products belong on the FP8 tensor cores (wgmma).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "common.cuh"
#include "dsa_cuda.h"

#define KEYS_PER_BLOCK 128
#define PREFILL_ROWS   4

struct logits_params {
    int H, R, nrows;
    const uint8_t *q8;
    const void *w;
    int wbf16;
    const uint8_t *kv; /* paged cache, or k8 [NK,128] */
    const float *ks;   /* prefill only */
    const int32_t *bt;
    int max_blocks;
    const int32_t *rs, *re; /* row start (NULL = 0) and end */
    void *out;
    int lbf16;
    long stride;
    int clean;
};

template <bool PAGED> __global__ static void logits_kernel(const logits_params p)
{
    extern __shared__ __align__(16) unsigned char smem[];
    const int R = p.R, H = p.H, g = blockIdx.y, tid = threadIdx.x;
    const int row0 = g * R, nr = min(R, p.nrows - row0);
    __half *sq = (__half *)smem;
    float *sw = (float *)(smem + (size_t)R * H * 128 * 2);
    int *slo = (int *)(sw + R * H), *shi = slo + R;
    for (int i = tid; i < nr * H * 128; i += blockDim.x)
        sq[i] = __half(__nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)p.q8[(size_t)row0 * H * 128 + i],
                                               __NV_E4M3));
    for (int i = tid; i < nr * H; i += blockDim.x) {
        size_t wi = (size_t)row0 * H + i;
        sw[i] = p.wbf16 ? d_bf16_to_f32(((const uint16_t *)p.w)[wi]) : ((const float *)p.w)[wi];
    }
    if (tid < nr) {
        slo[tid] = p.rs ? p.rs[row0 + tid] : 0;
        shi[tid] = p.re[row0 + tid];
    }
    __syncthreads();
    const long s = (long)blockIdx.x * KEYS_PER_BLOCK + tid;
    if (s >= p.stride)
        return;
    long kmin = 0x7fffffff, kmax = 0;
    for (int r = 0; r < nr; r++) {
        if (shi[r] > slo[r]) {
            kmin = min(kmin, (long)slo[r]);
            kmax = max(kmax, (long)shi[r]);
        }
    }
    float kf[128], kscale = 0.0f;
    const bool have_key = s >= kmin && s < kmax;
    if (have_key) {
        const uint8_t *krow;
        if (PAGED) {
            const uint8_t *page =
                p.kv + (size_t)p.bt[(size_t)g * p.max_blocks + s / DSA_K_PAGE] * DSA_K_PAGE_BYTES;
            krow = page + (s % DSA_K_PAGE) * 128;
            kscale = *(const float *)(page + DSA_K_SCALE_OFF + (s % DSA_K_PAGE) * 4);
        } else {
            krow = p.kv + (size_t)s * 128;
            kscale = p.ks[s];
        }
        const uint4 *k4 = (const uint4 *)krow;
#pragma unroll
        for (int c = 0; c < 8; c++) {
            uint4 u = k4[c];
            uint32_t wd[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
            for (int b = 0; b < 16; b++)
                kf[c * 16 + b] = d_e4m3_to_f32((uint8_t)(wd[b / 4] >> (8 * (b % 4))));
        }
    }
    for (int r = 0; r < nr; r++) {
        size_t o = (size_t)(row0 + r) * p.stride + s;
        if (have_key && s >= slo[r] && s < shi[r]) {
            float acc = 0.0f;
            for (int h = 0; h < H; h++) {
                const __half2 *qh = (const __half2 *)(sq + ((size_t)r * H + h) * 128);
                float dot = 0.0f;
#pragma unroll
                for (int d2 = 0; d2 < 64; d2++) {
                    float2 qf = __half22float2(qh[d2]);
                    dot = __fmaf_rn(qf.x, kf[2 * d2], dot);
                    dot = __fmaf_rn(qf.y, kf[2 * d2 + 1], dot);
                }
                if (dot > 0.0f)
                    acc = __fadd_rn(acc, __fmul_rn(sw[r * H + h], dot));
            }
            float v = __fmul_rn(kscale, acc);
            if (p.lbf16)
                ((uint16_t *)p.out)[o] = d_f32_to_bf16(v);
            else
                ((float *)p.out)[o] = v;
        } else if (p.clean) {
            if (p.lbf16)
                ((uint16_t *)p.out)[o] = 0xff80;
            else
                ((float *)p.out)[o] = -INFINITY;
        }
    }
}

template <bool PAGED>
static int launch(const logits_params &p, long cols, int groups, cudaStream_t st)
{
    size_t smem = (size_t)p.R * p.H * 128 * 2 + (size_t)p.R * p.H * 4 + (size_t)p.R * 8;
    static bool raised[2];
    if (!raised[PAGED]) {
        CUDA_CHECK(cudaFuncSetAttribute(logits_kernel<PAGED>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, 160 * 1024));
        raised[PAGED] = true;
    }
    if (cols <= 0 || groups <= 0)
        return DSA_K_OK;
    dim3 grid((unsigned)((cols + KEYS_PER_BLOCK - 1) / KEYS_PER_BLOCK), (unsigned)groups);
    logits_kernel<PAGED><<<grid, KEYS_PER_BLOCK, smem, st>>>(p);
    return DSA_K_OK;
}

int dsa_cuda_logits_decode_launch(const dsa_k_flags *f, const dsa_logits_decode_args *a,
                                  cudaStream_t st)
{
    logits_params p = {f->heads,       a->N,
                       a->B * a->N,    a->q8,
                       a->w,           f->weights == DSA_K_BF16,
                       a->cache,       NULL,
                       a->block_table, a->max_blocks,
                       NULL,           a->ctx,
                       a->logits,      f->logits == DSA_K_BF16,
                       a->stride,      a->clean};
    /* without clean, only columns below the largest context need a thread */
    return launch<true>(p, a->stride, a->B, st);
}

int dsa_cuda_logits_prefill_launch(const dsa_k_flags *f, const dsa_logits_prefill_args *a,
                                   cudaStream_t st)
{
    logits_params p = {f->heads,     PREFILL_ROWS,
                       a->M,         a->q8,
                       a->w,         f->weights == DSA_K_BF16,
                       a->k8,        a->ks,
                       NULL,         0,
                       a->row_start, a->row_end,
                       a->logits,    f->logits == DSA_K_BF16,
                       a->stride,    a->clean};
    return launch<false>(p, a->clean ? a->stride : a->NK, (a->M + PREFILL_ROWS - 1) / PREFILL_ROWS,
                         st);
}
