/*
 * dsa-test-server: configuration shared by main.c (options, startup) and http.c (requests).
 * Ownership: the one srv_config lives in main() for the whole run; strings point into argv.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_SRV_SERVER_H
#define DSA_SRV_SERVER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>

#include "answer.h"
#include "faults.h"
#include "metrics.h"

#define SRV_MAX_FAULT_RULES 16
#define SRV_MAX_CANNED      8

/* --canned PATH=FILE: PATH (any method) answers 200 with FILE's bytes, read per request */
struct srv_canned {
    const char *path, *file;
};

struct srv_config {
    const char *model;          /* --model: served model name */
    const char *server_version; /* --server-version: /version's answer */
    long max_model_len;         /* --max-model-len */
    bool sglang;                /* --dialect sglang */
    bool llamacpp;              /* --dialect llamacpp: llamacpp.c answers everything */
    bool llamacpp_metrics;      /* --metrics: llama-server serves /metrics only with it */
    bool llamacpp_old_models;   /* --old-models: meta without n_ctx (older llama-server) */
    const char *api_key;        /* --require-api-key, NULL = open */
    bool old_context_error;     /* --context-error old: vLLM < 0.6 phrasing */
    bool force_include_usage;   /* --enable-force-include-usage, as vLLM's flag */
    int per_request_spec; /* --per-request-spec-decode-metrics: 0 none, 1 summary, 2 detailed */
    long max_body;        /* --max-body bytes */
    int delay_ms;         /* --delay-ms before each generation answer */
    int chunk_delay_ms;   /* --chunk-delay-ms between streamed events */
    int stall_s;          /* --stall-seconds for the stall fault */
    int retry_after_s;    /* --retry-after for 429/503 */
    long eos_token_id;    /* SGLang matched_stop for an EOS finish */
    struct srv_answer_cfg answer;
    struct srv_spec_cfg spec;
    struct srv_fault_rule faults[SRV_MAX_FAULT_RULES];
    size_t n_faults;
    uint64_t fault_seed;
    FILE *log; /* --log-requests, NULL = off */
    struct srv_canned canned[SRV_MAX_CANNED];
    size_t n_canned;
    char *tls_cert, *tls_key; /* --tls-cert/--tls-key: PEM text; serve https:// (GnuTLS) */
};

extern const struct srv_config *srv_cfg;
/* Makes a message that may quote request bytes (jansson's parse errors echo the bad token, and
   snprintf may cut a sequence) valid UTF-8 by turning every non-ASCII byte into '?', when it is
   not valid already: jansson refuses to build a JSON string from invalid UTF-8. */
void srv_scrub_utf8(char *s);
/* Set on SIGTERM/SIGINT so stalled handlers return and the daemon can stop. */
extern atomic_bool srv_stopping;

struct MHD_Daemon;
/* Starts the daemon on 127.0.0.1:port (0 = ephemeral); returns NULL with a message. */
struct MHD_Daemon *srv_http_start(const struct srv_config *cfg, const char *host, int port,
                                  unsigned max_connections);

#ifdef DSA_UNITTEST_BUILD
#include <jansson.h>
/* Seams for unit tests and fuzz targets (http.c). */
json_t *srv_http_tokenize(const char *body, size_t len, char *err, size_t errlen);
int srv_http_fuzz_generate(const struct srv_config *cfg, const char *endpoint, const char *body,
                           size_t len);
#endif

#endif
