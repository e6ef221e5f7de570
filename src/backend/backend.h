/*
 * The backend interface (docs/design.md "Contracts"): what evals/ uses to get model outputs, with
 * no knowledge of HTTP or CUDA. A backend is a vtable behind an opaque handle:
 *
 *   describe()  identity for the run header (endpoint: URLs, model, server version,
 *               max_model_len, dialect; in-process: kernel build, device, variant)
 *   submit()    queue one request; its completion callback runs later, from poll()
 *   poll()      one turn of the event loop: starts queued requests up to the concurrency
 *               limit, moves bytes, runs the callbacks of finished requests, retries
 *   cancel()    abort everything queued and in flight (callbacks run with DSA_RES_CANCELLED)
 *   metrics()   the backend's counters as Prometheus text (endpoint: GET /metrics of every
 *               server, concatenated; in-process: seconds per stage of the indexer stack)
 *
 * Two implementations: the endpoint (endpoint.h: libcurl, dialects) and the in-process
 * backend (inprocess.h: the indexer stack, which serves DSA_API_SELECT and DSA_API_MTP_VERIFY
 * as described in inprocess_backend.c). The run loop (src/run/loop.h) drives either the same
 * way.
 *
 * One thread drives it: submit/poll/cancel are called from the same thread, and callbacks
 * run inside poll() (or cancel()). A callback may submit further requests (e.g. the chat
 * request after its /tokenize count).
 *
 * The loop (src/run/loop.c, dsa_loop_drive):
 *
 *   while (!done) {
 *       while (!*interrupted && more_rows && dsa_backend_idle_slots(b) > 0)
 *           dsa_backend_submit(b, &req);            // req.done = on_done
 *       if (*interrupted) { dsa_backend_cancel(b); break; }
 *       if (dsa_backend_poll(b, 200) == 0 && !more_rows) done = true;
 *   }
 *
 * Request kinds (enum dsa_api) and what the endpoint backend does with each:
 *   DSA_API_CHAT        POST /v1/chat/completions; content = message.content (or the
 *                       concatenated delta.content when streaming); reasoning =
 *                       message.reasoning_content or vLLM's message.reasoning
 *   DSA_API_COMPLETION  POST /v1/completions; content = choices[0].text; token_ids when the
 *                       server returns them (vLLM return_token_ids)
 *   DSA_API_GENERATE    POST /generate (SGLang native); content = text; raw holds meta_info
 *   DSA_API_TOKENIZE    count prompt tokens the dialect's way (vLLM POST /tokenize with
 *                       {model, messages, add_generation_prompt: true}); the body carries
 *                       "messages" (or "prompt"); result prompt_tokens = count.
 *                       DSA_RES_UNSUPPORTED when the dialect or server has no such endpoint
 *   DSA_API_GET         GET `path` (e.g. "/metrics", "/version"); body = raw response text
 * For CHAT and COMPLETION the backend adds "model" when the body has none, merges the
 * client's --extra-body object (top-level keys; the request's own keys win), and with
 * req.stream adds "stream": true and "stream_options": {"include_usage": true}. GENERATE
 * bodies (SGLang's native schema: text, sampling_params) are sent as given.
 * A streaming request answered with a 2xx that is not text/event-stream (a server that
 * ignores "stream") is parsed as a whole response.
 *
 * Ownership: submit() borrows req and req->body only during the call (the body is
 * serialized there). The dsa_result passed to a callback, and everything it points to, is
 * borrowed for the duration of the callback; copy what you keep (json_incref raw). The
 * backend owns its handle; dsa_backend_free() cancels whatever is still pending (running
 * those callbacks) and NULLs the caller's pointer.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_BACKEND_BACKEND_H
#define DSA_BACKEND_BACKEND_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct dsa_backend dsa_backend;

enum dsa_api {
    DSA_API_CHAT = 0,
    DSA_API_COMPLETION,
    DSA_API_GENERATE,
    DSA_API_TOKENIZE,
    DSA_API_GET,
    DSA_API_SELECT,     /* in-process: the indexer's top-k selection of one conversation */
    DSA_API_MTP_VERIFY, /* in-process: batched MTP verify rows against one row at a time */
};

enum dsa_res_status {
    DSA_RES_OK = 0,       /* 2xx and a well-formed response */
    DSA_RES_FAILED,       /* gave up: non-retryable error or retries exhausted */
    DSA_RES_OVER_CONTEXT, /* the server said the prompt does not fit (HTTP 400 naming the
                             context length); prompt_tokens/max_model_len when parsed */
    DSA_RES_UNSUPPORTED,  /* the endpoint does not offer this API (TOKENIZE, GENERATE) */
    DSA_RES_CANCELLED,    /* dsa_backend_cancel() */
};

struct dsa_result {
    enum dsa_res_status status;
    enum dsa_api api;
    long http_code;      /* last HTTP status, 0 if no response came */
    int endpoint;        /* index of the endpoint that answered last */
    int retries;         /* attempts made beyond the first */
    bool unreachable;    /* FAILED because the last attempt could not connect at all (server
                            down): callers stop rather than record the sample */
    const char *error;   /* one line ("HTTP 500: engine dead", "timeout after 1800 s");
                            NULL when status is OK */
    const char *content; /* graded text (see above), NULL when none; may hold NUL bytes
                            only if the server sent "\u0000" */
    size_t content_len;
    const char *reasoning; /* reasoning_content / reasoning, NULL when none */
    size_t reasoning_len;
    const char *finish_reason; /* "stop", "length", "abort", … or NULL */
    const char *stop_reason;   /* vLLM stop_reason / SGLang matched_stop as JSON text, or NULL */
    long prompt_tokens;        /* usage.prompt_tokens, or the /tokenize count; -1 if unknown */
    long completion_tokens;    /* usage.completion_tokens; -1 if unknown */
    long max_model_len;        /* from /tokenize or an over-context error; -1 if unknown */
    json_t *usage;             /* the usage object as sent, or NULL */
    json_t *token_ids;         /* choices[0].token_ids when returned, or NULL */
    json_t *raw;               /* the whole response JSON (non-streaming), the last chunk that
                                  carried usage (streaming), or NULL */
    const char *body;          /* raw response bytes (DSA_API_GET, and error bodies) */
    size_t body_len;
    double latency_ms; /* last attempt: request start to last byte */
    double ttft_ms;    /* streaming: start to the first content/reasoning token; -1 */
    double decode_ms;  /* streaming: first token to last byte; -1 */
    void *ud;          /* the request's ud */
};

typedef void (*dsa_backend_done_fn)(const struct dsa_result *res);

struct dsa_request {
    enum dsa_api api;
    json_t *body;     /* borrowed, and not changed after submit (a value submitted again
                         from this request's callback is taken to have the same bytes);
                         may be NULL for GET */
    const char *path; /* GET path, or an override of the API's default path */
    int endpoint;     /* -1: any (least outstanding requests); else that endpoint */
    bool stream;      /* CHAT/COMPLETION: SSE with include_usage */
    dsa_backend_done_fn done;
    void *ud;
    /* A value of body (found by pointer, in body or in the body a dialect builds from it)
       given as its compact JSON: those raw_len bytes, which must be what
       dsa_json_dump_compact() (util/json_dump.h) writes of the value it stands for, are sent
       in its place, so the value itself may be a stand-in (a row's message list read as bytes
       and never built as a tree: an empty array). NULL: none. Borrowed for the submit call
       (raw_held: until done has run for this request, cancelled included, and then a large
       value is sent from raw_bytes, not copied into the body); the endpoint backend only. */
    const json_t *raw_value;
    const char *raw_bytes;
    size_t raw_len;
    bool raw_held;
};

struct dsa_buf;

/* The vtable each backend fills (endpoint.c, inprocess_backend.c). */
struct dsa_backend_ops {
    const char *kind; /* "endpoint", "inprocess" */
    json_t *(*describe)(dsa_backend *b);
    int (*submit)(dsa_backend *b, const struct dsa_request *req);
    int (*poll)(dsa_backend *b, int timeout_ms);
    void (*cancel)(dsa_backend *b);
    int (*idle_slots)(const dsa_backend *b);
    void (*stats)(const dsa_backend *b, long *retries, long *errors);
    int (*metrics)(dsa_backend *b, struct dsa_buf *out);
    void (*free)(dsa_backend *b);
};

struct dsa_backend {
    const struct dsa_backend_ops *ops;
};

/* Identity for the run header: a new reference (never holds an API key). */
json_t *dsa_backend_describe(dsa_backend *b);
/* Queues a request. Returns 0, or -1 with an error printed (bad request: never for I/O). */
int dsa_backend_submit(dsa_backend *b, const struct dsa_request *req);
/* One turn of the loop, waiting at most timeout_ms for activity. Returns the number of
   requests still queued, waiting for a retry or in flight, or -1 on a fatal error (printed). */
int dsa_backend_poll(dsa_backend *b, int timeout_ms);
/* Polls until nothing is pending or *stop becomes non-zero (NULL: never). Returns 0 or -1. */
int dsa_backend_drain(dsa_backend *b, volatile int *stop);
/* Aborts every queued and in-flight request; their callbacks run before this returns. */
void dsa_backend_cancel(dsa_backend *b);
/* How many more requests to submit now: the free slots of the concurrency limit, plus (endpoint
   backend) a backlog of built requests that take a slot the moment one frees. */
int dsa_backend_idle_slots(const dsa_backend *b);
/* Totals so far: retried attempts and requests that ended FAILED (for the progress line). */
void dsa_backend_stats(const dsa_backend *b, long *retries, long *errors);
/* Appends the backend's counters (Prometheus text) to out. Returns 0, or -1 (printed). */
int dsa_backend_metrics(dsa_backend *b, struct dsa_buf *out);
void dsa_backend_free(dsa_backend **b);

/*
 * A blocking call for setup and one-off requests (/metrics before and after a run):
 * submits, drains everything pending, and copies the result into *out, which the caller
 * releases with dsa_result_release(). Returns out->status.
 */
int dsa_backend_call(dsa_backend *b, const struct dsa_request *req, struct dsa_result *out);
/* Deep copy of a borrowed result (strings duplicated, json referenced), and its release. */
void dsa_result_copy(struct dsa_result *dst, const struct dsa_result *src);
void dsa_result_release(struct dsa_result *r);
const char *dsa_res_status_name(enum dsa_res_status s);

#endif
