/*
 * What the in-process evaluations share (mrcr, gsm8k, ruler, the traces runs): the options
 * of a traces run, its header and match keys, the keys of a selection's record and the
 * by-bin summary.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_EVALS_INPROC_HEADER_H
#define DSA_EVALS_INPROC_HEADER_H

#include <jansson.h>

#include "backend/backend.h"
#include "backend/inprocess.h"
#include "evals/evals.h"
#include "store/store.h"
#include "util/shard.h"

/* An in-process evaluation: the stack's options and the run's (`--backend inprocess` of mrcr
   and gsm8k). Borrowed strings and arrays. */
struct dsa_inproc_run {
    struct dsa_inproc_opts stack;
    int max_query; /* MRCR: query rows = the last max_query tokens of the question (0 = all) */
    int mtp;       /* GSM8K: draft tokens N; rows per verify step = N + 1 */
    const char *dataset_name;    /* as given (--dataset), for the header */
    const char *const *datasets; /* resolved files, read in order into one run file */
    size_t ndatasets;
    const char *out_dir;
    long limit;            /* rows per (needles, bin), 0 = all */
    unsigned bins_mask;    /* 0 = all */
    unsigned needles_mask; /* 0 = all */
    unsigned tasks_mask;   /* RULER traces: bit t = enum dsa_ruler_task t, 0 = all */
    const char *eval;      /* --traces: "mrcr" (NULL) or "ruler": the manifest's bins and ids;
                              RULER's lengths go in bins_mask */
    bool force_new;
    bool json;                 /* the caller prints the summary as JSON: no text table on stdout */
    bool quiet;                /* no progress meter (-q) */
    const char *traces_dir;    /* --traces DIR: captured model traces instead of the proxy model */
    json_t *command;           /* the command line as dsa_run_command_json() made it (borrowed), for
                                  the run header; NULL = none */
    volatile int *interrupted; /* set by SIGINT/SIGTERM, or NULL */
    struct dsa_shard shard;    /* --shard i/n; n = 0: every sample */
};

/* dsa_inproc_opts_init for the stack, max_query 32, mtp 3, the rest zero */
void dsa_inproc_run_init(struct dsa_inproc_run *o);

/* A new run header (new reference) for run 1 of `eval`: o->command as the command line, the
   stack's identity (`backend`, what dsa_backend_describe gave: stolen) under "backend", and in
   "match" what a resume must agree on — eval, backend, device, kernels, variant, top-k, proxy
   and its seed. Callers add their eval's own match keys. */
json_t *dsa_inproc_header_new(json_t *backend, const char *eval, const struct dsa_inproc_run *o);

/* The match keys every in-process run has (those of dsa_inproc_header_new) set in match:
   the stack's identity from `backend` (dsa_backend_describe; borrowed) and options. */
void dsa_inproc_match_set(json_t *match, json_t *backend, const char *eval,
                          const struct dsa_inproc_opts *stack);

/* The keys of an answered DSA_API_SELECT (raw, inprocess_backend.c) in a record: score =
   recall@k, error null, recall_last, needle_retention(_golden), selection_sha256,
   context/query/needle/distractor tokens, topk, elapsed_ms, stage_us_per_token. */
void dsa_inproc_select_fields(json_t *rec, json_t *raw);

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

/* One bin's sums of in-process records for the text summary: rows, and Σ of score (recall@k),
   needle_retention and needle_retention_golden. Plain values, zero-initialised. */
struct dsa_inproc_bin_sum {
    int n;
    double score, needle, needle_gold;
};
void dsa_inproc_bin_sum_add(struct dsa_inproc_bin_sum *s, json_t *rec);
/*
 *   bin      rows     recall@k   needle  needle(golden)
 *   ≤8K         3       0.9885    0.348           0.353
 *   µs per context token: 94.1 = proxy 3.0 + S1 2.1 + … + host 0.5
 * the bins with rows, in the given order (labels[b] for sums[b]), then the stage line
 */
void dsa_inproc_bin_table_print(const char *const *labels, const struct dsa_inproc_bin_sum *sums,
                                int nbins, const struct dsa_inproc_stage_sum *stages);

#endif
