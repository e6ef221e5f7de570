/*
 * Trace files: q/k/w of the indexer captured from a real model, stored as safetensors
 * (docs/kernels.md "Trace files"). The file is memory-mapped; the header (8-byte
 * little-endian length, then a JSON object) is parsed with jansson and every tensor entry is
 * checked: a known dtype, a shape of at most 8 non-negative dimensions, data_offsets inside
 * the data section and exactly shape x dtype bytes long, no overflow.
 *
 * Tensors of an indexer trace (one prompt, one layer):
 *   k_raw  BF16 [T,128]       k = x . Wk for every prompt token (before LayerNorm)
 *   ln_w, ln_b F32 [128]      the index-K LayerNorm
 *   cos, sin F32 [P,32]       the RoPE table (P >= T), as the model computes it (YaRN)
 *   q_pos  I64 [M]            positions of the query rows (strictly increasing, < T)
 *   q_raw  BF16 [M,H,128]     q = qr . Wq_b of those rows (before RoPE), H in {32, 64}
 *   w_raw  BF16|F32 [M,H]     weights_proj(x) of those rows (before folding)
 *   tokens I32|I64 [T]        optional: the token ids
 * and "__metadata__" (string values) may carry "rope" ("neox" | "interleaved"), "model",
 * "layer".
 *
 * Ownership: dsa_trace owns the mapping (or the copy) and its entries; tensors returned by
 * dsa_trace_get() point into it and live until dsa_trace_free().
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_KERNELS_TRACE_H
#define DSA_KERNELS_TRACE_H

#include <stddef.h>
#include <stdint.h>

enum dsa_trace_dtype { DSA_TR_BF16, DSA_TR_F16, DSA_TR_F32, DSA_TR_I32, DSA_TR_I64, DSA_TR_U8 };

struct dsa_trace_tensor {
    const char *name;
    enum dsa_trace_dtype dtype;
    int ndim;
    int64_t shape[8];
    const void *data; /* not necessarily aligned */
    size_t nbytes;
};

typedef struct dsa_trace dsa_trace;

/* Maps and parses PATH. Returns 0, or -1 with one line printed ("cannot read trace 'P': …"). */
int dsa_trace_open(const char *path, dsa_trace **out);
/* Parses a whole safetensors file held in memory (borrowed: it must outlive the trace).
   Returns 0, or -1 and writes the reason to err[errlen] (nothing printed): the fuzz seam. */
int dsa_trace_parse(const uint8_t *buf, size_t len, dsa_trace **out, char *err, size_t errlen);
void dsa_trace_free(dsa_trace **t);

/* the tensor called name, or NULL */
const struct dsa_trace_tensor *dsa_trace_get(const dsa_trace *t, const char *name);
/* a "__metadata__" string, or NULL */
const char *dsa_trace_meta(const dsa_trace *t, const char *key);

#endif
