/*
 * The C reference as an implementation of the plugin ABI (host memory: malloc/memcpy).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdlib.h>
#include <string.h>

#include "dsa_kernels.h"

static const char *cpu_device(void)
{
    return "cpu";
}

static void *cpu_alloc(size_t n)
{
    return malloc(n ? n : 1);
}

static void cpu_free(void *p)
{
    free(p);
}

static int cpu_copy(void *dst, const void *src, size_t n)
{
    if (n)
        memmove(dst, src, n);
    return 0;
}

static int cpu_memset(void *dst, int byte, size_t n)
{
    memset(dst, byte, n);
    return 0;
}

static int cpu_sync(void)
{
    return 0;
}

static const struct dsa_kernels_api cpu_api = {
    /* .abi_version    = */ DSA_KERNELS_ABI_VERSION,
    /* .struct_size    = */ sizeof(struct dsa_kernels_api),
    /* .name           = */ "cpu-reference",
    /* .build          = */ "c17 -ffp-contract=off",
    /* .device         = */ cpu_device,
    /* .init           = */ NULL,
    /* .alloc          = */ cpu_alloc,
    /* .free           = */ cpu_free,
    /* .upload         = */ cpu_copy,
    /* .download       = */ cpu_copy,
    /* .memset_        = */ cpu_memset,
    /* .sync           = */ cpu_sync,
    /* .supported      = */ dsa_k_shape_supported,
    /* .k_prep         = */ dsa_cpu_k_prep,
    /* .q_prep         = */ dsa_cpu_q_prep,
    /* .logits_decode  = */ dsa_cpu_logits_decode,
    /* .logits_prefill = */ dsa_cpu_logits_prefill,
    /* .topk           = */ dsa_cpu_topk,
    /* .prep           = */ dsa_cpu_prep,
};

const struct dsa_kernels_api *dsa_kernels_cpu(void)
{
    return &cpu_api;
}
