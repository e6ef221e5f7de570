/*
 * The CUDA implementation of dsa_kernels.h: the stage entry points of its vtable (each a
 * launch on the default stream and one cudaGetLastError() check that names the op), and the
 * plugin-ABI vtable (device memory through cudaMalloc/cudaMemcpy) that dsa_cuda_api() returns.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.cuh"
#include "dsa_cuda.h"

/* st of one kernel launch, or DSA_K_EDEVICE (printed, naming op) when the launch failed: the
   one cudaGetLastError() check of every op */
static int launched(const char *op, int st)
{
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) {
        fprintf(stderr, "dsa-eval: CUDA error in %s: %s\n", op, cudaGetErrorString(err));
        return DSA_K_EDEVICE;
    }
    return st;
}

static int cuda_k_prep(const dsa_k_flags *f, const dsa_k_prep_args *a)
{
    dsa_k_shape s = {DSA_K_STAGE_K_PREP, 0, 0};
    return dsa_k_shape_supported(f, &s) ? launched("k_prep", dsa_cuda_k_prep_launch(f, a, 0))
                                        : DSA_K_UNSUPPORTED;
}

static int cuda_q_prep(const dsa_k_flags *f, const dsa_q_prep_args *a)
{
    dsa_k_shape s = {DSA_K_STAGE_Q_PREP, 0, 0};
    return dsa_k_shape_supported(f, &s) ? launched("q_prep", dsa_cuda_q_prep_launch(f, a, 0))
                                        : DSA_K_UNSUPPORTED;
}

static int cuda_logits_decode(const dsa_k_flags *f, const dsa_logits_decode_args *a)
{
    dsa_k_shape s = {DSA_K_STAGE_LOGITS_DECODE, a->N, 0};
    return dsa_k_shape_supported(f, &s)
               ? launched("logits_decode", dsa_cuda_logits_decode_launch(f, a, 0))
               : DSA_K_UNSUPPORTED;
}

static int cuda_logits_prefill(const dsa_k_flags *f, const dsa_logits_prefill_args *a)
{
    dsa_k_shape s = {DSA_K_STAGE_LOGITS_PREFILL, 0, 0};
    return dsa_k_shape_supported(f, &s)
               ? launched("logits_prefill", dsa_cuda_logits_prefill_launch(f, a, 0))
               : DSA_K_UNSUPPORTED;
}

static int cuda_topk(const dsa_k_flags *f, const dsa_topk_args *a)
{
    dsa_k_shape s = {DSA_K_STAGE_TOPK, 0, a->k};
    return dsa_k_shape_supported(f, &s) ? launched("topk", dsa_cuda_topk_launch(f, a, 0))
                                        : DSA_K_UNSUPPORTED;
}

static int cuda_prep(const dsa_k_flags *f, const dsa_k_prep_args *k, const dsa_q_prep_args *q)
{
    dsa_k_shape s = {DSA_K_STAGE_Q_PREP, 0, 0};
    return dsa_k_shape_supported(f, &s) ? launched("prep", dsa_cuda_prep_launch(f, k, q, 0))
                                        : DSA_K_UNSUPPORTED;
}

/* ---- the vtable ---- */

static char device_name[320] = "cuda";
static char build_str[128];

static const char *cuda_device(void)
{
    return device_name;
}

static void *cuda_alloc(size_t n)
{
    void *p = NULL;
    if (cudaMalloc(&p, n ? n : 1) != cudaSuccess) {
        fprintf(stderr, "dsa-eval: cannot allocate %zu bytes on the GPU\n", n);
        return NULL;
    }
    return p;
}

static void cuda_free(void *p)
{
    cudaFree(p);
}

static int cuda_upload(void *dst, const void *src, size_t n)
{
    CUDA_CHECK(cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice));
    return 0;
}

static int cuda_download(void *dst, const void *src, size_t n)
{
    CUDA_CHECK(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost));
    return 0;
}

static int cuda_memset(void *dst, int byte, size_t n)
{
    CUDA_CHECK(cudaMemset(dst, byte, n));
    return 0;
}

static int cuda_sync(void)
{
    CUDA_CHECK(cudaDeviceSynchronize());
    return 0;
}

static const dsa_kernels_api cuda_vtable = {
    /* .abi_version    = */ DSA_KERNELS_ABI_VERSION,
    /* .struct_size    = */ sizeof(dsa_kernels_api),
    /* .name           = */ "cuda",
    /* .build          = */ build_str,
    /* .device         = */ cuda_device,
    /* .init           = */ NULL,
    /* .alloc          = */ cuda_alloc,
    /* .free           = */ cuda_free,
    /* .upload         = */ cuda_upload,
    /* .download       = */ cuda_download,
    /* .memset_        = */ cuda_memset,
    /* .sync           = */ cuda_sync,
    /* .supported      = */ dsa_k_shape_supported,
    /* .k_prep         = */ cuda_k_prep,
    /* .q_prep         = */ cuda_q_prep,
    /* .logits_decode  = */ cuda_logits_decode,
    /* .logits_prefill = */ cuda_logits_prefill,
    /* .topk           = */ cuda_topk,
    /* .prep           = */ cuda_prep,
};

/* the vtable when a GPU is usable, else NULL; the first call probes the device */
extern "C" const dsa_kernels_api *dsa_cuda_api(void)
{
    static int state; /* 0 = not probed, 1 = usable, -1 = not */
    if (state == 0) {
        int n = 0;
        cudaDeviceProp prop;
        if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1 ||
            cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
            cudaGetLastError(); /* clear the sticky "no device" error */
            state = -1;
        } else {
            snprintf(device_name, sizeof device_name, "%s (sm_%d%d, %d SMs)", prop.name, prop.major,
                     prop.minor, prop.multiProcessorCount);
            snprintf(build_str, sizeof build_str, "nvcc %d.%d sm_90a", __CUDACC_VER_MAJOR__,
                     __CUDACC_VER_MINOR__);
            state = 1;
        }
    }
    return state > 0 ? &cuda_vtable : NULL;
}

extern "C" int dsa_cuda_time_calls(int (*fn)(void *ctx), void *ctx, int n, float *ms)
{
    /* one event between consecutive calls: call i is the time from event i to event i + 1 */
    cudaEvent_t *ev = (cudaEvent_t *)calloc((size_t)n + 1, sizeof *ev);
    int made = 0, bad = ev == NULL;
    while (!bad && made <= n && cudaEventCreate(&ev[made]) == cudaSuccess)
        made++;
    bad = bad || made <= n || cudaEventRecord(ev[0], 0) != cudaSuccess;
    for (int i = 0; i < n && !bad; i++)
        bad = fn(ctx) != DSA_K_OK || cudaEventRecord(ev[i + 1], 0) != cudaSuccess;
    bad = bad || cudaEventSynchronize(ev[n]) != cudaSuccess;
    for (int i = 0; i < n && !bad; i++)
        bad = cudaEventElapsedTime(&ms[i], ev[i], ev[i + 1]) != cudaSuccess;
    for (int i = 0; i < made; i++)
        cudaEventDestroy(ev[i]);
    free(ev);
    if (bad)
        fprintf(stderr, "dsa-eval: CUDA error while timing: %s\n",
                cudaGetErrorString(cudaGetLastError()));
    return bad ? -1 : 0;
}

extern "C" size_t dsa_cuda_l2_bytes(void)
{
    int dev = 0, l2 = 0;
    if (!dsa_cuda_api() || cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev) != cudaSuccess)
        return 0;
    return (size_t)l2;
}
