/*
 * Server-sent event streams of the test server, shared by every dialect: all events are
 * built up front, and the reader hands out one event per call so that each event is its
 * own HTTP chunk (as vLLM, SGLang and llama-server send them). Faults can cut the stream
 * after `cut_at` events or stall before event `stall_at`; --chunk-delay-ms spaces events.
 *
 * Ownership: srv_stream_new() returns a stream the caller fills; srv_stream_response()
 * takes it over (libmicrohttpd frees it with the response); srv_stream_free() releases a
 * stream that was never sent. srv_stream_json() consumes its json_t.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_SRV_STREAM_H
#define DSA_SRV_STREAM_H

#include <jansson.h>
#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

struct srv_stream {
    struct dsa_buf data;
    size_t *ends; /* ends[i] = offset just past event i */
    size_t n, cap;
    size_t next;   /* next event to send */
    size_t off;    /* bytes of data already sent */
    long cut_at;   /* -1 = send everything */
    long stall_at; /* -1, or the event before which the stream stalls */
};

struct srv_stream *srv_stream_new(void);
/* appends "data: PAYLOAD\n\n" as one event */
void srv_stream_event(struct srv_stream *st, const char *payload);
/* appends v, compact, reals round-tripping, as one event; consumes v */
void srv_stream_json(struct srv_stream *st, json_t *v);
/* a response that sends the events; size is MHD_SIZE_UNKNOWN for an event stream, or the
   announced length of a body that a fault cuts short; takes st over */
struct MHD_Response *srv_stream_response(struct srv_stream *st, uint64_t size);
void srv_stream_free(struct srv_stream *st);

/* sleeps ms milliseconds in short naps, returning early once the server is stopping */
void srv_sleep_ms(long ms);

#endif
