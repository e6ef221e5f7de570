/* The RULER eval's hooks; see ruler_eval.h.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "evals/ruler_eval.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/endpoint.h"
#include "evals/inproc_header.h"
#include "evals/inproc_traces.h"
#include "evals/ruler.h"
#include "evals/summary.h"
#include "util/buf.h"
#include "util/exitcode.h"
#include "util/hash.h"
#include "util/msg.h"

/* the run state: the options, the haystack, and where the next sample is */
struct state {
    const struct dsa_ruler_eval_opts *o;
    const struct dsa_eval_ctx *ctx;
    dsa_ruler_haystack *haystack;
    bool inprocess;     /* DSA_API_SELECT requests (else chat or completions) */
    bool completions;   /* endpoint: POST /v1/completions with the input as the prompt */
    bool stream;        /* endpoint: SSE */
    long max_model_len; /* endpoint: the server's context, -1 unknown */
    int max_query;      /* inprocess: query rows = the last N tokens (0 = all) */
    int t, k, i;        /* the next (task, length, index) to consider */
};

/* one sample on its way: its id, then the sample made for its request */
struct job {
    int t, k, i;
    char id[40];
    struct dsa_ruler_sample s;
    bool made;
};

/* the sample id the library gives (task/length/index), without making the sample */
static void sample_id(int t, int k, int i, char id[40])
{
    snprintf(id, 40, "%s/%s/%04d", dsa_ruler_task_name((enum dsa_ruler_task)t),
             dsa_ruler_length_name(k), i);
}

/* the next (t, k, i) the options select, in the library's order; false when none is left */
static bool next_triple(struct state *st, int *t, int *k, int *i)
{
    const struct dsa_ruler_eval_opts *o = st->o;
    for (; st->t < DSA_RULER_NTASKS; st->t++, st->k = 0, st->i = 0) {
        if (!(o->tasks_mask & (1u << st->t)))
            continue;
        for (; st->k < DSA_RULER_NLENGTHS; st->k++, st->i = 0) {
            if (!(o->lengths_mask & (1u << st->k)))
                continue;
            if (st->i < o->limit) {
                *t = st->t, *k = st->k, *i = st->i++;
                return true;
            }
        }
    }
    return false;
}

/* ---- options ---- */

/* the values that need parsing; 0, or -1 with one line printed */
static int check_values(struct dsa_ruler_eval_opts *o, const struct dsa_eval_ctx *c)
{
    const char *bad = NULL;
    if (!c->out)
        return dsa_errorf("--out DIR is required");
    if (o->limit < 1 || c->runs < 1 || c->runs > 999 || o->max_query < 0)
        return dsa_errorf("--limit (>= 1), --runs (1..999) and --max-query (>= 0) must be in "
                          "range");
    if (dsa_ruler_parse_tasks(o->tasks, &o->tasks_mask, &bad))
        return dsa_errorf("unknown RULER task '%s' (see docs/ruler.md \"Tasks\")",
                          bad ? bad : o->tasks);
    if (!o->lengths) /* the traces' rows are whatever lengths were captured */
        o->lengths = c->traces ? "all" : "4k,8k,16k";
    if (c->traces && (o->haystack || o->seed_text))
        return dsa_errorf("--traces DIR replaces --haystack and --seed (the traces hold the "
                          "prompts)");
    if (dsa_ruler_parse_lengths(o->lengths, &o->lengths_mask, &bad))
        return dsa_errorf("unknown RULER length '%s' (4k, 8k, …, 1m)", bad ? bad : o->lengths);
    if (strcmp(o->api, "chat") && strcmp(o->api, "completions"))
        return dsa_errorf("--api must be chat or completions, not '%s'", o->api);
    o->seed = 0;
    if (o->seed_text) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(o->seed_text, &end, 10);
        if (errno || end == o->seed_text || *end || o->seed_text[0] == '-')
            return dsa_errorf("--seed '%s' is not an integer >= 0", o->seed_text);
        o->seed = v;
    }
    return 0;
}

static int check(void *opts, struct dsa_eval_ctx *c)
{
    return check_values(opts, c) < 0 ? DSA_EXIT_USAGE : DSA_EXIT_OK;
}

/* --traces DIR: the stack on a model's captured activations of RULER prompts
   (evals/inproc_traces.h) instead of the proxy; no samples are made, the same filters */
static int traces(void *opts, struct dsa_traces_opts *t)
{
    const struct dsa_ruler_eval_opts *o = opts;
    t->eval = "ruler";
    t->limit = o->limit;
    t->bins_mask = o->lengths_mask;
    t->tasks_mask = o->tasks_mask;
    t->filters =
        json_pack("{s:s?, s:s?, s:i}", "tasks", o->tasks, "lengths", o->lengths, "limit", o->limit);
    return DSA_EXIT_OK;
}

static int load(void *opts, const struct dsa_eval_ctx *c, void **ev)
{
    const struct dsa_ruler_eval_opts *o = opts;
    int herr = 0;
    dsa_ruler_haystack *h = dsa_ruler_haystack_new(o->haystack, &herr);
    if (!h) {
        dsa_errorf("cannot use haystack '%s': %s", o->haystack ? o->haystack : "(shipped)",
                   dsa_ruler_strerror(herr));
        return DSA_EXIT_DATA;
    }
    struct state *st = dsa_xcalloc(1, sizeof *st);
    *st = (struct state){.o = o,
                         .ctx = c,
                         .haystack = h,
                         .inprocess = c->inprocess,
                         .completions = !strcmp(o->api, "completions"),
                         .stream = o->stream,
                         .max_model_len = -1,
                         .max_query = o->max_query};
    *ev = st;
    return DSA_EXIT_OK;
}

static int begin(void *ev, dsa_backend *b)
{
    struct state *st = ev;
    if (!st->inprocess)
        st->max_model_len = dsa_endpoint_max_model_len(b);
    return DSA_EXIT_OK;
}

/* the samples of this shard (for the progress meter and the resume note) */
static long total(void *ev)
{
    struct state st = {.o = ((struct state *)ev)->o};
    const struct dsa_shard *shard = &((struct state *)ev)->ctx->shard;
    int t, k, i;
    long n = 0;
    char id[40];
    while (next_triple(&st, &t, &k, &i)) {
        sample_id(t, k, i, id);
        n += dsa_shard_keep(shard, id);
    }
    return n;
}

/* what a resume must agree on: the samples (tasks, lengths, limit, seed, haystack), how they
   are sent, and the backend's identity */
static json_t *match_json(const struct state *st, json_t *id)
{
    const struct dsa_ruler_eval_opts *o = st->o;
    const dsa_ruler_haystack *h = st->haystack;
    json_t *m =
        json_pack("{s:s, s:s, s:s, s:i, s:I, s:s, s:s, s:s}", "eval", "ruler", "tasks", o->tasks,
                  "lengths", o->lengths, "limit", o->limit, "seed", (json_int_t)o->seed, "haystack",
                  dsa_ruler_haystack_name(h), "haystack_sha256", dsa_ruler_haystack_sha256(h),
                  "backend", st->inprocess ? "inprocess" : "endpoint");
    if (st->inprocess) {
        json_object_set(m, "device", json_object_get(id, "device"));
        json_object_set(m, "kernels", json_object_get(id, "kernels"));
        json_object_set(m, "variant", json_object_get(id, "variant"));
        json_object_set(m, "topk", json_object_get(id, "topk"));
        json_object_set_new(m, "max_query", json_integer(st->max_query));
        /* the samples plant their needles' retrieval structure in the proxy, as MRCR rows do */
        json_object_set_new(m, "proxy", json_string(DSA_INPROC_PROXY_MRCR));
    } else {
        json_object_set_new(m, "api", json_string(st->completions ? "completions" : "chat"));
        json_object_set(m, "extra_body", st->ctx->extra_body ? st->ctx->extra_body : json_null());
    }
    return m;
}

static void header(void *ev, dsa_backend *b, int ri, json_t *h, json_t *old)
{
    (void)ri, (void)old;
    struct state *st = ev;
    json_t *id = json_object_get(h, "backend");
    json_t *m = match_json(st, id);
    if (!st->inprocess)
        json_object_set_new(m, "model", json_string(dsa_endpoint_model(b)));
    json_object_set_new(h, "match", m);
    json_object_set_new(h, "dataset",
                        json_pack("{s:s, s:s, s:s, s:I}", "name", "ruler", "haystack",
                                  dsa_ruler_haystack_name(st->haystack), "haystack_sha256",
                                  dsa_ruler_haystack_sha256(st->haystack), "haystack_words",
                                  (json_int_t)dsa_ruler_haystack_words(st->haystack)));
    json_object_set_new(h, "params", json_pack("{s:i}", "limit", st->o->limit));
    if (st->inprocess)
        json_object_set_new(id, "proxy", json_string(DSA_INPROC_PROXY_MRCR));
}

static int start(void *ev, dsa_backend *b, dsa_run *run, const char *path)
{
    (void)b, (void)run, (void)path;
    struct state *st = ev;
    st->t = st->k = st->i = 0;
    return DSA_EXIT_OK;
}

/* ---- samples, requests, records ---- */

static json_t *base_record(const struct dsa_ruler_sample *s, const char *status)
{
    json_t *refs = json_array();
    for (size_t r = 0; r < s->noutputs; r++)
        json_array_append_new(refs, json_string(s->outputs[r]));
    char sha[65];
    dsa_sha256_hex(s->input, s->input_len, sha);
    return json_pack("{s:s, s:s, s:I, s:s, s:s, s:s, s:o, s:s, s:I}", "id", s->id, "bin",
                     dsa_ruler_length_name(s->length), "bin_tokens", (json_int_t)s->max_length,
                     "status", status, "task", dsa_ruler_task_name(s->task), "metric",
                     s->metric == DSA_RULER_MATCH_ALL ? "string_match_all" : "string_match_part",
                     "references", refs, "input_sha256", sha, "tokens", (json_int_t)s->tokens);
}

static void set_ms(json_t *rec, const char *key, double ms)
{
    /* milliseconds to 0.001: more digits would only be clock noise */
    json_object_set_new(rec, key,
                        ms >= 0 ? json_real((double)(long long)(ms * 1e3) / 1e3) : json_null());
}

/* the endpoint's answer as a record */
static json_t *answer_record(const struct job *j, const struct dsa_result *r)
{
    const struct dsa_ruler_sample *s = &j->s;
    json_t *rec;
    if (r->status == DSA_RES_OVER_CONTEXT) {
        rec = base_record(s, "excluded");
        json_object_set_new(rec, "score", json_null());
        json_object_set_new(rec, "error",
                            json_string("over_context: the server refused the "
                                        "prompt length"));
        json_object_set_new(rec, "max_model_len",
                            r->max_model_len > 0 ? json_integer(r->max_model_len) : json_null());
    } else if (r->status != DSA_RES_OK) {
        rec = base_record(s, "failed");
        json_object_set_new(rec, "score", json_null());
        json_object_set_new(rec, "error", json_string(r->error ? r->error : "failed"));
        json_object_set_new(rec, "http_code", json_integer(r->http_code));
    } else {
        const char *c = r->content ? r->content : "";
        size_t n = r->content ? r->content_len : 0;
        rec = base_record(s, "ok");
        json_object_set_new(rec, "score",
                            json_real(dsa_ruler_score(
                                s->metric, c, n, (const char *const *)s->outputs, s->noutputs)));
        json_object_set_new(rec, "error", json_null());
        json_object_set_new(rec, "output", json_stringn_nocheck(c, n));
    }
    json_object_set_new(rec, "finish_reason",
                        r->finish_reason ? json_string(r->finish_reason) : json_null());
    json_object_set_new(rec, "usage", r->usage ? json_incref(r->usage) : json_null());
    json_object_set_new(rec, "prompt_tokens",
                        r->prompt_tokens >= 0 ? json_integer(r->prompt_tokens) : json_null());
    json_object_set_new(rec, "completion_tokens",
                        r->completion_tokens >= 0 ? json_integer(r->completion_tokens)
                                                  : json_null());
    set_ms(rec, "latency_ms", r->latency_ms);
    set_ms(rec, "ttft_ms", r->ttft_ms);
    json_object_set_new(rec, "retries", json_integer(r->retries));
    json_object_set_new(rec, "endpoint", json_integer(r->endpoint));
    return rec;
}

/* the in-process backend's answer as a record */
static json_t *select_record(const struct job *j, const struct dsa_result *r)
{
    json_t *rec = base_record(&j->s, r->status == DSA_RES_OK ? "ok" : "failed");
    if (r->status != DSA_RES_OK) {
        json_object_set_new(rec, "score", json_null());
        json_object_set_new(rec, "error", json_string(r->error ? r->error : "failed"));
        return rec;
    }
    dsa_inproc_select_fields(rec, r->raw);
    return rec;
}

static int next(void *ev, void **job, const char **id)
{
    struct job j = {0};
    if (!next_triple(ev, &j.t, &j.k, &j.i))
        return 0;
    sample_id(j.t, j.k, j.i, j.id);
    struct job *n = dsa_xmalloc(sizeof *n);
    *n = j;
    *job = n;
    *id = n->id;
    return 1;
}

/* the request of a sample: the user message or the prompt, or the selection with its spans */
static json_t *request_body(const struct state *o, const struct dsa_ruler_sample *s,
                            enum dsa_api *api)
{
    json_t *text = json_stringn(s->input, s->input_len);
    if (o->inprocess) {
        *api = DSA_API_SELECT;
        size_t n = dsa_ruler_needle_tokens(s, NULL, 0);
        struct dsa_ruler_tok_span *ts = dsa_xcalloc(n ? n : 1, sizeof *ts);
        dsa_ruler_needle_tokens(s, ts, n);
        json_t *spans = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(spans, json_pack("{s:I, s:I, s:b}", "lo", (json_int_t)ts[i].lo,
                                                   "hi", (json_int_t)ts[i].hi, "needle",
                                                   ts[i].kind == DSA_RULER_SPAN_ANSWER));
        free(ts);
        return json_pack("{s:[{s:s, s:o}], s:i, s:i, s:s, s:o}", "messages", "role", "user",
                         "content", text, "max_query", o->max_query, "needle_message", 0, "topic",
                         s->id, "spans", spans);
    }
    if (o->completions) {
        *api = DSA_API_COMPLETION;
        return json_pack("{s:o, s:i, s:i}", "prompt", text, "max_tokens", s->tokens_to_generate,
                         "temperature", 0);
    }
    *api = DSA_API_CHAT;
    return json_pack("{s:[{s:s, s:o}], s:i, s:i}", "messages", "role", "user", "content", text,
                     "max_tokens", s->tokens_to_generate, "temperature", 0);
}

/* the sample made, then its request; a sample that does not fit the server's context by the
   built-in count is excluded without one */
static int request(void *ev, void *job, struct dsa_request *rq, json_t **rec)
{
    struct state *st = ev;
    struct job *j = job;
    int rc = dsa_ruler_sample_make(st->haystack, st->o->seed, (enum dsa_ruler_task)j->t, j->k, j->i,
                                   &j->s);
    if (rc) {
        dsa_errorf("cannot make RULER sample '%s': %s", j->id, dsa_ruler_strerror(rc));
        return -DSA_EXIT_DATA;
    }
    j->made = true;
    if (!st->inprocess && st->max_model_len > 0 &&
        (long)j->s.tokens + j->s.tokens_to_generate > st->max_model_len) {
        *rec = base_record(&j->s, "excluded");
        char why[160];
        snprintf(why, sizeof why, "over_context: %zu prompt tokens + %d > %ld", j->s.tokens,
                 j->s.tokens_to_generate, st->max_model_len);
        json_object_set_new(*rec, "score", json_null());
        json_object_set_new(*rec, "error", json_string(why));
        json_object_set_new(*rec, "max_model_len", json_integer(st->max_model_len));
        return 0;
    }
    rq->body = request_body(st, &j->s, &rq->api);
    rq->stream = st->stream && !st->inprocess;
    return 0;
}

static void grade(void *ev, void *job, const struct dsa_result *r, json_t **rec,
                  struct dsa_request *rq)
{
    (void)rq;
    struct state *st = ev;
    *rec = st->inprocess ? select_record(job, r) : answer_record(job, r);
}

static void job_free(void *ev, void *job)
{
    (void)ev;
    struct job *j = job;
    if (j->made)
        dsa_ruler_sample_release(&j->s);
    free(j);
}

/* ---- the summary ---- */

/* the in-process text summary (ruler_eval.h) */
static void inproc_summary_print(json_t *runs_records)
{
    struct dsa_inproc_bin_sum sums[DSA_RULER_NLENGTHS] = {{0}};
    struct dsa_inproc_stage_sum stages = {{0}, 0};
    size_t i, j;
    json_t *recs, *rec;
    json_array_foreach(runs_records, i, recs) json_array_foreach(recs, j, rec)
    {
        const char *st = json_string_value(json_object_get(rec, "status"));
        long tokens = (long)json_integer_value(json_object_get(rec, "bin_tokens"));
        int l = 0;
        while (l < DSA_RULER_NLENGTHS && (4096L << l) != tokens)
            l++;
        if (!st || strcmp(st, "ok") || l == DSA_RULER_NLENGTHS)
            continue;
        dsa_inproc_bin_sum_add(&sums[l], rec);
        dsa_inproc_stage_sum_add(&stages, rec);
    }
    const char *labels[DSA_RULER_NLENGTHS];
    for (int l = 0; l < DSA_RULER_NLENGTHS; l++)
        labels[l] = dsa_ruler_length_name(l);
    dsa_inproc_bin_table_print(labels, sums, DSA_RULER_NLENGTHS, &stages);
}

static int summary(void *ev, const struct dsa_eval_summary_in *in)
{
    struct state *st = ev;
    int ret = in->ret;
    if ((ret == DSA_EXIT_OK || ret == DSA_EXIT_INTERRUPTED) && json_array_size(in->runs)) {
        if (st->inprocess && !st->ctx->as_json)
            inproc_summary_print(in->runs);
        else
            dsa_summary_print(in->runs, st->ctx->as_json, stdout);
    }
    long failed = ret == DSA_EXIT_OK ? dsa_summary_failed(in->runs) : 0;
    if (failed) {
        dsa_warnf("%ld samples failed after retries and are not scored (see the summary)", failed);
        ret = DSA_EXIT_FAIL;
    }
    return ret;
}

static void free_state(void *ev)
{
    struct state *st = ev;
    dsa_ruler_haystack_free(&st->haystack);
    free(st);
}

const struct dsa_eval_hooks dsa_ruler_hooks = {
    .check = check,
    .traces = traces,
    .load = load,
    .begin = begin,
    .total = total,
    .header = header,
    .start = start,
    .next = next,
    .request = request,
    .grade = grade,
    .job_free = job_free,
    .summary = summary,
    .free = free_state,
    .poll_ms = 50,
};
