/*
 * A second build of the C reference as a plugin (dsa_kernels.h "Plugin ABI"): the tests load
 * it with --kernels / dsa_kernels_load() and compare it with the built-in reference. Built
 * with hidden visibility, so only dsa_kernels_get_api is exported. With
 * -DDSA_TEST_BAD_ABI it reports a wrong ABI version (the loader must refuse it); with
 * -DDSA_TEST_V1_ABI it is a plugin built before the prep slot (struct_size
 * DSA_KERNELS_API_SIZE_V1): the host must run S1 + S2 as two calls and never read the slot,
 * which here aborts.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdlib.h>

#include "dsa_kernels.h"

static struct dsa_kernels_api api;

#ifdef DSA_TEST_V1_ABI
static int past_the_struct(const struct dsa_k_flags *f, const struct dsa_k_prep_args *k,
                           const struct dsa_q_prep_args *q)
{
    (void)f, (void)k, (void)q;
    abort();
}
#endif

__attribute__((visibility("default"))) const struct dsa_kernels_api *dsa_kernels_get_api(void)
{
    api = *dsa_kernels_cpu();
    api.name = "test-plugin (cpu reference copy)";
    api.build = "tests/plugin/ref_plugin.c";
#ifdef DSA_TEST_BAD_ABI
    api.abi_version = 999;
#endif
#ifdef DSA_TEST_V1_ABI
    api.struct_size = (uint32_t)DSA_KERNELS_API_SIZE_V1;
    api.prep = past_the_struct;
#endif
    return &api;
}
