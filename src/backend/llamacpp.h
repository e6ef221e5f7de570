/*
 * llama.cpp's llama-server dialect (issue #7; docs/llamacpp.md): the pieces of its
 * OpenAI-compatible API that differ from vLLM's, as pure functions over parsed JSON so the
 * endpoint backend's event loop stays dialect-free and unit tests can feed real bodies.
 *
 *   GET  /v1/models      data[i] = {"id","object","created","owned_by":"llamacpp",
 *                        "meta":{"n_ctx","n_ctx_train","n_vocab",...}}; meta.n_ctx is the
 *                        per-slot context (n_ctx / --parallel), the limit a request must fit
 *   GET  /props          {"default_generation_settings":{"n_ctx",...},"build_info",...}
 *   POST /apply-template {"messages":[...]} -> {"prompt":"<rendered chat template>"}
 *   POST /tokenize       {"content":"...","add_special":true,"parse_special":true}
 *                        -> {"tokens":[ids]}; the chat path tokenizes the rendered template
 *                        with both flags on, so the count is the prompt the model sees
 *   400 {"error":{"code":400,"message":"request (N tokens) exceeds the available context
 *        size (M tokens), try increasing it","type":"exceed_context_size_error",
 *        "n_prompt_tokens":N,"n_ctx":M}}
 *   every completion carries "timings": {"prompt_n","prompt_ms","predicted_n",
 *        "predicted_ms",... "draft_n","draft_n_accepted" (with a draft model)}
 *
 * Ownership: json_t results are new references; inputs are borrowed.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_BACKEND_LLAMACPP_H
#define DSA_BACKEND_LLAMACPP_H

#include <jansson.h>
#include <stdbool.h>

/* The first request of a token count (the dialect row's tokenize_body): for
   {"messages": [...]} the /apply-template body {"messages"[, "chat_template_kwargs"]}, for
   {"prompt": "..."} the /tokenize body. `model` is not sent: llama-server serves one model. */
json_t *dsa_llamacpp_tokenize_body(const char *model, json_t *in);
/* The /tokenize body counting `prompt` (the rendered template or a completion prompt). */
json_t *dsa_llamacpp_count_body(const char *prompt, size_t len);
/* The "prompt" string of an /apply-template answer, borrowed from `v`; NULL if absent. */
const char *dsa_llamacpp_template_prompt(json_t *v, size_t *len);
/* Per-slot context of a /v1/models card (meta.n_ctx), -1 when not given. */
long dsa_llamacpp_card_context(json_t *card);
/* What /props says: *version = build_info (malloc'd, NULL if absent) and *context =
   default_generation_settings.n_ctx (or a top-level n_ctx), -1 if absent. */
void dsa_llamacpp_server_info(json_t *props, char **version, long *context);
/*
 * The server-side latency split of a response (a whole body, or the stream chunk that carried
 * usage): {"prompt_n","prompt_ms","predicted_n","predicted_ms"[,"cache_n"][,"draft_n",
 * "draft_n_accepted"]} copied from raw.timings (numbers only), or NULL when there is none.
 * llama-server omits the draft fields when a request drafted nothing.
 */
json_t *dsa_llamacpp_timings(json_t *raw);

#endif
