/*
 * Choosing an implementation of dsa_kernels.h: the built-in CPU reference, the built-in CUDA
 * kernels, or a shared object loaded with --kernels PATH.so (the plugin ABI in dsa_kernels.h).
 *
 * Ownership: returned api pointers are static (built-ins) or live until dsa_kernels_unload()
 * (plugins); dsa_kernels_unload() closes every loaded library.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_KERNELS_PLUGIN_H
#define DSA_KERNELS_PLUGIN_H

#include <stdbool.h>

#include "dsa_kernels.h"

/* dlopen()s PATH, finds DSA_KERNELS_SYMBOL, checks abi_version/struct_size and the required
   slots, calls init. Prints one line and returns NULL on any failure. */
const struct dsa_kernels_api *dsa_kernels_load(const char *path);
void dsa_kernels_unload(void);

/* "cuda", "cpu" or "auto" (cuda when a GPU is usable, else cpu) -> api; prints and returns
   NULL when "cuda" is asked for and unavailable, or the name is unknown. */
const struct dsa_kernels_api *dsa_kernels_pick(const char *device);

#endif
