/*
 * Hashing: SHA-256 through OpenSSL libcrypto (dataset checksums, prompt hashes, selection
 * hashes), and FNV-1a-64 + splitmix64 for seed derivation (docs/compare.md "Seeds and random
 * streams"). SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_UTIL_HASH_H
#define DSA_UTIL_HASH_H

#include <stddef.h>
#include <stdint.h>

typedef struct dsa_sha256 dsa_sha256;

dsa_sha256 *dsa_sha256_new(void);
void dsa_sha256_update(dsa_sha256 *h, const void *data, size_t len);
/* Writes 64 lowercase hex digits and a NUL to hex[65]; the context can then be freed. */
void dsa_sha256_final_hex(dsa_sha256 *h, char hex[65]);
void dsa_sha256_free(dsa_sha256 **h);

/* One-shot helpers */
void dsa_sha256_hex(const void *data, size_t len, char hex[65]);
/* Hashes a whole file, streaming. Returns 0, or -1 with the error printed. */
int dsa_sha256_file(const char *path, char hex[65]);

uint64_t dsa_fnv1a64(const void *data, size_t len);
uint64_t dsa_splitmix64(uint64_t x);

#endif
