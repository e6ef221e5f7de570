/*
 * MTP / speculative-decoding acceptance from server counters (docs/gsm8k.md "MTP acceptance
 * (`--mtp`)").
 *
 * vLLM: the run scrapes /metrics once before its first request and again after its last
 * response, re-reading until two consecutive reads agree (vLLM publishes scheduler stats
 * asynchronously), and differences the counters, each summed over all its label sets:
 *     D = vllm:spec_decode_num_drafts_total          T = ..._num_draft_tokens_total
 *     A = ..._num_accepted_tokens_total              P[j] = ..._per_pos_total{position="j"}
 *     acceptance length AL = 1 + dA/dD   draft acceptance rate = dA/dT   pos_rate[j] = dP[j]/dD
 * llama-server (--metrics) exposes the same four counters under the "llamacpp:" prefix (no
 * labels on the totals); they are read the same way. Its responses also carry
 * timings.draft_n / draft_n_accepted, whose sums must equal dT / dA on an idle server.
 * SGLang: per-request meta_info (spec_verify_ct, spec_num_correct_drafts or
 * spec_accepted_drafts, ...) summed over the run: AL = 1 + sum(correct)/sum(verify_ct), and
 * SGLang's own figure sum(completion_tokens)/sum(verify_ct). The sglang:spec_accept_length
 * gauge reflects only the last batch and is never used.
 *
 * Ownership: plain value structs; json_t results are new references for the caller.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_EVALS_MTP_H
#define DSA_EVALS_MTP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "evals/prometheus.h"
#include "util/buf.h"

#define DSA_MTP_MAX_POS 32 /* speculative tokens per step; MTP uses 1-4 */

#define DSA_MTP_DRAFTS       "vllm:spec_decode_num_drafts_total"
#define DSA_MTP_DRAFT_TOKENS "vllm:spec_decode_num_draft_tokens_total"
#define DSA_MTP_ACCEPTED     "vllm:spec_decode_num_accepted_tokens_total"
#define DSA_MTP_PER_POS      "vllm:spec_decode_num_accepted_tokens_per_pos_total"

/* One reading of the counters. */
struct dsa_mtp_counters {
    bool present; /* DSA_MTP_DRAFTS is exposed (spec decoding configured) */
    double drafts, draft_tokens, accepted;
    size_t n_pos; /* 1 + the largest position label seen */
    double pos[DSA_MTP_MAX_POS];
};

/* Reads the counters out of a parsed exposition. Returns 0, or -1 with err set when a
   position label is not an integer in [0, DSA_MTP_MAX_POS). */
int dsa_mtp_counters_from_prom(const dsa_prom *p, struct dsa_mtp_counters *c, char *err,
                               size_t err_size);
json_t *dsa_mtp_counters_json(const struct dsa_mtp_counters *c);

/* Fetches the body of GET /metrics into `body` (reset first). 0, or -1 with the error
   printed. */
typedef int (*dsa_mtp_fetch_fn)(void *ctx, struct dsa_buf *body);

/*
 * Reads the counters. With `settle`, re-reads every interval_s until two consecutive reads
 * are equal, for at most max_s (docs/gsm8k.md "MTP acceptance (`--mtp`)": 0.5 s and 10 s); without,
 * one read. Returns 0; 1 if the counters never settled (the last read is in *out, a warning
 * printed); -1 on a fetch or parse error (printed).
 */
int dsa_mtp_scrape(dsa_mtp_fetch_fn fetch, void *ctx, bool settle, double interval_s, double max_s,
                   struct dsa_mtp_counters *out);

struct dsa_mtp_result {
    bool present;  /* counters exposed at both reads */
    bool measured; /* present and dD > 0: the rates below are defined */
    double d_drafts, d_draft_tokens, d_accepted;
    size_t n_pos;
    double d_pos[DSA_MTP_MAX_POS];
    double al;         /* 1 + dA/dD */
    double draft_rate; /* dA/dT */
    double pos_rate[DSA_MTP_MAX_POS];
};

/* after - before. Returns 0, or -1 with err set when a counter went down (the server
   restarted between the reads: nothing can be measured). */
int dsa_mtp_delta(const struct dsa_mtp_counters *before, const struct dsa_mtp_counters *after,
                  struct dsa_mtp_result *r, char *err, size_t err_size);

/* Whether the drafts could have come from our own requests: every verify step emits its
   accepted tokens plus one, so dD + dA cannot exceed the completion tokens of the run by
   more than one step's worth per request (tokens past a stop string are counted by the
   engine but cut from the output). False = other traffic touched the counters. */
bool dsa_mtp_plausible(const struct dsa_mtp_result *r, double completion_tokens, size_t n_requests);

/* Per-request spec-decode fields, summed over the run. */
struct dsa_mtp_perreq {
    size_t n_with; /* responses that carried the fields */
    /* vLLM "metrics": {"speculative_decoding": {...}} (--per-request-spec-decode-metrics) */
    double num_spec_steps, num_draft_tokens, num_accepted_draft_tokens;
    /* SGLang meta_info */
    double verify_ct, correct_drafts, proposed_drafts, completion_tokens;
    size_t n_hist;
    double hist[DSA_MTP_MAX_POS + 1]; /* spec_correct_drafts_histogram: steps by #accepted */
    /* llama-server "timings" (absent draft fields count 0: it omits them when nothing was
       drafted) */
    size_t n_timings;
    double timings_draft_n, timings_draft_accepted;
};

/* Adds one vLLM response's metrics.speculative_decoding object (NULL/absent: ignored). */
void dsa_mtp_perreq_add_vllm(struct dsa_mtp_perreq *acc, json_t *spec);
/* Adds one llama-server timings object (NULL: ignored). */
void dsa_mtp_perreq_add_timings(struct dsa_mtp_perreq *acc, json_t *timings);
/* Adds one SGLang meta_info object (fields absent: ignored). */
void dsa_mtp_perreq_add_sglang(struct dsa_mtp_perreq *acc, json_t *meta_info);
/* Turns SGLang sums into a result (AL = 1 + correct/verify_ct; positions from the histogram
   when present). measured is false when no response carried spec fields. */
void dsa_mtp_result_from_sglang(const struct dsa_mtp_perreq *acc, struct dsa_mtp_result *r);

/* The summary block printed after a run:
     acceptance length   3.4904   (1 + 1234 accepted / 823 drafts)
     draft acceptance    0.7470   (1234 / 1652 draft tokens)
     per position        0.9120 0.6430 0.3390                                        */
void dsa_mtp_print(FILE *out, const struct dsa_mtp_result *r);
json_t *dsa_mtp_result_json(const struct dsa_mtp_result *r);

#endif
