/*
 * The HTTP side of dsa-test-server: routing, the vLLM/SGLang response shapes, SSE, faults and
 * the request log. libmicrohttpd runs one thread per connection (with poll, so descriptors
 * past FD_SETSIZE work), which makes stalls and per-event delays plain sleeps.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#define _GNU_SOURCE /* memmem */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "endless.h"
#include "llamacpp.h"
#include "mrcr.h"
#include "server.h"
#include "stream.h"
#include "tok.h"
#include "util/buf.h"
#include "util/hash.h"
#include "util/utf8.h"

#if MHD_VERSION < 0x00097002
typedef int MHD_RESULT;
#else
typedef enum MHD_Result MHD_RESULT;
#endif

const struct srv_config *srv_cfg;
atomic_bool srv_stopping;
static atomic_ulong request_counter, arrival_counter;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static long created_at;

/* Per-connection request state, from the first call of the handler to the completed hook. */
struct req {
    struct dsa_buf body;
    bool too_big;
};

/* What one generation request asked for, after validation. */
struct gen {
    const char *endpoint; /* chat, completions, generate */
    json_t *root;         /* the parsed body (owned) */
    const json_t *messages;
    char *prompt; /* completions/generate (owned) */
    size_t prompt_len;
    long prompt_tokens;
    long max_tokens;
    bool stream, include_usage, continuous_usage, return_token_ids;
    const json_t *stop;
    char id[80];
    long created;
    /* results */
    struct dsa_buf text;
    const char *finish;   /* stop, length */
    const char *stop_str; /* matched stop string, or NULL for EOS */
    long completion_tokens;
    struct srv_spec_result spec;
    struct srv_answer_info info;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---------------------------------------------------------------- responses */

static MHD_RESULT send_buf(struct MHD_Connection *c, unsigned status, const char *ctype,
                           const char *data, size_t len)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, (void *)data, MHD_RESPMEM_MUST_COPY);
    if (ctype)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    MHD_RESULT ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static MHD_RESULT send_json(struct MHD_Connection *c, unsigned status, json_t *v)
{
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
    json_decref(v);
    MHD_RESULT ret = send_buf(c, status, "application/json", s, strlen(s));
    free(s);
    return ret;
}

static const char *error_type(int status)
{
    switch (status) {
    case 400:
        return "BadRequestError";
    case 401:
        return "UnauthorizedError";
    case 404:
        return "NotFoundError";
    case 429:
        return "TooManyRequestsError";
    case 503:
        return "ServiceUnavailableError";
    default:
        return status >= 500 ? "InternalServerError" : "BadRequestError";
    }
}

/* vLLM's nested {"error":{...}} or the flat {"object":"error",...} of older vLLM and SGLang. */
static json_t *error_body(int status, const char *message, bool flat)
{
    if (flat)
        return json_pack("{s:s, s:s, s:s, s:n, s:i}", "object", "error", "message", message, "type",
                         error_type(status), "param", "code", status);
    return json_pack("{s:{s:s, s:s, s:n, s:i}}", "error", "message", message, "type",
                     error_type(status), "param", "code", status);
}

static MHD_RESULT send_error(struct MHD_Connection *c, int status, const char *message)
{
    json_t *body = error_body(status, message, srv_cfg->sglang);
    char *s = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(s), s, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    if (status == 429 || status == 503) {
        char ra[16];
        snprintf(ra, sizeof ra, "%d", srv_cfg->retry_after_s);
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, ra);
    }
    MHD_RESULT ret = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

/* A connection reset: SO_LINGER 0 turns the close into an RST. */
static MHD_RESULT send_reset(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (ci) {
        struct linger lg = {1, 0};
        setsockopt(ci->connect_fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    }
    return MHD_NO;
}

/* ---------------------------------------------------------------- streaming */

static MHD_RESULT send_stream(struct MHD_Connection *c, struct srv_stream *st)
{
    struct MHD_Response *r = srv_stream_response(st, MHD_SIZE_UNKNOWN);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream; charset=utf-8");
    MHD_RESULT ret = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}

/* ---------------------------------------------------------------- request log */

static MHD_RESULT collect_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                 const char *value)
{
    (void)kind;
    json_t *headers = cls;
    if (strcasecmp(key, "Authorization") == 0)
        return MHD_YES; /* never logged: only whether a bearer came, below */
    json_object_set_new(headers, key, json_string(value ? value : ""));
    return MHD_YES;
}

static void log_request(struct MHD_Connection *c, const char *method, const char *url,
                        const struct req *rq)
{
    if (!srv_cfg->log)
        return;
    json_t *headers = json_object();
    MHD_get_connection_values(c, MHD_HEADER_KIND, collect_header, headers);
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    json_t *line = json_pack("{s:s, s:s, s:o, s:b}", "method", method, "path", url, "headers",
                             headers, "bearer", auth && strncasecmp(auth, "Bearer ", 7) == 0);
    json_t *body = json_stringn(rq->body.data, rq->body.len);
    if (body)
        json_object_set_new(line, "body", body);
    else
        json_object_set_new(line, "body_invalid_utf8_bytes",
                            json_integer((json_int_t)rq->body.len));
    char *s = json_dumps(line, JSON_COMPACT);
    json_decref(line);
    pthread_mutex_lock(&log_lock);
    fputs(s, srv_cfg->log);
    fputc('\n', srv_cfg->log);
    fflush(srv_cfg->log);
    pthread_mutex_unlock(&log_lock);
    free(s);
}

/* ---------------------------------------------------------------- simple endpoints */

static MHD_RESULT handle_models(struct MHD_Connection *c)
{
    const struct srv_config *cfg = srv_cfg;
    json_t *card;
    if (cfg->sglang) {
        card = json_pack("{s:s, s:s, s:I, s:s, s:s, s:I}", "id", cfg->model, "object", "model",
                         "created", (json_int_t)created_at, "owned_by", "sglang", "root",
                         cfg->model, "max_model_len", (json_int_t)cfg->max_model_len);
    } else {
        char permid[64];
        snprintf(permid, sizeof permid, "modelperm-%016" PRIx64,
                 dsa_fnv1a64(cfg->model, strlen(cfg->model)));
        json_t *perm = json_pack(
            "{s:s, s:s, s:I, s:b, s:b, s:b, s:b, s:b, s:b, s:s, s:n, s:b}", "id", permid, "object",
            "model_permission", "created", (json_int_t)created_at, "allow_create_engine", 0,
            "allow_sampling", 1, "allow_logprobs", 1, "allow_search_indices", 0, "allow_view", 1,
            "allow_fine_tuning", 0, "organization", "*", "group", "is_blocking", 0);
        card = json_pack("{s:s, s:s, s:I, s:s, s:s, s:n, s:I, s:[o]}", "id", cfg->model, "object",
                         "model", "created", (json_int_t)created_at, "owned_by", "vllm", "root",
                         cfg->model, "parent", "max_model_len", (json_int_t)cfg->max_model_len,
                         "permission", perm);
    }
    return send_json(c, 200, json_pack("{s:s, s:[o]}", "object", "list", "data", card));
}

/* SGLang's /get_model_info and /get_server_info (the fields dsa-eval may read). The spec
   average is cumulative since start, as SGLang's is: 1 + accepted / verify steps. */
static MHD_RESULT handle_sglang_info(struct MHD_Connection *c, bool server)
{
    const struct srv_config *cfg = srv_cfg;
    if (!server)
        return send_json(c, 200,
                         json_pack("{s:s, s:s, s:b}", "model_path", cfg->model, "tokenizer_path",
                                   cfg->model, "is_generation", 1));
    double drafts, accepted;
    srv_metrics_spec_totals(&drafts, &accepted);
    json_t *state = json_object();
    if (cfg->spec.k > 0)
        json_object_set_new(state, "avg_spec_accept_length",
                            json_real(drafts > 0 ? 1.0 + accepted / drafts : 0.0));
    return send_json(c, 200,
                     json_pack("{s:s, s:s, s:I, s:I, s:[o]}", "model_path", cfg->model, "version",
                               cfg->server_version, "context_length",
                               (json_int_t)cfg->max_model_len, "speculative_num_steps",
                               (json_int_t)cfg->spec.k, "internal_states", state));
}

static MHD_RESULT handle_metrics(struct MHD_Connection *c)
{
    struct dsa_buf b = DSA_BUF_INIT;
    srv_metrics_render(&b);
    MHD_RESULT ret = send_buf(c, 200, "text/plain; version=0.0.4; charset=utf-8", b.data, b.len);
    dsa_buf_release(&b);
    return ret;
}

void srv_scrub_utf8(char *s)
{
    if (dsa_utf8_valid(s, strlen(s)))
        return;
    for (; *s; s++)
        if ((unsigned char)*s >= 0x80)
            *s = '?';
}

static json_t *parse_body(const struct req *rq, char *err, size_t errlen)
{
    json_error_t je;
    json_t *root = json_loadb(rq->body.data, rq->body.len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        snprintf(err, errlen, "Invalid JSON body: %s (line %d, column %d)", je.text, je.line,
                 je.column);
        srv_scrub_utf8(err);
        return NULL;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        snprintf(err, errlen, "Request body must be a JSON object");
        return NULL;
    }
    return root;
}

/* The /tokenize answer for a body, or NULL with the 400 message in err. */
DSA_UNITTEST json_t *srv_http_tokenize(const char *body, size_t len, char *err, size_t errlen)
{
    struct req rq = {{(char *)body, len, len}, false};
    json_t *root = parse_body(&rq, err, errlen);
    if (!root)
        return NULL;
    const json_t *prompt = json_object_get(root, "prompt");
    const json_t *messages = json_object_get(root, "messages");
    bool strs = json_is_true(json_object_get(root, "return_token_strs"));
    json_t *ids = json_array(), *token_strs = strs ? json_array() : json_null();
    long count = 0;
    if (json_is_string(prompt)) {
        const char *s = json_string_value(prompt);
        size_t n = json_string_length(prompt);
        for (size_t i = 0; i < n; count++) {
            size_t len = srv_tok_next(s + i, n - i);
            json_array_append_new(
                ids, json_integer((json_int_t)(dsa_fnv1a64(s + i, len) % SRV_TOK_VOCAB)));
            if (strs)
                json_array_append_new(token_strs, json_stringn(s + i, len));
            i += len;
        }
    } else if (json_is_array(messages) && (count = srv_tok_chat(messages)) >= 0) {
        /* The ids of the template tokens are fixed; contents tokenize as prompts do. */
        size_t i;
        const json_t *m;
        json_array_foreach(messages, i, m)
        {
            for (int t = 0; t < SRV_TOK_PER_MESSAGE; t++)
                json_array_append_new(ids, json_integer(SRV_TOK_VOCAB - 1 - t));
            const json_t *ct = json_object_get(m, "content");
            if (json_is_string(ct)) {
                size_t n;
                long *tid = srv_tok_ids(json_string_value(ct), json_string_length(ct), &n);
                for (size_t k = 0; k < n; k++)
                    json_array_append_new(ids, json_integer(tid[k]));
                free(tid);
            } else if (json_is_array(ct)) {
                size_t j;
                const json_t *part;
                json_array_foreach(ct, j, part)
                {
                    const json_t *t = json_object_get(part, "text");
                    size_t n;
                    long *tid = srv_tok_ids(json_string_value(t), json_string_length(t), &n);
                    for (size_t k = 0; k < n; k++)
                        json_array_append_new(ids, json_integer(tid[k]));
                    free(tid);
                }
            }
        }
        for (int t = 0; t < SRV_TOK_GEN_PROMPT; t++)
            json_array_append_new(ids, json_integer(SRV_TOK_VOCAB - 10 - t));
        json_decref(token_strs);
        token_strs = json_null();
    } else {
        json_decref(root);
        json_decref(ids);
        json_decref(token_strs);
        snprintf(err, errlen,
                 "Either 'prompt' (a string) or 'messages' (a list of messages) "
                 "is required");
        return NULL;
    }
    json_decref(root);
    return json_pack("{s:I, s:I, s:o, s:o}", "count", (json_int_t)count, "max_model_len",
                     (json_int_t)srv_cfg->max_model_len, "tokens", ids, "token_strs", token_strs);
}

static MHD_RESULT handle_tokenize(struct MHD_Connection *c, const struct req *rq)
{
    char err[512];
    json_t *r = srv_http_tokenize(rq->body.data, rq->body.len, err, sizeof err);
    return r ? send_json(c, 200, r) : send_error(c, 400, err);
}

/* ---------------------------------------------------------------- generation */

static void gen_release(struct gen *g)
{
    json_decref(g->root);
    free(g->prompt);
    dsa_buf_release(&g->text);
}

static bool get_long(const json_t *root, const char *key, long *out, bool *present)
{
    const json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v))
        return true;
    if (!json_is_integer(v))
        return false;
    *out = (long)json_integer_value(v);
    if (present)
        *present = true;
    return true;
}

/* Validates the body into g; on failure writes the status and message and returns -1. */
static int gen_parse(struct gen *g, const struct req *rq, int *status, char *err, size_t errlen)
{
    const struct srv_config *cfg = srv_cfg;
    *status = 400;
    g->root = parse_body(rq, err, errlen);
    if (!g->root)
        return -1;
    json_t *root = g->root;
    const json_t *model = json_object_get(root, "model");
    if (model && !json_is_null(model) &&
        (!json_is_string(model) || strcmp(json_string_value(model), cfg->model) != 0)) {
        if (!(cfg->sglang && json_is_string(model) &&
              strcmp(json_string_value(model), "default") == 0)) {
            *status = 404;
            snprintf(err, errlen, "The model `%s` does not exist.",
                     json_is_string(model) ? json_string_value(model) : "?");
            return -1;
        }
    }
    const json_t *sampling = root;
    if (strcmp(g->endpoint, "chat") == 0) {
        g->messages = json_object_get(root, "messages");
        g->prompt_tokens = srv_tok_chat(g->messages);
        if (!json_is_array(g->messages) || json_array_size(g->messages) == 0 ||
            g->prompt_tokens < 0) {
            snprintf(err, errlen,
                     "'messages' must be a non-empty list of messages with "
                     "string or text-part content");
            return -1;
        }
    } else {
        const char *key = strcmp(g->endpoint, "generate") == 0 ? "text" : "prompt";
        const json_t *p = json_object_get(root, key);
        if (json_is_array(p) && json_array_size(p) == 1 && json_is_string(json_array_get(p, 0)))
            p = json_array_get(p, 0);
        const json_t *ids = strcmp(g->endpoint, "generate") == 0
                                ? json_object_get(root, "input_ids")
                                : (json_is_array(p) ? p : NULL);
        if (json_is_string(p)) {
            g->prompt_len = json_string_length(p);
            g->prompt = dsa_xstrndup(json_string_value(p), g->prompt_len);
            g->prompt_tokens = srv_tok_count(g->prompt, g->prompt_len);
        } else if (json_is_array(ids) && json_array_size(ids) > 0) {
            /* Token ids: the answer hashes their decimal text; count = number of ids. */
            struct dsa_buf b = DSA_BUF_INIT;
            size_t i;
            const json_t *id;
            json_array_foreach(ids, i, id)
            {
                if (!json_is_integer(id)) {
                    dsa_buf_release(&b);
                    snprintf(err, errlen, "'%s' must be a string or a list of token ids", key);
                    return -1;
                }
                dsa_buf_addf(&b, "%s%" JSON_INTEGER_FORMAT, i ? " " : "", json_integer_value(id));
            }
            g->prompt = dsa_buf_detach(&b, &g->prompt_len);
            g->prompt_tokens = (long)json_array_size(ids);
        } else {
            snprintf(err, errlen, "'%s' must be a string or a list of token ids", key);
            return -1;
        }
        if (strcmp(g->endpoint, "generate") == 0)
            sampling = json_object_get(root, "sampling_params");
    }

    bool have_max = false;
    g->max_tokens = -1;
    if (strcmp(g->endpoint, "chat") == 0) {
        long a = -1, b = -1;
        if (!get_long(root, "max_completion_tokens", &a, NULL) ||
            !get_long(root, "max_tokens", &b, NULL)) {
            snprintf(err, errlen, "'max_tokens' must be an integer");
            return -1;
        }
        g->max_tokens = a >= 0 ? a : b;
        have_max = g->max_tokens >= 0;
    } else if (strcmp(g->endpoint, "completions") == 0) {
        g->max_tokens = 16; /* vLLM's CompletionRequest default */
        if (!get_long(root, "max_tokens", &g->max_tokens, &have_max)) {
            snprintf(err, errlen, "'max_tokens' must be an integer");
            return -1;
        }
    } else {
        g->max_tokens = 128; /* SGLang's max_new_tokens default */
        if (sampling && !get_long(sampling, "max_new_tokens", &g->max_tokens, &have_max)) {
            snprintf(err, errlen, "'max_new_tokens' must be an integer");
            return -1;
        }
    }
    if (have_max && g->max_tokens < 1 && strcmp(g->endpoint, "generate") != 0) {
        snprintf(err, errlen, "max_tokens must be at least 1, got %ld.", g->max_tokens);
        return -1;
    }

    /* Over-context, phrased as vLLM (or SGLang) does. */
    long M = cfg->max_model_len, N = g->prompt_tokens;
    if (cfg->sglang && (N + (g->max_tokens > 0 ? g->max_tokens : 0) > M)) {
        snprintf(err, errlen,
                 "Requested token count exceeds the model's maximum context length of %ld "
                 "tokens. You requested a total of %ld tokens: %ld tokens from the input "
                 "messages and %ld tokens for the completion. Please reduce the number of "
                 "tokens in the input messages or the completion to fit within the limit.",
                 M, N + g->max_tokens, N, g->max_tokens);
        return -1;
    }
    if (!cfg->sglang && cfg->old_context_error && N + (g->max_tokens > 0 ? g->max_tokens : 0) > M) {
        snprintf(err, errlen,
                 "This model's maximum context length is %ld tokens. However, you requested "
                 "%ld tokens (%ld in the messages, %ld in the completion). Please reduce the "
                 "length of the messages or completion.",
                 M, N + g->max_tokens, N, g->max_tokens);
        return -1;
    }
    if (!cfg->sglang && N >= M) {
        snprintf(err, errlen,
                 "This model's maximum context length is %ld tokens. However, your request "
                 "has %ld input tokens. Please reduce the length of the input messages.",
                 M, N);
        return -1;
    }
    if (g->max_tokens < 0) /* chat without a limit: the rest of the context */
        g->max_tokens = M - N;
    if (!cfg->sglang && g->max_tokens > M - N) {
        snprintf(err, errlen,
                 "'max_tokens' or 'max_completion_tokens' is too large: %ld. This model's "
                 "maximum context length is %ld tokens and your request has %ld input tokens "
                 "(%ld > %ld - %ld).",
                 g->max_tokens, M, N, g->max_tokens, M, N);
        return -1;
    }

    g->stream = json_is_true(json_object_get(root, "stream"));
    const json_t *so = json_object_get(root, "stream_options");
    if (so && !json_is_null(so)) {
        if (!g->stream && !cfg->sglang) {
            snprintf(err, errlen, "Stream options can only be defined when `stream=True`.");
            return -1;
        }
        const json_t *iu = json_object_get(so, "include_usage");
        /* vLLM: include_usage defaults to true once stream_options is given; SGLang: false */
        g->include_usage = iu ? json_is_true(iu) : !cfg->sglang;
        g->continuous_usage =
            !cfg->sglang && json_is_true(json_object_get(so, "continuous_usage_stats"));
    }
    if (cfg->force_include_usage && g->stream)
        g->include_usage = true;
    g->return_token_ids = json_is_true(json_object_get(root, "return_token_ids"));
    g->stop = sampling ? json_object_get(sampling, "stop") : NULL;
    if (g->stop && !json_is_null(g->stop) && !json_is_string(g->stop) && !json_is_array(g->stop)) {
        snprintf(err, errlen, "'stop' must be a string or a list of strings");
        return -1;
    }
    return 0;
}

/* Runs the answerer, then stop strings and the token limit, then the spec-decode counts. */
static void gen_run(struct gen *g)
{
    struct srv_answer_in in = {g->endpoint, g->messages, g->prompt, g->prompt_len,
                               g->prompt_tokens};
    dsa_buf_init(&g->text);
    srv_answer(&in, &srv_cfg->answer, &g->text, &g->info);

    /* The earliest stop string wins (its text is not included, as vLLM's default). */
    size_t cut = g->text.len;
    g->stop_str = NULL;
    size_t nstop = json_is_array(g->stop) ? json_array_size(g->stop) : json_is_string(g->stop);
    for (size_t i = 0; i < nstop; i++) {
        const json_t *s = json_is_array(g->stop) ? json_array_get(g->stop, i) : g->stop;
        if (!json_is_string(s) || json_string_length(s) == 0)
            continue;
        const char *hit =
            memmem(g->text.data, g->text.len, json_string_value(s), json_string_length(s));
        if (hit && (size_t)(hit - g->text.data) < cut) {
            cut = (size_t)(hit - g->text.data);
            g->stop_str = json_string_value(s);
        }
    }
    long tokens = srv_tok_count(g->text.data, cut);
    if (g->max_tokens >= 0 && tokens >= g->max_tokens &&
        !(tokens == g->max_tokens && g->max_tokens == 0)) {
        /* Reaching max_tokens before the end (or exactly at it without a stop) is "length":
           the EOS or stop token would be one more. */
        cut = srv_tok_prefix(g->text.data, cut, g->max_tokens);
        g->finish = "length";
        g->stop_str = NULL;
        g->completion_tokens = g->max_tokens;
    } else {
        g->finish = "stop";
        g->completion_tokens = tokens + 1; /* the EOS or stop token */
    }
    g->text.len = cut;
    g->text.data[cut] = '\0';
    srv_spec_simulate(&srv_cfg->spec, g->completion_tokens, &g->spec);
}

/* vLLM's experimental per-request block (--per-request-spec-decode-metrics), NULL when off. */
static json_t *spec_metrics_json(const struct gen *g)
{
    const struct srv_config *cfg = srv_cfg;
    if (!cfg->per_request_spec || cfg->spec.k < 1 || cfg->sglang)
        return NULL;
    const struct srv_spec_result *s = &g->spec;
    json_t *hist = json_array();
    for (int i = 0; i <= cfg->spec.k; i++)
        json_array_append_new(hist, json_integer(s->hist[i]));
    json_t *by_len = json_object();
    char k[16];
    snprintf(k, sizeof k, "%d", cfg->spec.k);
    json_object_set_new(by_len, k, json_deep_copy(hist));
    json_t *sd = json_pack("{s:f, s:f, s:o, s:o, s:I, s:I, s:I, s:i}", "mean_acceptance_length",
                           s->steps ? 1.0 + (double)s->accepted / (double)s->steps : 0.0,
                           "draft_acceptance_rate",
                           s->draft_tokens ? (double)s->accepted / (double)s->draft_tokens : 0.0,
                           "acceptance_histogram", hist, "acceptance_histogram_by_draft_length",
                           by_len, "num_spec_steps", (json_int_t)s->steps,
                           "num_accepted_draft_tokens", (json_int_t)s->accepted, "num_draft_tokens",
                           (json_int_t)s->draft_tokens, "num_spec_tokens", cfg->spec.k);
    if (cfg->per_request_spec == 2) {
        json_t *acc = json_array(), *drafted = json_array();
        for (long i = 0; i < s->steps; i++) {
            json_array_append_new(
                acc, json_integer(srv_spec_step_accepts(&cfg->spec, (unsigned long)i)));
            json_array_append_new(drafted, json_integer(cfg->spec.k));
        }
        json_object_set_new(sd, "per_step_accepted", acc);
        json_object_set_new(sd, "per_step_drafted", drafted);
    }
    return json_pack("{s:o}", "speculative_decoding", sd);
}

static json_t *usage_json(const struct gen *g, bool details)
{
    json_t *u = json_pack("{s:I, s:I, s:I}", "prompt_tokens", (json_int_t)g->prompt_tokens,
                          "total_tokens", (json_int_t)(g->prompt_tokens + g->completion_tokens),
                          "completion_tokens", (json_int_t)g->completion_tokens);
    if (details && !srv_cfg->sglang)
        json_object_set_new(u, "prompt_tokens_details", json_null());
    return u;
}

/* finish_reason plus stop_reason (vLLM) or matched_stop (SGLang) on a choice. */
static void set_finish(json_t *choice, const struct gen *g, bool final)
{
    json_object_set_new(choice, "finish_reason", final ? json_string(g->finish) : json_null());
    json_t *why = json_null();
    if (final && g->stop_str)
        why = json_string(g->stop_str);
    else if (final && srv_cfg->sglang && strcmp(g->finish, "stop") == 0)
        why = json_integer(srv_cfg->eos_token_id);
    json_object_set_new(choice, srv_cfg->sglang ? "matched_stop" : "stop_reason", why);
}

static json_t *token_ids_json(const char *s, size_t n)
{
    size_t k;
    long *ids = srv_tok_ids(s, n, &k);
    json_t *a = json_array();
    for (size_t i = 0; i < k; i++)
        json_array_append_new(a, json_integer(ids[i]));
    free(ids);
    return a;
}

/* The non-streamed body, with the null fields vLLM's pydantic models serialise (clients must
   ignore them; having them here keeps that honest). SGLang's shape is leaner. */
static json_t *gen_response(const struct gen *g)
{
    bool chat = strcmp(g->endpoint, "chat") == 0, sg = srv_cfg->sglang;
    json_t *choice;
    if (chat) {
        json_t *msg =
            json_pack("{s:s, s:s%}", "role", "assistant", "content", g->text.data, g->text.len);
        if (!sg) {
            static const char *const nulls[] = {"refusal", "annotations", "audio", "function_call"};
            for (size_t i = 0; i < sizeof nulls / sizeof nulls[0]; i++)
                json_object_set_new(msg, nulls[i], json_null());
        }
        json_object_set_new(msg, "tool_calls", json_array());
        json_object_set_new(msg, "reasoning_content", json_null());
        choice = json_pack("{s:i, s:o, s:n}", "index", 0, "message", msg, "logprobs");
    } else {
        choice = json_pack("{s:i, s:s%, s:n}", "index", 0, "text", g->text.data, g->text.len,
                           "logprobs");
    }
    set_finish(choice, g, true);
    if (g->return_token_ids)
        json_object_set_new(choice, "token_ids", token_ids_json(g->text.data, g->text.len));
    if (!chat && !sg)
        json_object_set_new(choice, "prompt_logprobs", json_null());
    json_t *r = json_pack("{s:s, s:s, s:I, s:s, s:[o]}", "id", g->id, "object",
                          chat ? "chat.completion" : "text_completion", "created",
                          (json_int_t)g->created, "model", srv_cfg->model, "choices", choice);
    if (!sg) {
        json_object_set_new(r, "service_tier", json_null());
        json_object_set_new(r, "system_fingerprint", json_null());
    }
    json_object_set_new(r, "usage", usage_json(g, true));
    json_t *sm = spec_metrics_json(g);
    if (sm)
        json_object_set_new(r, "metrics", sm);
    if (!sg) {
        if (chat)
            json_object_set_new(r, "prompt_logprobs", json_null());
        json_object_set_new(r, "kv_transfer_params", json_null());
    }
    return r;
}

static json_t *chunk(const struct gen *g, json_t *choice)
{
    bool chat = strcmp(g->endpoint, "chat") == 0;
    return json_pack("{s:s, s:s, s:I, s:s, s:[o]}", "id", g->id, "object",
                     chat ? "chat.completion.chunk" : "text_completion", "created",
                     (json_int_t)g->created, "model", srv_cfg->model, "choices", choice);
}

/* The SSE body as vLLM streams it: (chat) a role chunk, one chunk per token, the last token's
   chunk carrying finish_reason, the usage chunk with "choices": [] when asked, [DONE]. */
/* vLLM's continuous_usage_stats: every chunk carries the counts so far. */
static json_t *running_usage(const struct gen *g, long completion)
{
    return json_pack("{s:I, s:I, s:I}", "prompt_tokens", (json_int_t)g->prompt_tokens,
                     "completion_tokens", (json_int_t)completion, "total_tokens",
                     (json_int_t)(g->prompt_tokens + completion));
}

static struct srv_stream *gen_stream(const struct gen *g)
{
    bool chat = strcmp(g->endpoint, "chat") == 0;
    struct srv_stream *st = srv_stream_new();
    if (chat) {
        json_t *c = chunk(g, json_pack("{s:i, s:{s:s, s:s}, s:n, s:n}", "index", 0, "delta", "role",
                                       "assistant", "content", "", "logprobs", "finish_reason"));
        if (g->continuous_usage)
            json_object_set_new(c, "usage", running_usage(g, 0));
        srv_stream_json(st, c);
    }
    size_t pos = 0;
    long ntok = 0;
    do {
        size_t len = g->text.len ? srv_tok_next(g->text.data + pos, g->text.len - pos) : 0;
        bool last = pos + len >= g->text.len;
        json_t *choice;
        if (chat) {
            choice = json_pack("{s:i, s:{s:s%}, s:n}", "index", 0, "delta", "content",
                               g->text.data + pos, len, "logprobs");
            /* vLLM puts finish_reason on the last token's delta; stop_reason only there */
            if (last)
                set_finish(choice, g, true);
            else
                json_object_set_new(choice, "finish_reason", json_null());
        } else {
            choice = json_pack("{s:i, s:s%, s:n}", "index", 0, "text", g->text.data + pos, len,
                               "logprobs");
            set_finish(choice, g, last);
        }
        if (g->return_token_ids)
            json_object_set_new(choice, "token_ids", token_ids_json(g->text.data + pos, len));
        json_t *c = chunk(g, choice);
        ntok += len > 0;
        if (g->continuous_usage)
            json_object_set_new(c, "usage", running_usage(g, last ? g->completion_tokens : ntok));
        srv_stream_json(st, c);
        pos += len;
    } while (pos < g->text.len);
    if (g->include_usage) {
        json_t *u = json_pack("{s:s, s:s, s:I, s:s, s:[], s:o}", "id", g->id, "object",
                              chat ? "chat.completion.chunk" : "text_completion", "created",
                              (json_int_t)g->created, "model", srv_cfg->model, "choices", "usage",
                              usage_json(g, false));
        json_t *sm = spec_metrics_json(g);
        if (sm)
            json_object_set_new(u, "metrics", sm);
        srv_stream_json(st, u);
    }
    srv_stream_event(st, "[DONE]");
    return st;
}

/* SGLang's native /generate answer. */
static json_t *generate_meta(const struct gen *g, bool final)
{
    json_t *fr = json_null();
    if (final) {
        if (strcmp(g->finish, "length") == 0)
            fr = json_pack("{s:s, s:I}", "type", "length", "length", (json_int_t)g->max_tokens);
        else if (g->stop_str)
            fr = json_pack("{s:s, s:s}", "type", "stop", "matched", g->stop_str);
        else
            fr = json_pack("{s:s, s:I}", "type", "stop", "matched",
                           (json_int_t)srv_cfg->eos_token_id);
    }
    json_t *m = json_pack("{s:s, s:o, s:I, s:I, s:i}", "id", g->id + 4, "finish_reason", fr,
                          "prompt_tokens", (json_int_t)g->prompt_tokens, "completion_tokens",
                          (json_int_t)g->completion_tokens, "cached_tokens", 0);
    if (final && srv_cfg->spec.k > 0) {
        const struct srv_spec_result *s = &g->spec;
        json_t *hist = json_array();
        for (int i = 0; i <= srv_cfg->spec.k; i++)
            json_array_append_new(hist, json_integer(s->hist[i]));
        json_object_set_new(m, "spec_verify_ct", json_integer(s->steps));
        json_object_set_new(m, "spec_num_correct_drafts", json_integer(s->accepted));
        json_object_set_new(m, "spec_accepted_drafts", json_integer(s->accepted));
        json_object_set_new(m, "spec_num_proposed_drafts", json_integer(s->draft_tokens));
        json_object_set_new(m, "spec_proposed_drafts", json_integer(s->draft_tokens));
        json_object_set_new(
            m, "spec_accept_rate",
            json_real(s->draft_tokens ? (double)s->accepted / (double)s->draft_tokens : 0.0));
        json_object_set_new(
            m, "spec_accept_length",
            json_real(s->steps ? (double)g->completion_tokens / (double)s->steps : 0.0));
        json_object_set_new(m, "spec_correct_drafts_histogram", json_deep_copy(hist));
        json_object_set_new(m, "spec_accept_histogram", hist);
    }
    return m;
}

static struct srv_stream *generate_stream(const struct gen *g)
{
    struct srv_stream *st = srv_stream_new();
    /* SGLang's native stream repeats the whole text so far in every event. */
    size_t pos = 0;
    do {
        size_t len = g->text.len ? srv_tok_next(g->text.data + pos, g->text.len - pos) : 0;
        pos += len;
        bool last = pos >= g->text.len;
        srv_stream_json(st, json_pack("{s:s%, s:o}", "text", g->text.data, pos, "meta_info",
                                      generate_meta(g, last)));
    } while (pos < g->text.len);
    srv_stream_event(st, "[DONE]");
    return st;
}

/* U+0000 in the middle of the answer: models can emit any code point */
static void add_nul(struct dsa_buf *text)
{
    size_t mid = text->len / 2;
    while (mid > 0 && ((unsigned char)text->data[mid] & 0xc0) == 0x80)
        mid--; /* not inside a UTF-8 sequence */
    struct dsa_buf b = DSA_BUF_INIT;
    dsa_buf_add(&b, text->data, mid);
    dsa_buf_addch(&b, '\0');
    dsa_buf_add(&b, text->data + mid, text->len - mid);
    dsa_buf_release(text);
    *text = b;
}

static MHD_RESULT send_malformed(struct MHD_Connection *c, const struct gen *g)
{
    /* A body cut in the middle of a string: valid prefix, never valid JSON. */
    char body[256];
    if (g->stream) {
        snprintf(body, sizeof body,
                 "data: "
                 "{\"id\":\"%s\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
                 "\"delta\":{\"content\":\"tru\n\ndata: [DONE]\n\n",
                 g->id);
        return send_buf(c, 200, "text/event-stream; charset=utf-8", body, strlen(body));
    }
    snprintf(body, sizeof body,
             "{\"id\":\"%s\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,\"message\":{"
             "\"role\":\"assistant\",\"content\":\"tru",
             g->id);
    return send_buf(c, 200, "application/json", body, strlen(body));
}

static MHD_RESULT handle_generate(struct MHD_Connection *c, const char *endpoint,
                                  const struct req *rq)
{
    const struct srv_config *cfg = srv_cfg;
    double t0 = now_s();
    struct srv_fault fault = {SRV_FAULT_NONE, 0};
    const char *forced = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-DSA-Fault");
    if (forced && srv_fault_parse_kind(forced, &fault) != 0)
        return send_error(c, 400, "unknown X-DSA-Fault kind");
    if (!forced && cfg->n_faults) {
        uint64_t h = dsa_fnv1a64(rq->body.data, rq->body.len);
        fault = srv_fault_choose(cfg->faults, cfg->n_faults, cfg->fault_seed, rq->body.data,
                                 rq->body.len, h, srv_fault_attempt(h),
                                 atomic_fetch_add(&arrival_counter, 1) + 1);
    }
    switch (fault.kind) {
    case SRV_FAULT_STATUS:
        return send_error(c, fault.status, "injected fault");
    case SRV_FAULT_RESET:
        return send_reset(c);
    case SRV_FAULT_ERROR_NESTED:
    case SRV_FAULT_ERROR_FLAT: {
        json_t *b = error_body(500, "injected fault", fault.kind == SRV_FAULT_ERROR_FLAT);
        return send_json(c, 500, b);
    }
    case SRV_FAULT_CONTENT_TYPE: {
        static const char page[] = "<html><head><title>502 Bad Gateway</title></head><body>"
                                   "<center><h1>502 Bad Gateway</h1></center></body></html>\n";
        return send_buf(c, 200, "text/html", page, sizeof page - 1);
    }
    case SRV_FAULT_STALL:
        srv_sleep_ms(1000L * cfg->stall_s);
        break;
    case SRV_FAULT_BAD_UTF8_400: {
        static const char body[] = "{\"error\":{\"message\":\"bad \xff\xfe bytes\"}}";
        return send_buf(c, 400, "application/json", body, sizeof body - 1);
    }
    default:
        break;
    }

    struct gen g;
    memset(&g, 0, sizeof g);
    g.endpoint = endpoint;
    int status;
    char err[1024];
    if (gen_parse(&g, rq, &status, err, sizeof err) != 0) {
        gen_release(&g);
        return send_error(c, status, err);
    }
    unsigned long n = atomic_fetch_add(&request_counter, 1);
    const char *rid = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Request-Id");
    const char *idp = strcmp(endpoint, "chat") == 0 ? "chatcmpl-" : "cmpl-";
    if (rid && strlen(rid) < 64)
        snprintf(g.id, sizeof g.id, "%s%s", idp, rid);
    else
        snprintf(g.id, sizeof g.id, "%s%016" PRIx64 "%016" PRIx64, idp,
                 dsa_splitmix64(n ^ cfg->answer.seed), dsa_splitmix64(~n));
    g.created = (long)time(NULL);

    if (fault.kind == SRV_FAULT_STALL_STREAM && !g.stream)
        srv_sleep_ms(1000L * cfg->stall_s);
    if (fault.kind == SRV_FAULT_ENDLESS_STREAM || fault.kind == SRV_FAULT_GZIP_BOMB) {
        bool sse = g.stream;
        gen_release(&g);
        return (MHD_RESULT)srv_endless_queue(c, sse, fault.kind == SRV_FAULT_GZIP_BOMB);
    }
    srv_metrics_running(1);
    gen_run(&g);
    if (fault.kind == SRV_FAULT_NUL)
        add_nul(&g.text);
    if (cfg->delay_ms > 0)
        srv_sleep_ms(cfg->delay_ms);
    if (fault.kind == SRV_FAULT_MALFORMED) {
        srv_metrics_running(-1);
        MHD_RESULT ret = send_malformed(c, &g);
        gen_release(&g);
        return ret;
    }
    /* Counters move before the answer leaves, so a client that reads /metrics after its last
       response sees them. */
    srv_metrics_record(g.prompt_tokens, g.completion_tokens, g.finish, &g.spec, now_s() - t0);
    srv_metrics_running(-1);

    MHD_RESULT ret;
    bool generate = strcmp(endpoint, "generate") == 0;
    if (g.stream) {
        struct srv_stream *st = generate ? generate_stream(&g) : gen_stream(&g);
        if (fault.kind == SRV_FAULT_TRUNCATE) {
            st->cut_at = (long)(st->n / 2);
        } else if (fault.kind == SRV_FAULT_STALL_STREAM) {
            st->stall_at = (long)(st->n / 2);
        } else if (fault.kind == SRV_FAULT_STREAM_ERROR) {
            /* vLLM's mid-stream error: an error event, then [DONE]. */
            size_t keep = st->n / 2;
            st->n = keep;
            st->data.len = keep ? st->ends[keep - 1] : 0;
            json_t *e = error_body(500, "injected fault", cfg->sglang);
            srv_stream_json(st, e);
            srv_stream_event(st, "[DONE]");
        }
        ret = send_stream(c, st);
    } else {
        json_t *body = generate ? json_pack("{s:s%, s:o}", "text", g.text.data, g.text.len,
                                            "meta_info", generate_meta(&g, true))
                                : gen_response(&g);
        char *s = json_dumps(body, JSON_COMPACT | JSON_REAL_PRECISION(17));
        json_decref(body);
        size_t len = strlen(s);
        if (fault.kind == SRV_FAULT_TRUNCATE) {
            /* Announce the full length, send half, close: the client sees a short body. */
            struct srv_stream *st = srv_stream_new();
            dsa_buf_add(&st->data, s, len);
            st->ends = dsa_xmalloc(2 * sizeof *st->ends);
            st->ends[0] = len / 2;
            st->ends[1] = len;
            st->n = 2;
            st->cut_at = 1;
            struct MHD_Response *r = srv_stream_response(st, len);
            MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
            ret = MHD_queue_response(c, 200, r);
            MHD_destroy_response(r);
        } else {
            ret = send_buf(c, 200, "application/json", s, len);
        }
        free(s);
    }
    gen_release(&g);
    return ret;
}

/* ---------------------------------------------------------------- routing */

static bool authorized(struct MHD_Connection *c)
{
    const char *key = srv_cfg->api_key;
    if (!key)
        return true;
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    return auth && strncasecmp(auth, "Bearer ", 7) == 0 && strcmp(auth + 7, key) == 0;
}

/* A canned answer: FILE's bytes, whatever they are (huge model lists and series, counts and
   context lengths no real server sends). The type follows the name: .txt is Prometheus text,
   anything else JSON. */
static MHD_RESULT send_canned(struct MHD_Connection *c, const char *file)
{
    FILE *f = fopen(file, "rb");
    if (!f)
        return send_error(c, 500, "cannot open the canned file");
    struct dsa_buf b = DSA_BUF_INIT;
    char chunk[1 << 16];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        dsa_buf_add(&b, chunk, n);
    fclose(f);
    size_t fl = strlen(file);
    bool text = fl > 4 && !strcmp(file + fl - 4, ".txt");
    MHD_RESULT ret =
        send_buf(c, 200, text ? "text/plain; version=0.0.4; charset=utf-8" : "application/json",
                 b.data, b.len);
    dsa_buf_release(&b);
    return ret;
}

static MHD_RESULT dispatch(struct MHD_Connection *c, const char *url, const char *method,
                           const struct req *rq)
{
    for (size_t i = 0; i < srv_cfg->n_canned; i++)
        if (!strcmp(url, srv_cfg->canned[i].path))
            return send_canned(c, srv_cfg->canned[i].file);
    bool get = strcmp(method, "GET") == 0, post = strcmp(method, "POST") == 0;
    static const char not_found[] = "{\"detail\":\"Not Found\"}";
    static const char not_allowed[] = "{\"detail\":\"Method Not Allowed\"}";
    if (rq->too_big)
        return send_error(c, 413, "Request body too large");
    if (srv_cfg->llamacpp)
        return (MHD_RESULT)srv_llamacpp_dispatch(c, url, method, rq->body.data, rq->body.len);
    /* vLLM's --api-key guards /v1 only; SGLang's guards everything but /health. */
    bool guarded = srv_cfg->sglang ? strcmp(url, "/health") != 0 : strncmp(url, "/v1", 3) == 0;
    if (guarded && !authorized(c))
        return send_buf(c, 401, "application/json", "{\"error\":\"Unauthorized\"}", 24);

    struct {
        const char *path;
        bool post;
        int id;
    } routes[] = {
        {"/health", false, 0},          {"/version", false, 1}, {"/v1/models", false, 2},
        {"/metrics", false, 3},         {"/tokenize", true, 4}, {"/v1/chat/completions", true, 5},
        {"/v1/completions", true, 6},   {"/generate", true, 7}, {"/get_model_info", false, 8},
        {"/get_server_info", false, 9},
    };
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        if (strcmp(url, routes[i].path) != 0)
            continue;
        if (routes[i].id >= 7 && !srv_cfg->sglang)
            break;
        if ((routes[i].post && !post) || (!routes[i].post && !get))
            return send_buf(c, 405, "application/json", not_allowed, sizeof not_allowed - 1);
        switch (routes[i].id) {
        case 0:
            return send_buf(c, 200, NULL, "", 0);
        case 1: {
            return send_json(c, 200, json_pack("{s:s}", "version", srv_cfg->server_version));
        }
        case 2:
            return handle_models(c);
        case 3:
            return handle_metrics(c);
        case 4:
            return handle_tokenize(c, rq);
        case 5:
            return handle_generate(c, "chat", rq);
        case 6:
            return handle_generate(c, "completions", rq);
        case 7:
            return handle_generate(c, "generate", rq);
        default:
            return handle_sglang_info(c, routes[i].id == 9);
        }
    }
    return send_buf(c, 404, "application/json", not_found, sizeof not_found - 1);
}

static MHD_RESULT on_request(void *cls, struct MHD_Connection *c, const char *url,
                             const char *method, const char *version, const char *upload,
                             size_t *upload_size, void **con_cls)
{
    (void)cls;
    (void)version;
    struct req *rq = *con_cls;
    if (!rq) {
        rq = dsa_xcalloc(1, sizeof *rq);
        dsa_buf_init(&rq->body);
        *con_cls = rq;
        return MHD_YES;
    }
    if (*upload_size) {
        if (rq->body.len + *upload_size > (size_t)srv_cfg->max_body)
            rq->too_big = true;
        else
            dsa_buf_add(&rq->body, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    log_request(c, method, url, rq);
    return dispatch(c, url, method, rq);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)c;
    (void)toe;
    struct req *rq = *con_cls;
    if (rq) {
        dsa_buf_release(&rq->body);
        free(rq);
        *con_cls = NULL;
    }
}

/* Loopback peers only, whatever the socket is bound to. */
static MHD_RESULT on_accept(void *cls, const struct sockaddr *addr, socklen_t len)
{
    (void)cls;
    (void)len;
    if (addr->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)addr;
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127 ? MHD_YES : MHD_NO;
    }
    if (addr->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)addr;
        return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) ? MHD_YES : MHD_NO;
    }
    return MHD_NO;
}

struct MHD_Daemon *srv_http_start(const struct srv_config *cfg, const char *host, int port,
                                  unsigned max_connections)
{
    srv_cfg = cfg;
    created_at = (long)time(NULL);
    struct sockaddr_in in4;
    struct sockaddr_in6 in6;
    const struct sockaddr *sa;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                     MHD_USE_POLL | MHD_USE_ERROR_LOG;
    if (strchr(host, ':')) {
        memset(&in6, 0, sizeof in6);
        in6.sin6_family = AF_INET6;
        in6.sin6_port = htons((uint16_t)port);
        in6.sin6_addr = in6addr_loopback;
        sa = (const struct sockaddr *)&in6;
        flags |= MHD_USE_IPv6;
    } else {
        memset(&in4, 0, sizeof in4);
        in4.sin_family = AF_INET;
        in4.sin_port = htons((uint16_t)port);
        in4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        sa = (const struct sockaddr *)&in4;
    }
    /* https:// with a certificate of the test's own private CA (libmicrohttpd over GnuTLS) */
    struct MHD_OptionItem tls[3] = {{MHD_OPTION_END, 0, NULL}};
    if (cfg->tls_cert && cfg->tls_key) {
        flags |= MHD_USE_TLS;
        tls[0] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, cfg->tls_key};
        tls[1] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, cfg->tls_cert};
        tls[2] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    }
    return MHD_start_daemon(
        flags, (uint16_t)port, on_accept, NULL, on_request, NULL, MHD_OPTION_ARRAY, tls,
        MHD_OPTION_SOCK_ADDR, sa, MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
        MHD_OPTION_CONNECTION_LIMIT, max_connections, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)0,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)1024, MHD_OPTION_THREAD_STACK_SIZE,
        (size_t)(512 * 1024), MHD_OPTION_END);
}

#ifdef DSA_UNITTEST_BUILD
/* The whole generation path but the socket: parse, answer, and build both the JSON and the
   SSE forms. Returns the HTTP status the request would get. For the fuzz target. */
int srv_http_fuzz_generate(const struct srv_config *cfg, const char *endpoint, const char *body,
                           size_t len)
{
    srv_cfg = cfg;
    struct req rq = {{(char *)body, len, len}, false};
    struct gen g;
    memset(&g, 0, sizeof g);
    g.endpoint = endpoint;
    int status = 200;
    char err[1024];
    if (gen_parse(&g, &rq, &status, err, sizeof err) == 0) {
        status = 200;
        snprintf(g.id, sizeof g.id, "chatcmpl-fuzz");
        gen_run(&g);
        bool generate = strcmp(endpoint, "generate") == 0;
        json_t *r = generate ? generate_meta(&g, true) : gen_response(&g);
        json_decref(r);
        srv_stream_free(generate ? generate_stream(&g) : gen_stream(&g));
    }
    gen_release(&g);
    return status;
}
#endif
