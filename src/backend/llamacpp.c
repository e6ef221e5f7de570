/* llama-server dialect helpers; see llamacpp.h.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "backend/llamacpp.h"

#include <stdlib.h>

#include "util/buf.h"

json_t *dsa_llamacpp_tokenize_body(const char *model, json_t *in)
{
    (void)model;
    json_t *msgs = json_object_get(in, "messages");
    if (!msgs) {
        json_t *p = json_object_get(in, "prompt");
        return dsa_llamacpp_count_body(json_string_value(p), json_string_length(p));
    }
    /* /apply-template takes the chat request's own fields, so the kwargs that change the
       template (thinking on/off) render the same prompt as the chat request will */
    json_t *b = json_object();
    json_object_set(b, "messages", msgs);
    json_t *kw = json_object_get(in, "chat_template_kwargs");
    if (kw)
        json_object_set(b, "chat_template_kwargs", kw);
    return b;
}

json_t *dsa_llamacpp_count_body(const char *prompt, size_t len)
{
    /* llama-server tokenizes a completion's prompt with add_special (BOS) and parse_special
       on; /tokenize defaults add_special to false, so both are said out loud */
    return json_pack("{s:s%, s:b, s:b}", "content", prompt ? prompt : "", prompt ? len : 0,
                     "add_special", 1, "parse_special", 1);
}

const char *dsa_llamacpp_template_prompt(json_t *v, size_t *len)
{
    json_t *p = json_object_get(v, "prompt");
    if (!json_is_string(p))
        return NULL;
    *len = json_string_length(p);
    return json_string_value(p);
}

static long int_of(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (json_is_integer(v) && json_integer_value(v) > 0)
        return (long)json_integer_value(v);
    return -1;
}

long dsa_llamacpp_card_context(json_t *card)
{
    /* never meta.n_ctx_train: that is what the model was trained on, not what the server
       allocated per slot */
    return int_of(json_object_get(card, "meta"), "n_ctx");
}

void dsa_llamacpp_server_info(json_t *props, char **version, long *context)
{
    const char *b = json_string_value(json_object_get(props, "build_info"));
    *version = b ? dsa_xstrdup(b) : NULL;
    *context = int_of(json_object_get(props, "default_generation_settings"), "n_ctx");
    if (*context < 0)
        *context = int_of(props, "n_ctx");
}

json_t *dsa_llamacpp_timings(json_t *raw)
{
    json_t *t = json_object_get(raw, "timings");
    if (!json_is_object(t))
        return NULL;
    static const char *const keys[] = {"cache_n",      "prompt_n", "prompt_ms",       "predicted_n",
                                       "predicted_ms", "draft_n",  "draft_n_accepted"};
    json_t *out = json_object();
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        json_t *v = json_object_get(t, keys[i]);
        if (json_is_number(v))
            json_object_set(out, keys[i], v);
    }
    if (json_object_size(out) == 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}
