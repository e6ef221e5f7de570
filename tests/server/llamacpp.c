/*
 * dsa-test-server --dialect llamacpp; see llamacpp.h and docs/llamacpp.md.
 * llama-server builds its bodies with nlohmann::ordered_json, so keys come out in the order
 * the server code inserts them; jansson keeps insertion order too, so each body below is
 * packed in llama-server's order.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#define _GNU_SOURCE /* memmem */
#include "llamacpp.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "answer.h"
#include "metrics.h"
#include "server.h"
#include "stream.h"
#include "tok.h"
#include "util/hash.h"

/* Synthetic timings: multiples of 1/4 ms, so every derived figure is exact in binary and the
   bodies are byte-stable (a test recomputes them). */
#define PROMPT_MS_PER_TOKEN  0.25
#define PREDICT_MS_PER_TOKEN 12.5

static struct {
    pthread_mutex_t lock;
    double prompt_tokens, prompt_ms, predicted, predicted_ms, n_decode;
    double drafts, draft_tokens, accepted, per_pos[SRV_SPEC_MAX];
    long processing;
} L = {.lock = PTHREAD_MUTEX_INITIALIZER};

static atomic_ulong counter;

/* ---------------------------------------------------------------- sending */

static int send_text(struct MHD_Connection *c, unsigned status, const char *ctype, const char *data,
                     size_t len)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, (void *)data, MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    MHD_add_response_header(r, "Server", "llama.cpp");
    int ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static char *dumps(json_t *v)
{
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(v);
    return s;
}

static int send_json(struct MHD_Connection *c, unsigned status, json_t *v)
{
    char *s = dumps(v);
    int ret = send_text(c, status, "application/json; charset=utf-8", s, strlen(s));
    free(s);
    return ret;
}

/* llama-server's format_error_response: {"error":{"code","message","type"}} */
static json_t *error_json(int code, const char *message, const char *type)
{
    return json_pack("{s:{s:i, s:s, s:s}}", "error", "code", code, "message", message, "type",
                     type);
}

/* The over-context body, exactly as llama-server sends it. */
static void context_error(struct dsa_buf *out, long n_prompt, long n_ctx)
{
    dsa_buf_addf(out,
                 "{\"error\":{\"code\":400,\"message\":\"request (%ld tokens) exceeds the "
                 "available context size (%ld tokens), try increasing it\",\"type\":\"exceed_"
                 "context_size_error\",\"n_prompt_tokens\":%ld,\"n_ctx\":%ld}}",
                 n_prompt, n_ctx, n_prompt, n_ctx);
}

/* ---------------------------------------------------------------- chat template, tokens */

static const char *part_text(const json_t *content, size_t i, size_t *len)
{
    const json_t *t = json_object_get(json_array_get(content, i), "text");
    *len = json_string_length(t);
    return json_string_value(t);
}

int srv_llamacpp_render(const json_t *messages, struct dsa_buf *out)
{
    if (!json_is_array(messages) || json_array_size(messages) == 0)
        return -1;
    size_t i;
    const json_t *m;
    json_array_foreach(messages, i, m)
    {
        const json_t *role = json_object_get(m, "role"), *c = json_object_get(m, "content");
        if (!json_is_string(role))
            return -1;
        dsa_buf_adds(out, "<|im_start|>");
        dsa_buf_add(out, json_string_value(role), json_string_length(role));
        dsa_buf_addch(out, '\n');
        if (json_is_string(c)) {
            dsa_buf_add(out, json_string_value(c), json_string_length(c));
        } else if (json_is_array(c)) {
            for (size_t j = 0; j < json_array_size(c); j++) {
                size_t n;
                const char *t = part_text(c, j, &n);
                if (!t)
                    return -1;
                dsa_buf_add(out, t, n);
            }
        } else if (c && !json_is_null(c)) {
            return -1;
        }
        dsa_buf_adds(out, "<|im_end|>\n");
    }
    dsa_buf_adds(out, "<|im_start|>assistant\n");
    return 0;
}

static json_t *tokenize(const char *s, size_t n, bool add_special, bool with_pieces)
{
    json_t *a = json_array();
    if (add_special)
        json_array_append_new(
            a, with_pieces ? json_pack("{s:i, s:s}", "id", SRV_LLAMACPP_BOS, "piece", "<s>")
                           : json_integer(SRV_LLAMACPP_BOS));
    for (size_t i = 0; i < n;) {
        size_t len = srv_tok_next(s + i, n - i);
        json_int_t id = (json_int_t)(dsa_fnv1a64(s + i, len) % SRV_TOK_VOCAB);
        json_array_append_new(a, with_pieces
                                     ? json_pack("{s:I, s:s%}", "id", id, "piece", s + i, len)
                                     : json_integer(id));
        i += len;
    }
    return a;
}

/* ---------------------------------------------------------------- generation */

struct lgen {
    bool chat;
    json_t *root;
    const json_t *messages;
    struct dsa_buf prompt; /* the rendered template (chat) or the prompt */
    long n_prompt, max_tokens;
    const json_t *stop;
    bool stream, include_usage;
    char id[64];
    long created;
    struct dsa_buf text;
    const char *finish;
    long n_out;
    struct srv_spec_result spec;
};

static void lgen_release(struct lgen *g)
{
    json_decref(g->root);
    dsa_buf_release(&g->prompt);
    dsa_buf_release(&g->text);
}

static long get_long(const json_t *o, const char *key, long dflt)
{
    const json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? (long)json_integer_value(v) : dflt;
}

/* Validates the body; on failure writes the whole error body to err and returns the status. */
static int lgen_parse(struct lgen *g, const char *body, size_t len, struct dsa_buf *err)
{
    const struct srv_config *cfg = srv_cfg;
    json_error_t je;
    g->root = json_loadb(body, len, 0, &je);
    if (!json_is_object(g->root)) {
        char msg[300];
        snprintf(msg, sizeof msg, "[json.exception.parse_error.101] parse error: %s", je.text);
        srv_scrub_utf8(msg);
        char *s = dumps(error_json(400, msg, "invalid_request_error"));
        dsa_buf_adds(err, s);
        free(s);
        return 400;
    }
    if (g->chat) {
        g->messages = json_object_get(g->root, "messages");
        if (srv_llamacpp_render(g->messages, &g->prompt) != 0) {
            char *s = dumps(error_json(400, "'messages' is required", "invalid_request_error"));
            dsa_buf_adds(err, s);
            free(s);
            return 400;
        }
    } else {
        const json_t *p = json_object_get(g->root, "prompt");
        if (!json_is_string(p)) {
            char *s =
                dumps(error_json(400, "\"prompt\" must be a string", "invalid_request_error"));
            dsa_buf_adds(err, s);
            free(s);
            return 400;
        }
        dsa_buf_add(&g->prompt, json_string_value(p), json_string_length(p));
    }
    /* tokenized with add_special: the BOS comes first */
    g->n_prompt = 1 + srv_tok_count(g->prompt.data, g->prompt.len);
    long n_ctx = cfg->max_model_len;
    if (g->n_prompt >= n_ctx) {
        context_error(err, g->n_prompt, n_ctx);
        return 400;
    }
    g->max_tokens = get_long(g->root, "max_completion_tokens", -1);
    if (g->max_tokens < 0)
        g->max_tokens = get_long(g->root, "max_tokens", -1);
    if (g->max_tokens < 0)
        g->max_tokens = get_long(g->root, "n_predict", -1);
    /* -1 (the default) or more than fits: generation stops when the slot's context is full */
    if (g->max_tokens < 0 || g->max_tokens > n_ctx - g->n_prompt)
        g->max_tokens = n_ctx - g->n_prompt;
    g->stop = json_object_get(g->root, "stop");
    g->stream = json_is_true(json_object_get(g->root, "stream"));
    g->include_usage =
        json_is_true(json_object_get(json_object_get(g->root, "stream_options"), "include_usage"));
    return 200;
}

static void lgen_run(struct lgen *g)
{
    struct srv_answer_in in = {g->chat ? "chat" : "completions", g->chat ? g->messages : NULL,
                               g->chat ? NULL : g->prompt.data, g->chat ? 0 : g->prompt.len,
                               g->n_prompt};
    struct srv_answer_info info;
    dsa_buf_init(&g->text);
    srv_answer(&in, &srv_cfg->answer, &g->text, &info);
    size_t cut = g->text.len;
    size_t nstop = json_is_array(g->stop) ? json_array_size(g->stop) : json_is_string(g->stop);
    for (size_t i = 0; i < nstop; i++) {
        const json_t *s = json_is_array(g->stop) ? json_array_get(g->stop, i) : g->stop;
        if (!json_is_string(s) || json_string_length(s) == 0)
            continue;
        const char *hit =
            memmem(g->text.data, g->text.len, json_string_value(s), json_string_length(s));
        if (hit && (size_t)(hit - g->text.data) < cut) {
            cut = (size_t)(hit - g->text.data);
        }
    }
    long tokens = srv_tok_count(g->text.data, cut);
    if (tokens >= g->max_tokens) {
        cut = srv_tok_prefix(g->text.data, cut, g->max_tokens);
        g->finish = "length";
        g->n_out = g->max_tokens;
    } else {
        g->finish = "stop";
        g->n_out = tokens + 1; /* the EOS or the stop word's token */
    }
    g->text.len = cut;
    g->text.data[cut] = '\0';
    srv_spec_simulate(&srv_cfg->spec, g->n_out, &g->spec);
}

static json_t *timings_json(const struct lgen *g)
{
    double pms = PROMPT_MS_PER_TOKEN * (double)g->n_prompt;
    double gms = PREDICT_MS_PER_TOKEN * (double)g->n_out;
    json_t *t = json_pack("{s:i, s:I, s:f, s:f, s:f, s:I, s:f, s:f, s:f}", "cache_n", 0, "prompt_n",
                          (json_int_t)g->n_prompt, "prompt_ms", pms, "prompt_per_token_ms",
                          PROMPT_MS_PER_TOKEN, "prompt_per_second", 1e3 / PROMPT_MS_PER_TOKEN,
                          "predicted_n", (json_int_t)g->n_out, "predicted_ms", gms,
                          "predicted_per_token_ms", PREDICT_MS_PER_TOKEN, "predicted_per_second",
                          1e3 / PREDICT_MS_PER_TOKEN);
    /* llama-server adds the draft fields only when the request drafted something */
    if (g->spec.draft_tokens > 0) {
        json_object_set_new(t, "draft_n", json_integer(g->spec.draft_tokens));
        json_object_set_new(t, "draft_n_accepted", json_integer(g->spec.accepted));
    }
    return t;
}

static json_t *usage_json(const struct lgen *g)
{
    return json_pack("{s:I, s:I, s:I}", "completion_tokens", (json_int_t)g->n_out, "prompt_tokens",
                     (json_int_t)g->n_prompt, "total_tokens", (json_int_t)(g->n_out + g->n_prompt));
}

static json_t *response_json(const struct lgen *g)
{
    json_t *choice =
        g->chat ? json_pack("{s:s, s:i, s:{s:s, s:s%}}", "finish_reason", g->finish, "index", 0,
                            "message", "role", "assistant", "content", g->text.data, g->text.len)
                : json_pack("{s:s%, s:i, s:n, s:s}", "text", g->text.data, g->text.len, "index", 0,
                            "logprobs", "finish_reason", g->finish);
    return json_pack("{s:[o], s:I, s:s, s:s, s:s, s:o, s:s, s:o}", "choices", choice, "created",
                     (json_int_t)g->created, "model", srv_cfg->model, "system_fingerprint",
                     srv_cfg->server_version, "object",
                     g->chat ? "chat.completion" : "text_completion", "usage", usage_json(g), "id",
                     g->id, "timings", timings_json(g));
}

/* One stream chunk around `choice` (NULL: "choices": []). */
static json_t *chunk(const struct lgen *g, json_t *choice)
{
    json_t *choices = json_array();
    if (choice)
        json_array_append_new(choices, choice);
    if (g->chat)
        return json_pack("{s:o, s:I, s:s, s:s, s:s, s:s}", "choices", choices, "created",
                         (json_int_t)g->created, "id", g->id, "model", srv_cfg->model,
                         "system_fingerprint", srv_cfg->server_version, "object",
                         "chat.completion.chunk");
    return json_pack("{s:o, s:I, s:s, s:s, s:s, s:s}", "choices", choices, "created",
                     (json_int_t)g->created, "model", srv_cfg->model, "system_fingerprint",
                     srv_cfg->server_version, "object", "text_completion", "id", g->id);
}

/* llama-server's stream: (chat) a role delta with null content, one chunk per token, a
   finish chunk with an empty delta that also carries usage and timings, then [DONE]. With
   stream_options.include_usage the usage and timings move to a last chunk with "choices": [].
 */
static struct srv_stream *stream_of(const struct lgen *g)
{
    struct srv_stream *st = srv_stream_new();
    if (g->chat)
        srv_stream_json(st, chunk(g, json_pack("{s:n, s:i, s:{s:s, s:n}}", "finish_reason", "index",
                                               0, "delta", "role", "assistant", "content")));
    for (size_t pos = 0; pos < g->text.len;) {
        size_t len = srv_tok_next(g->text.data + pos, g->text.len - pos);
        json_t *choice = g->chat ? json_pack("{s:n, s:i, s:{s:s%}}", "finish_reason", "index", 0,
                                             "delta", "content", g->text.data + pos, len)
                                 : json_pack("{s:s%, s:i, s:n, s:n}", "text", g->text.data + pos,
                                             len, "index", 0, "logprobs", "finish_reason");
        srv_stream_json(st, chunk(g, choice));
        pos += len;
    }
    json_t *fin = chunk(
        g, g->chat ? json_pack("{s:s, s:i, s:{}}", "finish_reason", g->finish, "index", 0, "delta")
                   : json_pack("{s:s, s:i, s:n, s:s}", "text", "", "index", 0, "logprobs",
                               "finish_reason", g->finish));
    json_t *last = fin;
    if (g->include_usage) {
        srv_stream_json(st, fin);
        last = chunk(g, NULL);
    }
    json_object_set_new(last, "usage", usage_json(g));
    json_object_set_new(last, "timings", timings_json(g));
    srv_stream_json(st, last);
    srv_stream_event(st, "[DONE]");
    return st;
}

static void record_metrics(const struct lgen *g)
{
    pthread_mutex_lock(&L.lock);
    L.prompt_tokens += (double)g->n_prompt;
    L.prompt_ms += PROMPT_MS_PER_TOKEN * (double)g->n_prompt;
    L.predicted += (double)g->n_out;
    L.predicted_ms += PREDICT_MS_PER_TOKEN * (double)g->n_out;
    L.n_decode += 1.0 + (double)(g->spec.steps ? g->spec.steps : g->n_out - 1);
    L.drafts += (double)g->spec.steps;
    L.draft_tokens += (double)g->spec.draft_tokens;
    L.accepted += (double)g->spec.accepted;
    for (int i = 0; i < srv_cfg->spec.k; i++)
        L.per_pos[i] += (double)g->spec.per_pos[i];
    pthread_mutex_unlock(&L.lock);
}

int srv_llamacpp_generate(const char *endpoint, const char *body, size_t len, struct dsa_buf *out)
{
    struct lgen g;
    memset(&g, 0, sizeof g);
    dsa_buf_init(&g.prompt);
    g.chat = strcmp(endpoint, "chat") == 0;
    struct dsa_buf err = DSA_BUF_INIT;
    dsa_buf_init(&err);
    int status = lgen_parse(&g, body, len, &err);
    if (status == 200) {
        snprintf(g.id, sizeof g.id, "chatcmpl-fuzz");
        lgen_run(&g);
        char *s = dumps(response_json(&g));
        if (out)
            dsa_buf_adds(out, s);
        free(s);
        srv_stream_free(stream_of(&g));
    } else if (out) {
        dsa_buf_add(out, err.data, err.len);
    }
    dsa_buf_release(&err);
    lgen_release(&g);
    return status;
}

static int handle_generate(struct MHD_Connection *c, bool chat, const char *body, size_t len)
{
    struct lgen g;
    memset(&g, 0, sizeof g);
    dsa_buf_init(&g.prompt);
    g.chat = chat;
    struct dsa_buf err = DSA_BUF_INIT;
    dsa_buf_init(&err);
    int ret;
    int status = lgen_parse(&g, body, len, &err);
    if (status != 200) {
        ret = send_text(c, (unsigned)status, "application/json; charset=utf-8", err.data, err.len);
        goto cleanup;
    }
    unsigned long n = atomic_fetch_add(&counter, 1);
    snprintf(g.id, sizeof g.id, "chatcmpl-%016" PRIx64 "%016" PRIx64,
             dsa_splitmix64(n ^ srv_cfg->answer.seed), dsa_splitmix64(~n));
    g.created = (long)time(NULL);
    lgen_run(&g);
    /* counters move before the answer leaves: a client reading /metrics after its last
       response sees them */
    record_metrics(&g);
    if (g.stream) {
        struct MHD_Response *r = srv_stream_response(stream_of(&g), MHD_SIZE_UNKNOWN);
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
        MHD_add_response_header(r, "Server", "llama.cpp");
        ret = MHD_queue_response(c, MHD_HTTP_OK, r);
        MHD_destroy_response(r);
    } else {
        ret = send_json(c, 200, response_json(&g));
    }
cleanup:
    dsa_buf_release(&err);
    lgen_release(&g);
    return ret;
}

/* ---------------------------------------------------------------- other endpoints */

static int handle_models(struct MHD_Connection *c)
{
    const struct srv_config *cfg = srv_cfg;
    json_t *meta =
        json_pack("{s:i, s:i, s:i, s:I, s:i, s:I, s:I}", "vocab_type", 2, "n_vocab", SRV_TOK_VOCAB,
                  "n_ctx_train", 163840, "n_ctx", (json_int_t)cfg->max_model_len, "n_embd", 4096,
                  "n_params", (json_int_t)8030261248LL, "size", (json_int_t)4920734720LL);
    json_t *details =
        json_pack("{s:s, s:s, s:s, s:[s], s:s, s:s}", "parent_model", "", "format", "gguf",
                  "family", "", "families", "", "parameter_size", "", "quantization_level", "");
    json_t *ollama = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:[s], s:[s], s:s, s:o}",
                               "name", cfg->model, "model", cfg->model, "modified_at", "", "size",
                               "", "digest", "", "type", "model", "description", "", "tags", "",
                               "capabilities", "completion", "parameters", "", "details", details);
    json_t *card =
        json_pack("{s:s, s:s, s:I, s:s, s:o}", "id", cfg->model, "object", "model", "created",
                  (json_int_t)time(NULL), "owned_by", "llamacpp", "meta", meta);
    if (cfg->llamacpp_old_models) /* builds before meta.n_ctx: only /props has the context */
        json_object_del(meta, "n_ctx");
    return send_json(
        c, 200, json_pack("{s:[o], s:s, s:[o]}", "models", ollama, "object", "list", "data", card));
}

static int handle_props(struct MHD_Connection *c)
{
    const struct srv_config *cfg = srv_cfg;
    char path[512];
    snprintf(path, sizeof path, "/models/%s.gguf", cfg->model);
    json_t *dgs = json_pack("{s:i, s:i, s:I, s:b, s:b}", "id", 0, "id_task", -1, "n_ctx",
                            (json_int_t)cfg->max_model_len, "speculative", cfg->spec.k > 0,
                            "is_processing", 0);
    return send_json(
        c, 200,
        json_pack("{s:o, s:i, s:s, s:{s:b, s:b}, s:s, s:s, s:s, s:s}",
                  "default_generation_settings", dgs, "total_slots", 1, "model_path", path,
                  "modalities", "vision", 0, "audio", 0, "chat_template",
                  "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
                  "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if "
                  "add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
                  "bos_token", "<s>", "eos_token", "</s>", "build_info", cfg->server_version));
}

static int handle_tokenize(struct MHD_Connection *c, const char *body, size_t len)
{
    json_t *root = json_loadb(body, len, 0, NULL);
    if (!json_is_object(root)) {
        json_decref(root);
        return send_json(c, 400, error_json(400, "invalid JSON body", "invalid_request_error"));
    }
    const json_t *content = json_object_get(root, "content");
    const json_t *as = json_object_get(root, "add_special");
    json_t *tokens = tokenize(json_string_value(content), json_string_length(content),
                              json_is_true(as), json_is_true(json_object_get(root, "with_pieces")));
    json_decref(root);
    return send_json(c, 200, json_pack("{s:o}", "tokens", tokens));
}

static int handle_apply_template(struct MHD_Connection *c, const char *body, size_t len)
{
    json_t *root = json_loadb(body, len, 0, NULL);
    struct dsa_buf p = DSA_BUF_INIT;
    dsa_buf_init(&p);
    int ret;
    if (!json_is_object(root) || srv_llamacpp_render(json_object_get(root, "messages"), &p) != 0)
        ret = send_json(c, 400, error_json(400, "'messages' is required", "invalid_request_error"));
    else
        ret = send_json(c, 200, json_pack("{s:s%}", "prompt", p.data, p.len));
    dsa_buf_release(&p);
    json_decref(root);
    return ret;
}

/* llama-server's /metrics: "# HELP", "# TYPE", one sample per counter, values through
   std::ostream's default (6 significant digits: 1234567 prints as 1.23457e+06, which is
   what %g does). Counters first, then gauges, as its all_metrics_def. */
static void metric(struct dsa_buf *b, const char *name, const char *help, const char *type,
                   double v)
{
    dsa_buf_addf(b, "# HELP llamacpp:%s %s\n# TYPE llamacpp:%s %s\nllamacpp:%s %g\n", name, help,
                 name, type, name, v);
}

static int handle_metrics(struct MHD_Connection *c)
{
    if (!srv_cfg->llamacpp_metrics)
        return send_json(c, 501,
                         error_json(501,
                                    "This server does not support metrics endpoint. Start it "
                                    "with `--metrics`",
                                    "not_supported_error"));
    struct dsa_buf b = DSA_BUF_INIT;
    dsa_buf_init(&b);
    pthread_mutex_lock(&L.lock);
    metric(&b, "prompt_tokens_total", "Number of prompt tokens processed.", "counter",
           L.prompt_tokens);
    metric(&b, "prompt_seconds_total", "Prompt process time", "counter", L.prompt_ms / 1e3);
    metric(&b, "tokens_predicted_total", "Number of generation tokens processed.", "counter",
           L.predicted);
    metric(&b, "tokens_predicted_seconds_total", "Predict process time", "counter",
           L.predicted_ms / 1e3);
    metric(&b, "n_decode_total", "Total number of llama_decode() calls", "counter", L.n_decode);
    if (srv_cfg->spec.k > 0) {
        metric(&b, "spec_decode_num_drafts_total", "Number of spec decoding drafts.", "counter",
               L.drafts);
        metric(&b, "spec_decode_num_draft_tokens_total", "Number of draft tokens.", "counter",
               L.draft_tokens);
        metric(&b, "spec_decode_num_accepted_tokens_total", "Number of accepted tokens.", "counter",
               L.accepted);
        dsa_buf_adds(&b, "# HELP llamacpp:spec_decode_num_accepted_tokens_per_pos_total "
                         "Accepted tokens per draft position.\n# TYPE "
                         "llamacpp:spec_decode_num_accepted_tokens_per_pos_total counter\n");
        for (int i = 0; i < srv_cfg->spec.k; i++)
            dsa_buf_addf(&b,
                         "llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position=\"%d\"} "
                         "%g\n",
                         i, L.per_pos[i]);
    }
    metric(&b, "prompt_tokens_seconds", "Average prompt throughput in tokens/s.", "gauge",
           L.prompt_ms > 0 ? 1e3 * L.prompt_tokens / L.prompt_ms : 0.0);
    metric(&b, "predicted_tokens_seconds", "Average generation throughput in tokens/s.", "gauge",
           L.predicted_ms > 0 ? 1e3 * L.predicted / L.predicted_ms : 0.0);
    metric(&b, "requests_processing", "Number of requests processing.", "gauge",
           (double)L.processing);
    metric(&b, "requests_deferred", "Number of requests deferred.", "gauge", 0.0);
    pthread_mutex_unlock(&L.lock);
    int ret = send_text(c, 200, "text/plain; version=0.0.4", b.data, b.len);
    dsa_buf_release(&b);
    return ret;
}

/* ---------------------------------------------------------------- routing */

static bool authorized(struct MHD_Connection *c)
{
    const char *key = srv_cfg->api_key;
    if (!key)
        return true;
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (auth && strncasecmp(auth, "Bearer ", 7) == 0 && strcmp(auth + 7, key) == 0)
        return true;
    const char *x = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Api-Key");
    return x && strcmp(x, key) == 0;
}

int srv_llamacpp_dispatch(struct MHD_Connection *c, const char *url, const char *method,
                          const char *body, size_t len)
{
    bool get = strcmp(method, "GET") == 0, post = strcmp(method, "POST") == 0;
    /* llama-server's public endpoints: everything else needs the key when --api-key is set */
    static const char *const open_paths[] = {"/health", "/v1/health", "/models", "/v1/models"};
    bool open = false;
    for (size_t i = 0; i < sizeof open_paths / sizeof open_paths[0]; i++)
        open |= strcmp(url, open_paths[i]) == 0;
    if (!open && !authorized(c)) {
        static const char denied[] =
            "{\"error\":{\"message\":\"Invalid API Key\",\"type\":\"authentication_error\","
            "\"code\":401}}";
        return send_text(c, 401, "application/json; charset=utf-8", denied, sizeof denied - 1);
    }
    if (get && (!strcmp(url, "/health") || !strcmp(url, "/v1/health")))
        return send_json(c, 200, json_pack("{s:s}", "status", "ok"));
    if (get && (!strcmp(url, "/v1/models") || !strcmp(url, "/models")))
        return handle_models(c);
    if (get && !strcmp(url, "/props"))
        return handle_props(c);
    if (get && !strcmp(url, "/metrics"))
        return handle_metrics(c);
    if (post && !strcmp(url, "/tokenize"))
        return handle_tokenize(c, body, len);
    if (post && !strcmp(url, "/apply-template"))
        return handle_apply_template(c, body, len);
    if (post && (!strcmp(url, "/v1/chat/completions") || !strcmp(url, "/chat/completions")))
        return handle_generate(c, true, body, len);
    if (post && (!strcmp(url, "/v1/completions") || !strcmp(url, "/completions")))
        return handle_generate(c, false, body, len);
    return send_json(c, 404, error_json(404, "File Not Found", "not_found_error"));
}
