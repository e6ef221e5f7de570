/*
 * The run header shared by the in-process evaluations (mrcr, gsm8k).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_EVALS_INPROC_HEADER_H
#define DSA_EVALS_INPROC_HEADER_H

#include <jansson.h>

#include "backend/inprocess.h"

/* A new run header (new reference) for run 1 of `eval`: o->command as the command line, the
   stack's identity (`backend`, what dsa_backend_describe gave: stolen) under "backend", and in
   "match" what a resume must agree on — eval, backend, device, kernels, variant, top-k, proxy
   and its seed. Callers add their eval's own match keys. */
json_t *dsa_inproc_header_new(json_t *backend, const char *eval, const struct dsa_inproc_opts *o);

/* The records' time per stage ("stage_us_per_token") summed over rows for the text summary:
   Σ µs·context_tokens per stage and Σ context_tokens, so the line shows total time over total
   tokens. Plain values, zero-initialised by the caller. */
struct dsa_inproc_stage_sum {
    double us[DSA_INPROC_NT];
    long tokens;
};
/* adds one record (a record without the key, from an older build, adds nothing) */
void dsa_inproc_stage_sum_add(struct dsa_inproc_stage_sum *s, json_t *rec);
/* prints "µs per context token: 94.1 = proxy 3.0 + S1 2.1 + … + host 0.5" (nothing when no
   record had times) */
void dsa_inproc_stage_sum_print(const struct dsa_inproc_stage_sum *s);

#endif
