/*
 * Answers without an end, for the client's memory bound (faults endless-stream and
 * gzip-bomb): an event stream of content deltas that never sends [DONE], or a JSON body whose
 * content string never closes. With gzip, the bytes are deflated on the fly (zlib, gzip
 * wrapper) and sent with "Content-Encoding: gzip": repeated text compresses about 1000:1, so
 * a few MB on the wire become GBs in a client that decodes them. The answer ends only when
 * the client hangs up (or the server stops).
 * Ownership: the response owns its generator; libmicrohttpd frees both.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_SRV_ENDLESS_H
#define DSA_SRV_ENDLESS_H

#include <microhttpd.h>
#include <stdbool.h>

/* queues the endless answer on `c`: SSE when `sse`, else a chat.completion body; returns
   MHD_YES or MHD_NO */
int srv_endless_queue(struct MHD_Connection *c, bool sse, bool gzip);

#endif
