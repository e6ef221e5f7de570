/*
 * Incremental parser of a text/event-stream body (the WHATWG "server-sent events" rules, as
 * vLLM and SGLang emit them: "data: <json>\n\n" … "data: [DONE]\n\n"). Bytes arrive in
 * arbitrary pieces from libcurl's write callback; each complete event is handed to the
 * callback with its "data" lines joined by '\n' (the trailing one removed).
 *
 * Lines end in "\r\n", "\n" or "\r" (a "\r" split across two feeds is handled); lines that
 * start with ':' are comments; "event:" sets the event type; "id:" and "retry:" are ignored
 * (we never reconnect a stream: a broken stream is retried as a whole request). An event
 * with no data line is not dispatched. An unterminated event at end of input is discarded
 * (docs/gsm8k.md "Server responses"), which is why callers treat a stream without "[DONE]" as
 * truncated.
 *
 * Memory is bounded: a line longer than DSA_SSE_MAX_LINE bytes is an error.
 *
 * Ownership: the parser owns its buffers; the data and event strings passed to the callback
 * are borrowed for the duration of the call only.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_BACKEND_SSE_H
#define DSA_BACKEND_SSE_H

#include <stdbool.h>
#include <stddef.h>

#include "util/buf.h"

#define DSA_SSE_MAX_LINE (64u << 20)

/* Returns 0 to continue, non-zero to stop parsing (dsa_sse_feed returns that value). */
typedef int (*dsa_sse_cb)(void *ud, const char *event, const char *data, size_t len);

struct dsa_sse {
    dsa_sse_cb cb;
    void *ud;
    struct dsa_buf line;  /* the current, incomplete line */
    struct dsa_buf data;  /* data lines of the current event, '\n'-joined */
    struct dsa_buf event; /* event type of the current event ("" = "message") */
    bool has_data;        /* a data line was seen in the current event */
    bool after_cr;        /* last byte fed was '\r': a following '\n' belongs to it */
    bool failed;          /* a line exceeded the limit; further input is ignored */
};

void dsa_sse_init(struct dsa_sse *p, dsa_sse_cb cb, void *ud);
/* Feeds bytes. Returns 0, the callback's non-zero value, or -1 if a line is too long. */
int dsa_sse_feed(struct dsa_sse *p, const char *bytes, size_t len);
void dsa_sse_release(struct dsa_sse *p);

#endif
