/*
 * The sample datasets shipped in datasets/samples/ and embedded in the binary at build time
 * (datasets/samples.cmake), so `sample:<name>` works wherever dsa-eval is installed:
 *   sample:mrcr-synth-8needle.jsonl       the default MRCR data of the demo and in-process runs
 *   sample:mrcr-synth-2needle-tiny.jsonl  tiny, for tests
 * The MRCR reader streams files, so an embedded sample is written once to the cache
 * ($DSA_EVAL_CACHE/samples/<sha256>/<name>, verified by sha256 on reuse) and read from there.
 * Ownership: the table is static; dsa_sample_path() returns a string the caller frees.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_DATASETS_SAMPLES_H
#define DSA_DATASETS_SAMPLES_H

#include <stddef.h>

#define DSA_SAMPLE_PREFIX       "sample:"
#define DSA_SAMPLE_MRCR_DEFAULT "sample:mrcr-synth-8needle.jsonl"

struct dsa_sample {
    const char *name; /* file name in datasets/samples/ */
    const unsigned char *data;
    size_t len;
    const char *sha256; /* hex */
};

/* Ends with a row whose name is NULL (generated/dsa_samples_data.c). */
extern const struct dsa_sample dsa_samples[];

/* The sample called name ("mrcr-synth-8needle.jsonl", with or without "sample:"), or NULL. */
const struct dsa_sample *dsa_sample_find(const char *name);

/* A file holding the sample's bytes (see above); NULL with the error printed (unknown
   sample, cache not writable). */
char *dsa_sample_path(const char *name);

#endif
