/* The endpoint options of the eval commands; see endpoint_cli.h.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "run/endpoint_cli.h"

#include <stdio.h>
#include <string.h>

#include "backend/dialect.h"
#include "backend/endpoint.h"
#include "util/exitcode.h"
#include "util/msg.h"

void dsa_loop_endpoint_init(struct dsa_loop_endpoint *e, int concurrency, int retries,
                            double timeout_s, const char *concurrency_why)
{
    memset(e, 0, sizeof *e);
    e->concurrency = concurrency;
    e->retries = retries;
    e->timeout_s = timeout_s;
    snprintf(e->help_concurrency, sizeof e->help_concurrency,
             "generation requests in flight (default %d%s%s)", concurrency,
             concurrency_why ? ": " : "", concurrency_why ? concurrency_why : "");
    snprintf(e->help_retries, sizeof e->help_retries, "retries per request (default %d)", retries);
    snprintf(e->help_timeout, sizeof e->help_timeout, "seconds per attempt (default %g)",
             timeout_s);
    /* the dialect table's rows (backend/dialect.c) */
    snprintf(e->help_dialect, sizeof e->help_dialect, "%s (default: detect)", dsa_dialect_names());
}

void dsa_loop_endpoint_release(struct dsa_loop_endpoint *e)
{
    dsa_strlist_release(&e->urls);
    json_decref(e->extra_body);
    e->extra_body = NULL;
}

int dsa_loop_endpoint_check(struct dsa_loop_endpoint *e)
{
    if (e->concurrency < 1 || e->concurrency > 65536 || e->retries < 0 || !(e->timeout_s > 0)) {
        dsa_errorf("--concurrency (1..65536), --retries (>= 0) and --timeout (> 0) must be in "
                   "range");
        return DSA_EXIT_USAGE;
    }
    if (e->max_memory_text && (e->max_memory = dsa_parse_bytes(e->max_memory_text)) < (1LL << 20)) {
        dsa_errorf("--max-memory must be a size of at least 1M (512M, 2G), not '%s'",
                   e->max_memory_text);
        return DSA_EXIT_USAGE;
    }
    if (e->extra_body_text && !e->extra_body) {
        json_error_t je;
        e->extra_body = json_loads(e->extra_body_text, 0, &je);
        if (!json_is_object(e->extra_body)) {
            dsa_errorf("--extra-body is not a JSON object: %s",
                       e->extra_body ? "another JSON value" : je.text);
            json_decref(e->extra_body);
            e->extra_body = NULL;
            return DSA_EXIT_USAGE;
        }
    }
    return DSA_EXIT_OK;
}

int dsa_loop_endpoint_open(const struct dsa_loop_endpoint *e, dsa_backend **b)
{
    *b = NULL;
    if (e->urls.n == 0) {
        dsa_errorf("--endpoint URL is required with --backend endpoint");
        return DSA_EXIT_USAGE;
    }
    char *key = NULL;
    if (dsa_endpoint_read_api_key(e->api_key_file, &key) < 0)
        return DSA_EXIT_USAGE;
    struct dsa_endpoint_opts bo = {
        .urls = e->urls.v,
        .n_urls = (int)e->urls.n,
        .model = e->model,
        .dialect = e->dialect,
        .api_key = key,
        .extra_body = e->extra_body,
        .concurrency = e->concurrency,
        .retries = e->retries,
        .timeout_s = e->timeout_s,
        .insecure = e->insecure,
        .probe = true,
        .cacert = e->cacert,
        .max_memory = e->max_memory,
    };
    int code = DSA_EXIT_BACKEND;
    *b = dsa_endpoint_open(&bo, &code); /* copies the key */
    dsa_endpoint_api_key_free(&key);
    if (!*b)
        return code ? code : DSA_EXIT_BACKEND;
    return DSA_EXIT_OK;
}
