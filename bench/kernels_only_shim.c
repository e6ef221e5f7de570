/*
 * DSA_KERNELS_ONLY builds: the one function of util/hash.c that the kernels use, without
 * linking OpenSSL (util/hash.c needs its headers). Same definition as util/hash.c.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdint.h>

#include "util/hash.h"

uint64_t dsa_splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}
