/* Endpoint dialect table; see dialect.h.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "backend/dialect.h"

#include <stdio.h>
#include <string.h>

#include "backend/llamacpp.h"

/* vLLM's chat form of POST /tokenize: the server renders the chat template exactly as for
   /v1/chat/completions, so the count is the prompt the model will see. */
static json_t *vllm_tokenize_body(const char *model, json_t *in)
{
    json_t *b = json_object();
    if (model)
        json_object_set_new(b, "model", json_string(model));
    json_t *msgs = json_object_get(in, "messages");
    if (msgs) {
        json_object_set(b, "messages", msgs);
        json_object_set_new(b, "add_generation_prompt", json_true());
        json_t *kw = json_object_get(in, "chat_template_kwargs");
        if (kw)
            json_object_set(b, "chat_template_kwargs", kw);
    } else {
        json_object_set(b, "prompt", json_object_get(in, "prompt"));
    }
    return b;
}

static const struct dsa_dialect dialects[] = {
    {.name = "vllm",
     .owned_by = "vllm",
     .version_path = "/version",
     .tokenize_path = "/tokenize",
     .tokenize_body = vllm_tokenize_body},
    /* SGLang's /tokenize takes prompt text only (no chat template), so chat prompts are
       counted from the 400 error it returns when a prompt does not fit. */
    {.name = "sglang",
     .owned_by = "sglang",
     .version_path = "/version",
     .generate_path = "/generate"},
    /* llama-server: /props holds build_info and the per-slot n_ctx; /tokenize takes text only,
       so chat prompts go through /apply-template first */
    {.name = "llamacpp",
     .owned_by = "llamacpp",
     .version_path = "/props",
     .tokenize_path = "/tokenize",
     .tokenize_body = dsa_llamacpp_tokenize_body,
     .template_path = "/apply-template",
     .no_stream_options = true,
     .server_info = dsa_llamacpp_server_info,
     .card_context = dsa_llamacpp_card_context},
    {.name = "openai"},
};

const struct dsa_dialect *dsa_dialect_find(const char *name)
{
    for (size_t i = 0; i < sizeof dialects / sizeof dialects[0]; i++)
        if (!strcmp(dialects[i].name, name))
            return &dialects[i];
    return NULL;
}

const struct dsa_dialect *dsa_dialect_detect(const char *owned_by)
{
    for (size_t i = 0; owned_by && i < sizeof dialects / sizeof dialects[0]; i++)
        if (dialects[i].owned_by && !strcmp(dialects[i].owned_by, owned_by))
            return &dialects[i];
    return dsa_dialect_find("openai");
}

const char *dsa_dialect_names(void)
{
    /* from the rows, so that a new row shows in --help and in messages */
    static char names[256];
    if (!names[0])
        for (size_t i = 0; i < sizeof dialects / sizeof dialects[0]; i++) {
            size_t len = strlen(names);
            snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "", dialects[i].name);
        }
    return names;
}
