/*
 * The Hopper pipeline pieces shared by the fp8 wgmma kernels (decode_wgmma.cu, S3a, and
 * prefill_wgmma.cu and prefill_wg4.cu, S3b): mbarrier init / expect-bytes / arrive / parity
 * wait (spinning, or suspended for a copy warp), the bulk copy into shared memory, the wgmma
 * operand descriptor of a 128-byte-swizzled K-major tile, the wgmma commit / wait and the
 * accumulator fence around them, the 1024-byte alignment of the dynamic shared array, the named
 * barrier of the consumer warpgroup, the epilogue's head dot and sum, and on the host the
 * driver's tensor-map encoder and the encoding of a byte tensor map with the options all of
 * them use. Header-only (static inline): each kernel file gets its own copy. Every
 * shared-memory pointer passed in must point into the calling CTA's shared memory.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_KERNELS_CUDA_WGMMA_PIPE_CUH
#define DSA_KERNELS_CUDA_WGMMA_PIPE_CUH

#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdint.h>
#include <stdio.h>

#include "dsa_kernels.h" /* DSA_K_EDEVICE */

#define DW_THREADS 128 /* one consumer warpgroup */

__device__ __forceinline__ uint32_t dw_smem(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void dw_bar_init(uint64_t *bar, int count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(dw_smem(bar)), "r"(count)
                 : "memory");
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

/* dw_bar_wait for a thread with nothing else to do (a copy warp waiting for a free stage): each
   try asks the hardware to suspend the thread until the phase completes (or ~10 ms pass), so
   the wait does not spin on the issue slots its SM sub-partition shares with the consumers */
__device__ __forceinline__ void dw_bar_wait_idle(uint64_t *bar, uint32_t parity)
{
    uint32_t done;
    do {
        asm volatile("{\n.reg .pred p;\n"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, %3;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(dw_smem(bar)), "r"(parity), "r"(10000000u)
                     : "memory");
    } while (!done);
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

/* the 4 consumer warps only (id 1; 0 is __syncthreads') */
__device__ __forceinline__ void dw_consumers_sync(void)
{
    asm volatile("bar.sync 1, %0;\n" ::"n"(DW_THREADS) : "memory");
}

__device__ __forceinline__ void dw_commit(void)
{
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

template <int G> __device__ __forceinline__ void dw_wait(void)
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(G) : "memory");
}

/* the driver's cuTensorMapEncodeTiled (looked up once; NULL, with a message, when the driver
   has none) */
static inline PFN_cuTensorMapEncodeTiled_v12000 dw_encoder(void)
{
    static PFN_cuTensorMapEncodeTiled_v12000 encode;
    if (!encode) {
        cudaDriverEntryPointQueryResult q;
        void *fn = NULL;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000,
                                             cudaEnableDefault, &q) != cudaSuccess ||
            q != cudaDriverEntryPointSuccess || !fn) {
            fprintf(stderr, "dsa-eval: CUDA driver has no cuTensorMapEncodeTiled\n");
            return NULL;
        }
        encode = (PFN_cuTensorMapEncodeTiled_v12000)fn;
    }
    return encode;
}

/* a tensor map of bytes (rank 2 or 3: dims, the strides of dims 1.., box) with the options every
   wgmma operand here uses: 128-byte swizzle, 256-byte L2 promotion, zero fill past the end;
   DSA_K_EDEVICE with a message when the driver refuses */
static inline int dw_map_u8(CUtensorMap *map, int rank, const void *base, const cuuint64_t *dims,
                            const cuuint64_t *strides, const cuuint32_t *box)
{
    PFN_cuTensorMapEncodeTiled_v12000 encode = dw_encoder();
    if (!encode)
        return DSA_K_EDEVICE;
    const cuuint32_t estr[3] = {1, 1, 1};
    CUresult r =
        encode(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, (cuuint32_t)rank, (void *)base, dims, strides,
               box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
               CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "dsa-eval: cuTensorMapEncodeTiled failed (%d)\n", (int)r);
        return DSA_K_EDEVICE;
    }
    return DSA_K_OK;
}

/* an empty asm that claims to rewrite every register of acc: the compiler may not move the
   accumulator's reads above the wgmma wait before it, nor keep copies of it across the next
   wgmma (ptxas would then serialise every wgmma: ptxas -v reports C7514). After a wait, on the
   registers it released; before an issue, on those it will write. */
template <int N> __device__ __forceinline__ void dw_fence_acc(float (&acc)[N])
{
#pragma unroll
    for (int i = 0; i < N; i++)
        asm volatile("" : "+f"(acc[i])::"memory");
}

/* the first 1024-byte boundary at or after the dynamic shared array (the 128-byte swizzle's
   atom); an offset from the array itself, not an integer cast, so the compiler still knows the
   pointer is shared and reads through it with LDS rather than generic loads */
__device__ __forceinline__ uint8_t *dw_align1024(unsigned char *smem_raw)
{
    return smem_raw + ((1024u - (dw_smem(smem_raw) & 1023u)) & 1023u);
}

/*
 * The epilogue's head dot of both wgmma kernels: for accumulator row group `row` (its H columns,
 * H/8 n8-tiles of the m64nNk32 layout), relu(dot) * w over the thread's H/4 heads in one fma
 * chain: part0 / part1 for the thread's keys 16 warp + grp and + 8, before the sum over the 4
 * lanes tig. A fixed order, so reruns are bitwise identical.
 */
template <int H, int NACC>
__device__ __forceinline__ void dw_head_dot(const float (&acc)[NACC], int row, const float *ws,
                                            int tig, float &part0, float &part1)
{
    part0 = 0.0f;
    part1 = 0.0f;
#pragma unroll
    for (int q = 0; q < H / 8; q++) { /* n-tile n8 of the accumulator */
        const int n8 = row * (H / 8) + q;
        const float2 wv = *(const float2 *)(ws + 8 * n8 + 2 * tig);
        part0 = __fmaf_rn(wv.x, fmaxf(acc[4 * n8], 0.0f), part0);
        part0 = __fmaf_rn(wv.y, fmaxf(acc[4 * n8 + 1], 0.0f), part0);
        part1 = __fmaf_rn(wv.x, fmaxf(acc[4 * n8 + 2], 0.0f), part1);
        part1 = __fmaf_rn(wv.y, fmaxf(acc[4 * n8 + 3], 0.0f), part1);
    }
}

/* dw_head_dot, then two xor-shuffles over the 4 lanes tig: every lane gets the group's sums */
template <int H, int NACC>
__device__ __forceinline__ void dw_head_sum(const float (&acc)[NACC], int row, const float *ws,
                                            int tig, float &part0, float &part1)
{
    dw_head_dot<H>(acc, row, ws, tig, part0, part1);
    part0 = __fadd_rn(part0, __shfl_xor_sync(0xffffffffu, part0, 1));
    part1 = __fadd_rn(part1, __shfl_xor_sync(0xffffffffu, part1, 1));
    part0 = __fadd_rn(part0, __shfl_xor_sync(0xffffffffu, part0, 2));
    part1 = __fadd_rn(part1, __shfl_xor_sync(0xffffffffu, part1, 2));
}

#endif
