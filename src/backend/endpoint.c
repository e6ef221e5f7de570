/*
 * The endpoint backend over the libcurl multi interface; see endpoint.h and
 * docs/endpoint.md. One struct xfer per request (curl's per_transfer pattern) is attached to
 * its easy handle with CURLOPT_PRIVATE and has its own CURLOPT_ERRORBUFFER. The loop: start
 * queued requests up to the concurrency limit (token counts in a window of their own: see
 * is_count), poll, perform, drain curl_multi_info_read,
 * post-process (callback or retry), refill. A retry sets a future start time and requeues.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "backend/endpoint.h"

#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "backend/dialect.h"
#include "backend/llamacpp.h"
#include "backend/response.h"
#include "backend/sse.h"
#include "util/buf.h"
#include "util/hash.h"
#include "util/json_dump.h"
#include "util/msg.h"
#include "util/secret.h"
#include "util/url.h"
#include "util/utf8.h"

/* Responses are small (≤ a few MB even for /metrics); a body beyond this is a broken or
   hostile server, and holding it would defeat the memory bound. */
#define MAX_BODY          (256u << 20)
#define MAX_RETRY_AFTER_S 300.0
/* A value the caller holds (dsa_request.raw_held) of at least this many bytes is sent from
   the caller's bytes instead of being copied into the body: libcurl copies a body from
   64 KiB on (CURLOPT_POSTFIELDS or a read callback alike) chunk by chunk into its upload
   buffer, so the read callback costs it nothing, and the body's own copy of a 128K-token
   prompt (half a megabyte of fresh pages per request) is gone. A smaller body goes out with
   the request's headers in one send only as POSTFIELDS, so it is copied as before. */
#define RAW_SEND_MIN (64u << 10)

struct server {
    char *base;      /* "http://host:8000", no trailing '/' */
    char *shown;     /* base with its password masked: the only form that leaves the process */
    int inflight[2]; /* requests in flight to it: [0] generation, [1] token counts (is_count) */
    char *version;   /* /version, or NULL */
    char *owned_by;
    long max_model_len;
};

struct xfer {
    struct ep *ep;
    struct xfer *next;          /* in the ready, delayed or finished list */
    struct xfer *iprev, *inext; /* in the in-flight list */
    enum dsa_api api;
    char *path;
    char *body; /* serialized request, NULL for GET */
    size_t body_len;
    /* raw set: what is sent is body[0, raw_at) + raw[0, raw_len) + body[raw_at, body_len),
       raw borrowed from the request (dsa_request.raw_held) and read by on_read from `sent` */
    const char *raw;
    size_t raw_at, raw_len, sent;
    /* TOKENIZE: the body's "messages" (a reference) and where their bytes lie in body, for
       the chat request its callback sends with the same messages (ep_submit) */
    json_t *msgs;
    size_t msgs_off, msgs_len;
    int fixed_endpoint; /* -1: any */
    int endpoint;       /* of the current attempt */
    bool stream;
    bool templating; /* TOKENIZE, first of two steps: the dialect's template_path */
    int max_retries;
    dsa_backend_done_fn done;
    void *ud;

    CURL *easy;
    char errbuf[CURL_ERROR_SIZE];
    struct dsa_buf resp_body;  /* non-streaming body, or the body of a non-2xx answer */
    struct dsa_resp_list list; /* TOKENIZE: the token list, found as resp_body grows */
    struct dsa_sse sse;
    struct dsa_resp acc;
    int mode; /* 0 undecided, 1 body, 2 sse (decided at the first byte) */
    bool body_too_big;
    bool over_budget; /* the response outgrew its share of --max-memory */
    size_t held;      /* bytes charged to ep->mem_used for this response */
    int attempt;
    double start_at; /* monotonic seconds; a retry waits until then */
    double t_start, t_first, t_end;
    double retry_after; /* seconds from a Retry-After header, or -1 */
};

struct ep {
    struct dsa_backend base;
    CURLM *multi;
    struct curl_slist *headers;
    struct server *servers;
    int n_servers;
    int rr; /* round-robin start for ties in least-outstanding */
    const struct dsa_dialect *dialect;
    bool tokenize_missing; /* the server answered 404 to the dialect's tokenize path */
    char *fatal;           /* why the run cannot go on (a refused API key), or NULL */
    bool fatal_reported;
    char *model;
    long max_model_len;
    json_t *extra_body;
    bool insecure;
    char *cacert;
    long long mem_budget; /* --max-memory */
    long long mem_used;   /* charged by responses in flight */
    int concurrency, retries;
    long timeout_ms, connect_timeout_ms;
    double backoff_base, backoff_max;
    uint64_t rng;

    /* FIFOs of requests that may start now: [0] generation requests, which hold one of the
       --concurrency slots; [1] token counts, which have a window of their own (see is_count) */
    struct xfer *ready_head[2], *ready_tail[2];
    struct xfer *delayed;  /* retries waiting for their start time */
    struct xfer *finished; /* results to deliver without a transfer */
    struct xfer *inflight; /* transfers in the multi handle */
    int n_ready, n_delayed, n_inflight, n_finished;
    int n_counting; /* token counts among the n_inflight */
    long n_started; /* transfers added to the multi handle so far */
    long n_pushed;  /* n_started at the last curl_multi_perform */
    CURL **pool;    /* idle easy handles: reusing them keeps their connection caches warm */
    int n_pool, cap_pool;
    long total_retries, total_errors;
    long n_delivered;        /* callbacks run so far (all statuses) */
    struct xfer *delivering; /* the request whose callback is running, or NULL */
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double rand01(struct ep *ep)
{
    ep->rng = dsa_splitmix64(ep->rng);
    return (double)(ep->rng >> 11) * (1.0 / 9007199254740992.0);
}

/* ---- the memory budget ----------------------------------------------------------------- */

/*
 * The memory budget of responses in flight (docs/endpoint.md "Memory"): 256 MiB plus 16 MiB
 * per request of the window, room for the longest sane answer of each. Every request may hold
 * at most its share (budget / concurrency; a GET of /v1/models or /metrics 1/32 of the
 * budget, since its parse grows it most): a response that would exceed it fails that request
 * ("response exceeds its share of --max-memory …"), not the run.
 */
static long long default_memory(int concurrency)
{
    return (256LL << 20) + (long long)(concurrency > 0 ? concurrency : 1) * (16LL << 20);
}

/* What a response holds now. A whole body counts three times (the bytes, jansson's tree of
   them, the content copied out); a stream counts its parser's buffers and the text so far. */
static size_t footprint(const struct xfer *x)
{
    return 3 * x->resp_body.cap + x->sse.line.cap + x->sse.data.cap + x->acc.content.cap +
           x->acc.reasoning.cap;
}

static long long share(const struct xfer *x)
{
    const struct ep *ep = x->ep;
    long long s = ep->mem_budget / ep->concurrency;
    if (x->api == DSA_API_GET && s > ep->mem_budget / 32)
        s = ep->mem_budget / 32; /* a model list or metrics page: parsed into many objects */
    return s;
}

/* Charges the response's growth (by `extra` bytes still to come); false when that would
   break its share or the whole budget */
static bool charge(struct xfer *x, size_t extra)
{
    struct ep *ep = x->ep;
    size_t now = footprint(x);
    ep->mem_used += (long long)now - (long long)x->held;
    x->held = now;
    long long want = (long long)(now + extra);
    return want <= share(x) && ep->mem_used + (long long)extra <= ep->mem_budget;
}

static void uncharge(struct xfer *x)
{
    x->ep->mem_used -= (long long)x->held;
    x->held = 0;
}

/* ---- request lifetime ---------------------------------------------------------------- */

static void xfer_free(struct xfer *x)
{
    if (!x)
        return;
    uncharge(x);
    free(x->path);
    free(x->body);
    json_decref(x->msgs);
    dsa_buf_release(&x->resp_body);
    dsa_sse_release(&x->sse);
    dsa_resp_release(&x->acc);
    free(x);
}

/* A token count (the pre-count of an MRCR prompt) holds no generation slot: the server answers
   it at once, and a slot freed by an answer must go straight to a chat whose count is already
   known. When counts shared the --concurrency window, every freed slot first carried its next
   row's count round trip, and a wave of answers that arrived together emptied the window
   before it refilled. Counts run in a window of their own (count_window), ahead of the chats. */
static int is_count(const struct xfer *x)
{
    return x->api == DSA_API_TOKENIZE;
}

static void ready_push(struct ep *ep, struct xfer *x)
{
    int q = is_count(x);
    x->next = NULL;
    if (ep->ready_tail[q])
        ep->ready_tail[q]->next = x;
    else
        ep->ready_head[q] = x;
    ep->ready_tail[q] = x;
    ep->n_ready++;
}

/* x at the head of its queue: retries are older than what waits there */
static void ready_push_front(struct ep *ep, struct xfer *x)
{
    int q = is_count(x);
    x->next = ep->ready_head[q];
    ep->ready_head[q] = x;
    if (!ep->ready_tail[q])
        ep->ready_tail[q] = x;
    ep->n_ready++;
}

static struct xfer *ready_pop(struct ep *ep, int q)
{
    struct xfer *x = ep->ready_head[q];
    if (!x)
        return NULL;
    ep->ready_head[q] = x->next;
    if (!ep->ready_head[q])
        ep->ready_tail[q] = NULL;
    ep->n_ready--;
    x->next = NULL;
    return x;
}

static void release_easy(struct ep *ep, struct xfer *x)
{
    if (!x->easy)
        return;
    curl_multi_remove_handle(ep->multi, x->easy);
    if (ep->n_pool == ep->cap_pool) {
        ep->cap_pool = ep->cap_pool ? 2 * ep->cap_pool : 16;
        ep->pool = dsa_xrealloc(ep->pool, (size_t)ep->cap_pool * sizeof *ep->pool);
    }
    ep->pool[ep->n_pool++] = x->easy;
    x->easy = NULL;
    if (x->iprev)
        x->iprev->inext = x->inext;
    else
        ep->inflight = x->inext;
    if (x->inext)
        x->inext->iprev = x->iprev;
    x->iprev = x->inext = NULL;
    ep->servers[x->endpoint].inflight[is_count(x)]--;
    ep->n_inflight--;
    ep->n_counting -= is_count(x);
}

/* Builds the borrowed result view of x and runs the callback, then frees x. */
static void deliver(struct ep *ep, struct xfer *x, enum dsa_res_status st, const char *error,
                    long http_code, bool unreachable)
{
    struct dsa_result res;
    memset(&res, 0, sizeof res);
    res.status = st;
    res.api = x->api;
    res.http_code = http_code;
    res.endpoint = x->endpoint;
    res.retries = x->attempt;
    res.unreachable = unreachable;
    res.error = st == DSA_RES_OK ? NULL : error;
    struct dsa_resp *a = &x->acc;
    if (a->has_content) {
        res.content = a->content.data;
        res.content_len = a->content.len;
    }
    if (a->has_reasoning) {
        res.reasoning = a->reasoning.data;
        res.reasoning_len = a->reasoning.len;
    }
    res.finish_reason = a->finish_reason;
    res.stop_reason = a->stop_reason;
    res.prompt_tokens = a->prompt_tokens;
    res.completion_tokens = a->completion_tokens;
    res.max_model_len = a->max_model_len;
    res.usage = a->usage;
    res.token_ids = a->token_ids;
    res.raw = a->raw;
    res.body = x->resp_body.data;
    res.body_len = x->resp_body.len;
    res.ttft_ms = res.decode_ms = -1;
    res.latency_ms = x->t_start > 0 ? (x->t_end - x->t_start) * 1e3 : 0;
    if (x->stream && x->t_first > 0) {
        res.ttft_ms = (x->t_first - x->t_start) * 1e3;
        res.decode_ms = (x->t_end - x->t_first) * 1e3;
    }
    res.ud = x->ud;
    if (st == DSA_RES_FAILED)
        ep->total_errors++;
    ep->n_delivered++;
    struct xfer *outer = ep->delivering;
    ep->delivering = x; /* a request submitted from the callback may copy from x->body */
    if (x->done)
        x->done(&res);
    ep->delivering = outer;
    xfer_free(x);
}

/* ---- curl callbacks ------------------------------------------------------------------- */

static int on_sse_event(void *ud, const char *event, const char *data, size_t len)
{
    (void)event;
    struct xfer *x = ud;
    bool had = x->acc.got_token;
    int rc = dsa_resp_parse_chunk(&x->acc, x->api, data, len);
    if (!had && x->acc.got_token)
        x->t_first = now_s();
    /* an error event or garbage ends the attempt: it is classified when the transfer ends */
    return rc == DSA_RESP_ERROR || rc == DSA_RESP_MALFORMED ? 1 : 0;
}

/* A body with a Content-Length gets its buffer at once, of the size the doubling would reach,
   and so the same charge: grown by doubling, a megabyte /tokenize answer was copied about once
   more by the reallocations and faulted in block after block. Only where the charge allows;
   otherwise the buffer grows and is refused as it arrives, as before. */
static void reserve_body(struct xfer *x)
{
    curl_off_t cl = -1;
    if (curl_easy_getinfo(x->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl) != CURLE_OK ||
        cl <= 0 || (uint64_t)cl > MAX_BODY || (size_t)cl <= x->resp_body.cap)
        return;
    if (charge(x, 3 * (size_t)cl))
        dsa_buf_grow(&x->resp_body, (size_t)cl);
}

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct xfer *x = ud;
    size_t n = size * nmemb;
    if (x->mode == 0) {
        long code = 0;
        curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &code);
        char *ctype = NULL;
        curl_easy_getinfo(x->easy, CURLINFO_CONTENT_TYPE, &ctype);
        /* SSE only when the server streams; a 2xx JSON answer to a streaming request (a
           server that ignores "stream") is read whole */
        bool sse = !ctype || strstr(ctype, "event-stream") || !strstr(ctype, "json");
        x->mode = x->stream && code / 100 == 2 && sse ? 2 : 1;
        if (x->mode == 1)
            reserve_body(x);
    }
    if (x->mode == 2) {
        int rc = dsa_sse_feed(&x->sse, ptr, n);
        if (!charge(x, 0)) {
            x->over_budget = true; /* a stream without end, or a bomb: stop reading it */
            return 0;
        }
        if (rc > 0)
            return n; /* error event seen: ignore the rest, keep the connection */
        if (rc < 0)
            return 0; /* line too long: abort the transfer */
        return n;
    }
    if (x->resp_body.len + n > MAX_BODY) {
        x->body_too_big = true;
        return 0;
    }
    if (x->resp_body.len + n > x->resp_body.cap && !charge(x, 3 * (x->resp_body.len + n))) {
        x->over_budget = true;
        return 0;
    }
    dsa_buf_add(&x->resp_body, ptr, n);
    charge(x, 0);
    if (x->api == DSA_API_TOKENIZE)
        dsa_resp_list_feed(&x->list, x->resp_body.data, x->resp_body.len);
    return n;
}

/* The body in its three parts (struct xfer raw), from x->sent on. */
static size_t on_read(char *dst, size_t size, size_t nitems, void *ud)
{
    struct xfer *x = ud;
    size_t room = size * nitems, n = 0;
    const struct {
        const char *p;
        size_t len;
    } part[3] = {
        {x->body, x->raw_at}, {x->raw, x->raw_len}, {x->body + x->raw_at, x->body_len - x->raw_at}};
    size_t at = x->sent;
    for (int i = 0; i < 3 && n < room; i++) {
        if (at >= part[i].len) {
            at -= part[i].len;
            continue;
        }
        size_t k = part[i].len - at < room - n ? part[i].len - at : room - n;
        memcpy(dst + n, part[i].p + at, k);
        n += k;
        at = 0;
    }
    x->sent += n;
    return n;
}

/* libcurl rewinds a body it must send again (a reused connection found closed) */
static int on_seek(void *ud, curl_off_t offset, int origin)
{
    struct xfer *x = ud;
    if (origin != SEEK_SET || offset < 0 || (size_t)offset > x->body_len + x->raw_len)
        return CURL_SEEKFUNC_CANTSEEK;
    x->sent = (size_t)offset;
    return CURL_SEEKFUNC_OK;
}

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct xfer *x = ud;
    size_t n = size * nmemb;
    if (n >= 5 && !strncmp(ptr, "HTTP/", 5)) {
        x->retry_after = -1; /* a new response (after a redirect or 100-continue) */
        return n;
    }
    if (n > 12 && !strncasecmp(ptr, "Retry-After:", 12)) {
        char v[64];
        size_t len = n - 12 < sizeof v - 1 ? n - 12 : sizeof v - 1;
        memcpy(v, ptr + 12, len);
        v[len] = 0;
        char *end;
        double s = strtod(v, &end);
        if (end != v && s >= 0) {
            x->retry_after = s;
        } else {
            /* an HTTP date */
            time_t t = curl_getdate(v, NULL);
            if (t > 0)
                x->retry_after = difftime(t, time(NULL)) > 0 ? difftime(t, time(NULL)) : 0;
        }
    }
    return n;
}

/* ---- starting transfers --------------------------------------------------------------- */

static int pick_server(struct ep *ep, const struct xfer *x)
{
    if (x->fixed_endpoint >= 0)
        return x->fixed_endpoint;
    /* generation requests are balanced by the generation load alone, counts by counts: a
       burst of counts on one replica must not send the chats elsewhere */
    int best = -1, q = is_count(x);
    for (int k = 0; k < ep->n_servers; k++) {
        int i = (ep->rr + k) % ep->n_servers;
        if (best < 0 || ep->servers[i].inflight[q] < ep->servers[best].inflight[q])
            best = i;
    }
    ep->rr = (ep->rr + 1) % ep->n_servers;
    return best;
}

static int start_xfer(struct ep *ep, struct xfer *x)
{
    CURL *e = ep->n_pool ? ep->pool[--ep->n_pool] : curl_easy_init();
    if (!e)
        return dsa_errorf("cannot create a curl handle");
    curl_easy_reset(e);
    x->easy = e;
    x->endpoint = pick_server(ep, x);
    x->mode = 0;
    x->body_too_big = false;
    x->over_budget = false;
    x->retry_after = -1;
    x->errbuf[0] = 0;
    x->t_first = 0;
    /* a retry starts from nothing: give back what the last attempt held */
    dsa_buf_release(&x->resp_body);
    dsa_resp_list_init(&x->list);
    dsa_sse_release(&x->sse);
    dsa_sse_init(&x->sse, on_sse_event, x);
    dsa_resp_reset(&x->acc);
    uncharge(x);

    struct dsa_buf url = DSA_BUF_INIT;
    dsa_buf_adds(&url, ep->servers[x->endpoint].base);
    dsa_buf_adds(&url, x->path);
    curl_easy_setopt(e, CURLOPT_URL, url.data);
    dsa_buf_release(&url); /* libcurl copies string options */
    curl_easy_setopt(e, CURLOPT_PRIVATE, x);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->errbuf);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, ep->headers);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, ep->timeout_ms);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, ep->connect_timeout_ms);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, ""); /* whatever libcurl can decode */
    if (ep->cacert)
        curl_easy_setopt(e, CURLOPT_CAINFO, ep->cacert);
    if (ep->insecure) {
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (x->raw) {
        x->sent = 0;
        curl_easy_setopt(e, CURLOPT_POST, 1L);
        curl_easy_setopt(e, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(e, CURLOPT_READDATA, x);
        curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, on_seek);
        curl_easy_setopt(e, CURLOPT_SEEKDATA, x);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(x->body_len + x->raw_len));
    } else if (x->body) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, x->body);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)x->body_len);
    } else {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    }
    x->t_start = now_s();
    CURLMcode mc = curl_multi_add_handle(ep->multi, e);
    if (mc != CURLM_OK) {
        x->easy = NULL;
        curl_easy_cleanup(e);
        return dsa_errorf("cannot start a request: %s", curl_multi_strerror(mc));
    }
    ep->servers[x->endpoint].inflight[is_count(x)]++;
    ep->n_inflight++;
    ep->n_counting += is_count(x);
    ep->n_started++;
    x->iprev = NULL;
    x->inext = ep->inflight;
    if (ep->inflight)
        ep->inflight->iprev = x;
    ep->inflight = x;
    return 0;
}

static int backlog(const struct ep *ep);

/* Token counts in flight at once: at most 32. A count is answered in a few milliseconds (a
   128K-token prompt's in tens), so 32 keep far more rows counted than a window of a thousand
   generations of seconds each consumes, and each count in flight needs a connection of its own
   beside the window's (at 256, a run at --concurrency 300 opened 535 connections, not 300,
   and spent 8-18 % more CPU per request on them). */
static int count_window(const struct ep *ep)
{
    int n = backlog(ep);
    return n < 32 ? n : 32;
}

/* true while queue q (0 generation, 1 counts) has a request and its window has room */
static bool can_start(const struct ep *ep, int q)
{
    if (!ep->ready_head[q])
        return false;
    return q ? ep->n_counting < count_window(ep)
             : ep->n_inflight - ep->n_counting < ep->concurrency;
}

/* Starts queued requests while their windows have room: generation requests first. Nothing
   starts once a request found the run cannot go on (a refused key): poll() reports it next. */
static int start_ready(struct ep *ep)
{
    if (ep->fatal)
        return 0;
    for (int q = 0; q < 2; q++)
        while (can_start(ep, q)) {
            struct xfer *x = ready_pop(ep, q);
            if (start_xfer(ep, x) < 0) {
                x->t_end = now_s();
                deliver(ep, x, DSA_RES_FAILED, "cannot start the request", 0, false);
                return -1;
            }
        }
    return 0;
}

static int fill(struct ep *ep)
{
    /* retries whose time has come go before new requests: they are older */
    double t = now_s();
    struct xfer **pp = &ep->delayed;
    struct xfer *due = NULL; /* newest first, so pushing each to the front keeps their order */
    while (*pp) {
        struct xfer *x = *pp;
        if (x->start_at <= t) {
            *pp = x->next;
            ep->n_delayed--;
            x->next = due;
            due = x;
        } else {
            pp = &x->next;
        }
    }
    while (due) {
        struct xfer *x = due;
        due = x->next;
        ready_push_front(ep, x);
    }
    return start_ready(ep);
}

/* ---- finishing transfers -------------------------------------------------------------- */

static bool curl_retryable(CURLcode cc)
{
    switch (cc) {
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
    case CURLE_NOT_BUILT_IN:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_LOGIN_DENIED:
    case CURLE_WRITE_ERROR: /* our own abort: a body over the limit */
    case CURLE_OUT_OF_MEMORY:
        return false;
    default:
        return true;
    }
}

/* x->body = body's compact JSON, written once into the buffer curl sends from
   (CURLOPT_POSTFIELDS does not copy): the prompt is escaped straight into it, with no
   intermediate string and no second copy; sp (or NULL) as in util/json_dump.h, a hole left
   by it sent from the caller's bytes (serialize_request sets x->raw). Returns 0 or -1 (not
   UTF-8). */
static int serialize_body(struct xfer *x, const json_t *body, struct dsa_json_splice *sp)
{
    struct dsa_buf b = DSA_BUF_INIT;
    free(x->body);
    x->body = NULL;
    x->body_len = 0;
    x->raw = NULL;
    x->raw_at = x->raw_len = 0;
    json_decref(x->msgs); /* its bytes go with the old body */
    x->msgs = NULL;
    if (dsa_json_dump_compact_splice(body, &b, sp) < 0) {
        dsa_buf_release(&b);
        return -1;
    }
    x->body = dsa_buf_detach(&b, &x->body_len);
    return 0;
}

/* Requeues x for another attempt if it has one left; returns true if it did. */
static bool schedule_retry(struct ep *ep, struct xfer *x, double retry_after)
{
    if (x->attempt >= x->max_retries)
        return false;
    x->attempt++;
    ep->total_retries++;
    double d = ep->backoff_base * pow(2.0, x->attempt - 1);
    if (d > ep->backoff_max)
        d = ep->backoff_max;
    /* "equal jitter": half fixed, half random, so synchronized failures spread out */
    d = d / 2 + rand01(ep) * d / 2;
    if (retry_after >= 0)
        d = retry_after < MAX_RETRY_AFTER_S ? retry_after : MAX_RETRY_AFTER_S;
    x->start_at = now_s() + d;
    x->next = ep->delayed;
    ep->delayed = x;
    ep->n_delayed++;
    return true;
}

/* The second step of a two-step token count (llama-server): the rendered chat template from
   the first answer becomes the body of the dialect's tokenize_path, and x starts again at
   once, keeping its retry count. Returns 0, or -1 with err set when the answer has no
   prompt. */
static int chain_count(struct ep *ep, struct xfer *x, char *err, size_t errlen)
{
    json_t *v = json_loadb(x->resp_body.data, x->resp_body.len, 0, NULL);
    size_t len;
    const char *prompt = dsa_llamacpp_template_prompt(v, &len);
    if (!prompt) {
        snprintf(err, errlen, "%s answer has no \"prompt\"", x->path);
        json_decref(v);
        return -1;
    }
    json_t *body = dsa_llamacpp_count_body(prompt, len);
    json_decref(v);
    int rc = serialize_body(x, body, NULL);
    json_decref(body);
    if (rc < 0)
        return snprintf(err, errlen, "cannot serialize the token count request"), -1;
    free(x->path);
    x->path = dsa_xstrdup(ep->dialect->tokenize_path);
    x->templating = false;
    /* straight back on the wire: its slot was just freed, and the loop would not wait for a
       queued request before its next poll */
    if (start_xfer(ep, x) < 0)
        ready_push(ep, x);
    return 0;
}

static void finish_xfer(struct ep *ep, struct xfer *x, CURLcode cc)
{
    long code = 0;
    curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &code);
    x->t_end = now_s();
    bool stream_error = x->mode == 2 && x->acc.error;
    char err[512];
    err[0] = 0;
    release_easy(ep, x);

    enum dsa_res_status st = DSA_RES_FAILED;
    bool retry = false;
    double retry_after = -1;
    if (cc != CURLE_OK && !(stream_error && cc == CURLE_WRITE_ERROR)) {
        if (x->over_budget)
            snprintf(err, sizeof err,
                     "response exceeds its share of --max-memory (%lld MiB of %lld MiB): "
                     "%s",
                     share(x) >> 20, ep->mem_budget >> 20,
                     x->mode == 2 ? "a stream without end?" : "the body is too large");
        else if (x->body_too_big)
            snprintf(err, sizeof err, "response larger than %u MiB", MAX_BODY >> 20);
        else if (cc == CURLE_OPERATION_TIMEDOUT)
            snprintf(err, sizeof err, "timeout after %.0f s", (double)ep->timeout_ms / 1e3);
        else
            snprintf(err, sizeof err, "%s", x->errbuf[0] ? x->errbuf : curl_easy_strerror(cc));
        retry = curl_retryable(cc) && !x->body_too_big && !x->over_budget;
    } else if (code / 100 == 2) {
        int rc;
        if (x->mode == 2) {
            if (stream_error) {
                rc = DSA_RESP_ERROR;
            } else if (!x->acc.done) {
                rc = DSA_RESP_MALFORMED;
                snprintf(err, sizeof err, "stream ended without [DONE]");
            } else {
                rc = DSA_RESP_OK;
            }
        } else if (x->templating) {
            if (chain_count(ep, x, err, sizeof err) == 0)
                return; /* requeued for its second step */
            rc = DSA_RESP_MALFORMED;
        } else {
            rc = dsa_resp_parse_body_list(&x->acc, x->api, x->resp_body.data, x->resp_body.len,
                                          x->api == DSA_API_TOKENIZE ? &x->list : NULL);
        }
        if (rc == DSA_RESP_OK || rc == DSA_RESP_DONE) {
            st = DSA_RES_OK;
        } else if (rc == DSA_RESP_ERROR) {
            snprintf(err, sizeof err, "server error%s%.0ld: %s", x->acc.error_code ? " " : "",
                     x->acc.error_code, x->acc.error);
            if (x->acc.error_code == 0)
                snprintf(err, sizeof err, "server error: %s", x->acc.error);
            /* an error inside a 200 (mid-stream) is the engine failing, unless it says 4xx */
            retry = x->acc.error_code < 400 || x->acc.error_code >= 500 || x->acc.error_code == 429;
        } else {
            if (!err[0])
                snprintf(err, sizeof err, "%s", x->acc.error ? x->acc.error : "bad response");
            retry = true; /* a truncated or garbled answer: the next attempt may be whole */
        }
    } else {
        /* an HTTP error: read its message (either shape) */
        const char *msg = NULL;
        long ecode = 0;
        json_t *v = json_loadb(x->resp_body.data, x->resp_body.len, 0, NULL);
        if (v)
            dsa_resp_error_of(v, &msg, &ecode);
        char msgbuf[400];
        if (msg) {
            snprintf(msgbuf, sizeof msgbuf, "%s", msg);
        } else {
            /* first line of a non-JSON body, e.g. a proxy's HTML */
            size_t n = strcspn(x->resp_body.data, "\r\n");
            if (n > sizeof msgbuf - 1)
                n = sizeof msgbuf - 1;
            memcpy(msgbuf, x->resp_body.data, n);
            msgbuf[n] = 0;
        }
        json_decref(v);
        snprintf(err, sizeof err, "HTTP %ld%s%s", code, msgbuf[0] ? ": " : "", msgbuf);
        long pt, ml;
        if ((code == 401 || code == 403) && x->api != DSA_API_GET) {
            /* a refused key is the same for every request: stop the run (poll() returns -1)
               rather than record each sample as failed; no retry can help */
            if (!ep->fatal) {
                struct dsa_buf f = DSA_BUF_INIT;
                dsa_buf_addf(&f,
                             "'%s' refused the API key (%s); set DSA_EVAL_API_KEY or "
                             "--api-key-file",
                             ep->servers[x->endpoint].shown, err);
                ep->fatal = dsa_buf_detach(&f, NULL);
            }
            st = DSA_RES_CANCELLED;
            snprintf(err, sizeof err, "%s", ep->fatal);
        } else if (code == 429 || code >= 500) {
            retry = true;
            retry_after = x->retry_after;
        } else if ((code == 400 || code == 413) && x->api != DSA_API_GET &&
                   dsa_resp_context_error(msgbuf, &pt, &ml)) {
            st = DSA_RES_OVER_CONTEXT;
            x->acc.prompt_tokens = pt;
            x->acc.max_model_len = ml;
        } else if ((code == 404 || code == 405) &&
                   (x->api == DSA_API_TOKENIZE || x->api == DSA_API_GENERATE)) {
            st = DSA_RES_UNSUPPORTED;
            if (x->api == DSA_API_TOKENIZE)
                ep->tokenize_missing = true;
        }
    }
    if (retry && schedule_retry(ep, x, retry_after))
        return;
    if (retry && x->attempt > 0) {
        size_t n = strlen(err);
        snprintf(err + n, sizeof err - n, " (gave up after %d retries)", x->attempt);
    }
    /* the message may quote the server's bytes (a 4xx body that is not UTF-8) or be cut in
       a sequence: records store it as a JSON string, which must be UTF-8 */
    dsa_utf8_scrub(err);
    deliver(ep, x, st, err, code,
            cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST ||
                cc == CURLE_COULDNT_RESOLVE_PROXY);
}

/* Puts the requests started since the last perform on the wire. A request added to the multi
   handle sends nothing until the next curl_multi_perform, and the loop's next one comes after
   the whole burst of answers has been graded and stored, the run file synced and the next rows
   read and built: a window of a thousand answers that arrive together would wait for all of
   that before its first slot is refilled. */
static void push_started(struct ep *ep, long at_least)
{
    if (ep->n_started - ep->n_pushed < at_least || ep->n_started == ep->n_pushed)
        return;
    int running;
    ep->n_pushed = ep->n_started;
    curl_multi_perform(ep->multi, &running);
}

static void drain_messages(struct ep *ep)
{
    CURLMsg *m;
    int left;
    /* every 32 refills while draining: one perform walks every transfer, so not after each */
    while ((m = curl_multi_info_read(ep->multi, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        struct xfer *x = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
        finish_xfer(ep, x, m->data.result);
        /* the freed slot goes to a waiting request now, not after the whole burst of
           completions has been graded and stored: a window of answers that arrive together
           would otherwise empty before it refills, and stay in step (waves) */
        start_ready(ep);
        push_started(ep, 32);
    }
    push_started(ep, 1);
}

/* ---- the vtable ----------------------------------------------------------------------- */

static int ep_pending(const struct ep *ep)
{
    return ep->n_ready + ep->n_delayed + ep->n_inflight + ep->n_finished;
}

static void deliver_finished(struct ep *ep)
{
    while (ep->finished) {
        struct xfer *x = ep->finished;
        ep->finished = x->next;
        ep->n_finished--;
        deliver(ep, x, DSA_RES_UNSUPPORTED, "the endpoint has no token-counting API", 0, false);
    }
}

/* -1 once a request found the run cannot go on; the reason is printed once */
static int fatal(struct ep *ep)
{
    if (!ep->fatal)
        return 0;
    if (!ep->fatal_reported)
        dsa_errorf("%s", ep->fatal);
    ep->fatal_reported = true;
    return -1;
}

static int ep_poll(dsa_backend *b, int timeout_ms)
{
    struct ep *ep = (struct ep *)b;
    if (fatal(ep))
        return -1;
    long delivered0 = ep->n_delivered;
    deliver_finished(ep);
    if (fill(ep) < 0)
        return -1;
    if (ep->n_inflight == 0 && ep->n_delayed == 0)
        return ep_pending(ep);
    int running;
    CURLMcode mc = CURLM_OK;
    if (ep->n_inflight > 0) {
        ep->n_pushed = ep->n_started;
        mc = curl_multi_perform(ep->multi, &running);
        if (mc == CURLM_OK)
            drain_messages(ep);
    }
    /* wait only when nothing finished: a finished request means the caller has room to
       refill, and waiting then would idle the window (at concurrency 1, every request) */
    if (mc == CURLM_OK && ep->n_delivered == delivered0) {
        /* no longer than the next retry's start time */
        if (ep->delayed) {
            double first = ep->delayed->start_at;
            for (struct xfer *x = ep->delayed; x; x = x->next)
                if (x->start_at < first)
                    first = x->start_at;
            double ms = (first - now_s()) * 1e3;
            if (ms < timeout_ms)
                timeout_ms = ms < 0 ? 0 : (int)ms + 1;
        }
        if (ep->n_inflight > 0) {
            mc = curl_multi_poll(ep->multi, NULL, 0, timeout_ms, NULL);
            ep->n_pushed = ep->n_started;
            if (mc == CURLM_OK)
                mc = curl_multi_perform(ep->multi, &running);
            if (mc == CURLM_OK)
                drain_messages(ep);
        } else if (timeout_ms > 0) {
            usleep((useconds_t)timeout_ms * 1000u);
        }
    }
    if (mc != CURLM_OK)
        return dsa_errorf("http event loop failed: %s", curl_multi_strerror(mc));
    deliver_finished(ep);
    if (fatal(ep))
        return -1;
    if (fill(ep) < 0)
        return -1;
    return ep_pending(ep);
}

static const char *default_path(const struct ep *ep, enum dsa_api api)
{
    switch (api) {
    case DSA_API_CHAT:
        return "/v1/chat/completions";
    case DSA_API_COMPLETION:
        return "/v1/completions";
    case DSA_API_GENERATE:
        return ep->dialect->generate_path ? ep->dialect->generate_path : "/generate";
    case DSA_API_TOKENIZE:
        return ep->dialect->tokenize_path;
    case DSA_API_GET:
    case DSA_API_SELECT:
    case DSA_API_MTP_VERIFY:
        return NULL;
    }
    return NULL;
}

/* Serializes a request's body. A row's messages are sent twice, counted by /tokenize and then
   in the chat request that count's callback submits: the second body copies their bytes from
   the first (still held while its callback runs) instead of escaping a prompt of up to a
   megabyte again. The same json_t is the same bytes: bodies are not changed after submit
   (backend.h). */
static int serialize_request(struct ep *ep, struct xfer *x, const struct dsa_request *req,
                             const json_t *body)
{
    if (req->raw_value) { /* the caller's bytes: nothing to escape, nothing to keep */
        struct dsa_json_splice sp = {.v = req->raw_value,
                                     .bytes = req->raw_bytes,
                                     .len = req->raw_len,
                                     .hole = req->raw_held && req->raw_len >= RAW_SEND_MIN};
        if (serialize_body(x, body, &sp) < 0)
            return -1;
        if (sp.hole && sp.seen) { /* sent from the caller's bytes (on_read) */
            x->raw = req->raw_bytes;
            x->raw_at = sp.off;
            x->raw_len = req->raw_len;
        }
        return 0;
    }
    json_t *msgs = req->body ? json_object_get(req->body, "messages") : NULL;
    if (!json_is_array(msgs))
        return serialize_body(x, body, NULL);
    struct dsa_json_splice sp = {.v = msgs};
    const struct xfer *d = ep->delivering;
    if (d && d->msgs == msgs && d->body) {
        sp.bytes = d->body + d->msgs_off;
        sp.len = d->msgs_len;
    }
    if (serialize_body(x, body, &sp) < 0)
        return -1;
    if (req->api == DSA_API_TOKENIZE && sp.seen) {
        x->msgs = json_incref(msgs);
        x->msgs_off = sp.off;
        x->msgs_len = sp.len;
    }
    return 0;
}

static int ep_submit(dsa_backend *b, const struct dsa_request *req)
{
    struct ep *ep = (struct ep *)b;
    if (req->api == DSA_API_SELECT || req->api == DSA_API_MTP_VERIFY)
        return dsa_errorf("an endpoint does not run in-process selections");
    const char *path = req->path ? req->path : default_path(ep, req->api);
    if (req->endpoint >= ep->n_servers)
        return dsa_errorf("request for endpoint %d, but only %d given", req->endpoint,
                          ep->n_servers);
    struct xfer *x = dsa_xcalloc(1, sizeof *x);
    x->ep = ep;
    x->api = req->api;
    x->fixed_endpoint = req->endpoint < 0 ? -1 : req->endpoint;
    x->endpoint = x->fixed_endpoint < 0 ? 0 : x->fixed_endpoint;
    x->stream = req->stream && (req->api == DSA_API_CHAT || req->api == DSA_API_COMPLETION);
    x->max_retries = ep->retries;
    x->done = req->done;
    x->ud = req->ud;
    dsa_buf_init(&x->resp_body);
    dsa_sse_init(&x->sse, on_sse_event, x);
    dsa_resp_init(&x->acc);

    if (req->api == DSA_API_TOKENIZE && (!path || ep->tokenize_missing)) {
        /* answered from the next poll, never from inside submit (callers may hold state) */
        x->next = ep->finished;
        ep->finished = x;
        ep->n_finished++;
        return 0;
    }
    if (!path) {
        xfer_free(x);
        return dsa_errorf("a GET request needs a path");
    }
    if (req->api == DSA_API_TOKENIZE && !req->path && ep->dialect->template_path &&
        json_object_get(req->body, "messages")) {
        path = ep->dialect->template_path; /* render first, then count (chain_count) */
        x->templating = true;
    }
    x->path = dsa_xstrdup(path);
    if (req->api != DSA_API_GET) {
        json_t *body;
        if (req->api == DSA_API_TOKENIZE) {
            /* the count must see the template the generation will see: --extra-body's
               chat_template_kwargs (enable_thinking, thinking) change the prompt */
            json_t *in = json_copy(req->body);
            json_t *kw =
                ep->extra_body ? json_object_get(ep->extra_body, "chat_template_kwargs") : NULL;
            if (kw && !json_object_get(in, "chat_template_kwargs"))
                json_object_set(in, "chat_template_kwargs", kw);
            body = ep->dialect->tokenize_body(ep->model, in);
            json_decref(in);
        } else {
            body = json_object();
            /* --extra-body first, so the request's own keys win */
            if (ep->extra_body && req->api != DSA_API_GENERATE)
                json_object_update(body, ep->extra_body);
            if (req->body)
                json_object_update(body, req->body);
            if (req->api != DSA_API_GENERATE && !json_object_get(body, "model") && ep->model)
                json_object_set_new(body, "model", json_string(ep->model));
            if (x->stream) {
                json_object_set_new(body, "stream", json_true());
                if (!ep->dialect->no_stream_options)
                    json_object_set_new(body, "stream_options",
                                        json_pack("{s:b}", "include_usage", 1));
            }
        }
        /* no sorting: messages and every string go out byte-exact, in the caller's order */
        int rc = serialize_request(ep, x, req, body);
        json_decref(body);
        if (rc < 0) {
            xfer_free(x);
            return dsa_errorf("cannot serialize a request body (invalid UTF-8?)");
        }
    }
    ready_push(ep, x);
    return 0;
}

static void cancel_list(struct ep *ep, struct xfer *x)
{
    while (x) {
        struct xfer *next = x->next;
        x->t_end = now_s();
        deliver(ep, x, DSA_RES_CANCELLED, "cancelled", 0, false);
        x = next;
    }
}

static void ep_cancel(dsa_backend *b)
{
    struct ep *ep = (struct ep *)b;
    /* callbacks may submit more; loop until everything is gone */
    while (ep_pending(ep) > 0) {
        while (ep->inflight) {
            struct xfer *x = ep->inflight;
            release_easy(ep, x);
            x->t_end = now_s();
            deliver(ep, x, DSA_RES_CANCELLED, "cancelled", 0, false);
        }
        struct xfer *r0 = ep->ready_head[0], *r1 = ep->ready_head[1], *d = ep->delayed,
                    *f = ep->finished;
        ep->ready_head[0] = ep->ready_tail[0] = ep->ready_head[1] = ep->ready_tail[1] = NULL;
        ep->delayed = ep->finished = NULL;
        ep->n_ready = ep->n_delayed = ep->n_finished = 0;
        cancel_list(ep, r0);
        cancel_list(ep, r1);
        cancel_list(ep, d);
        cancel_list(ep, f);
    }
}

/* Requests built ahead of the window, waiting in the ready queue, so a slot freed while
   completions are drained is refilled at once (drain_messages). At most 256: a 128K-token
   body is about half a megabyte. */
static int backlog(const struct ep *ep)
{
    return ep->concurrency < 256 ? ep->concurrency : 256;
}

static int ep_idle_slots(const dsa_backend *b)
{
    const struct ep *ep = (const struct ep *)b;
    int n = ep->concurrency + backlog(ep) - ep_pending(ep);
    return n > 0 ? n : 0;
}

static void ep_stats(const dsa_backend *b, long *retries, long *errors)
{
    const struct ep *ep = (const struct ep *)b;
    *retries = ep->total_retries;
    *errors = ep->total_errors;
}

/* GET /metrics of every server, concatenated: summing a counter over its label sets then also
   sums it over the servers */
static int ep_metrics(dsa_backend *b, struct dsa_buf *out)
{
    const struct ep *ep = (const struct ep *)b;
    for (int i = 0; i < ep->n_servers; i++) {
        struct dsa_request req = {.api = DSA_API_GET, .path = "/metrics", .endpoint = i};
        struct dsa_result res;
        int st = dsa_backend_call(b, &req, &res);
        if (st != DSA_RES_OK) {
            dsa_errorf("cannot read /metrics of endpoint %d: %s", i + 1,
                       res.error ? res.error : dsa_res_status_name((enum dsa_res_status)st));
            dsa_result_release(&res);
            return -1;
        }
        dsa_buf_add(out, res.body ? res.body : "", res.body ? res.body_len : 0);
        if (out->len && out->data[out->len - 1] != '\n')
            dsa_buf_addch(out, '\n');
        dsa_result_release(&res);
    }
    return 0;
}

static json_t *ep_describe(dsa_backend *b)
{
    struct ep *ep = (struct ep *)b;
    json_t *servers = json_array();
    for (int i = 0; i < ep->n_servers; i++) {
        struct server *s = &ep->servers[i];
        json_array_append_new(
            servers,
            json_pack("{s:s, s:o, s:o, s:o}", "url", s->shown, "version",
                      s->version ? json_string(s->version) : json_null(), "owned_by",
                      s->owned_by ? json_string(s->owned_by) : json_null(), "max_model_len",
                      s->max_model_len > 0 ? json_integer(s->max_model_len) : json_null()));
    }
    return json_pack("{s:s, s:s, s:o, s:o, s:o, s:O?}", "kind", "endpoint", "dialect",
                     ep->dialect->name, "model", ep->model ? json_string(ep->model) : json_null(),
                     "max_model_len",
                     ep->max_model_len > 0 ? json_integer(ep->max_model_len) : json_null(),
                     "servers", servers, "extra_body", ep->extra_body);
}

static void ep_free(dsa_backend *b)
{
    struct ep *ep = (struct ep *)b;
    ep_cancel(b);
    for (int i = 0; i < ep->n_pool; i++)
        curl_easy_cleanup(ep->pool[i]);
    free(ep->pool);
    curl_multi_cleanup(ep->multi);
    curl_slist_free_all(ep->headers);
    for (int i = 0; i < ep->n_servers; i++) {
        free(ep->servers[i].base);
        free(ep->servers[i].shown);
        free(ep->servers[i].version);
        free(ep->servers[i].owned_by);
    }
    free(ep->servers);
    free(ep->model);
    free(ep->cacert);
    free(ep->fatal);
    json_decref(ep->extra_body);
    free(ep);
}

static const struct dsa_backend_ops endpoint_ops = {
    .kind = "endpoint",
    .describe = ep_describe,
    .submit = ep_submit,
    .poll = ep_poll,
    .cancel = ep_cancel,
    .idle_slots = ep_idle_slots,
    .stats = ep_stats,
    .metrics = ep_metrics,
    .free = ep_free,
};

/* ---- opening: probe each server ------------------------------------------------------ */

static char *normalize_base(const char *url)
{
    size_t n = strlen(url);
    while (n && url[n - 1] == '/')
        n--;
    if (n >= 3 && !strncmp(url + n - 3, "/v1", 3))
        n -= 3;
    while (n && url[n - 1] == '/')
        n--;
    return dsa_xstrndup(url, n);
}

/* a probe's result, copied out of the callback */
struct probe {
    struct dsa_result r;
    bool done;
};

static void on_probe(const struct dsa_result *res)
{
    struct probe *p = res->ud;
    dsa_result_copy(&p->r, res);
    p->done = true;
}

static int probe_get(struct ep *ep, int i, const char *path, int retries, struct probe *p)
{
    memset(p, 0, sizeof *p);
    struct dsa_request rq = {
        .api = DSA_API_GET, .path = path, .endpoint = i, .done = on_probe, .ud = p};
    int saved = ep->retries;
    ep->retries = retries;
    int rc = ep_submit(&ep->base, &rq);
    ep->retries = saved;
    if (rc < 0)
        return -1;
    while (!p->done)
        if (ep_poll(&ep->base, 100) < 0)
            return -1;
    return 0;
}

static int probe_server(struct ep *ep, int i, const char *want_model, bool force_dialect,
                        int *exit_code)
{
    struct server *s = &ep->servers[i];
    struct probe p;
    int ret = -1;
    json_t *v = NULL;
    /* a server that is down is reported quickly: at most two retries at open */
    if (probe_get(ep, i, "/v1/models", ep->retries < 2 ? ep->retries : 2, &p) < 0)
        goto cleanup;
    if (p.r.status != DSA_RES_OK) {
        *exit_code = 4;
        if (p.r.http_code == 401 || p.r.http_code == 403)
            dsa_errorf("'%s' refused the API key (HTTP %ld); set DSA_EVAL_API_KEY or "
                       "--api-key-file",
                       s->shown, p.r.http_code);
        else if (p.r.unreachable || !p.r.http_code)
            dsa_errorf("cannot reach '%s/v1/models': %s", s->shown, p.r.error);
        else
            dsa_errorf("'%s/v1/models': %s", s->shown, p.r.error);
        goto cleanup;
    }
    v = json_loadb(p.r.body, p.r.body_len, 0, NULL);
    json_t *data = json_object_get(v, "data");
    if (!json_is_array(data) || json_array_size(data) == 0) {
        *exit_code = 4;
        dsa_errorf("'%s/v1/models' lists no model", s->shown);
        goto cleanup;
    }
    json_t *card = NULL;
    size_t k;
    json_t *c;
    json_array_foreach(data, k, c)
    {
        const char *id = json_string_value(json_object_get(c, "id"));
        if (id && (!want_model || !strcmp(id, want_model))) {
            card = c;
            break;
        }
    }
    if (!card) {
        /* the server may serve the model under an alias; the request will tell */
        dsa_warnf("'%s' does not list model '%s'", s->shown, want_model);
        card = json_array_get(data, 0);
    } else if (!want_model && !ep->model) {
        ep->model = dsa_xstrdup(json_string_value(json_object_get(card, "id")));
    } else if (!want_model && strcmp(ep->model, json_string_value(json_object_get(card, "id")))) {
        *exit_code = 2;
        dsa_errorf("endpoints serve different models ('%s' and '%s'); use --model", ep->model,
                   json_string_value(json_object_get(card, "id")));
        goto cleanup;
    }
    const char *owned = json_string_value(json_object_get(card, "owned_by"));
    s->owned_by = owned ? dsa_xstrdup(owned) : NULL;
    json_t *mml = json_object_get(card, "max_model_len");
    if (mml && !json_is_null(mml) && !(json_is_integer(mml) && json_integer_value(mml) > 0)) {
        /* -1, 0 or "8192" would turn every over-context decision into nonsense */
        char *shown = json_dumps(mml, JSON_COMPACT | JSON_ENCODE_ANY);
        *exit_code = 4;
        dsa_errorf("'%s/v1/models': \"max_model_len\" must be a positive integer, not %.40s",
                   s->shown, shown ? shown : "?");
        free(shown);
        goto cleanup;
    }
    s->max_model_len = json_is_integer(mml) ? (long)json_integer_value(mml) : -1;
    if (!force_dialect && i == 0)
        ep->dialect = dsa_dialect_detect(owned);
    if (s->max_model_len < 0 && ep->dialect->card_context)
        s->max_model_len = ep->dialect->card_context(card);
    dsa_result_release(&p.r);

    if (ep->dialect->version_path) {
        if (probe_get(ep, i, ep->dialect->version_path, 0, &p) < 0)
            goto cleanup;
        if (p.r.status == DSA_RES_OK) {
            json_t *vv = json_loadb(p.r.body, p.r.body_len, 0, NULL);
            if (ep->dialect->server_info) {
                long ctx = -1;
                ep->dialect->server_info(vv, &s->version, &ctx);
                if (s->max_model_len < 0)
                    s->max_model_len = ctx;
            } else {
                const char *ver = json_string_value(json_object_get(vv, "version"));
                s->version = ver ? dsa_xstrdup(ver) : NULL;
            }
            json_decref(vv);
        } else if (p.r.http_code == 401 || p.r.http_code == 403) {
            /* llama-server leaves /v1/models open but guards /props: a wrong key shows here */
            *exit_code = 4;
            dsa_errorf("'%s' refused the API key (%s); set DSA_EVAL_API_KEY or --api-key-file",
                       s->shown, p.r.error ? p.r.error : "HTTP 401");
            goto cleanup;
        }
    }
    ret = 0;
cleanup:
    json_decref(v);
    dsa_result_release(&p.r);
    return ret;
}

dsa_backend *dsa_endpoint_open(const struct dsa_endpoint_opts *o, int *exit_code)
{
    *exit_code = 2;
    if (o->n_urls < 1) {
        dsa_errorf("no --endpoint given");
        return NULL;
    }
    static bool curl_ready;
    if (!curl_ready) {
        curl_global_init(CURL_GLOBAL_DEFAULT);
        curl_ready = true;
    }
    struct ep *ep = dsa_xcalloc(1, sizeof *ep);
    ep->base.ops = &endpoint_ops;
    ep->multi = curl_multi_init();
    ep->n_servers = o->n_urls;
    ep->servers = dsa_xcalloc((size_t)o->n_urls, sizeof *ep->servers);
    for (int i = 0; i < o->n_urls; i++) {
        const char *u = o->urls[i];
        if (strncmp(u, "http://", 7) && strncmp(u, "https://", 8)) {
            char *shown = dsa_url_redact(u);
            dsa_errorf("endpoint '%s' is not an http:// or https:// URL", shown);
            free(shown);
            goto fail;
        }
        ep->servers[i].base = normalize_base(u);
        ep->servers[i].shown = dsa_url_redact(ep->servers[i].base);
        if (dsa_url_has_userinfo(u) && dsa_secret_hold() < 0)
            goto fail; /* a password in the URL is a key like any other */
        ep->servers[i].max_model_len = -1;
    }
    ep->dialect = dsa_dialect_find("vllm");
    bool force = false;
    if (o->dialect) {
        ep->dialect = dsa_dialect_find(o->dialect);
        if (!ep->dialect) {
            dsa_errorf("unknown dialect '%s' (known: %s)", o->dialect, dsa_dialect_names());
            goto fail;
        }
        force = true;
    }
    ep->model = o->model ? dsa_xstrdup(o->model) : NULL;
    ep->extra_body = o->extra_body ? json_deep_copy(o->extra_body) : NULL;
    ep->insecure = o->insecure;
    ep->mem_budget = o->max_memory > 0 ? o->max_memory : default_memory(o->concurrency);
    /* libcurl reads neither variable (only the curl tool reads CURL_CA_BUNDLE): honour the
       names users already set for a private CA */
    const char *ca = o->cacert;
    if (!ca && getenv("CURL_CA_BUNDLE") && *getenv("CURL_CA_BUNDLE"))
        ca = getenv("CURL_CA_BUNDLE");
    if (!ca && getenv("SSL_CERT_FILE") && *getenv("SSL_CERT_FILE"))
        ca = getenv("SSL_CERT_FILE");
    if (ca && access(ca, R_OK)) {
        dsa_errorf("cannot read the CA bundle '%s': %s", ca, strerror(errno));
        goto fail;
    }
    ep->cacert = ca ? dsa_xstrdup(ca) : NULL;
    ep->concurrency = o->concurrency > 0 ? o->concurrency : 1;
    ep->retries = o->retries >= 0 ? o->retries : 0;
    ep->timeout_ms = (long)((o->timeout_s > 0 ? o->timeout_s : 1800) * 1e3);
    ep->connect_timeout_ms = (long)((o->connect_timeout_s > 0 ? o->connect_timeout_s : 10) * 1e3);
    ep->backoff_base = o->backoff_base_s > 0 ? o->backoff_base_s : 0.5;
    ep->backoff_max = o->backoff_max_s > 0 ? o->backoff_max_s : 30;
    ep->rng = dsa_splitmix64((uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32));
    ep->max_model_len = -1;
    /* keep every connection of a full window alive between requests */
    /* the generation window, the counts' window and a few spare */
    curl_multi_setopt(ep->multi, CURLMOPT_MAXCONNECTS,
                      (long)ep->concurrency + count_window(ep) + 4);
    ep->headers = curl_slist_append(NULL, "Content-Type: application/json");
    /* no "Expect: 100-continue" round trip before 256K-token bodies */
    ep->headers = curl_slist_append(ep->headers, "Expect:");
    if (o->api_key && *o->api_key) {
        struct dsa_buf h = DSA_BUF_INIT;
        dsa_buf_addf(&h, "Authorization: Bearer %s", o->api_key);
        ep->headers = curl_slist_append(ep->headers, h.data);
        /* the key stays only in the slist; wipe our copy */
        memset(h.data, 0, h.len);
        dsa_buf_release(&h);
    }
    if (o->insecure)
        dsa_warnf("--insecure: TLS certificates are NOT verified; anyone on the path can read "
                  "the prompts and the API key");
    if (o->probe) {
        for (int i = 0; i < ep->n_servers; i++)
            if (probe_server(ep, i, o->model, force, exit_code) < 0)
                goto fail;
        for (int i = 0; i < ep->n_servers; i++) {
            long m = ep->servers[i].max_model_len;
            if (m > 0 && (ep->max_model_len < 0 || m < ep->max_model_len))
                ep->max_model_len = m;
        }
    }
    ep->total_retries = ep->total_errors = 0;
    *exit_code = 0;
    return &ep->base;
fail:
    ep_free(&ep->base);
    return NULL;
}

const char *dsa_endpoint_model(const dsa_backend *b)
{
    return ((const struct ep *)b)->model;
}

long dsa_endpoint_max_model_len(const dsa_backend *b)
{
    return ((const struct ep *)b)->max_model_len;
}

const char *dsa_endpoint_dialect(const dsa_backend *b)
{
    return ((const struct ep *)b)->dialect->name;
}

/* ---- the API key ---------------------------------------------------------------------- */

int dsa_endpoint_read_api_key(const char *file, char **key)
{
    *key = NULL;
    if (!file) {
        const char *env = getenv("DSA_EVAL_API_KEY");
        if (!env || !*env)
            return 0;
        /* the key is in this process from its start (the environment): no core file */
        if (dsa_secret_hold() < 0)
            return -1;
        if (!dsa_secret_header_safe(env, strlen(env)))
            return dsa_errorf("$DSA_EVAL_API_KEY holds a control character (CR, LF, ...): "
                              "refused, it would end the Authorization header");
        *key = dsa_xstrdup(env);
        return 0;
    }
    FILE *f = fopen(file, "r");
    if (!f)
        return dsa_errorf("cannot open '%s': %s", file, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, f);
    fclose(f);
    while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\t' || line[n - 1] == '\r' ||
                     line[n - 1] == '\n'))
        line[--n] = 0;
    if (n <= 0) {
        free(line);
        return dsa_errorf("'%s' holds no API key", file);
    }
    *key = line;
    bool safe = dsa_secret_header_safe(line, (size_t)n);
    if (dsa_secret_hold() < 0 || !safe) {
        dsa_endpoint_api_key_free(key);
        if (!safe)
            dsa_errorf("the API key in '%s' holds a control character (CR, ...): refused, it "
                       "would end the Authorization header",
                       file);
        return -1;
    }
    return 0;
}

void dsa_endpoint_api_key_free(char **key)
{
    if (!*key)
        return;
    /* volatile: the wipe of memory about to be freed must not be optimised away */
    for (volatile char *p = *key; *p; p++)
        *p = 0;
    free(*key);
    *key = NULL;
}
