/*
 * The in-process backend's requests on captured traces (kernels/trace.h files written by
 * scripts/capture_traces.py), run by inprocess_backend.c when a request's body names a
 * "trace": every layer of the file through the indexer stack and the fp64 golden model, with
 * the model's own selection stored beside it. Not a public interface: the backend's request
 * kinds are documented in inprocess_backend.c, their use in evals/inproc_traces.h.
 *
 * Ownership: borrows the stack and the body; *raw is a new reference the caller answers with.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_BACKEND_INPROCESS_TRACE_H
#define DSA_BACKEND_INPROCESS_TRACE_H

#include <jansson.h>

#include "backend/inprocess.h"

/* what a trace request ended with */
enum dsa_inproc_trace_rc {
    DSA_INPROC_TRACE_OK = 0,
    DSA_INPROC_TRACE_BAD = -1,   /* the trace cannot be read or does not fit (printed) */
    DSA_INPROC_TRACE_STACK = -2, /* the stack could not run it (printed) */
};

/* DSA_API_SELECT on a trace: body {"trace": path, "needles": [[lo, hi]...]}; H index heads,
   top-K. */
int dsa_inproc_trace_select(dsa_inproc *ip, int H, int K, json_t *body, json_t **raw);

/* DSA_API_MTP_VERIFY on a trace: body {"trace": path, "mtp": N}. */
int dsa_inproc_trace_mtp(dsa_inproc *ip, int H, int K, json_t *body, json_t **raw);

#endif
