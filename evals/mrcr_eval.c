/* The MRCR evaluation loop; see mrcr_eval.h.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "evals/mrcr_eval.h"

#include <stdlib.h>
#include <string.h>

#include "backend/llamacpp.h"
#include "evals/mrcr_grade.h"
#include "util/buf.h"
#include "util/exitcode.h"
#include "util/hash.h"
#include "util/msg.h"

struct state;

/* One row in flight: what grading and the record need after the response comes. */
struct job {
    struct state *st;
    char id[32];
    int n_needles;
    int bin;
    long bin_tokens;
    const char *bin_label;
    json_t *messages;
    char *answer;
    size_t answer_len;
    char prefix[64];
    long prompt_tokens; /* from the pre-count, -1 unknown */
};

struct state {
    dsa_backend *b;
    dsa_run *run;
    const struct dsa_mrcr_eval_opts *o;
    struct dsa_mrcr_eval_counts *c;
    int io_error;
    char *unreachable; /* the error of a request that found no server: stop the run */
};

json_t *dsa_mrcr_eval_body(const struct dsa_mrcr_eval_opts *o, json_t *messages)
{
    json_t *body = json_object();
    json_object_set(body, "messages", messages);
    json_object_set_new(body, "max_tokens", json_integer(o->max_tokens));
    json_object_set_new(body, "temperature", json_real(o->temperature));
    if (o->has_seed)
        json_object_set_new(body, "seed", json_integer(o->seed));
    return body;
}

const char *dsa_mrcr_eval_strip_think(const char *s, size_t len, size_t *out_len)
{
    static const char tag[] = "</think>";
    const size_t tl = sizeof tag - 1;
    const char *start = s;
    for (size_t i = 0; i + tl <= len; i++)
        if (!memcmp(s + i, tag, tl))
            start = s + i + tl;
    const char *end = s + len;
    while (start < end && (*start == ' ' || *start == '\n' || *start == '\t' || *start == '\r' ||
                           *start == '\f' || *start == '\v'))
        start++;
    while (end > start && (end[-1] == ' ' || end[-1] == '\n' || end[-1] == '\t' ||
                           end[-1] == '\r' || end[-1] == '\f' || end[-1] == '\v'))
        end--;
    *out_len = (size_t)(end - start);
    return start;
}

static void job_free(struct job *j)
{
    json_decref(j->messages);
    free(j->answer);
    free(j);
}

static json_t *base_record(const struct job *j, const char *status)
{
    return json_pack("{s:s, s:s, s:i, s:I, s:i, s:s}", "id", j->id, "bin", j->bin_label,
                     "bin_index", j->bin, "bin_tokens", (json_int_t)j->bin_tokens, "needles",
                     j->n_needles, "status", status);
}

static void append(struct state *st, json_t *rec)
{
    if (dsa_run_append(st->run, rec) < 0)
        st->io_error = 1;
    json_decref(rec);
}

static void record_excluded(struct state *st, struct job *j, long prompt_tokens, long max_len)
{
    json_t *rec = base_record(j, "excluded");
    char why[160];
    if (prompt_tokens >= 0 && max_len > 0)
        snprintf(why, sizeof why, "over_context: %ld prompt tokens + %ld > %ld", prompt_tokens,
                 st->o->max_tokens, max_len);
    else if (max_len > 0)
        snprintf(why, sizeof why, "over_context: prompt + %ld > %ld", st->o->max_tokens, max_len);
    else
        snprintf(why, sizeof why, "over_context: the server refused the prompt length");
    json_object_set_new(rec, "score", json_null());
    json_object_set_new(rec, "error", json_string(why));
    json_object_set_new(rec, "prompt_tokens",
                        prompt_tokens >= 0 ? json_integer(prompt_tokens) : json_null());
    /* the context it was measured against (llama-server: the slot's n_ctx) */
    json_object_set_new(rec, "max_model_len", max_len > 0 ? json_integer(max_len) : json_null());
    append(st, rec);
    st->c->excluded++;
    st->c->done++;
}

static void set_opt_ms(json_t *rec, const char *key, double ms)
{
    /* milliseconds to 0.001: more digits would only be clock noise */
    json_object_set_new(rec, key,
                        ms >= 0 ? json_real((double)(long long)(ms * 1e3) / 1e3) : json_null());
}

static void record_result(struct state *st, struct job *j, const struct dsa_result *r)
{
    json_t *rec;
    if (r->status == DSA_RES_OK) {
        const char *content = r->content ? r->content : ""; /* null content grades as "" */
        size_t clen = r->content ? r->content_len : 0;
        struct dsa_mrcr_grade g;
        if (dsa_mrcr_grade(content, clen, j->answer, j->answer_len, j->prefix, strlen(j->prefix),
                           &g) < 0) {
            /* cannot happen for JSON-decoded text; report rather than score */
            rec = base_record(j, "failed");
            json_object_set_new(rec, "score", json_null());
            json_object_set_new(rec, "error", json_string("response is not valid UTF-8"));
            st->c->failed++;
        } else {
            rec = base_record(j, "ok");
            json_object_set_new(rec, "score", json_real(g.score));
            json_object_set_new(rec, "error", json_null());
            json_object_set_new(rec, "prefix_hit", json_boolean(g.prefix_hit));
            json_object_set_new(rec, "exact", json_boolean(g.exact));
            st->c->ok++;
            if (st->o->strip_think) {
                size_t sl;
                const char *s = dsa_mrcr_eval_strip_think(content, clen, &sl);
                struct dsa_mrcr_grade g2;
                if (dsa_mrcr_grade(s, sl, j->answer, j->answer_len, j->prefix, strlen(j->prefix),
                                   &g2) == 0)
                    json_object_set_new(rec, "score_strip_think", json_real(g2.score));
            }
        }
        json_object_set_new(rec, "output", json_stringn_nocheck(content, clen));
        json_object_set_new(rec, "output_null", json_boolean(r->content == NULL));
    } else {
        rec = base_record(j, "failed");
        json_object_set_new(rec, "score", json_null());
        json_object_set_new(rec, "error", json_string(r->error ? r->error : "failed"));
        json_object_set_new(rec, "http_code", json_integer(r->http_code));
        st->c->failed++;
    }
    json_object_set_new(rec, "finish_reason",
                        r->finish_reason ? json_string(r->finish_reason) : json_null());
    json_object_set_new(rec, "usage", r->usage ? json_incref(r->usage) : json_null());
    long pt = r->prompt_tokens >= 0 ? r->prompt_tokens : j->prompt_tokens;
    json_object_set_new(rec, "prompt_tokens", pt >= 0 ? json_integer(pt) : json_null());
    json_object_set_new(rec, "completion_tokens",
                        r->completion_tokens >= 0 ? json_integer(r->completion_tokens)
                                                  : json_null());
    set_opt_ms(rec, "latency_ms", r->latency_ms);
    set_opt_ms(rec, "ttft_ms", r->ttft_ms);
    set_opt_ms(rec, "decode_ms", r->decode_ms);
    json_t *timings = dsa_llamacpp_timings(r->raw); /* llama-server's server-side split */
    if (timings)
        json_object_set_new(rec, "timings", timings);
    json_object_set_new(rec, "retries", json_integer(r->retries));
    json_object_set_new(rec, "endpoint", json_integer(r->endpoint));
    if (r->reasoning) {
        char hex[65];
        dsa_sha256_hex(r->reasoning, r->reasoning_len, hex);
        json_object_set_new(rec, "reasoning_len", json_integer((json_int_t)r->reasoning_len));
        json_object_set_new(rec, "reasoning_sha256", json_string(hex));
    }
    append(st, rec);
    st->c->done++;
}

static void on_chat(const struct dsa_result *r)
{
    struct job *j = r->ud;
    struct state *st = j->st;
    st->c->in_flight--;
    if (dsa_eval_run_stopper(r)) {
        /* the server went away: not this row's fault, so no record; a rerun sends it */
        if (!st->unreachable)
            st->unreachable = dsa_xstrdup(r->error ? r->error : "cannot connect");
    } else if (r->status == DSA_RES_OVER_CONTEXT) {
        long ml = r->max_model_len > 0 ? r->max_model_len : st->o->max_model_len;
        record_excluded(st, j, r->prompt_tokens, ml);
    } else if (r->status != DSA_RES_CANCELLED) {
        record_result(st, j, r);
    }
    job_free(j);
}

static int submit_chat(struct state *st, struct job *j)
{
    json_t *body = dsa_mrcr_eval_body(st->o, j->messages);
    struct dsa_request rq = {.api = DSA_API_CHAT,
                             .body = body,
                             .endpoint = -1,
                             .stream = st->o->stream,
                             .done = on_chat,
                             .ud = j};
    int rc = dsa_backend_submit(st->b, &rq);
    json_decref(body);
    return rc;
}

static void on_count(const struct dsa_result *r)
{
    struct job *j = r->ud;
    struct state *st = j->st;
    if (r->status == DSA_RES_CANCELLED || dsa_eval_run_stopper(r)) {
        if (r->status == DSA_RES_FAILED && !st->unreachable)
            st->unreachable = dsa_xstrdup(r->error ? r->error : "cannot connect");
        st->c->in_flight--;
        job_free(j);
        return;
    }
    if (r->status == DSA_RES_OVER_CONTEXT) {
        /* a server whose /tokenize refuses prompts longer than its context */
        st->c->in_flight--;
        long ml = r->max_model_len > 0 ? r->max_model_len : st->o->max_model_len;
        record_excluded(st, j, r->prompt_tokens, ml);
        job_free(j);
        return;
    }
    if (r->status == DSA_RES_OK) {
        long ml = st->o->max_model_len;
        if (r->max_model_len > 0 && (ml <= 0 || r->max_model_len < ml))
            ml = r->max_model_len;
        j->prompt_tokens = r->prompt_tokens;
        /* compared without the sum: a count of INT64_MAX from a hostile /tokenize would
           overflow it (undefined behaviour) and send the row instead of excluding it */
        if (ml > 0 && r->prompt_tokens > ml - st->o->max_tokens) {
            st->c->in_flight--;
            record_excluded(st, j, r->prompt_tokens, ml);
            job_free(j);
            return;
        }
    }
    /* counted and fits, or no count (unsupported, failed): the server decides, and an
       over-context 400 excludes the row then */
    if (submit_chat(st, j) < 0) {
        st->c->in_flight--;
        job_free(j);
        st->io_error = 2;
    }
}

static int submit_row(struct state *st, struct dsa_mrcr_row *row)
{
    struct job *j = dsa_xcalloc(1, sizeof *j);
    j->st = st;
    snprintf(j->id, sizeof j->id, "%s", row->id);
    j->n_needles = row->n_needles;
    j->bin = row->bin;
    j->bin_tokens = row->bin_tokens;
    j->bin_label = row->bin_label;
    j->messages = json_incref(row->messages);
    j->answer = dsa_xmalloc(row->answer_len + 1);
    memcpy(j->answer, row->answer, row->answer_len);
    j->answer[row->answer_len] = 0;
    j->answer_len = row->answer_len;
    snprintf(j->prefix, sizeof j->prefix, "%s", row->prefix);
    j->prompt_tokens = -1;
    st->c->in_flight++;
    if (st->o->count_tokens && st->o->max_model_len > 0) {
        json_t *in = json_object();
        json_object_set(in, "messages", j->messages);
        struct dsa_request rq = {
            .api = DSA_API_TOKENIZE, .body = in, .endpoint = -1, .done = on_count, .ud = j};
        int rc = dsa_backend_submit(st->b, &rq);
        json_decref(in);
        if (rc == 0)
            return 0;
    } else if (submit_chat(st, j) == 0) {
        return 0;
    }
    st->c->in_flight--;
    job_free(j);
    return -1;
}

/* the state of the row reader between submissions (the drive's submit_next) */
struct feed {
    struct state *st;
    struct dsa_mrcr_files files;
    struct dsa_mrcr_row row;
    dsa_mrcr_eval_progress_fn progress;
    void *progress_ud;
};

/* the next row of this shard that the run file does not hold yet, submitted */
static int feed_next(void *ud, dsa_backend *b)
{
    (void)b;
    struct feed *f = ud;
    const struct dsa_mrcr_eval_opts *o = f->st->o;
    for (;;) {
        int rc = dsa_mrcr_files_next(&f->files, &f->row);
        if (rc < 0)
            return -DSA_EXIT_DATA;
        if (rc == 0) {
            f->st->c->reader_done = true;
            return 0;
        }
        if (!dsa_shard_keep(&o->shard, f->row.id))
            continue;
        if (dsa_run_has(f->st->run, f->row.id)) {
            f->st->c->resumed++;
            continue;
        }
        return submit_row(f->st, &f->row) < 0 ? -DSA_EXIT_INTERNAL : 1;
    }
}

static bool feed_must_stop(void *ud)
{
    struct feed *f = ud;
    return f->st->io_error || f->st->unreachable;
}

static void feed_tick(void *ud, dsa_backend *b)
{
    struct feed *f = ud;
    dsa_backend_stats(b, &f->st->c->retries, &f->st->c->errors);
    if (f->progress)
        f->progress(f->progress_ud, f->st->c);
}

int dsa_mrcr_eval_run(dsa_backend *b, dsa_run *run, const struct dsa_mrcr_eval_opts *o,
                      dsa_mrcr_eval_progress_fn progress, void *progress_ud,
                      struct dsa_mrcr_eval_counts *counts)
{
    memset(counts, 0, sizeof *counts);
    struct state st = {b, run, o, counts, 0, NULL};
    struct feed f = {.st = &st, .progress = progress, .progress_ud = progress_ud};
    f.files = (struct dsa_mrcr_files){o->dataset_paths, (size_t)o->n_datasets, &o->filter, 0, NULL};
    static const struct dsa_eval_feed feed = {feed_next, feed_must_stop, feed_tick, 250};
    int ret = o->drive(b, &feed, &f, o->interrupted);
    if (st.unreachable && ret == DSA_EXIT_OK) {
        dsa_errorf("stopped: %s; finished records are kept, run the same command again "
                   "to continue",
                   st.unreachable);
        ret = DSA_EXIT_BACKEND;
    }
    free(st.unreachable);
    if (st.io_error == 1 && ret == DSA_EXIT_OK)
        ret = DSA_EXIT_IO;
    else if (st.io_error && ret == DSA_EXIT_OK)
        ret = DSA_EXIT_INTERNAL;
    dsa_mrcr_row_release(&f.row);
    dsa_mrcr_files_release(&f.files);
    return ret;
}
