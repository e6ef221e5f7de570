/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "util/hash.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/msg.h"

struct dsa_sha256 {
    EVP_MD_CTX *ctx;
};

dsa_sha256 *dsa_sha256_new(void)
{
    dsa_sha256 *h = dsa_xcalloc(1, sizeof *h);
    h->ctx = EVP_MD_CTX_new();
    if (!h->ctx || EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1) {
        fprintf(stderr, "dsa-eval: libcrypto cannot initialise SHA-256\n");
        abort();
    }
    return h;
}

void dsa_sha256_update(dsa_sha256 *h, const void *data, size_t len)
{
    if (len)
        EVP_DigestUpdate(h->ctx, data, len);
}

void dsa_sha256_final_hex(dsa_sha256 *h, char hex[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_DigestFinal_ex(h->ctx, md, &n);
    for (unsigned int i = 0; i < n && i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    hex[64] = '\0';
}

void dsa_sha256_free(dsa_sha256 **hp)
{
    if (!*hp)
        return;
    EVP_MD_CTX_free((*hp)->ctx);
    free(*hp);
    *hp = NULL;
}

void dsa_sha256_hex(const void *data, size_t len, char hex[65])
{
    dsa_sha256 *h = dsa_sha256_new();
    dsa_sha256_update(h, data, len);
    dsa_sha256_final_hex(h, hex);
    dsa_sha256_free(&h);
}

int dsa_sha256_file(const char *path, char hex[65])
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return dsa_errorf("cannot open '%s': %s", path, strerror(errno));
    dsa_sha256 *h = dsa_sha256_new();
    unsigned char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        dsa_sha256_update(h, buf, n);
    int bad = ferror(f);
    fclose(f);
    dsa_sha256_final_hex(h, hex);
    dsa_sha256_free(&h);
    if (bad)
        return dsa_errorf("cannot read '%s'", path);
    return 0;
}

uint64_t dsa_fnv1a64(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

uint64_t dsa_splitmix64(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
