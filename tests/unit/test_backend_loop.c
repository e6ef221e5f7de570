/* Unit tests of the endpoint backend's event loop against a scripted HTTP/1.1 server that
 * runs in a thread of the test (one thread per connection, keep-alive): request bodies as
 * sent, retries of 5xx / 429 (Retry-After) / dropped connections / truncated streams,
 * no retry of 4xx, over-context 400s, timeouts, streaming, two endpoints, cancel, probing.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "backend/endpoint.h"
#include "evals/evals.h"
#include "evals/mrcr_eval.h"
#include "run/loop.h"
#include "run/run.h"
#include "store/store.h"
#include "util/buf.h"
#include "util/hash.h"
#include "util/json_dump.h"

/* defined by main.c in the binary; the eval loop polls it */
volatile int dsa_interrupted;

/* ---- the scripted server ---------------------------------------------------------------- */

struct sreq {
    int server; /* which of the two listeners */
    char path[128];
    char auth[128];
    char *body;
};

enum action { REPLY, DROP, SLEEP_THEN_REPLY };

/* fills `out` with a whole HTTP response; returns the action */
typedef enum action (*handler_fn)(int n, const struct sreq *rq, struct dsa_buf *out);

static struct {
    pthread_mutex_t mu;
    handler_fn handler;
    struct sreq reqs[512];
    int n;
    int sleep_ms;
    int listen_fd[2];
    int port[2];
    volatile int stop;
} S = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void reply(struct dsa_buf *out, int code, const char *extra_headers, const char *ctype,
                  const char *body)
{
    dsa_buf_addf(out, "HTTP/1.1 %d X\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s\r\n%s", code,
                 ctype, strlen(body), extra_headers ? extra_headers : "", body);
}

static void json_reply(struct dsa_buf *out, int code, const char *body)
{
    reply(out, code, NULL, "application/json", body);
}

static const char *CHAT_OK = "{\"choices\":[{\"message\":{\"content\":\"pong\"},\"finish_reason\":"
                             "\"stop\"}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1}}";

/* case-insensitive strstr (strcasestr is a GNU extension) */
static char *find_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++)
        if (!strncasecmp(hay, needle, n))
            return (char *)hay;
    return NULL;
}

static void *conn_thread(void *arg)
{
    int fd = (int)(intptr_t)arg >> 1, server = (int)(intptr_t)arg & 1;
    struct dsa_buf in = DSA_BUF_INIT;
    dsa_buf_init(&in);
    char buf[65536];
    for (;;) {
        /* read one request: headers, then Content-Length bytes */
        char *hend;
        while (!(hend = strstr(in.data, "\r\n\r\n"))) {
            ssize_t k = read(fd, buf, sizeof buf);
            if (k <= 0)
                goto out;
            dsa_buf_add(&in, buf, (size_t)k);
        }
        size_t hlen = (size_t)(hend - in.data) + 4;
        size_t clen = 0;
        char *cl = find_ci(in.data, "Content-Length:");
        if (cl && cl < hend)
            clen = strtoul(cl + 15, NULL, 10);
        while (in.len < hlen + clen) {
            ssize_t k = read(fd, buf, sizeof buf);
            if (k <= 0)
                goto out;
            dsa_buf_add(&in, buf, (size_t)k);
        }
        struct sreq rq = {.server = server};
        sscanf(in.data, "%*s %127s", rq.path);
        char *au = find_ci(in.data, "Authorization:");
        if (au && au < hend)
            sscanf(au + 14, " %127[^\r]", rq.auth);
        rq.body = dsa_xstrndup(in.data + hlen, clen);
        /* consume this request */
        memmove(in.data, in.data + hlen + clen, in.len - hlen - clen);
        in.len -= hlen + clen;
        in.data[in.len] = 0;

        pthread_mutex_lock(&S.mu);
        int n = S.n;
        if (S.n < 512)
            S.reqs[S.n++] = rq;
        else
            free(rq.body);
        handler_fn h = S.handler;
        pthread_mutex_unlock(&S.mu);
        struct dsa_buf out = DSA_BUF_INIT;
        dsa_buf_init(&out);
        enum action a = h(n, &S.reqs[n < 512 ? n : 511], &out);
        if (a == DROP) {
            dsa_buf_release(&out);
            goto out;
        }
        if (a == SLEEP_THEN_REPLY)
            usleep((useconds_t)S.sleep_ms * 1000u);
        for (size_t off = 0; off < out.len;) {
            ssize_t k = write(fd, out.data + off, out.len - off);
            if (k <= 0)
                break;
            off += (size_t)k;
        }
        dsa_buf_release(&out);
    }
out:
    close(fd);
    dsa_buf_release(&in);
    return NULL;
}

static void *accept_thread(void *arg)
{
    int server = (int)(intptr_t)arg;
    while (!S.stop) {
        int fd = accept(S.listen_fd[server], NULL, NULL);
        if (fd < 0)
            break;
        pthread_t t;
        pthread_create(&t, NULL, conn_thread, (void *)(intptr_t)((fd << 1) | server));
        pthread_detach(t);
    }
    return NULL;
}

static pthread_t acceptors[2];

static int start_servers(void **state)
{
    (void)state;
    for (int i = 0; i < 2; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 256))
            return -1;
        socklen_t al = sizeof a;
        getsockname(fd, (struct sockaddr *)&a, &al);
        S.listen_fd[i] = fd;
        S.port[i] = ntohs(a.sin_port);
        pthread_create(&acceptors[i], NULL, accept_thread, (void *)(intptr_t)i);
    }
    return 0;
}

static int stop_servers(void **state)
{
    (void)state;
    S.stop = 1;
    for (int i = 0; i < 2; i++) {
        shutdown(S.listen_fd[i], SHUT_RDWR);
        close(S.listen_fd[i]);
        pthread_join(acceptors[i], NULL);
    }
    return 0;
}

static void reset_log(handler_fn h)
{
    pthread_mutex_lock(&S.mu);
    for (int i = 0; i < S.n && i < 512; i++)
        free(S.reqs[i].body);
    S.n = 0;
    S.handler = h;
    pthread_mutex_unlock(&S.mu);
}

static int n_requests(void)
{
    pthread_mutex_lock(&S.mu);
    int n = S.n;
    pthread_mutex_unlock(&S.mu);
    return n;
}

/* ---- client helpers --------------------------------------------------------------------- */

static char url0[64], url1[64];

static dsa_backend *open_client(int n_urls, int concurrency, int retries, double timeout_s,
                                json_t *extra, const char *key)
{
    snprintf(url0, sizeof url0, "http://127.0.0.1:%d", S.port[0]);
    snprintf(url1, sizeof url1, "http://127.0.0.1:%d/v1/", S.port[1]);
    const char *urls[] = {url0, url1};
    struct dsa_endpoint_opts o = {.urls = urls,
                                  .n_urls = n_urls,
                                  .model = "m",
                                  .api_key = key,
                                  .extra_body = extra,
                                  .concurrency = concurrency,
                                  .retries = retries,
                                  .timeout_s = timeout_s,
                                  .backoff_base_s = 0.01,
                                  .backoff_max_s = 0.05};
    int code;
    dsa_backend *b = dsa_endpoint_open(&o, &code);
    assert_non_null(b);
    return b;
}

static int chat(dsa_backend *b, json_t *body, bool stream, struct dsa_result *out)
{
    struct dsa_request rq = {.api = DSA_API_CHAT, .body = body, .endpoint = -1, .stream = stream};
    return dsa_backend_call(b, &rq, out);
}

static json_t *hello_body(void)
{
    return json_pack("{s:[{s:s,s:s}],s:i,s:i}", "messages", "role", "user", "content",
                     "h\xc3\xa9llo \"q\"", "max_tokens", 16, "temperature", 0);
}

/* ---- tests ------------------------------------------------------------------------------- */

static enum action h_ok(int n, const struct sreq *rq, struct dsa_buf *out)
{
    (void)n;
    (void)rq;
    json_reply(out, 200, CHAT_OK);
    return REPLY;
}

static void test_body_and_result(void **state)
{
    (void)state;
    reset_log(h_ok);
    json_t *extra =
        json_pack("{s:{s:b},s:i}", "chat_template_kwargs", "enable_thinking", 0, "max_tokens", 99);
    dsa_backend *b = open_client(1, 4, 0, 10, extra, "sk-secret");
    json_decref(extra);
    json_t *body = hello_body();
    struct dsa_result r;
    assert_int_equal(chat(b, body, false, &r), DSA_RES_OK);
    assert_string_equal(r.content, "pong");
    assert_string_equal(r.finish_reason, "stop");
    assert_int_equal(r.prompt_tokens, 5);
    assert_int_equal(r.http_code, 200);
    assert_int_equal(r.retries, 0);
    assert_true(r.latency_ms >= 0);
    assert_true(r.ttft_ms < 0);
    dsa_result_release(&r);
    assert_int_equal(n_requests(), 1);
    assert_string_equal(S.reqs[0].path, "/v1/chat/completions");
    assert_string_equal(S.reqs[0].auth, "Bearer sk-secret");
    /* extra-body first, then the request's own keys (max_tokens 16 wins), then model; the
       message bytes verbatim */
    assert_string_equal(S.reqs[0].body,
                        "{\"chat_template_kwargs\":{\"enable_thinking\":false},\"max_tokens\":16,"
                        "\"messages\":[{\"role\":\"user\",\"content\":\"h\xc3\xa9llo "
                        "\\\"q\\\"\"}],\"temperature\":0,\"model\":\"m\"}");
    /* the key never shows in the identity */
    json_t *d = dsa_backend_describe(b);
    char *ds = json_dumps(d, 0);
    assert_null(strstr(ds, "sk-secret"));
    free(ds);
    json_decref(d);
    json_decref(body);
    dsa_backend_free(&b);
    assert_null(b);
}

static enum action h_flaky(int n, const struct sreq *rq, struct dsa_buf *out)
{
    (void)rq;
    switch (n) {
    case 0:
        json_reply(out, 500, "{\"object\":\"error\",\"message\":\"boom\",\"code\":500}");
        return REPLY;
    case 1:
        reply(out, 429, "Retry-After: 0\r\n", "application/json",
              "{\"error\":{\"message\":\"slow down\",\"code\":429}}");
        return REPLY;
    case 2:
        return DROP;
    case 3: /* a 200 whose body is cut: not JSON */
        json_reply(out, 200, "{\"choices\":[");
        return REPLY;
    default:
        json_reply(out, 200, CHAT_OK);
        return REPLY;
    }
}

static void test_retries_then_ok(void **state)
{
    (void)state;
    reset_log(h_flaky);
    dsa_backend *b = open_client(1, 2, 5, 10, NULL, NULL);
    json_t *body = hello_body();
    struct dsa_result r;
    assert_int_equal(chat(b, body, false, &r), DSA_RES_OK);
    /* 500, 429, drop, cut body, ok: five requests reached the server. libcurl itself resends
       a request once when a reused keep-alive connection dies before any byte of the answer,
       so the drop costs us one retry or none. */
    assert_true(r.retries == 3 || r.retries == 4);
    long want_retries = r.retries;
    assert_string_equal(r.content, "pong");
    dsa_result_release(&r);
    assert_int_equal(n_requests(), 5);
    /* every attempt sent the same body */
    for (int i = 1; i < 5; i++)
        assert_string_equal(S.reqs[i].body, S.reqs[0].body);
    long retries, errors;
    dsa_backend_stats(b, &retries, &errors);
    assert_int_equal(retries, want_retries);
    assert_int_equal(errors, 0);
    json_decref(body);
    dsa_backend_free(&b);
}

/* A message list of about `bytes` bytes whose content needs every kind of escape. */
static json_t *big_messages(size_t bytes)
{
    struct dsa_buf t = DSA_BUF_INIT;
    while (t.len < bytes)
        dsa_buf_adds(&t, "say \"h\xc3\xa9llo\"\n\tback\\slash \x01 \xe2\x82\xac / ");
    json_t *m = json_pack("[{s:s,s:s%}]", "role", "user", "content", t.data, t.len);
    dsa_buf_release(&t);
    return m;
}

/* The body a row's messages given as bytes produce: the bytes the server got on every
   attempt, against the same request with its messages as a tree. held: the bytes are sent
   from the caller's buffer (>= 64 KiB) or copied (below). */
static void check_raw_body(size_t bytes, bool held)
{
    reset_log(h_flaky);
    dsa_backend *b = open_client(1, 2, 5, 10, NULL, NULL);
    json_t *msgs = big_messages(bytes);
    struct dsa_buf raw = DSA_BUF_INIT;
    assert_int_equal(dsa_json_dump_compact(msgs, &raw), 0);
    json_t *stand_in = json_array();
    json_t *body = json_pack("{s:O,s:i}", "messages", stand_in, "max_tokens", 16);
    struct dsa_request rq = {.api = DSA_API_CHAT,
                             .body = body,
                             .endpoint = -1,
                             .raw_value = stand_in,
                             .raw_bytes = raw.data,
                             .raw_len = raw.len,
                             .raw_held = held};
    struct dsa_result r;
    assert_int_equal(dsa_backend_call(b, &rq, &r), DSA_RES_OK);
    assert_string_equal(r.content, "pong");
    dsa_result_release(&r);
    /* 500, 429, drop, cut body, ok: every attempt (and libcurl's own resend after the drop)
       sent the body the tree gives */
    json_t *tree = json_pack("{s:O,s:i,s:s}", "messages", msgs, "max_tokens", 16, "model", "m");
    struct dsa_buf want = DSA_BUF_INIT;
    assert_int_equal(dsa_json_dump_compact(tree, &want), 0);
    assert_int_equal(n_requests(), 5);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(strlen(S.reqs[i].body), want.len);
        assert_memory_equal(S.reqs[i].body, want.data, want.len);
    }
    dsa_buf_release(&want);
    dsa_buf_release(&raw);
    json_decref(tree);
    json_decref(body);
    json_decref(stand_in);
    json_decref(msgs);
    dsa_backend_free(&b);
}

static void test_raw_body_sent_in_place(void **state)
{
    (void)state;
    check_raw_body(300 << 10, true); /* from the caller's bytes, over several upload chunks */
    check_raw_body(300 << 10, false);
    check_raw_body(4 << 10, true); /* under 64 KiB: copied into the body, sent with headers */
}

static void test_retries_exhausted(void **state)
{
    (void)state;
    reset_log(h_flaky);
    dsa_backend *b = open_client(1, 2, 1, 10, NULL, NULL);
    json_t *body = hello_body();
    struct dsa_result r;
    assert_int_equal(chat(b, body, false, &r), DSA_RES_FAILED);
    assert_int_equal(r.http_code, 429);
    assert_string_equal(r.error, "HTTP 429: slow down (gave up after 1 retries)");
    dsa_result_release(&r);
    assert_int_equal(n_requests(), 2);
    json_decref(body);
    dsa_backend_free(&b);
}

static enum action h_400(int n, const struct sreq *rq, struct dsa_buf *out)
{
    (void)n;
    if (strstr(rq->body, "long"))
        json_reply(out, 400,
                   "{\"error\":{\"message\":\"This model's maximum context length is 8192 "
                   "tokens. However, you requested 9000 tokens (4904 in the messages, 4096 in "
                   "the completion).\",\"type\":\"BadRequestError\",\"param\":null,\"code\":400}}");
    else
        json_reply(out, 400, "{\"object\":\"error\",\"message\":\"bad temperature\",\"code\":400}");
    return REPLY;
}

static void test_4xx_not_retried_and_over_context(void **state)
{
    (void)state;
    reset_log(h_400);
    dsa_backend *b = open_client(1, 2, 5, 10, NULL, NULL);
    json_t *body = hello_body();
    struct dsa_result r;
    assert_int_equal(chat(b, body, false, &r), DSA_RES_FAILED);
    assert_string_equal(r.error, "HTTP 400: bad temperature");
    assert_int_equal(r.retries, 0);
    dsa_result_release(&r);
    assert_int_equal(n_requests(), 1);
    json_object_set_new(body, "messages",
                        json_pack("[{s:s,s:s}]", "role", "user", "content", "long"));
    assert_int_equal(chat(b, body, false, &r), DSA_RES_OVER_CONTEXT);
    assert_int_equal(r.prompt_tokens, 4904);
    assert_int_equal(r.max_model_len, 8192);
    dsa_result_release(&r);
    assert_int_equal(n_requests(), 2);
    json_decref(body);
    dsa_backend_free(&b);
}

static const char *SSE_BODY =
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"po\"}}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ng\"},\"finish_reason\":"
    "\"length\"}]}\n\n"
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}\n\n"
    "data: [DONE]\n\n";

static enum action h_stream(int n, const struct sreq *rq, struct dsa_buf *out)
{
    (void)rq;
    if (n == 0) { /* cut before [DONE]: retried */
        reply(out, 200, NULL, "text/event-stream", "data: {\"choices\":[{\"delta\":{}}]}\n\n");
        return REPLY;
    }
    reply(out, 200, NULL, "text/event-stream", SSE_BODY);
    return REPLY;
}

static void test_stream(void **state)
{
    (void)state;
    reset_log(h_stream);
    dsa_backend *b = open_client(1, 2, 3, 10, NULL, NULL);
    json_t *body = hello_body();
    struct dsa_result r;
    assert_int_equal(chat(b, body, true, &r), DSA_RES_OK);
    assert_string_equal(r.content, "pong");
    assert_string_equal(r.finish_reason, "length");
    assert_int_equal(r.completion_tokens, 2);
    assert_int_equal(r.retries, 1);
    assert_true(r.ttft_ms >= 0);
    assert_true(r.decode_ms >= 0);
    dsa_result_release(&r);
    assert_non_null(
        strstr(S.reqs[1].body, "\"stream\":true,\"stream_options\":{\"include_usage\":true}"));
    json_decref(body);
    dsa_backend_free(&b);
}

static enum action h_ignores_stream(int n, const struct sreq *rq, struct dsa_buf *out)
{
    (void)n;
    (void)rq;
    json_reply(out, 200, CHAT_OK); /* application/json although "stream": true was asked */
    return REPLY;
}

static void test_stream_ignored_by_server(void **state)
{
    (void)state;
    reset_log(h_ignores_stream);
    dsa_backend *b = open_client(1, 2, 0, 10, NULL, NULL);
    json_t *body = hello_body();
    struct dsa_result r;
    assert_int_equal(chat(b, body, true, &r), DSA_RES_OK);
    assert_string_equal(r.content, "pong");
    assert_int_equal(r.retries, 0);
    dsa_result_release(&r);
    json_decref(body);
    dsa_backend_free(&b);
}

static void on_count(const struct dsa_result *res)
{
    int *counts = res->ud;
    counts[res->status == DSA_RES_OK ? res->endpoint : 2]++;
}

static enum action h_slow(int n, const struct sreq *rq, struct dsa_buf *out);

static void test_two_endpoints(void **state)
{
    (void)state;
    /* answers take 20 ms on both servers, so least-outstanding must split about evenly
       (with instant answers the faster connection rightly takes more) */
    reset_log(h_slow);
    S.sleep_ms = 20;
    dsa_backend *b = open_client(2, 4, 0, 10, NULL, NULL);
    json_t *body = hello_body();
    int counts[3] = {0, 0, 0};
    for (int i = 0; i < 40; i++) {
        struct dsa_request rq = {
            .api = DSA_API_CHAT, .body = body, .endpoint = -1, .done = on_count, .ud = counts};
        assert_int_equal(dsa_backend_submit(b, &rq), 0);
    }
    assert_int_equal(dsa_backend_drain(b, NULL), 0);
    assert_int_equal(counts[0] + counts[1], 40);
    assert_int_equal(counts[2], 0);
    assert_true(counts[0] >= 10 && counts[1] >= 10);
    int per_server[2] = {0, 0};
    for (int i = 0; i < n_requests(); i++)
        per_server[S.reqs[i].server]++;
    assert_int_equal(per_server[0], counts[0]);
    json_decref(body);
    dsa_backend_free(&b);
    S.sleep_ms = 0;
}

static enum action h_404(int n, const struct sreq *rq, struct dsa_buf *out)
{
    (void)n;
    (void)rq;
    json_reply(out, 404, "{\"detail\":\"Not Found\"}");
    return REPLY;
}

static void test_tokenize_unsupported(void **state)
{
    (void)state;
    reset_log(h_404);
    json_t *extra = json_pack("{s:{s:b},s:f}", "chat_template_kwargs", "thinking", 0, "top_p", 1.0);
    dsa_backend *b = open_client(1, 2, 3, 10, extra, NULL);
    json_decref(extra);
    json_t *body = hello_body();
    struct dsa_request rq = {.api = DSA_API_TOKENIZE, .body = body, .endpoint = -1};
    struct dsa_result r;
    assert_int_equal(dsa_backend_call(b, &rq, &r), DSA_RES_UNSUPPORTED);
    dsa_result_release(&r);
    assert_int_equal(n_requests(), 1);
    assert_string_equal(S.reqs[0].path, "/tokenize");
    assert_non_null(strstr(S.reqs[0].body, "\"add_generation_prompt\":true"));
    /* the template kwargs of --extra-body reach the count; sampling keys do not */
    assert_non_null(strstr(S.reqs[0].body, "\"chat_template_kwargs\":{\"thinking\":false}"));
    assert_null(strstr(S.reqs[0].body, "top_p"));
    /* known missing now: answered without a request */
    assert_int_equal(dsa_backend_call(b, &rq, &r), DSA_RES_UNSUPPORTED);
    dsa_result_release(&r);
    assert_int_equal(n_requests(), 1);
    json_decref(body);
    dsa_backend_free(&b);
}

static enum action h_slow(int n, const struct sreq *rq, struct dsa_buf *out)
{
    (void)n;
    (void)rq;
    json_reply(out, 200, CHAT_OK);
    return SLEEP_THEN_REPLY;
}

static void on_status(const struct dsa_result *res)
{
    int *counts = res->ud;
    counts[res->status]++;
}

static void test_timeout_and_cancel(void **state)
{
    (void)state;
    reset_log(h_slow);
    S.sleep_ms = 1500;
    dsa_backend *b = open_client(1, 2, 1, 0.2, NULL, NULL);
    json_t *body = hello_body();
    struct dsa_result r;
    assert_int_equal(chat(b, body, false, &r), DSA_RES_FAILED);
    assert_non_null(strstr(r.error, "timeout"));
    assert_int_equal(r.retries, 1);
    dsa_result_release(&r);
    dsa_backend_free(&b);

    b = open_client(1, 2, 0, 10, NULL, NULL);
    int counts[5] = {0};
    for (int i = 0; i < 5; i++) {
        struct dsa_request rq = {
            .api = DSA_API_CHAT, .body = body, .endpoint = -1, .done = on_status, .ud = counts};
        dsa_backend_submit(b, &rq);
    }
    assert_int_equal(dsa_backend_idle_slots(b), 0);
    dsa_backend_poll(b, 50); /* two in flight, three queued */
    dsa_backend_cancel(b);
    assert_int_equal(counts[DSA_RES_CANCELLED], 5);
    assert_int_equal(dsa_backend_poll(b, 0), 0);
    json_decref(body);
    dsa_backend_free(&b);
    S.sleep_ms = 0;
}

/* chats held 400 ms each, counting how many are held at once; token counts answered at once */
static struct {
    pthread_mutex_t mu;
    int held, max_held;
} H = {.mu = PTHREAD_MUTEX_INITIALIZER};

static enum action h_held_chat_quick_count(int n, const struct sreq *rq, struct dsa_buf *out)
{
    (void)n;
    if (strstr(rq->path, "tokenize")) {
        json_reply(out, 200, "{\"count\":5,\"max_model_len\":100,\"tokens\":[1,2,3,4,5]}");
        return REPLY;
    }
    /* only this test's chats: a connection of an earlier test's cancelled client may still
       deliver a request to the server */
    if (!strstr(rq->body, "window test")) {
        json_reply(out, 200, CHAT_OK);
        return REPLY;
    }
    pthread_mutex_lock(&H.mu);
    if (++H.held > H.max_held)
        H.max_held = H.held;
    pthread_mutex_unlock(&H.mu);
    usleep(400 * 1000);
    pthread_mutex_lock(&H.mu);
    H.held--;
    pthread_mutex_unlock(&H.mu);
    json_reply(out, 200, CHAT_OK);
    return REPLY;
}

struct done_order {
    enum dsa_api api[16];
    int n;
};

static void on_order(const struct dsa_result *res)
{
    struct done_order *o = res->ud;
    assert_int_equal(res->status, DSA_RES_OK);
    if (o->n < 16)
        o->api[o->n++] = res->api;
}

/* Token counts do not hold a generation slot: at --concurrency 2 with four chats queued first,
   three counts submitted after them are answered before any chat (each chat is held 400 ms),
   and the server never holds more than two chats. With counts in the one window they waited
   behind the chats (first in, first out) and came back after the first two chats. */
static void test_counts_own_window(void **state)
{
    (void)state;
    reset_log(h_held_chat_quick_count);
    H.held = H.max_held = 0;
    dsa_backend *b = open_client(1, 2, 0, 10, NULL, NULL);
    json_t *body = json_pack("{s:[{s:s,s:s}],s:i}", "messages", "role", "user", "content",
                             "window test", "max_tokens", 4);
    struct done_order order = {{0}, 0};
    for (int i = 0; i < 7; i++) {
        struct dsa_request rq = {.api = i < 4 ? DSA_API_CHAT : DSA_API_TOKENIZE,
                                 .body = body,
                                 .endpoint = -1,
                                 .done = on_order,
                                 .ud = &order};
        assert_int_equal(dsa_backend_submit(b, &rq), 0);
    }
    while (dsa_backend_poll(b, 50) > 0)
        ;
    assert_int_equal(order.n, 7);
    for (int i = 0; i < 3; i++)
        assert_int_equal(order.api[i], DSA_API_TOKENIZE);
    for (int i = 3; i < 7; i++)
        assert_int_equal(order.api[i], DSA_API_CHAT);
    assert_int_equal(H.max_held, 2);
    json_decref(body);
    dsa_backend_free(&b);
}

static enum action h_probe(int n, const struct sreq *rq, struct dsa_buf *out)
{
    (void)n;
    if (!strcmp(rq->path, "/v1/models")) {
        if (strcmp(rq->auth, "Bearer good")) {
            json_reply(out, 401, "{\"error\":{\"message\":\"Unauthorized\",\"code\":401}}");
            return REPLY;
        }
        json_reply(out, 200,
                   "{\"object\":\"list\",\"data\":[{\"id\":\"dsv32\",\"object\":\"model\","
                   "\"owned_by\":\"sglang\",\"max_model_len\":163840}]}");
    } else if (!strcmp(rq->path, "/version")) {
        json_reply(out, 200, "{\"version\":\"0.5.3\"}");
    } else {
        json_reply(out, 404, "{}");
    }
    return REPLY;
}

static void test_probe(void **state)
{
    (void)state;
    reset_log(h_probe);
    snprintf(url0, sizeof url0, "http://127.0.0.1:%d", S.port[0]);
    const char *urls[] = {url0};
    struct dsa_endpoint_opts o = {.urls = urls,
                                  .n_urls = 1,
                                  .api_key = "good",
                                  .concurrency = 2,
                                  .retries = 5,
                                  .timeout_s = 5,
                                  .probe = true,
                                  .backoff_base_s = 0.01};
    int code;
    dsa_backend *b = dsa_endpoint_open(&o, &code);
    assert_non_null(b);
    assert_int_equal(code, 0);
    assert_string_equal(dsa_endpoint_model(b), "dsv32");
    assert_string_equal(dsa_endpoint_dialect(b), "sglang");
    assert_int_equal(dsa_endpoint_max_model_len(b), 163840);
    json_t *d = dsa_backend_describe(b);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(d, "servers"), 0), "version")),
                        "0.5.3");
    json_decref(d);
    dsa_backend_free(&b);

    o.api_key = "bad";
    assert_null(dsa_endpoint_open(&o, &code));
    assert_int_equal(code, 4);
    /* nothing listens on port 1: unreachable is exit 4 too */
    const char *dead[] = {"http://127.0.0.1:1"};
    o.urls = dead;
    o.retries = 0;
    assert_null(dsa_endpoint_open(&o, &code));
    assert_int_equal(code, 4);
    const char *bad[] = {"ftp://x"};
    o.urls = bad;
    assert_null(dsa_endpoint_open(&o, &code));
    assert_int_equal(code, 2);
}

/* A temporary folder with a 3-row MRCR dataset whose prompts are "row-a", "row-b" and
   "row-c" (2 needles, bin 8k, prefix "PFX"), and an open run file beside it. */
struct mrcr_fixture {
    char dir[64], ds[128], runp[128];
    json_t *records; /* of run-001.jsonl once run */
};

static void mrcr_fixture_open(struct mrcr_fixture *fx, const char *name)
{
    snprintf(fx->dir, sizeof fx->dir, "/tmp/%s.XXXXXX", name);
    assert_non_null(mkdtemp(fx->dir));
    snprintf(fx->ds, sizeof fx->ds, "%s/ds.jsonl", fx->dir);
    snprintf(fx->runp, sizeof fx->runp, "%s/run-001.jsonl", fx->dir);
    FILE *f = fopen(fx->ds, "w");
    assert_non_null(f);
    const char *tags[] = {"row-a", "row-b", "row-c"};
    for (int i = 0; i < 3; i++)
        fprintf(f,
                "{\"prompt\":\"[{\\\"role\\\":\\\"user\\\",\\\"content\\\":\\\"%s\\\"}]\","
                "\"answer\":\"PFXabc\",\"random_string_to_prepend\":\"PFX\",\"n_needles\":2,"
                "\"desired_msg_index\":0,\"total_messages\":1,\"n_chars\":5,\"bin\":\"8k\"}\n",
                tags[i]);
    fclose(f);
    fx->records = NULL;
}

/* The eval's row through the run loop on backend b (no pre-count: the server's context is
   unknown); the run file's records into fx->records. Returns the loop's exit status. */
static int mrcr_fixture_run(struct mrcr_fixture *fx, dsa_backend *b, bool strip_think)
{
    struct dsa_loop_opts lo;
    dsa_loop_opts_init(&lo, 0, NULL, 8, 5, 1800, NULL, 2048);
    lo.out = fx->dir;
    dsa_strlist_push(&lo.ep.urls, url0); /* the backend is b; the option says there is one */
    struct dsa_mrcr_eval_opts mo = {.dataset = fx->ds,
                                    .needles = "2",
                                    .max_tokens = 64,
                                    .temperature = 0,
                                    .no_count = true,
                                    .strip_think = strip_think};
    int ret = dsa_loop_run_on(dsa_eval_find("mrcr"), &mo, &lo, b);
    dsa_loop_opts_release(&lo);
    json_t *header = NULL;
    assert_int_equal(dsa_run_load(fx->runp, &header, &fx->records), 0);
    json_decref(header);
    return ret;
}

/* the record of `id`, or NULL */
static json_t *mrcr_fixture_get(const struct mrcr_fixture *fx, const char *id)
{
    size_t i;
    json_t *rec;
    json_array_foreach(fx->records, i, rec)
    {
        if (!strcmp(json_string_value(json_object_get(rec, "id")), id))
            return rec;
    }
    return NULL;
}

static void mrcr_fixture_close(struct mrcr_fixture *fx)
{
    json_decref(fx->records);
    unlink(fx->ds);
    unlink(fx->runp);
    rmdir(fx->dir);
}

/* The MRCR eval loop end to end on three rows: a thinking model's answer (graded on content
   only, reasoning kept as length + hash, --strip-think as a second score), a null content
   (graded as ""), and a row whose request fails (recorded, never scored). */
static enum action h_mrcr(int n, const struct sreq *rq, struct dsa_buf *out)
{
    (void)n;
    if (strstr(rq->body, "row-a"))
        json_reply(out, 200,
                   "{\"choices\":[{\"message\":{\"content\":\"<think>hm</think>\\n PFXabc\","
                   "\"reasoning_content\":\"let me think\"},\"finish_reason\":\"stop\"}],"
                   "\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":4}}");
    else if (strstr(rq->body, "row-b"))
        json_reply(out, 200,
                   "{\"choices\":[{\"message\":{\"content\":null},\"finish_reason\":\"length\"}]}");
    else
        json_reply(out, 422, "{\"object\":\"error\",\"message\":\"bad row\",\"code\":422}");
    return REPLY;
}

static void test_mrcr_eval_records(void **state)
{
    (void)state;
    reset_log(h_mrcr);
    struct mrcr_fixture fx;
    mrcr_fixture_open(&fx, "test_mrcr_eval");
    dsa_backend *b = open_client(1, 2, 0, 10, NULL, NULL);
    /* one row failed: exit 1 (DSA_EXIT_FAIL) once every row has its record */
    assert_int_equal(mrcr_fixture_run(&fx, b, true), 1);
    assert_int_equal(json_array_size(fx.records), 3);

    json_t *a = mrcr_fixture_get(&fx, "n2/r0000");
    assert_non_null(a);
    assert_string_equal(json_string_value(json_object_get(a, "status")), "ok");
    /* the official score sees "<think>…": no prefix, 0; the labelled second score strips */
    assert_true(json_real_value(json_object_get(a, "score")) == 0.0);
    assert_true(json_real_value(json_object_get(a, "score_strip_think")) == 1.0);
    assert_false(json_is_true(json_object_get(a, "prefix_hit")));
    assert_string_equal(json_string_value(json_object_get(a, "output")),
                        "<think>hm</think>\n PFXabc");
    assert_int_equal(json_integer_value(json_object_get(a, "reasoning_len")), 12);
    char hex[65];
    dsa_sha256_hex("let me think", 12, hex);
    assert_string_equal(json_string_value(json_object_get(a, "reasoning_sha256")), hex);
    assert_null(json_object_get(a, "reasoning"));
    assert_int_equal(json_integer_value(json_object_get(a, "completion_tokens")), 4);

    json_t *bb = mrcr_fixture_get(&fx, "n2/r0001");
    assert_string_equal(json_string_value(json_object_get(bb, "output")), "");
    assert_true(json_is_true(json_object_get(bb, "output_null")));
    assert_true(json_real_value(json_object_get(bb, "score")) == 0.0);
    assert_string_equal(json_string_value(json_object_get(bb, "finish_reason")), "length");

    json_t *cc = mrcr_fixture_get(&fx, "n2/r0002");
    assert_string_equal(json_string_value(json_object_get(cc, "status")), "failed");
    assert_true(json_is_null(json_object_get(cc, "score")));
    assert_string_equal(json_string_value(json_object_get(cc, "error")), "HTTP 422: bad row");
    assert_int_equal(json_integer_value(json_object_get(cc, "http_code")), 422);

    /* the bodies: messages verbatim, max_tokens, temperature, model; no seed unless asked */
    /* (a request cancelled by an earlier test may reach the server late: count ours) */
    int ours = 0;
    for (int i = 0; i < n_requests(); i++) {
        if (!strstr(S.reqs[i].body, "row-"))
            continue;
        ours++;
        json_t *body = json_loads(S.reqs[i].body, 0, NULL);
        assert_non_null(body);
        assert_int_equal(json_object_size(body), 4);
        assert_int_equal(json_integer_value(json_object_get(body, "max_tokens")), 64);
        assert_null(json_object_get(body, "seed"));
        json_decref(body);
    }
    assert_int_equal(ours, 3);
    dsa_backend_free(&b);
    mrcr_fixture_close(&fx);
}

static enum action h_revoked(int n, const struct sreq *rq, struct dsa_buf *out)
{
    (void)n;
    if (strstr(rq->body, "row-a"))
        json_reply(out, 200, CHAT_OK);
    else
        json_reply(out, 401, "{\"error\":{\"message\":\"invalid key\",\"code\":401}}");
    return REPLY;
}

/* A key refused mid-run stops the run (exit 4) without recording the refused rows. */
static void test_mrcr_eval_auth_stop(void **state)
{
    (void)state;
    reset_log(h_revoked);
    struct mrcr_fixture fx;
    mrcr_fixture_open(&fx, "test_mrcr_auth");
    /* concurrency 1: row-a finishes before row-b is refused */
    dsa_backend *b = open_client(1, 1, 0, 10, NULL, NULL);
    assert_int_equal(mrcr_fixture_run(&fx, b, false), 4); /* DSA_EXIT_BACKEND */
    assert_int_equal(json_array_size(fx.records), 1);
    assert_non_null(mrcr_fixture_get(&fx, "n2/r0000"));
    assert_null(mrcr_fixture_get(&fx, "n2/r0001"));
    dsa_backend_free(&b);
    mrcr_fixture_close(&fx);
}

static void test_strip_think(void **state)
{
    (void)state;
    size_t n;
    const char *s = "<think>a</think>x</think>\n\t ABC \n";
    const char *r = dsa_mrcr_eval_strip_think(s, strlen(s), &n);
    assert_int_equal(n, 3);
    assert_memory_equal(r, "ABC", 3);
    r = dsa_mrcr_eval_strip_think(" plain ", 7, &n);
    assert_int_equal(n, 5);
    assert_memory_equal(r, "plain", 5);
    r = dsa_mrcr_eval_strip_think("", 0, &n);
    assert_int_equal(n, 0);
}

/* --api-key-file and $DSA_EVAL_API_KEY, as every command reads them */
static void test_read_api_key(void **state)
{
    (void)state;
    char path[] = "/tmp/test_api_key.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("sk-abc \t\r\nsecond line\n", f);
    fclose(f);
    char *key = NULL;
    assert_int_equal(dsa_endpoint_read_api_key(path, &key), 0);
    assert_string_equal(key, "sk-abc"); /* first line, trailing white space removed */
    dsa_endpoint_api_key_free(&key);
    assert_null(key);
    /* a file with no key on its first line is an error, not an empty key */
    f = fopen(path, "w");
    fputs(" \n", f);
    fclose(f);
    assert_int_equal(dsa_endpoint_read_api_key(path, &key), -1);
    assert_null(key);
    unlink(path);
    assert_int_equal(dsa_endpoint_read_api_key(path, &key), -1); /* missing */
    assert_null(key);
    /* no file: the environment, where unset and empty both mean no key */
    setenv("DSA_EVAL_API_KEY", "sk-env", 1);
    assert_int_equal(dsa_endpoint_read_api_key(NULL, &key), 0);
    assert_string_equal(key, "sk-env");
    dsa_endpoint_api_key_free(&key);
    setenv("DSA_EVAL_API_KEY", "", 1);
    assert_int_equal(dsa_endpoint_read_api_key(NULL, &key), 0);
    assert_null(key);
    unsetenv("DSA_EVAL_API_KEY");
    assert_int_equal(dsa_endpoint_read_api_key(NULL, &key), 0);
    assert_null(key);
    dsa_endpoint_api_key_free(&key); /* NULL is fine */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_body_and_result),
        cmocka_unit_test(test_retries_then_ok),
        cmocka_unit_test(test_raw_body_sent_in_place),
        cmocka_unit_test(test_retries_exhausted),
        cmocka_unit_test(test_4xx_not_retried_and_over_context),
        cmocka_unit_test(test_stream),
        cmocka_unit_test(test_stream_ignored_by_server),
        cmocka_unit_test(test_two_endpoints),
        cmocka_unit_test(test_tokenize_unsupported),
        cmocka_unit_test(test_timeout_and_cancel),
        cmocka_unit_test(test_counts_own_window),
        cmocka_unit_test(test_probe),
        cmocka_unit_test(test_mrcr_eval_records),
        cmocka_unit_test(test_mrcr_eval_auth_stop),
        cmocka_unit_test(test_strip_think),
        cmocka_unit_test(test_read_api_key),
    };
    return cmocka_run_group_tests(tests, start_servers, stop_servers);
}
