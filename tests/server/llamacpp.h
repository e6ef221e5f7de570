/*
 * dsa-test-server --dialect llamacpp: llama.cpp's llama-server as dsa-eval sees it
 * (docs/llamacpp.md "The test server's llamacpp mode"; issue #7). Bodies are written in
 * llama-server's key order (nlohmann::ordered_json: insertion order), and the error, auth and
 * context bodies are byte for byte those of a real llama-server.
 *
 * Ownership: stateless except the /metrics totals, a process-wide singleton behind a mutex.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_SRV_LLAMACPP_H
#define DSA_SRV_LLAMACPP_H

#include <jansson.h>
#include <microhttpd.h>
#include <stddef.h>

#include "util/buf.h"

#define SRV_LLAMACPP_BOS 1 /* the id /tokenize prepends with add_special */

/* Answers one request in llamacpp mode (every path: routing, auth, generation). Returns
   libmicrohttpd's MHD_YES/MHD_NO. */
int srv_llamacpp_dispatch(struct MHD_Connection *c, const char *url, const char *method,
                          const char *body, size_t len);

/* The test chat template (ChatML): "<|im_start|>ROLE\nCONTENT<|im_end|>\n" per message, then
   "<|im_start|>assistant\n". -1 if messages is not an array of objects with string (or
   text-part) content. */
int srv_llamacpp_render(const json_t *messages, struct dsa_buf *out);

/* The whole generation path without a socket, for the fuzz target and unit tests: returns
   the HTTP status and, when out is not NULL, the non-streamed body (or the error body). */
int srv_llamacpp_generate(const char *endpoint, const char *body, size_t len, struct dsa_buf *out);

#endif
