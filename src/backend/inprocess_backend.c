/*
 * The in-process backend behind the vtable of backend.h: a queue of requests that poll() runs
 * one at a time on the indexer stack (inprocess.h), answering each through its callback as the
 * endpoint backend does. The request kinds it serves:
 *
 *   DSA_API_SELECT      body {"messages": [{role, content}…], "max_query": M,
 *                       "needle_message": i (or -1), "topic": text or null,
 *                       "topic_messages": [j…], "spans": [{lo, hi, needle}]?}: the
 *                       conversation tokenized with the built-in
 *                       tokenizer ("<|role|>\n" then the content per message), the messages of
 *                       topic_messages carrying the topic in the proxy model (kernels/proxy.h),
 *                       and needle_message the needle; with "spans" (token ranges of the
 *                       needle message's content: a needle inside one long message, as
 *                       RULER's) every span carries the topic and the needle: true ones are
 *                       the needle. The last M tokens of the last message are the query rows.
 *                       raw = {recall,
 *                       recall_last, needle_retention, needle_retention_golden,
 *                       selection_sha256, context_tokens, query_tokens, needle_tokens,
 *                       distractor_tokens, topk, elapsed_ms, stage_us_per_token}
 *   DSA_API_MTP_VERIFY  body {"prompt": text, "continuation": text, "mtp": N}: the batched
 *                       verify (next_n = N+1) against one row at a time. raw = {identical,
 *                       logits_identical, first_diff_step, steps, rows, prompt_tokens,
 *                       context_tokens, mtp, topk, selection_sha256}
 *
 * and the same two on a captured trace (a row of scripts/capture_traces.py, kernels/trace.h;
 * inprocess_trace.c) instead of the proxy model, when the body names one:
 *
 *   DSA_API_SELECT      body {"trace": path, "needles": [[lo, hi]...]}: every layer of the
 *                       file (its q/k/w and the model's own top-k) through the stack and the
 *                       golden model. raw = {layers: [{layer, recall, recall_last,
 *                       model_agreement, model_agreement_golden, needle_retention,
 *                       needle_retention_golden, needle_retention_model, selection_sha256}],
 *                       context_tokens, query_tokens, needle_tokens, topk, elapsed_ms,
 *                       stage_us_per_token (all layers)}; the needle measures of the last
 *                       query row over the union of the ranges, null without one, the model
 *                       measures null when the trace holds no top-k of this k
 *   DSA_API_MTP_VERIFY  body {"trace": path, "mtp": N}: per layer the trace's query rows
 *                       (consecutive positions) as decode rows in verify steps of N+1. raw =
 *                       {layers: [{layer, identical, logits_identical, steps,
 *                       selection_sha256}], rows, mtp, topk}
 *
 * A trace that cannot be read or does not fit the stack (printed) ends FAILED without
 * `unreachable`, with the error DSA_INPROC_BAD_TRACE.
 *
 * A request the stack cannot run (a device error) ends FAILED with `unreachable` set: the run
 * stops, as it does when a server goes away. An empty prompt ends FAILED without it.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "backend/inprocess.h"
#include "backend/inprocess_trace.h"
#include "datasets/tokenize.h"
#include "kernels/plugin.h"
#include "util/buf.h"
#include "util/hash.h"
#include "util/msg.h"

struct queued {
    enum dsa_api api;
    json_t *body;
    dsa_backend_done_fn done;
    void *ud;
};

struct ib {
    struct dsa_backend base;
    dsa_inproc *ip;
    int topk, heads;
    struct queued *q; /* FIFO of at most one waiting request (idle_slots says 1 when empty) */
    size_t nq, cap;
    long failed;
};

struct toks {
    uint32_t *v;
    long n, cap;
};

static void toks_add_text(struct toks *t, const char *s, size_t len)
{
    size_t n = dsa_tok_encode(s, len, NULL, 0);
    if (t->n + (long)n > t->cap) {
        t->cap = (t->n + (long)n) * 2 + 1024;
        t->v = dsa_xrealloc(t->v, (size_t)t->cap * sizeof *t->v);
    }
    dsa_tok_encode(s, len, t->v + t->n, n);
    t->n += (long)n;
}

/* how many of the n positions in a fall on the needle (mask [T]) */
static int needle_count(const int32_t *a, int n, const unsigned char *mask, long T)
{
    int c = 0;
    for (int i = 0; i < n; i++)
        c += a[i] >= 0 && a[i] < T && mask[a[i]];
    return c;
}

/* FNV-1a of a string: the topic a request names */
static uint64_t topic_of(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

static double ms_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

/* the conversation's tokens, and each message's span [lo, hi) */
static void tokenize_messages(json_t *messages, struct toks *t, long *lo, long *hi)
{
    size_t nmsg = json_array_size(messages);
    for (size_t i = 0; i < nmsg; i++) {
        json_t *m = json_array_get(messages, i);
        const char *role = json_string_value(json_object_get(m, "role"));
        const char *content = json_string_value(json_object_get(m, "content"));
        char tag[64];
        snprintf(tag, sizeof tag, "<|%s|>\n", role ? role : "user");
        toks_add_text(t, tag, strlen(tag));
        lo[i] = t->n;
        if (content)
            toks_add_text(t, content, strlen(content));
        hi[i] = t->n;
    }
}

/* the keys of the topic messages; returns the tokens of those that are neither the needle nor
   the last message (the distractors) */
static long plant_keys(json_t *topic_messages, long needle, size_t nmsg, const long *lo,
                       const long *hi, long T, unsigned char *keys)
{
    long ndis = 0;
    size_t k;
    json_t *v;
    memset(keys, 0, (size_t)T);
    json_array_foreach(topic_messages, k, v)
    {
        json_int_t i = json_integer_value(v);
        if (i < 0 || (size_t)i >= nmsg)
            continue;
        memset(keys + lo[i], 1, (size_t)(hi[i] - lo[i]));
        if (i != needle && (size_t)i + 1 < nmsg)
            ndis += hi[i] - lo[i];
    }
    return ndis;
}

/* the measures of one selection: recall per row against the golden rows and the hash
   (dsa_inproc_recall, which sorts idx and gold in place), and the needle's share of the last
   row */
static json_t *selection_json(int32_t *idx, int32_t *gold, long M, int K, const unsigned char *mask,
                              long T)
{
    double *per_row = dsa_xmalloc((size_t)M * sizeof *per_row);
    char hex[65];
    double recall = dsa_inproc_recall(idx, gold, (int)M, K, per_row, hex);
    double recall_last = per_row[M - 1];
    free(per_row);
    const int32_t *alast = idx + (size_t)(M - 1) * K, *glast = gold + (size_t)(M - 1) * K;
    int nsel_last = 0, ngold_last = 0;
    while (nsel_last < K && alast[nsel_last] >= 0)
        nsel_last++;
    while (ngold_last < K && glast[ngold_last] >= 0)
        ngold_last++;
    long nneedle = 0;
    for (long i = 0; i < T; i++)
        nneedle += mask[i];
    json_t *needle = json_null(), *needle_g = json_null();
    if (nneedle > 0) {
        needle = json_real((double)needle_count(alast, nsel_last, mask, T) / (double)nneedle);
        needle_g = json_real((double)needle_count(glast, ngold_last, mask, T) / (double)nneedle);
    }
    return json_pack("{s:f, s:f, s:o, s:o, s:s, s:I}", "recall", recall, "recall_last", recall_last,
                     "needle_retention", needle, "needle_retention_golden", needle_g,
                     "selection_sha256", hex, "needle_tokens", (json_int_t)nneedle);
}

static void answer(struct queued *q, enum dsa_res_status st, const char *error, bool stop,
                   json_t *raw)
{
    struct dsa_result res;
    memset(&res, 0, sizeof res);
    res.status = st;
    res.api = q->api;
    res.error = error;
    res.unreachable = stop;
    res.prompt_tokens = res.completion_tokens = res.max_model_len = -1;
    res.ttft_ms = res.decode_ms = -1;
    res.raw = raw;
    res.ud = q->ud;
    q->done(&res);
}

/* the answer of a request the stack ran: raw holds its measures (taken) */
static void answer_raw(struct queued *q, json_t *raw)
{
    answer(q, DSA_RES_OK, NULL, false, raw);
    json_decref(raw);
}

/* "spans": [{"lo", "hi", "needle"}] token ranges of the needle message's content (a needle
   inside one long message, as RULER's): every span carries the topic, the needle spans are
   the needle, the others count as distractors. Returns the distractors' tokens. */
static long plant_spans(json_t *spans, long base, long T, unsigned char *keys, unsigned char *mask)
{
    long ndis = 0;
    size_t k;
    json_t *sp;
    memset(keys, 0, (size_t)T);
    json_array_foreach(spans, k, sp)
    {
        long a = base + (long)json_integer_value(json_object_get(sp, "lo"));
        long z = base + (long)json_integer_value(json_object_get(sp, "hi"));
        a = a < 0 ? 0 : a;
        z = z > T ? T : z;
        if (a >= z)
            continue;
        memset(keys + a, 1, (size_t)(z - a));
        if (json_is_true(json_object_get(sp, "needle")))
            memset(mask + a, 1, (size_t)(z - a));
        else
            ndis += z - a;
    }
    return ndis;
}

/* a request the stack could not run (the error is printed): the run stops */
static void stack_failed(struct ib *b, struct queued *q)
{
    b->failed++;
    answer(q, DSA_RES_FAILED, "the indexer stack failed (printed above)", true, NULL);
}

static void run_select(struct ib *b, struct queued *q)
{
    json_t *messages = json_object_get(q->body, "messages");
    size_t nmsg = json_array_size(messages);
    long needle = (long)json_integer_value(json_object_get(q->body, "needle_message"));
    long max_query = (long)json_integer_value(json_object_get(q->body, "max_query"));
    struct toks t = {0};
    long *lo = dsa_xmalloc((nmsg + 1) * sizeof *lo), *hi = dsa_xmalloc((nmsg + 1) * sizeof *hi);
    tokenize_messages(messages, &t, lo, hi);
    long T = t.n, q_lo = nmsg ? lo[nmsg - 1] : 0, M = T - q_lo;
    if (max_query > 0 && M > max_query)
        M = max_query;
    if (M <= 0 || T <= 0) {
        answer(q, DSA_RES_FAILED, "empty prompt or question", false, NULL);
        goto cleanup_toks;
    }
    bool has_needle = needle >= 0 && (size_t)needle < nmsg;
    long *qpos = dsa_xmalloc((size_t)M * sizeof *qpos);
    for (long m = 0; m < M; m++)
        qpos[m] = T - M + m;
    int K = b->topk;
    int32_t *idx = dsa_xmalloc((size_t)M * K * 4), *gold = dsa_xmalloc((size_t)M * K * 4);
    unsigned char *keys = dsa_xmalloc((size_t)T), *mask = dsa_xcalloc((size_t)T, 1);
    json_t *spans = json_object_get(q->body, "spans");
    long ndis;
    if (json_is_array(spans) && has_needle) {
        ndis = plant_spans(spans, lo[needle], T, keys, mask);
    } else {
        ndis =
            plant_keys(json_object_get(q->body, "topic_messages"), needle, nmsg, lo, hi, T, keys);
        if (has_needle)
            memset(mask + lo[needle], 1, (size_t)(hi[needle] - lo[needle]));
    }
    struct dsa_inproc_plant plant = {topic_of(json_string_value(json_object_get(q->body, "topic"))),
                                     keys, true};
    struct timespec t0;
    dsa_inproc_times_reset(b->ip);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (dsa_inproc_select_planted(b->ip, t.v, T, &plant, qpos, (int)M, idx, gold) == 0) {
        double ms = ms_since(&t0);
        json_t *raw = selection_json(idx, gold, M, K, mask, T);
        json_object_set_new(raw, "context_tokens", json_integer(T));
        json_object_set_new(raw, "query_tokens", json_integer(M));
        json_object_set_new(raw, "distractor_tokens", json_integer(ndis));
        json_object_set_new(raw, "topk", json_integer(K));
        json_object_set_new(raw, "elapsed_ms", json_real(ms));
        json_object_set_new(raw, "stage_us_per_token", dsa_inproc_times_json(b->ip, T));
        answer_raw(q, raw);
    } else {
        stack_failed(b, q);
    }
    free(qpos);
    free(idx);
    free(gold);
    free(keys);
    free(mask);
cleanup_toks:
    free(lo);
    free(hi);
    free(t.v);
}

static void run_mtp(struct ib *b, struct queued *q)
{
    const char *prompt = json_string_value(json_object_get(q->body, "prompt"));
    const char *cont = json_string_value(json_object_get(q->body, "continuation"));
    size_t plen = json_string_length(json_object_get(q->body, "prompt"));
    size_t clen = json_string_length(json_object_get(q->body, "continuation"));
    int mtp = (int)json_integer_value(json_object_get(q->body, "mtp"));
    size_t np = dsa_tok_encode(prompt ? prompt : "", plen, NULL, 0);
    size_t nc = dsa_tok_encode(cont ? cont : "", clen, NULL, 0);
    uint32_t *tok = dsa_xmalloc((np + nc + 1) * sizeof *tok);
    dsa_tok_encode(prompt ? prompt : "", plen, tok, np);
    dsa_tok_encode(cont ? cont : "", clen, tok + np, nc);
    long T = (long)(np + nc), P = (long)np;
    int n = mtp + 1, K = b->topk;
    long maxsteps = (T - P) / n + 1;
    unsigned char *same = dsa_xcalloc((size_t)maxsteps, 1),
                  *lsame = dsa_xcalloc((size_t)maxsteps, 1);
    int32_t *sel = dsa_xmalloc((size_t)maxsteps * n * K * 4);
    long steps = 0;
    if (dsa_inproc_mtp(b->ip, tok, T, P, n, &steps, same, lsame, sel) == 0) {
        long first = -1;
        int all_logits = 1;
        for (long s = 0; s < steps; s++) {
            if (!same[s] && first < 0)
                first = s;
            all_logits &= lsame[s];
        }
        char hex[65];
        dsa_inproc_rows_sha256(sel, steps * n, K, hex);
        json_t *raw = json_pack("{s:b, s:b, s:o, s:I, s:I, s:I, s:I, s:i, s:i, s:s}", "identical",
                                first < 0, "logits_identical", all_logits, "first_diff_step",
                                first < 0 ? json_null() : json_integer(first), "steps",
                                (json_int_t)steps, "rows", (json_int_t)(steps * n), "prompt_tokens",
                                (json_int_t)P, "context_tokens", (json_int_t)T, "mtp", mtp, "topk",
                                K, "selection_sha256", hex);
        answer_raw(q, raw);
    } else {
        stack_failed(b, q);
    }
    free(tok);
    free(same);
    free(lsame);
    free(sel);
}

/* a request on a captured trace (inprocess_trace.h) */
static void run_trace(struct ib *b, struct queued *q)
{
    json_t *raw = NULL;
    int rc = q->api == DSA_API_SELECT
                 ? dsa_inproc_trace_select(b->ip, b->heads, b->topk, q->body, &raw)
                 : dsa_inproc_trace_mtp(b->ip, b->heads, b->topk, q->body, &raw);
    if (rc == DSA_INPROC_TRACE_OK)
        answer_raw(q, raw);
    else if (rc == DSA_INPROC_TRACE_BAD)
        answer(q, DSA_RES_FAILED, DSA_INPROC_BAD_TRACE, false, NULL);
    else
        stack_failed(b, q);
}

static json_t *ib_describe(dsa_backend *base)
{
    return dsa_inproc_describe(((struct ib *)base)->ip);
}

static int ib_submit(dsa_backend *base, const struct dsa_request *req)
{
    struct ib *b = (struct ib *)base;
    if (req->api != DSA_API_SELECT && req->api != DSA_API_MTP_VERIFY) {
        dsa_errorf("the in-process backend runs selections, not %s requests",
                   req->api == DSA_API_GET ? "GET" : "generation");
        return -1;
    }
    if (b->nq == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 4;
        b->q = dsa_xrealloc(b->q, b->cap * sizeof *b->q);
    }
    b->q[b->nq++] = (struct queued){req->api, json_incref(req->body), req->done, req->ud};
    return 0;
}

/* runs the oldest queued request to its answer: one selection takes what it takes, so the
   timeout is not waited */
static int ib_poll(dsa_backend *base, int timeout_ms)
{
    (void)timeout_ms;
    struct ib *b = (struct ib *)base;
    if (b->nq) {
        struct queued q = b->q[0];
        memmove(b->q, b->q + 1, (b->nq - 1) * sizeof *b->q);
        b->nq--;
        if (json_object_get(q.body, "trace"))
            run_trace(b, &q);
        else if (q.api == DSA_API_SELECT)
            run_select(b, &q);
        else
            run_mtp(b, &q);
        json_decref(q.body);
    }
    return (int)b->nq;
}

static void ib_cancel(dsa_backend *base)
{
    struct ib *b = (struct ib *)base;
    while (b->nq) {
        struct queued q = b->q[--b->nq];
        answer(&q, DSA_RES_CANCELLED, "cancelled", false, NULL);
        json_decref(q.body);
    }
}

static int ib_idle_slots(const dsa_backend *base)
{
    return ((const struct ib *)base)->nq ? 0 : 1;
}

static void ib_stats(const dsa_backend *base, long *retries, long *errors)
{
    *retries = 0;
    *errors = ((const struct ib *)base)->failed;
}

/* Prometheus text of the stage times since the last selection's reset (the counters the
   in-process backend has; docs/kernels.md "Time per stage") */
static int ib_metrics(dsa_backend *base, struct dsa_buf *out)
{
    struct ib *b = (struct ib *)base;
    const double *t = dsa_inproc_times(b->ip);
    dsa_buf_addf(out, "# TYPE dsa_inproc_stage_seconds counter\n");
    for (int i = 0; i < DSA_INPROC_NT; i++)
        dsa_buf_addf(out, "dsa_inproc_stage_seconds{stage=\"%s\"} %.9g\n", dsa_inproc_stage_keys[i],
                     t[i]);
    return 0;
}

static void ib_free(dsa_backend *base)
{
    struct ib *b = (struct ib *)base;
    ib_cancel(base);
    free(b->q);
    dsa_inproc_free(&b->ip);
    dsa_kernels_unload(); /* the plugin's library, when one was loaded */
    free(b);
}

static const struct dsa_backend_ops ib_ops = {
    .kind = "inprocess",
    .describe = ib_describe,
    .submit = ib_submit,
    .poll = ib_poll,
    .cancel = ib_cancel,
    .idle_slots = ib_idle_slots,
    .stats = ib_stats,
    .metrics = ib_metrics,
    .free = ib_free,
};

dsa_backend *dsa_inproc_backend_new(const struct dsa_inproc_opts *o)
{
    dsa_inproc *ip = dsa_inproc_new(o);
    if (!ip)
        return NULL;
    struct ib *b = dsa_xcalloc(1, sizeof *b);
    b->base.ops = &ib_ops;
    b->ip = ip;
    b->topk = o->topk;
    b->heads = o->flags.heads;
    return &b->base;
}

const char *dsa_inproc_backend_device(dsa_backend *b)
{
    return dsa_inproc_device(((struct ib *)b)->ip);
}
