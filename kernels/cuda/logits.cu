/*
 * S3a paged decode logits and S3b ragged prefill logits on CUDA.
 * One kernel for both: a block owns 128 consecutive keys of one row group (the N rows of a
 * decode sequence, or up to 4 prefill rows) and each thread one key. The key's 128 fp8
 * values are loaded once into registers and used for every row and head of the group, so a
 * decode sequence reads its K once for all next_n rows. q (fp8 values are exact in fp16)
 * and the weights of the group sit in shared memory. Each output element is computed by one
 * thread in a fixed order (fp32 FMA dot over d, then acc += w*relu(dot) over heads, then
 * * k_scale), so reruns are bitwise identical.
 * This CUDA-core kernel is the first version, kept for A/B runs (DSA_CUDA_LOGITS=simt); the
 * tensor-core kernel below runs S3b with DSA_CUDA_LOGITS=mma (or pipe), and S3a with =mma (S3b
 * runs the fp8 wgmma kernel of prefill_wgmma.cu by default, S3a that of decode_wgmma.cu, or
 * the mma.sync kernel of decode.cu with DSA_CUDA_LOGITS=pipe).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdlib.h>
#include <string.h>

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
    int tiles; /* tensor-core path: 64-key tiles per block */
};

/* The block's rows row0..row0+nr of the weights into sw [nr*H] (f32) and of the key ranges
   into slo/shi [nr]; the caller syncs before reading them. */
__device__ __forceinline__ static void stage_rows(const logits_params &p, int row0, int nr, int H,
                                                  int tid, float *sw, int *slo, int *shi)
{
    for (int i = tid; i < nr * H; i += blockDim.x) {
        size_t wi = (size_t)row0 * H + i;
        sw[i] = p.wbf16 ? d_bf16_to_f32(((const uint16_t *)p.w)[wi]) : ((const float *)p.w)[wi];
    }
    if (tid < nr) {
        slo[tid] = p.rs ? p.rs[row0 + tid] : 0;
        shi[tid] = p.re[row0 + tid];
    }
}

/* [kmin, kmax): the keys any of the nr rows reads (kmin 0x7fffffff, kmax 0 when none does) */
__device__ __forceinline__ static void keys_span(const int *slo, const int *shi, int nr, long *kmin,
                                                 long *kmax)
{
    *kmin = 0x7fffffff;
    *kmax = 0;
    for (int r = 0; r < nr; r++)
        if (shi[r] > slo[r]) {
            *kmin = min(*kmin, (long)slo[r]);
            *kmax = max(*kmax, (long)shi[r]);
        }
}

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
    stage_rows(p, row0, nr, H, tid, sw, slo, shi);
    __syncthreads();
    const long s = (long)blockIdx.x * KEYS_PER_BLOCK + tid;
    if (s >= p.stride)
        return;
    long kmin, kmax;
    keys_span(slo, shi, nr, &kmin, &kmax);
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
            d_logit_store(p.out, o, p.lbf16, v);
        } else if (p.clean) {
            d_logit_mask(p.out, o, p.lbf16);
        }
    }
}

/*
 * The tensor-core path: a block owns p.tiles (mma_tiles()) consecutive 64-key tiles (K pages on the
 * decode path) of one row group, loading the group's q and w once; per tile, each of its 4 warps
 * computes S[h, key] = q[r,h,:] . k[key,:] for all heads and 16 keys with FP8 mma.sync (m16n8k32,
 * e4m3 x e4m3 -> fp32), then relu(S)*w summed over heads in a fixed order (in-thread over m-tiles,
 * then xor-shuffles over the 8 head lanes) and * k_scale. q and the K tile sit in shared memory
 * with rows padded to 144 bytes, so the 32-bit fragment loads of a warp hit 32 distinct banks.
 */
#define MMA_KEYS  64
#define QSTRIDE   144
#define MMA_TILES 4

__device__ __forceinline__ void mma_e4m3(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <bool PAGED, int MT>
__global__ static void __launch_bounds__(128) logits_mma_kernel(const logits_params p)
{
    extern __shared__ __align__(16) unsigned char smem[];
    constexpr int H = MT * 16;
    const int R = p.R, g = blockIdx.y, tid = threadIdx.x;
    const int warp = tid >> 5, lane = tid & 31, grp = lane >> 2, tig = lane & 3;
    const int row0 = g * R, nr = min(R, p.nrows - row0);
    uint8_t *sq = smem;                             /* [R][H][QSTRIDE] */
    uint8_t *sk = sq + (size_t)R * H * QSTRIDE;     /* [64][QSTRIDE] */
    float *sw = (float *)(sk + MMA_KEYS * QSTRIDE); /* [R][H] */
    float *sks = sw + R * H;                        /* [64] */
    int *slo = (int *)(sks + MMA_KEYS), *shi = slo + R;
    for (int i = tid; i < nr * H * 8; i += blockDim.x) {
        int v = i >> 3, c = i & 7;
        *(uint4 *)(sq + (size_t)v * QSTRIDE + c * 16) =
            *(const uint4 *)(p.q8 + ((size_t)row0 * H + v) * 128 + c * 16);
    }
    stage_rows(p, row0, nr, H, tid, sw, slo, shi);
    __syncthreads();
    long kmin, kmax;
    keys_span(slo, shi, nr, &kmin, &kmax);
    /* p.tiles consecutive tiles per block: q and w are loaded once for all of them */
    for (int tile = 0; tile < p.tiles; tile++) {
        const long tix = (long)blockIdx.x * p.tiles + tile, t0 = tix * MMA_KEYS;
        if (t0 >= p.stride)
            break; /* uniform over the block */
        if (tile)
            __syncthreads(); /* the previous tile's K is no longer read */
        const bool any_key = t0 < kmax && t0 + MMA_KEYS > kmin;
        const uint8_t *page = NULL;
        if (PAGED && any_key)
            page = p.kv + (size_t)p.bt[(size_t)g * p.max_blocks + tix] * DSA_K_PAGE_BYTES;
        for (int i = tid; i < MMA_KEYS * 8; i += blockDim.x) {
            int key = i >> 3, c = i & 7;
            long s = t0 + key;
            uint4 v = make_uint4(0, 0, 0, 0);
            if (any_key && s >= kmin && s < kmax)
                v = PAGED ? *(const uint4 *)(page + key * 128 + c * 16)
                          : *(const uint4 *)(p.kv + (size_t)s * 128 + c * 16);
            *(uint4 *)(sk + key * QSTRIDE + c * 16) = v;
        }
        for (int key = tid; key < MMA_KEYS; key += blockDim.x) {
            long s = t0 + key;
            float ks = 0.0f;
            if (any_key && s >= kmin && s < kmax)
                ks = PAGED ? *(const float *)(page + DSA_K_SCALE_OFF + key * 4) : p.ks[s];
            sks[key] = ks;
        }
        __syncthreads();
        for (int r = 0; r < nr; r++) {
            float acc[MT][2][4];
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int nt = 0; nt < 2; nt++)
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        acc[mt][nt][e] = 0.0f;
            if (any_key) {
#pragma unroll
                for (int kk = 0; kk < 4; kk++) {
                    uint32_t b[2][2];
#pragma unroll
                    for (int nt = 0; nt < 2; nt++) {
                        const uint8_t *kb =
                            sk + (warp * 16 + nt * 8 + grp) * QSTRIDE + kk * 32 + tig * 4;
                        b[nt][0] = *(const uint32_t *)kb;
                        b[nt][1] = *(const uint32_t *)(kb + 16);
                    }
#pragma unroll
                    for (int mt = 0; mt < MT; mt++) {
                        const uint8_t *qa =
                            sq + ((size_t)r * H + mt * 16 + grp) * QSTRIDE + kk * 32 + tig * 4;
                        uint32_t a[4] = {*(const uint32_t *)qa,
                                         *(const uint32_t *)(qa + 8 * QSTRIDE),
                                         *(const uint32_t *)(qa + 16),
                                         *(const uint32_t *)(qa + 8 * QSTRIDE + 16)};
#pragma unroll
                        for (int nt = 0; nt < 2; nt++)
                            mma_e4m3(acc[mt][nt], a, b[nt][0], b[nt][1]);
                    }
                }
            }
            const float *wr = sw + r * H;
#pragma unroll
            for (int nt = 0; nt < 2; nt++)
#pragma unroll
                for (int j = 0; j < 2; j++) {
                    float part = 0.0f;
#pragma unroll
                    for (int mt = 0; mt < MT; mt++) {
                        float x = acc[mt][nt][j], y = acc[mt][nt][2 + j];
                        if (x > 0.0f)
                            part = __fadd_rn(part, __fmul_rn(wr[mt * 16 + grp], x));
                        if (y > 0.0f)
                            part = __fadd_rn(part, __fmul_rn(wr[mt * 16 + grp + 8], y));
                    }
                    part = __fadd_rn(part, __shfl_xor_sync(0xffffffffu, part, 4));
                    part = __fadd_rn(part, __shfl_xor_sync(0xffffffffu, part, 8));
                    part = __fadd_rn(part, __shfl_xor_sync(0xffffffffu, part, 16));
                    const int key = warp * 16 + nt * 8 + tig * 2 + j;
                    const long s = t0 + key;
                    if (grp != 0 || s >= p.stride)
                        continue;
                    size_t o = (size_t)(row0 + r) * p.stride + s;
                    if (s >= slo[r] && s < shi[r]) {
                        float v = __fmul_rn(sks[key], part);
                        d_logit_store(p.out, o, p.lbf16, v);
                    } else if (p.clean) {
                        d_logit_mask(p.out, o, p.lbf16);
                    }
                }
        }
    }
}

/* DSA_CUDA_LOGITS=simt selects the CUDA-core kernel above, =mma the tensor-core kernel below
   also for decode (A/B comparisons against decode.cu) */
static bool use_simt(void)
{
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("DSA_CUDA_LOGITS");
        v = e && !strcmp(e, "simt");
    }
    return v;
}

/*
 * Tiles per block for `work` 64-key tiles in all: more tiles amortise the block's q and w
 * loads (B = 64, L = 128K: 990 us at 4, 931 at 16 on the H200), fewer spread a small batch
 * over more blocks (B = 1: 26.5 us at 1, 72 at 16): work / 4096 rounded down to a power of
 * two, within [1, 16]. DSA_CUDA_MMA_TILES=1..16 overrides it (A/B timings).
 */
static int mma_tiles(long work)
{
    static int forced = -1;
    if (forced < 0) {
        const char *e = getenv("DSA_CUDA_MMA_TILES");
        int n = e ? atoi(e) : 0;
        forced = n >= 1 && n <= 16 ? n : 0;
    }
    if (forced)
        return forced;
    int t = 1;
    while (t < 16 && 2L * t * 4096 <= work)
        t *= 2;
    return t;
}

template <bool PAGED, int MT>
static int launch_mma(const logits_params &p, long cols, int groups, cudaStream_t st)
{
    size_t smem = (size_t)p.R * p.H * QSTRIDE + MMA_KEYS * QSTRIDE + (size_t)p.R * p.H * 4 +
                  MMA_KEYS * 4 + (size_t)p.R * 8;
    static bool raised;
    if (!raised) {
        CUDA_CHECK(cudaFuncSetAttribute(logits_mma_kernel<PAGED, MT>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, 160 * 1024));
        raised = true;
    }
    if (cols <= 0 || groups <= 0)
        return DSA_K_OK;
    logits_params q = p;
    q.tiles = mma_tiles((cols + MMA_KEYS - 1) / MMA_KEYS * groups);
    const long per_block = (long)MMA_KEYS * q.tiles;
    dim3 grid((unsigned)((cols + per_block - 1) / per_block), (unsigned)groups);
    logits_mma_kernel<PAGED, MT><<<grid, 128, smem, st>>>(q);
    return DSA_K_OK;
}

template <bool PAGED>
static int launch(const logits_params &p, long cols, int groups, cudaStream_t st)
{
    if (!use_simt())
        return p.H == 64 ? launch_mma<PAGED, 4>(p, cols, groups, st)
                         : launch_mma<PAGED, 2>(p, cols, groups, st);
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
                       a->stride,      a->clean,
                       MMA_TILES};
    /* the fp8 wgmma kernel (decode_wgmma.cu) unless DSA_CUDA_LOGITS names another: =pipe the
       mma.sync kernel of decode.cu (next_n 1, 2, 4), =mma|simt the kernels below */
    const char *e = getenv("DSA_CUDA_LOGITS");
    int rc = !e || !*e || !strcmp(e, "wgmma") ? dsa_cuda_decode_wgmma_launch(f, a, st)
             : !strcmp(e, "pipe")             ? dsa_cuda_decode_pipe_launch(f, a, st)
                                              : DSA_K_UNSUPPORTED;
    if (rc != DSA_K_UNSUPPORTED)
        return rc;
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
                       a->stride,    a->clean,
                       MMA_TILES};
    /* the fp8 wgmma kernel (prefill_wgmma.cu) unless DSA_CUDA_LOGITS names another: =mma the
       mma.sync kernel above (the default before it), =simt the CUDA-core kernel */
    const char *e = getenv("DSA_CUDA_LOGITS");
    if (!e || !*e || !strcmp(e, "wgmma")) {
        int rc = dsa_cuda_prefill_wgmma_launch(f, a, st);
        if (rc != DSA_K_UNSUPPORTED)
            return rc;
    }
    return launch<false>(p, a->clean ? a->stride : a->NK, (a->M + PREFILL_ROWS - 1) / PREFILL_ROWS,
                         st);
}
