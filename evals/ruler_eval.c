/* The RULER eval's run; see ruler_eval.h.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "evals/ruler_eval.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evals/inproc_header.h"
#include "util/buf.h"
#include "util/exitcode.h"
#include "util/hash.h"
#include "util/msg.h"

struct state {
    dsa_run *run;
    const struct dsa_ruler_eval_opts *o;
    dsa_progress *pg;
    int t, k, i; /* the next (task, length, index) to consider */
    int ret;     /* an exit status that ends the run */
    bool stop;
};

/* one sample in flight: what the record needs after the answer */
struct job {
    struct state *st;
    struct dsa_ruler_sample s;
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

long dsa_ruler_eval_count(const struct dsa_ruler_eval_opts *o)
{
    struct state st = {.o = o};
    int t, k, i;
    long n = 0;
    char id[40];
    while (next_triple(&st, &t, &k, &i)) {
        sample_id(t, k, i, id);
        n += dsa_shard_keep(&o->shard, id);
    }
    return n;
}

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

static void on_done(const struct dsa_result *r)
{
    struct job *j = r->ud;
    struct state *st = j->st;
    if (dsa_eval_run_stopper(r)) { /* no record: a rerun sends it */
        if (!st->ret)
            dsa_errorf("stopped: %s; finished records are kept, run the same command again "
                       "to continue",
                       r->error ? r->error : "cannot connect");
        st->ret = DSA_EXIT_BACKEND;
        st->stop = true;
    } else if (r->status != DSA_RES_CANCELLED) {
        json_t *rec = st->o->inprocess ? select_record(j, r) : answer_record(j, r);
        const char *status = json_string_value(json_object_get(rec, "status"));
        bool failed = !strcmp(status, "failed");
        if (dsa_run_append(st->run, rec)) {
            st->ret = DSA_EXIT_IO;
            st->stop = true;
        } else if (st->pg) {
            dsa_progress_done(st->pg, failed);
        }
        json_decref(rec);
    }
    dsa_ruler_sample_release(&j->s);
    free(j);
}

/* the request of a sample: the user message or the prompt, or the selection with its spans */
static json_t *request_body(const struct dsa_ruler_eval_opts *o, const struct dsa_ruler_sample *s,
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

/* the run loop's submit_next: the next sample of this shard without a record, made and sent */
static int submit_next(void *ud, dsa_backend *b)
{
    struct state *st = ud;
    const struct dsa_ruler_eval_opts *o = st->o;
    int t, k, i;
    char id[40];
    while (next_triple(st, &t, &k, &i)) {
        sample_id(t, k, i, id);
        if (!dsa_shard_keep(&o->shard, id) || dsa_run_has(st->run, id))
            continue;
        struct job *j = dsa_xcalloc(1, sizeof *j);
        j->st = st;
        int rc = dsa_ruler_sample_make(o->haystack, o->seed, (enum dsa_ruler_task)t, k, i, &j->s);
        if (rc) {
            dsa_errorf("cannot make RULER sample '%s': %s", id, dsa_ruler_strerror(rc));
            free(j);
            return -DSA_EXIT_DATA;
        }
        if (!o->inprocess && o->max_model_len > 0 &&
            (long)j->s.tokens + j->s.tokens_to_generate > o->max_model_len) {
            /* does not fit the server's context by the built-in count: excluded, not sent */
            json_t *rec = base_record(&j->s, "excluded");
            char why[160];
            snprintf(why, sizeof why, "over_context: %zu prompt tokens + %d > %ld", j->s.tokens,
                     j->s.tokens_to_generate, o->max_model_len);
            json_object_set_new(rec, "score", json_null());
            json_object_set_new(rec, "error", json_string(why));
            json_object_set_new(rec, "max_model_len", json_integer(o->max_model_len));
            int arc = dsa_run_append(st->run, rec);
            json_decref(rec);
            dsa_ruler_sample_release(&j->s);
            free(j);
            if (arc)
                return -DSA_EXIT_IO;
            if (st->pg)
                dsa_progress_done(st->pg, false);
            continue;
        }
        enum dsa_api api;
        json_t *body = request_body(o, &j->s, &api);
        struct dsa_request req = {.api = api,
                                  .body = body,
                                  .endpoint = -1,
                                  .stream = o->stream && !o->inprocess,
                                  .done = on_done,
                                  .ud = j};
        rc = dsa_backend_submit(b, &req);
        json_decref(body);
        if (rc) {
            dsa_ruler_sample_release(&j->s);
            free(j);
            return -DSA_EXIT_INTERNAL;
        }
        return 1;
    }
    return 0;
}

static bool must_stop(void *ud)
{
    return ((struct state *)ud)->stop;
}

static void tick(void *ud, dsa_backend *b)
{
    (void)b;
    struct state *st = ud;
    if (st->pg)
        dsa_progress_poll(st->pg);
}

int dsa_ruler_eval_run(dsa_backend *b, dsa_run *run, const struct dsa_ruler_eval_opts *o,
                       dsa_progress *pg)
{
    struct state st = {.run = run, .o = o, .pg = pg};
    static const struct dsa_eval_feed ep_feed = {submit_next, must_stop, tick, 50};
    static const struct dsa_eval_feed ip_feed = {submit_next, must_stop, tick, 0};
    int ret = o->drive(b, o->inprocess ? &ip_feed : &ep_feed, &st, o->interrupted);
    return st.ret ? st.ret : ret;
}

void dsa_ruler_inproc_summary_print(json_t *runs_records)
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
