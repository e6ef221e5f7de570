/*
 * A second build of the C reference as a plugin (dsa_kernels.h "Plugin ABI"): the tests load
 * it with --kernels / dsa_kernels_load() and compare it with the built-in reference. Built
 * with hidden visibility, so only dsa_kernels_get_api is exported. With
 * -DDSA_TEST_BAD_ABI it reports a wrong ABI version (the loader must refuse it).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "dsa_kernels.h"

static struct dsa_kernels_api api;

__attribute__((visibility("default"))) const struct dsa_kernels_api *dsa_kernels_get_api(void)
{
    api = *dsa_kernels_cpu();
    api.name = "test-plugin (cpu reference copy)";
    api.build = "tests/plugin/ref_plugin.c";
#ifdef DSA_TEST_BAD_ABI
    api.abi_version = 999;
#endif
    return &api;
}
