/*
 * The RULER eval's shipped data (datasets/ruler/: the public-domain haystack and the word
 * lists, provenance in its README.md), embedded in the binary at build time by
 * datasets/embed.cmake. Internal to evals/ruler_*.c.
 * Ownership: the table and its bytes are static and read-only.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_EVALS_RULER_DATA_H
#define DSA_EVALS_RULER_DATA_H

#include <stddef.h>

struct dsa_ruler_blob {
    const char *name; /* file name in datasets/ruler/ */
    const char *data; /* len bytes plus a NUL */
    size_t len;
    const char *sha256; /* hex */
};

/* Ends with a row whose name is NULL. */
extern const struct dsa_ruler_blob dsa_ruler_blobs[];

/* The blob called name, or NULL. */
const struct dsa_ruler_blob *dsa_ruler_blob(const char *name);

#define DSA_RULER_HAYSTACK_DEFAULT "kjv-genesis-2kings.txt"

#endif
