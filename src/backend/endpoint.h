/*
 * The endpoint backend: OpenAI-compatible HTTP servers (vLLM, SGLang, generic) over the
 * libcurl multi interface, one event loop, HTTP keep-alive, several URLs shared by least
 * outstanding requests. Behaviour (retries, over-context, dialects, auth, TLS) is documented
 * in docs/endpoint.md.
 *
 * Ownership: dsa_endpoint_open() copies everything it needs from opts (strings and the
 * extra-body object); the API key is held in memory only, sent as "Authorization: Bearer",
 * and never appears in describe(), messages or files.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_BACKEND_ENDPOINT_H
#define DSA_BACKEND_ENDPOINT_H

#include <jansson.h>
#include <stdbool.h>

#include "backend/backend.h"

struct dsa_endpoint_opts {
    const char *const *urls; /* base URLs ("http://127.0.0.1:8000"); trailing '/' and "/v1"
                                are tolerated */
    int n_urls;
    const char *model;        /* NULL: the first model of GET /v1/models */
    const char *dialect;      /* "vllm", "sglang", "openai" or NULL to detect */
    const char *api_key;      /* NULL: none */
    json_t *extra_body;       /* object merged into generation bodies, or NULL (copied) */
    int concurrency;          /* requests in flight, over all URLs (>= 1) */
    int retries;              /* retries after the first attempt (>= 0) */
    double timeout_s;         /* per attempt, whole transfer */
    double connect_timeout_s; /* 0: 10 s */
    bool insecure;            /* skip TLS verification (warned about loudly) */
    bool probe;               /* at open: GET /v1/models and /version on each URL (normal
                                 use); false for tests and benchmarks of the raw loop */
    double backoff_base_s;    /* first retry delay (0: 0.5 s); doubles, capped at backoff_max */
    double backoff_max_s;     /* 0: 30 s */
    long long max_memory;     /* bytes for responses in flight (0: the default, endpoint.c) */
    const char *cacert;       /* CA bundle (PEM) for https://, or NULL: $CURL_CA_BUNDLE, then
                                 $SSL_CERT_FILE, then the system store */
};

/*
 * Opens the backend. With opts->probe, checks that every URL answers /v1/models (model name,
 * owned_by → dialect, max_model_len) and reads the server version; a URL that cannot be
 * reached or refuses the key is an error. Returns NULL with the error printed; *err_kind is
 * then 4 (DSA_EXIT_BACKEND: unreachable, auth) or 2 (DSA_EXIT_USAGE: bad URL/options).
 */
dsa_backend *dsa_endpoint_open(const struct dsa_endpoint_opts *opts, int *exit_code);

/* The model name requests use, and the smallest max_model_len over the URLs (-1 unknown). */
const char *dsa_endpoint_model(const dsa_backend *b);
long dsa_endpoint_max_model_len(const dsa_backend *b);
/* The dialect in use: "vllm", "sglang" or "openai". */
const char *dsa_endpoint_dialect(const dsa_backend *b);

/*
 * The API key as every command reads it (docs/endpoint.md "API key"): the first line
 * of `file` with trailing white space removed, or, when file is NULL, $DSA_EVAL_API_KEY
 * (*key stays NULL when it is unset or empty). Returns 0, or -1 with the error printed
 * (unreadable or empty file, or a key with CR, LF or another control byte, which would end the
 * Authorization header; exit DSA_EXIT_USAGE). Holding a key turns core dumps off
 * (dsa_secret_hold). The key is never printed; release it with
 * dsa_endpoint_api_key_free(), which wipes it first.
 */
int dsa_endpoint_read_api_key(const char *file, char **key);
void dsa_endpoint_api_key_free(char **key);

#endif
