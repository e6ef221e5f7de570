/*
 * Synthetic speculative decoding and the /metrics page.
 *
 * Acceptance follows vLLM's synthetic rejection sampler: per-position unconditional rates
 * r_0 >= r_1 >= ... (--acceptance-rates), or a length L turned into [1]*int(L-1) + [frac] +
 * [0]* (--acceptance-length). Per request with C completion tokens: the prefill makes the first
 * token, then verify step s = 0, 1, ... makes 1 + n_s tokens until C are made, where
 * n_s = #{i : u_s < r_i} and u_s = vdc(s + 1), the base-2 van der Corput number. So rates of
 * 0 and 1 (integer L) give exact counters (L = 3, K = 3: every draft accepts 2), and the
 * fractional ones converge like stratified sampling. Each step adds num_drafts += 1,
 * num_draft_tokens += K, num_accepted_tokens += n_s, per_pos[i] += 1 for i < n_s, exactly as
 * vLLM's SpecDecodingStats.observe_draft. Counts depend on the request only, never on timing.
 *
 * The page is written the way prometheus_client's generate_latest writes it (docs/gsm8k.md
 * "MTP acceptance (`--mtp`)"): # HELP/# TYPE, labels sorted by name, counters as <name>_total
 * followed by a <name>_created gauge block, values through floatToGoString. Ownership: srv_metrics
 * is a process-wide singleton guarded by its own mutex. SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_SRV_METRICS_H
#define DSA_SRV_METRICS_H

#include <stdbool.h>
#include <stddef.h>

#include "util/buf.h"

#define SRV_SPEC_MAX 16

struct srv_spec_cfg {
    int k; /* --spec-tokens; 0 = no speculative decoding */
    double rates[SRV_SPEC_MAX];
};

struct srv_spec_result {
    long steps, draft_tokens, accepted;
    long per_pos[SRV_SPEC_MAX];
    long hist[SRV_SPEC_MAX + 1]; /* steps that accepted exactly i drafts */
};

/* --acceptance-length L with K tokens: vLLM's _acceptance_length_to_rates. -1 if L is outside
   [1, K+1]. */
int srv_spec_rates_from_length(struct srv_spec_cfg *c, double length);
/* --acceptance-rates "1,0.8,0.3": K values, each in [0,1], non-increasing. -1 otherwise. */
int srv_spec_rates_parse(struct srv_spec_cfg *c, const char *list);
/* n_s: the drafts accepted at verify step s (0-based) of a request. */
int srv_spec_step_accepts(const struct srv_spec_cfg *c, unsigned long s);
void srv_spec_simulate(const struct srv_spec_cfg *c, long completion_tokens,
                       struct srv_spec_result *r);

/* Python's repr(float) and prometheus_client's floatToGoString. out needs 32 bytes. */
void srv_py_repr(double d, char *out, size_t outlen);
void srv_float_to_go(double d, char *out, size_t outlen);

void srv_metrics_init(const char *model, const struct srv_spec_cfg *spec, bool sglang);
/* One finished generation request. */
void srv_metrics_record(long prompt_tokens, long completion_tokens, const char *finish_reason,
                        const struct srv_spec_result *spec, double latency_s);
void srv_metrics_running(int delta);
/* Requests between their parsed body and their answer now (the --inflight-log sample). */
int srv_metrics_running_now(void);
void srv_metrics_render(struct dsa_buf *out);
/* Totals since start (SGLang's /get_server_info). */
void srv_metrics_spec_totals(double *drafts, double *accepted);

#endif
