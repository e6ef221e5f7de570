/*
 * The in-process backend's requests on captured traces; see inprocess_trace.h. What was the
 * traces eval's own loop over the stack (evals/inproc_traces.c) before the eval went through
 * the backend's requests: the same computations, in the same order, so records and hashes are
 * unchanged.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "backend/inprocess_trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/buf.h"
#include "util/msg.h"

/* the needles' token ranges, merged into disjoint ascending ones */
struct spans {
    long *lo, *hi;
    size_t n;
    long tokens; /* their union's size */
};

static int cmp_long2(const void *a, const void *b)
{
    long x = ((const long *)a)[0], y = ((const long *)b)[0];
    return (x > y) - (x < y);
}

/* "needles": [[lo, hi]...] (checked by the eval's manifest reader) into s */
static void spans_of(json_t *needles, struct spans *s)
{
    size_t n = json_array_size(needles), k = 0;
    long *pair = dsa_xmalloc((n ? n : 1) * 2 * sizeof *pair);
    for (size_t i = 0; i < n; i++) {
        json_t *p = json_array_get(needles, i);
        long lo = (long)json_integer_value(json_array_get(p, 0));
        long hi = (long)json_integer_value(json_array_get(p, 1));
        if (hi > lo) {
            pair[2 * k] = lo;
            pair[2 * k + 1] = hi;
            k++;
        }
    }
    qsort(pair, k, 2 * sizeof *pair, cmp_long2);
    memset(s, 0, sizeof *s);
    s->lo = dsa_xmalloc((k ? k : 1) * sizeof *s->lo);
    s->hi = dsa_xmalloc((k ? k : 1) * sizeof *s->hi);
    for (size_t i = 0; i < k; i++) {
        long lo = pair[2 * i], hi = pair[2 * i + 1];
        if (s->n && lo <= s->hi[s->n - 1]) {
            if (hi > s->hi[s->n - 1])
                s->hi[s->n - 1] = hi;
            continue;
        }
        s->lo[s->n] = lo;
        s->hi[s->n++] = hi;
    }
    for (size_t i = 0; i < s->n; i++)
        s->tokens += s->hi[i] - s->lo[i];
    free(pair);
}

static void spans_release(struct spans *s)
{
    free(s->lo);
    free(s->hi);
}

/* the share of the needles' tokens among the K positions of one selected row */
static double in_spans(const int32_t *row, int K, const struct spans *s)
{
    int c = 0;
    for (int i = 0; i < K; i++)
        for (size_t j = 0; j < s->n; j++)
            c += row[i] >= s->lo[j] && row[i] < s->hi[j];
    return s->tokens > 0 ? (double)c / (double)s->tokens : 0.0;
}

static json_t *num_or_null(int ok, double v)
{
    return ok ? json_real(v) : json_null();
}

/* one layer's measures */
struct layer_res {
    double recall, recall_last, agree, agree_gold, needle, needle_gold, needle_model;
    int has_model;
    char hex[65];
};

/* the inputs of one layer (-1: the single-layer form) of an open trace; 0 or -1 (printed) */
static int layer_inputs(const dsa_trace *tr, int layer, int H, char prefix[32],
                        struct dsa_inproc_inputs *in)
{
    prefix[0] = 0;
    if (layer >= 0)
        snprintf(prefix, 32, "layers.%d.", layer);
    return dsa_inproc_trace_layer_inputs(tr, prefix, H, in);
}

/* one layer of an open trace through the stack and the golden model */
static int select_layer(dsa_inproc *ip, int H, int K, const dsa_trace *tr, const char *path,
                        int layer, const struct spans *sp, struct layer_res *res, long *T_out,
                        int *M_out)
{
    char prefix[32];
    struct dsa_inproc_inputs in;
    if (layer_inputs(tr, layer, H, prefix, &in))
        return DSA_INPROC_TRACE_BAD;
    int M = in.M, ret = DSA_INPROC_TRACE_OK;
    int32_t *idx = dsa_xmalloc((size_t)M * K * 4), *gold = dsa_xmalloc((size_t)M * K * 4),
            *model = dsa_xmalloc((size_t)M * K * 4);
    double *per = dsa_xmalloc((size_t)M * sizeof *per);
    int kc = dsa_inproc_trace_model_topk(tr, prefix, M, K, model);
    if (kc < 0 || (kc > 0 && dsa_inproc_check_model_rows(path, &in, model, kc, K))) {
        ret = DSA_INPROC_TRACE_BAD;
        goto cleanup;
    }
    if (dsa_inproc_select_inputs(ip, &in, idx, gold)) {
        ret = DSA_INPROC_TRACE_STACK;
        goto cleanup;
    }
    memset(res, 0, sizeof *res);
    res->recall = dsa_inproc_recall(idx, gold, M, K, per, res->hex); /* sorts idx and gold */
    res->recall_last = per[M - 1];
    res->has_model = kc == K; /* another k is no comparison */
    for (int m = 0; res->has_model && m < M; m++) {
        res->agree += dsa_inproc_agreement(idx + (size_t)m * K, model + (size_t)m * K, K) / M;
        res->agree_gold += dsa_inproc_agreement(gold + (size_t)m * K, model + (size_t)m * K, K) / M;
    }
    size_t last = (size_t)(M - 1) * K;
    res->needle = in_spans(idx + last, K, sp);
    res->needle_gold = in_spans(gold + last, K, sp);
    res->needle_model = res->has_model ? in_spans(model + last, K, sp) : 0;
    *T_out = in.T;
    *M_out = M;
cleanup:
    free(idx);
    free(gold);
    free(model);
    free(per);
    dsa_inproc_trace_inputs_release(&in);
    return ret;
}

static json_t *layer_json(int layer, const struct layer_res *lr, int hn)
{
    return json_pack(
        "{s:i, s:f, s:f, s:o, s:o, s:o, s:o, s:o, s:s}", "layer", layer, "recall", lr->recall,
        "recall_last", lr->recall_last, "model_agreement", num_or_null(lr->has_model, lr->agree),
        "model_agreement_golden", num_or_null(lr->has_model, lr->agree_gold), "needle_retention",
        num_or_null(hn, lr->needle), "needle_retention_golden", num_or_null(hn, lr->needle_gold),
        "needle_retention_model", num_or_null(hn && lr->has_model, lr->needle_model),
        "selection_sha256", lr->hex);
}

static double ms_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

/* the trace named by body, opened, and its layers; BAD (printed) when it cannot be read */
static int open_trace(json_t *body, dsa_trace **tr, int layers[256], int *nl)
{
    const char *path = json_string_value(json_object_get(body, "trace"));
    if (dsa_trace_open(path, tr) || (*nl = dsa_inproc_trace_layers(*tr, layers, 256)) < 0)
        return DSA_INPROC_TRACE_BAD;
    return DSA_INPROC_TRACE_OK;
}

int dsa_inproc_trace_select(dsa_inproc *ip, int H, int K, json_t *body, json_t **raw)
{
    const char *path = json_string_value(json_object_get(body, "trace"));
    struct timespec t0;
    dsa_inproc_times_reset(ip);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    dsa_trace *tr = NULL;
    int ls[256], nl = 0, M = 0;
    long T = 0;
    struct spans sp;
    spans_of(json_object_get(body, "needles"), &sp);
    json_t *layers = json_array();
    int rc = open_trace(body, &tr, ls, &nl);
    for (int i = 0; i < nl && rc == DSA_INPROC_TRACE_OK; i++) {
        struct layer_res lr;
        if ((rc = select_layer(ip, H, K, tr, path, ls[i], &sp, &lr, &T, &M)) == 0)
            json_array_append_new(layers, layer_json(ls[i], &lr, sp.tokens > 0));
    }
    *raw = NULL;
    if (rc == DSA_INPROC_TRACE_OK)
        *raw = json_pack("{s:o, s:I, s:i, s:I, s:i, s:f, s:o}", "layers", json_incref(layers),
                         "context_tokens", (json_int_t)T, "query_tokens", M, "needle_tokens",
                         (json_int_t)sp.tokens, "topk", K, "elapsed_ms", ms_since(&t0),
                         "stage_us_per_token", dsa_inproc_times_json(ip, T)); /* all layers */
    json_decref(layers);
    spans_release(&sp);
    dsa_trace_free(&tr);
    return rc;
}

/* one layer: the trace's query rows (consecutive positions P..P+R-1) as decode rows over the
   keys 0..P+R-1 */
static int mtp_layer(dsa_inproc *ip, int H, int K, int mtp, const dsa_trace *tr, const char *path,
                     int layer, json_t *layers, long *rows_out)
{
    char prefix[32];
    struct dsa_inproc_inputs in;
    if (layer_inputs(tr, layer, H, prefix, &in))
        return DSA_INPROC_TRACE_BAD;
    int n = mtp + 1, ret = DSA_INPROC_TRACE_OK;
    long P = in.qpos[0], R = in.M;
    if (in.qpos[in.M - 1] != P + R - 1) {
        dsa_errorf("trace '%s': the query rows are not consecutive positions, so they cannot "
                   "stand for MTP decode rows",
                   path);
        dsa_inproc_trace_inputs_release(&in);
        return DSA_INPROC_TRACE_BAD;
    }
    struct dsa_inproc_inputs view = in;
    view.T = P + R; /* keys after the last row are never seen */
    long maxsteps = R / n + 1;
    unsigned char *same = dsa_xcalloc((size_t)maxsteps, 1), *ls = dsa_xcalloc((size_t)maxsteps, 1);
    int32_t *sel = dsa_xmalloc((size_t)maxsteps * n * K * 4);
    long steps = 0;
    if (dsa_inproc_mtp_inputs(ip, &view, P, n, &steps, same, ls, sel)) {
        ret = DSA_INPROC_TRACE_STACK;
        goto cleanup;
    }
    int s_all = 1, l_all = 1;
    for (long s = 0; s < steps; s++) {
        s_all &= same[s];
        l_all &= ls[s];
    }
    char hex[65];
    dsa_inproc_rows_sha256(sel, steps * n, K, hex);
    json_array_append_new(layers, json_pack("{s:i, s:b, s:b, s:I, s:s}", "layer", layer,
                                            "identical", s_all, "logits_identical", l_all, "steps",
                                            (json_int_t)steps, "selection_sha256", hex));
    *rows_out = steps * n;
    if (!steps) {
        dsa_errorf("trace '%s' has %ld query rows, fewer than one verify step of %d", path, R, n);
        ret = DSA_INPROC_TRACE_BAD;
    }
cleanup:
    free(same);
    free(ls);
    free(sel);
    dsa_inproc_trace_inputs_release(&in);
    return ret;
}

int dsa_inproc_trace_mtp(dsa_inproc *ip, int H, int K, json_t *body, json_t **raw)
{
    const char *path = json_string_value(json_object_get(body, "trace"));
    int mtp = (int)json_integer_value(json_object_get(body, "mtp"));
    dsa_trace *tr = NULL;
    int ls[256], nl = 0;
    long rows = 0;
    json_t *layers = json_array();
    int rc = open_trace(body, &tr, ls, &nl);
    for (int i = 0; i < nl && rc == DSA_INPROC_TRACE_OK; i++)
        rc = mtp_layer(ip, H, K, mtp, tr, path, ls[i], layers, &rows);
    *raw = NULL;
    if (rc == DSA_INPROC_TRACE_OK)
        *raw = json_pack("{s:O, s:I, s:i, s:i}", "layers", layers, "rows", (json_int_t)rows, "mtp",
                         mtp, "topk", K);
    json_decref(layers);
    dsa_trace_free(&tr);
    return rc;
}

int dsa_inproc_opts_from_trace(struct dsa_inproc_opts *o, const char *path)
{
    dsa_trace *tr = NULL;
    int ls[256], rc = -1;
    if (dsa_trace_open(path, &tr) || dsa_inproc_trace_layers(tr, ls, 256) < 0)
        goto cleanup;
    char name[48] = "q_raw";
    if (ls[0] >= 0)
        snprintf(name, sizeof name, "layers.%d.q_raw", ls[0]);
    const struct dsa_trace_tensor *q = dsa_trace_get(tr, name);
    if (q && q->ndim == 3 && (q->shape[1] == 32 || q->shape[1] == 64))
        o->flags.heads = (int)q->shape[1];
    const char *rope = dsa_trace_meta(tr, "rope");
    char kv[64];
    snprintf(kv, sizeof kv, "rope=%s", rope ? rope : "");
    if (rope && !o->rope_given && dsa_k_flags_set(&o->flags, kv)) {
        dsa_errorf("trace '%s' has an unknown rope '%s' in __metadata__", path, rope);
        goto cleanup;
    }
    rc = 0;
cleanup:
    dsa_trace_free(&tr);
    return rc;
}
