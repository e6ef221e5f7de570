/*
 * The in-process backend: runs the DSA indexer stack (kernels/: the C reference, the CUDA
 * kernels, or a plugin) on token ids, with q/k/w from the proxy model (kernels/proxy.h), or
 * on inputs captured from a model (trace files, kernels/trace.h), and compares its top-k
 * selection with the fp64 golden selection (docs/kernels.md "The in-process backend").
 *
 * One selection (dsa_inproc_select_planted) for a prompt of T tokens and M query positions:
 *   S1 k_prep over all T tokens into a paged cache (slot = position),
 *   S2 q_prep for the M query tokens,
 *   S3b prefill logits of the query rows over the gathered K (causal: keys 0..pos),
 *   S4 top-k per row;
 * and the golden selection: the same q/k/w without quantization, LayerNorm and RoPE in fp64,
 * logits in fp64, top-k by (value desc, index asc). The golden selection does not depend on
 * the variant flags, so runs with different flags are compared against the same target.
 *
 * Ownership: dsa_inproc owns its kernel library handles and buffers; callers own the arrays
 * they pass. Not thread-safe (one sample at a time).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_BACKEND_INPROCESS_H
#define DSA_BACKEND_INPROCESS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "dsa_kernels.h"
#include "kernels/trace.h"

/* Options of the indexer stack (`--backend inprocess`): the stack alone; what an eval runs on
   it is in its requests (inprocess_backend.c) and its run options (evals/inproc_header.h). */
struct dsa_inproc_opts {
    const char *device;     /* "auto" (NULL), "cuda" or "cpu" */
    const char *kernels_so; /* --kernels PATH.so, or NULL */
    struct dsa_k_flags flags;
    int topk;        /* 512, 1024 or 2048 (default 2048) */
    uint64_t seed;   /* proxy model seed (default 1) */
    bool rope_given; /* --variant rope=… given: it overrides a trace's "rope" */
};

/* Defaults: flags per dsa_k_flags_default, topk 2048, seed 1. */
void dsa_inproc_opts_init(struct dsa_inproc_opts *o);
/* What a trace file (kernels/trace.h) says of the stack that must run it: its index heads (the
   q_raw of its first layer: 32 or 64) and its RoPE layout ("__metadata__" "rope", unless
   o->rope_given). Returns 0, or -1 (printed: the file cannot be read, an unknown rope). */
int dsa_inproc_opts_from_trace(struct dsa_inproc_opts *o, const char *path);

typedef struct dsa_inproc dsa_inproc;

/* The in-process backend behind the vtable of backend.h (inprocess_backend.c): the stack of
   dsa_inproc_new(o) serving DSA_API_SELECT and DSA_API_MTP_VERIFY requests, one per poll().
   NULL with one line printed when the stack cannot start (exit DSA_EXIT_BACKEND). Freeing it
   frees the stack and unloads a plugin. */
struct dsa_backend;
struct dsa_backend *dsa_inproc_backend_new(const struct dsa_inproc_opts *o);
/* The error of a trace request whose trace cannot be read or does not fit the stack (printed
   when it happened): FAILED without `unreachable`, a data error rather than a device error. */
#define DSA_INPROC_BAD_TRACE "bad trace (printed above)"

/* "cpu", "cuda" (the device the stack runs on) */
const char *dsa_inproc_backend_device(struct dsa_backend *b);

/* Picks the implementation (plugin, or device), prints one line on failure and returns NULL
   (exit DSA_EXIT_BACKEND). */
dsa_inproc *dsa_inproc_new(const struct dsa_inproc_opts *o);
void dsa_inproc_free(dsa_inproc **p);

/* The identity for run headers (new reference): {"kind": "inprocess", "device", "kernels":
   {name, build, git}, "variant": {flag: value…}, "variant_str", "topk", "seed", "proxy"}. */
json_t *dsa_inproc_describe(const dsa_inproc *p);
const char *dsa_inproc_device(const dsa_inproc *p);

/* Where the wall time of the selections went, by stage (docs/kernels.md "Time per stage"):
   the proxy model's inputs, S1 k_prep, S2 q_prep, S3 logits, S4 top-k, the fp64 golden
   selection, and host work (moving data, gathering K, checks: the rest of the call). Each
   stage is timed up to the implementation's sync, so the CUDA figures are device time plus
   launch. dsa_inproc_select*() add to the totals; dsa_inproc_times_reset() zeroes them. */
enum {
    DSA_INPROC_T_PROXY,
    DSA_INPROC_T_S1,
    DSA_INPROC_T_S2,
    DSA_INPROC_T_S3,
    DSA_INPROC_T_S4,
    DSA_INPROC_T_GOLDEN,
    DSA_INPROC_T_HOST,
    DSA_INPROC_NT
};
/* the record keys: "proxy", "s1_k_prep", "s2_q_prep", "s3_logits", "s4_topk", "golden", "host" */
extern const char *const dsa_inproc_stage_keys[DSA_INPROC_NT];
void dsa_inproc_times_reset(dsa_inproc *p);
/* seconds per stage since the last reset, [DSA_INPROC_NT] (borrowed) */
const double *dsa_inproc_times(const dsa_inproc *p);
/* {"proxy": µs, …, "host": µs, "total": µs}: the totals per context token (tokens > 0) */
json_t *dsa_inproc_times_json(const dsa_inproc *p, long tokens);

/* the proxy's name in MRCR run headers: proxy-v1 plus the planted retrieval structure */
#define DSA_INPROC_PROXY_MRCR "proxy-v2"

/* The retrieval structure of one MRCR row, planted in the proxy model (kernels/proxy.h,
   "proxy-v2"); borrowed. */
struct dsa_inproc_plant {
    uint64_t topic;            /* the row's topic: its needle's request */
    const unsigned char *keys; /* [T]: 1 where the key carries the topic (needle, distractors,
                                  question) */
    bool queries;              /* the query rows carry it too */
};

/* Selection for query positions qpos[0..M) (strictly increasing, each < T) over the prompt
   tokens[0..T), with the row's retrieval structure planted (plant NULL: none): idx and golden
   [M, topk] i32 (positions in the prompt, -1 padded; idx in the implementation's order, golden
   sorted by (value desc, index asc)). Returns 0, or -1 with the error printed (a device error
   or an unsupported shape). */
int dsa_inproc_select_planted(dsa_inproc *p, const uint32_t *tokens, long T,
                              const struct dsa_inproc_plant *plant, const long *qpos, int M,
                              int32_t *idx, int32_t *golden);

/* Inputs of one selection, from the proxy model or a trace file (kernels/trace.h); all host
   memory, borrowed. */
struct dsa_inproc_inputs {
    long T;
    const uint16_t *k_raw; /* [T,128] bf16 */
    int M;
    const long *qpos;      /* [M], increasing, < T */
    const uint16_t *q_raw; /* [M,H,128] bf16 */
    const void *w_raw;     /* [M,H] bf16 or f32 (w_raw_dtype) */
    int w_raw_dtype;
    const float *ln_w, *ln_b; /* [128] */
    const float *cos, *sin;   /* [max_pos,32], max_pos >= T */
    long max_pos;
    /* optional fp32 originals of k_raw/q_raw (a float32 model's trace): the golden model reads
       these, the stack reads the bf16 roundings above, as a bf16 serving stack would; NULL: none */
    const float *k_f32, *q_f32;
};

/* The selection and the golden selection for explicit inputs (as dsa_inproc_select_planted). */
int dsa_inproc_select_inputs(dsa_inproc *p, const struct dsa_inproc_inputs *in, int32_t *idx,
                             int32_t *golden);
/* The inputs held by a trace file (kernels/trace.h; H index heads), copied out of the
   mapping; released with dsa_inproc_trace_inputs_release. Returns 0 or -1 (printed: a missing
   tensor, a wrong dtype or shape, bad q_pos). k_raw and q_raw may be BF16 or F32 (then
   k_f32/q_f32 hold the originals). */
int dsa_inproc_trace_inputs(const dsa_trace *tr, int H, struct dsa_inproc_inputs *in);
/* The same for one layer of a multi-layer trace: the per-layer tensors are named
   "layers.<L>.k_raw" and so on (prefix "layers.<L>."), cos/sin/q_pos/tokens are shared;
   prefix "" reads a single-layer file. */
int dsa_inproc_trace_layer_inputs(const dsa_trace *tr, const char *prefix, int H,
                                  struct dsa_inproc_inputs *in);
/* The model's own selection stored with the trace ("<prefix>topk", I32 [M, Kc], -1 padded)
   into sel [M, K] (-1 padded, at most K per row kept). Returns Kc when present, 0 when the
   trace has none, -1 on a wrong dtype or shape (printed). */
int dsa_inproc_trace_model_topk(const dsa_trace *tr, const char *prefix, int M, int K,
                                int32_t *sel);
/* The model's rows must be a selection: min(kc, pos + 1) distinct keys in [0, pos] each, so a
   wrongly captured topk cannot pass as agreement. Sorts each row of model [M, K] ascending
   (-1 last). Returns 0, or -1 with one line naming path and the row. */
int dsa_inproc_check_model_rows(const char *path, const struct dsa_inproc_inputs *in,
                                int32_t *model, int kc, int K);
/* |a ∩ b| / |b| of two ascending, -1 padded rows of k entries (1 when b is empty) */
double dsa_inproc_agreement(const int32_t *a, const int32_t *b, int k);
/* The layers of a trace: "__metadata__" "layers" ("0,3,10") when the file has per-layer
   tensors, else one layer (-1: the unprefixed single-layer form). Writes at most cap layer
   numbers into layers and returns their count, or -1 (printed) on a malformed list. */
int dsa_inproc_trace_layers(const dsa_trace *tr, int *layers, int cap);
void dsa_inproc_trace_inputs_release(struct dsa_inproc_inputs *in);

/* hex = sha256 over rows [0, rows) of sel [rows, K] (each sorted, -1 padded): per row its count
   as int32 LE, then its positions as int32 LE (the records' selection_sha256) */
void dsa_inproc_rows_sha256(const int32_t *sel, long rows, int K, char hex[65]);

/* Sorts each row of idx and golden ascending and returns the mean recall@k of idx against
   golden over the M rows (per_row[M] optional); hex = sha256 over the rows of (count as int32
   LE, the sorted positions as int32 LE), the records' selection_sha256. */
double dsa_inproc_recall(int32_t *idx, int32_t *golden, int M, int K, double *per_row,
                         char hex[65]);

/* MTP verify at decode over tokens[0..T): the cache holds all T tokens; the decode rows are
   the positions P..T-1, taken in steps of n = N+1 rows (positions p0..p0+N, row j sees keys
   0..p0+j, as vLLM's ctx = L - N + j + 1). Each step runs S3a once with next_n = n and then n
   times with next_n = 1, and S4 on both. Writes per step whether the selections are equal
   (identical[s]), whether the logits are bit-identical (logits_identical[s]) and the batched
   selection into sel [nsteps * n, topk] (sorted ascending per row). *nsteps = (T - P) / n.
   Returns 0, or -1 (printed). n must be 1..4. */
int dsa_inproc_mtp(dsa_inproc *p, const uint32_t *tokens, long T, long P, int n, long *nsteps,
                   unsigned char *identical, unsigned char *logits_identical, int32_t *sel);
/* The same verify on explicit inputs (a trace's layer): in->T keys, in->M = T - P decode rows
   at positions P..T-1 (in->qpos is not read). */
int dsa_inproc_mtp_inputs(dsa_inproc *p, const struct dsa_inproc_inputs *in, long P, int n,
                          long *nsteps, unsigned char *identical, unsigned char *logits_identical,
                          int32_t *sel);

#endif
