/*
 * The run header shared by the in-process evaluations (mrcr, gsm8k).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_EVALS_INPROC_HEADER_H
#define DSA_EVALS_INPROC_HEADER_H

#include <jansson.h>

#include "backend/inprocess.h"

/* A new run header (new reference) for run 1 of `eval`: o->command as the command line, the
   stack's identity under "backend", and in "match" what a resume must agree on — eval,
   backend, device, kernels, variant, top-k, proxy and its seed. Callers add their eval's own
   match keys. */
json_t *dsa_inproc_header_new(const dsa_inproc *ip, const char *eval,
                              const struct dsa_inproc_opts *o);

#endif
