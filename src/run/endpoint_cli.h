/*
 * The endpoint options of every eval command, declared once: the rows of the option table
 * (DSA_LOOP_ENDPOINT_OPTIONS), their checks, and the backend they open. Each command keeps its
 * own documented defaults (mrcr: 5 retries, 1800 s, 8 in flight; gsm8k: 3 retries, 600 s, 1 in
 * flight), given to dsa_loop_endpoint_init(); the help lines print them.
 *
 * Ownership: string values point into argv; extra_body is owned (released by
 * dsa_loop_endpoint_release), as is the URL list.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_RUN_ENDPOINT_CLI_H
#define DSA_RUN_ENDPOINT_CLI_H

#include <jansson.h>
#include <stdbool.h>

#include "backend/backend.h"
#include "util/opt.h"

struct dsa_loop_endpoint {
    struct dsa_strlist urls;
    const char *model, *dialect, *api_key_file, *extra_body_text, *cacert, *max_memory_text;
    bool insecure;
    int concurrency, retries;
    double timeout_s;
    /* filled by dsa_loop_endpoint_check */
    json_t *extra_body; /* NULL: none */
    long long max_memory;
    /* the help lines with this command's defaults */
    char help_concurrency[96], help_retries[64], help_timeout[64], help_dialect[160];
};

/* Zeroes e and sets the command's defaults. */
void dsa_loop_endpoint_init(struct dsa_loop_endpoint *e, int concurrency, int retries,
                            double timeout_s, const char *concurrency_why);
void dsa_loop_endpoint_release(struct dsa_loop_endpoint *e);

/* The rows, in the order --help shows them. */
#define DSA_LOOP_ENDPOINT_OPTIONS(e)                                                               \
    DSA_OPT_STRLIST(0, "endpoint", &(e)->urls, "URL",                                              \
                    "server base URL; repeat for data-parallel replicas"),                         \
        DSA_OPT_STRING(0, "model", &(e)->model, "NAME", "model name (default: from /v1/models)"),  \
        DSA_OPT_STRING(0, "dialect", &(e)->dialect, "D", (e)->help_dialect),                       \
        DSA_OPT_STRING(0, "api-key-file", &(e)->api_key_file, "FILE",                              \
                       "bearer token file (default: $DSA_EVAL_API_KEY; never written)"),           \
        DSA_OPT_BOOL(0, "insecure", &(e)->insecure, "do not verify TLS certificates (dangerous)"), \
        DSA_OPT_STRING(0, "cacert", &(e)->cacert, "FILE",                                          \
                       "CA bundle (PEM) for https:// (default: $CURL_CA_BUNDLE, $SSL_CERT_FILE)"), \
        DSA_OPT_STRING(0, "max-memory", &(e)->max_memory_text, "BYTES",                            \
                       "memory for responses in flight (default 256M + 16M per -c)"),              \
        DSA_OPT_INT('c', "concurrency", &(e)->concurrency, "N", (e)->help_concurrency),            \
        DSA_OPT_STRING(0, "extra-body", &(e)->extra_body_text, "JSON",                             \
                       "object merged into every request body"),                                   \
        DSA_OPT_INT(0, "retries", &(e)->retries, "N", (e)->help_retries),                          \
        DSA_OPT_DOUBLE(0, "timeout", &(e)->timeout_s, "S", (e)->help_timeout)

/* The values alone (no network): ranges, --max-memory, --extra-body. Returns an enum dsa_exit
   (DSA_EXIT_USAGE with one line printed). */
int dsa_loop_endpoint_check(struct dsa_loop_endpoint *e);
/* Reads the API key and opens the endpoint backend (probing the servers) into *b. Returns an
   enum dsa_exit: DSA_EXIT_USAGE (no --endpoint, a bad key file), or the open's own code. */
int dsa_loop_endpoint_open(const struct dsa_loop_endpoint *e, dsa_backend **b);

#endif
