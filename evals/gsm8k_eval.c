/* The GSM8K eval's hooks; see gsm8k_eval.h.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "evals/gsm8k_eval.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/endpoint.h"
#include "backend/llamacpp.h"
#include "datasets/fetch.h"
#include "datasets/gsm8k.h"
#include "evals/gsm8k_extract.h"
#include "evals/gsm8k_prompt.h"
#include "evals/gsm8k_run.h"
#include "evals/inproc_gsm8k.h"
#include "evals/inproc_header.h"
#include "evals/inproc_traces.h"
#include "evals/mtp.h"
#include "evals/summary.h"
#include "store/store.h"
#include "util/buf.h"
#include "util/exitcode.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/msg.h"

/* one question of the run (a job of the run loop: the items live as long as the run) */
struct item {
    struct dsa_gsm8k_eval *run;
    size_t idx;
    char id[32]; /* "q0007": the test index */
    char prompt_sha256[65];
    json_t *record; /* finished (resumed or new), or NULL */
};

/* what the summary needs of one run: the counters around the requests */
struct drive_out {
    size_t resumed;
    double wall_s;
    struct dsa_mtp_counters before, after; /* /metrics around the requests */
    bool have_before, have_after;
};

struct dsa_gsm8k_eval {
    const struct dsa_gsm8k_eval_opts *o;
    const struct dsa_eval_ctx *c;
    const struct dsa_gsm8k_mode *mode;
    enum dsa_gsm8k_extract_mode extract;
    enum dsa_api api;
    dsa_gsm8k *test, *train;
    dsa_gsm8k_extractor *x;
    dsa_backend *b;
    struct item *items;
    size_t n, next, sent;
    size_t n_limit;           /* questions of --limit in every shard (n: this shard's) */
    double completion_tokens; /* of the requests sent in this process */
    struct dsa_mtp_perreq perreq;
    struct dsa_buf prompt; /* the scratch of the run */
    bool scrape;           /* read /metrics around the run (--mtp, not SGLang) */
    struct drive_out d;
    double t0;
};

/* ---- prompts ---- */

static int build_prompt(struct dsa_gsm8k_eval *r, size_t i, struct dsa_buf *out)
{
    const struct dsa_gsm8k_row *row = dsa_gsm8k_row(r->test, r->items[i].idx);
    dsa_buf_reset(out);
    return dsa_gsm8k_prompt(r->mode, r->train, r->test, row->question, row->question_len, out);
}

static int print_prompts(struct dsa_gsm8k_eval *r, FILE *out)
{
    struct dsa_buf p = DSA_BUF_INIT;
    dsa_buf_init(&p);
    int ret = DSA_EXIT_OK;
    for (size_t i = 0; i < r->n; i++) {
        if (build_prompt(r, i, &p)) {
            ret = DSA_EXIT_DATA;
            break;
        }
        /* each prompt then one NUL: the stream hashes to the first-N vectors of docs/gsm8k.md
         * "Prompt test vectors" */
        fwrite(p.data, 1, p.len, out);
        fputc('\0', out);
    }
    dsa_buf_release(&p);
    return ret;
}

/* ---- requests ---- */

static json_t *stop_json(const struct dsa_gsm8k_mode *m)
{
    json_t *a = json_array();
    for (size_t i = 0; i < m->n_stop; i++)
        json_array_append_new(a, json_string(m->stop[i]));
    return a;
}

static int max_tokens(const struct dsa_gsm8k_eval *r)
{
    return r->o->max_tokens > 0 ? r->o->max_tokens : r->mode->max_tokens;
}

/* The request body (new reference). "model" and --extra-body are added by the backend. */
static json_t *request_body(const struct dsa_gsm8k_eval *r, const char *prompt, size_t len)
{
    json_t *text = json_stringn(prompt, len);
    switch (r->api) {
    case DSA_API_GENERATE:
        /* SGLang native: RuntimeEndpoint.generate's shape; meta_info carries spec fields */
        return json_pack("{s:o,s:{s:i,s:i,s:i,s:o}}", "text", text, "sampling_params",
                         "temperature", 0, "top_p", 1, "max_new_tokens", max_tokens(r), "stop",
                         stop_json(r->mode));
    case DSA_API_CHAT:
        return json_pack("{s:[{s:s,s:o}],s:i,s:i,s:i,s:I,s:o}", "messages", "role", "user",
                         "content", text, "max_completion_tokens", max_tokens(r), "temperature", 0,
                         "top_p", 1, "seed", (json_int_t)r->o->seed, "stop", stop_json(r->mode));
    default: {
        json_t *b = json_pack("{s:o,s:i,s:i,s:i,s:I,s:o}", "prompt", text, "max_tokens",
                              max_tokens(r), "temperature", 0, "top_p", 1, "seed",
                              (json_int_t)r->o->seed, "stop", stop_json(r->mode));
        if (r->o->token_ids)
            json_object_set_new(b, "return_token_ids", json_true());
        return b;
    }
    }
}

static const char *api_name(enum dsa_api a)
{
    return a == DSA_API_CHAT ? "chat" : a == DSA_API_GENERATE ? "generate" : "completions";
}

/* The spec-decode fields of one response worth keeping in its record: vLLM's per-request
   metrics.speculative_decoding, or SGLang's meta_info spec_* keys (new reference or NULL). */
static json_t *spec_fields(struct dsa_gsm8k_eval *r, json_t *raw)
{
    if (!json_is_object(raw))
        return NULL;
    if (r->api == DSA_API_GENERATE) {
        json_t *mi = json_object_get(raw, "meta_info");
        if (!json_is_object(mi))
            return NULL;
        dsa_mtp_perreq_add_sglang(&r->perreq, mi);
        json_t *out = json_object();
        const char *k;
        json_t *v;
        json_object_foreach(mi, k, v)
        {
            if (!strncmp(k, "spec_", 5))
                json_object_set(out, k, v);
        }
        if (json_object_size(out))
            return out;
        json_decref(out);
        return NULL;
    }
    json_t *spec = json_object_get(json_object_get(raw, "metrics"), "speculative_decoding");
    if (!json_is_object(spec))
        return NULL;
    dsa_mtp_perreq_add_vllm(&r->perreq, spec);
    return json_incref(spec);
}

/* the record of an endpoint's answer (a new reference); the item keeps one for the summary */
static json_t *answer_record(struct dsa_gsm8k_eval *r, struct item *it,
                             const struct dsa_result *res)
{
    const struct dsa_gsm8k_row *row = dsa_gsm8k_row(r->test, it->idx);
    json_t *rec = json_object();
    json_object_set_new(rec, "id", json_string(it->id));
    json_object_set_new(rec, "bin", json_string("all"));
    json_object_set_new(rec, "idx", json_integer((json_int_t)it->idx));
    json_object_set_new(rec, "prompt_sha256", json_string(it->prompt_sha256));
    json_object_set_new(rec, "gold", json_string(row->gold));
    json_object_set_new(rec, "latency_ms", json_real(res->latency_ms));
    json_object_set_new(rec, "retries", json_integer(res->retries));
    json_t *timings = dsa_llamacpp_timings(res->raw); /* llama-server's server-side split */
    if (timings) {
        json_object_set_new(rec, "timings", timings);
        dsa_mtp_perreq_add_timings(&r->perreq, timings);
    }
    if (res->completion_tokens >= 0)
        r->completion_tokens += (double)res->completion_tokens;

    if (res->status == DSA_RES_OVER_CONTEXT) {
        /* the prompt does not fit the server's context (llama-server's small per-slot n_ctx):
           excluded, as MRCR rows are, never scored or retried; the counts say why */
        char err[160];
        if (res->prompt_tokens >= 0 && res->max_model_len > 0)
            snprintf(err, sizeof err, "over_context: %ld prompt tokens, context %ld",
                     res->prompt_tokens, res->max_model_len);
        else
            snprintf(err, sizeof err, "over_context: the server refused the prompt length");
        json_object_set_new(rec, "status", json_string("excluded"));
        json_object_set_new(rec, "score", json_null());
        json_object_set_new(rec, "error", json_string(err));
        json_object_set_new(rec, "prompt_tokens",
                            res->prompt_tokens >= 0 ? json_integer(res->prompt_tokens)
                                                    : json_null());
        json_object_set_new(rec, "max_model_len",
                            res->max_model_len > 0 ? json_integer(res->max_model_len)
                                                   : json_null());
    } else if (res->status != DSA_RES_OK) {
        char err[512];
        snprintf(err, sizeof err, "%s: %s", dsa_res_status_name(res->status),
                 res->error ? res->error : "request failed");
        json_object_set_new(rec, "status", json_string("failed"));
        json_object_set_new(rec, "score", json_null());
        json_object_set_new(rec, "error", json_string(err));
        dsa_warnf("question %zu failed: %s", it->idx, err);
    } else {
        const char *text = res->content ? res->content : "";
        size_t len = res->content ? res->content_len : 0;
        json_object_set_new(rec, "output", json_stringn(text, len));
        if (res->token_ids)
            json_object_set(rec, "token_ids", res->token_ids);
        json_object_set_new(rec, "finish_reason",
                            res->finish_reason ? json_string(res->finish_reason) : json_null());
        json_t *sr = NULL;
        if (res->stop_reason)
            sr = json_loads(res->stop_reason, JSON_DECODE_ANY, NULL);
        json_object_set_new(rec, "stop_reason", sr ? sr : json_null());
        json_object_set_new(rec, "completion_tokens",
                            res->completion_tokens >= 0 ? json_integer(res->completion_tokens)
                                                        : json_null());
        json_object_set_new(rec, "prompt_tokens",
                            res->prompt_tokens >= 0 ? json_integer(res->prompt_tokens)
                                                    : json_null());
        dsa_gsm8k_record_grade(r->x, rec, r->extract, text, len, row->gold);
        json_t *spec = spec_fields(r, res->raw);
        if (spec)
            json_object_set_new(rec, "spec", spec);
    }
    it->record = json_incref(rec);
    return rec;
}

/* this shard's questions (all when unsharded), in index order */
static void keep_shard(struct dsa_gsm8k_eval *r)
{
    size_t k = 0;
    for (size_t i = 0; i < r->n; i++) {
        if (dsa_shard_keep(&r->c->shard, r->items[i].id))
            r->items[k++] = r->items[i];
    }
    r->n = k;
}

/* ---- /metrics ---- */

struct fetch_ctx {
    dsa_backend *b;
};

/* the backend's counters: GET /metrics of every endpoint, concatenated */
static int fetch_metrics(void *ctx, struct dsa_buf *body)
{
    struct fetch_ctx *f = ctx;
    return dsa_backend_metrics(f->b, body);
}

/* where `dsa-eval datasets fetch gsm8k` puts the pinned files: <cache>/gsm8k/<commit> */
static char *default_data_dir(void)
{
    char *cache = dsa_cache_dir();
    char *g = dsa_path_join(cache, "gsm8k");
    char *d = dsa_path_join(g, DSA_GSM8K_COMMIT);
    free(cache);
    free(g);
    return d;
}

static int load_data(struct dsa_gsm8k_eval *r, const char *dir)
{
    char *test = dsa_path_join(dir, "test.jsonl");
    char *train = dsa_path_join(dir, "train.jsonl");
    int ret = 0;
    if (!dsa_is_file(test)) {
        dsa_errorf("no GSM8K test split at '%s' (run 'dsa-eval datasets fetch gsm8k', or give "
                   "--data DIR with test.jsonl and train.jsonl)",
                   test);
        ret = DSA_EXIT_DATA;
        goto cleanup;
    }
    if ((ret = dsa_gsm8k_load(test, &r->test)))
        goto cleanup;
    if (r->mode->shots == DSA_GSM8K_SHOTS_TRAIN) {
        if (!dsa_is_file(train)) {
            dsa_errorf("prompt mode '%s' needs the train split: no '%s'", r->mode->name, train);
            ret = DSA_EXIT_DATA;
            goto cleanup;
        }
        if ((ret = dsa_gsm8k_load(train, &r->train)))
            goto cleanup;
    }
cleanup:
    free(test);
    free(train);
    return ret;
}

static json_t *dataset_json(const struct dsa_gsm8k_eval *r)
{
    json_t *d = json_pack("{s:s,s:s,s:s}", "name", "gsm8k", "test", dsa_gsm8k_path(r->test),
                          "test_sha256", dsa_gsm8k_sha256(r->test));
    /* the files `datasets fetch gsm8k` pins (openai/grade-school-math at DSA_GSM8K_COMMIT) */
    bool pinned = !strcmp(dsa_gsm8k_sha256(r->test), DSA_GSM8K_TEST_SHA256) &&
                  (!r->train || !strcmp(dsa_gsm8k_sha256(r->train), DSA_GSM8K_TRAIN_SHA256));
    json_object_set_new(d, "revision",
                        pinned ? json_string("openai/grade-school-math@" DSA_GSM8K_COMMIT)
                               : json_null());
    if (r->train) {
        json_object_set_new(d, "train", json_string(dsa_gsm8k_path(r->train)));
        json_object_set_new(d, "train_sha256", json_string(dsa_gsm8k_sha256(r->train)));
    }
    return d;
}

/* Everything that must be equal for a resume to append to the same run. */
static json_t *match_json(const struct dsa_gsm8k_eval *r, const char *model, json_t *extra)
{
    json_t *m = json_pack("{s:s,s:s,s:s,s:s,s:i,s:o,s:I,s:s}", "eval", "gsm8k", "prompt",
                          r->mode->name, "extract", dsa_gsm8k_extract_name(r->extract), "api",
                          api_name(r->api), "max_tokens", max_tokens(r), "stop", stop_json(r->mode),
                          "seed", (json_int_t)r->o->seed, "backend", "endpoint");
    json_object_set_new(m, "test_sha256", json_string(dsa_gsm8k_sha256(r->test)));
    json_object_set_new(m, "train_sha256",
                        r->train ? json_string(dsa_gsm8k_sha256(r->train)) : json_null());
    json_object_set_new(m, "model", model ? json_string(model) : json_null());
    json_object_set(m, "extra_body", extra ? extra : json_null());
    return m;
}

/* seconds on the monotonic clock, for the throughput line */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int mtp_read(struct dsa_gsm8k_eval *r, struct fetch_ctx *fc, bool settle,
                    struct dsa_mtp_counters *c, bool *ok)
{
    int rc = dsa_mtp_scrape(fetch_metrics, fc, settle, 0.5, 10.0, c);
    *ok = rc >= 0;
    if (rc < 0 && r->o->expect_mtp)
        return DSA_EXIT_BACKEND;
    return 0;
}

static void free_state(void *ev)
{
    struct dsa_gsm8k_eval *r = ev;
    for (size_t i = 0; r->items && i < r->n; i++)
        json_decref(r->items[i].record);
    free(r->items);
    dsa_gsm8k_extractor_free(&r->x);
    dsa_gsm8k_free(&r->test);
    dsa_gsm8k_free(&r->train);
    dsa_buf_release(&r->prompt);
    free(r);
}

static int load_questions(struct dsa_gsm8k_eval *r)
{
    const struct dsa_gsm8k_eval_opts *o = r->o;
    char *data_dir = o->data_dir ? dsa_xstrdup(o->data_dir) : default_data_dir();
    int ret = load_data(r, data_dir);
    free(data_dir);
    if (ret)
        return ret;
    size_t total = dsa_gsm8k_count(r->test);
    r->n = o->limit == 0 || (size_t)o->limit > total ? total : (size_t)o->limit;
    if (o->limit > 0 && (size_t)o->limit > total)
        dsa_warnf("--limit %d is more than the %zu test questions; running all", o->limit, total);
    r->items = dsa_xcalloc(r->n ? r->n : 1, sizeof *r->items);
    for (size_t i = 0; i < r->n; i++) {
        r->items[i].run = r;
        r->items[i].idx = i;
        snprintf(r->items[i].id, sizeof r->items[i].id, "q%04zu", i);
        if (build_prompt(r, i, &r->prompt))
            return DSA_EXIT_DATA;
        dsa_sha256_hex(r->prompt.data, r->prompt.len, r->items[i].prompt_sha256);
    }
    return 0;
}

/* ---- options and data ---- */

static int usage_error(const char *msg)
{
    dsa_errorf("%s", msg);
    return DSA_EXIT_USAGE;
}

static int check(void *opts, struct dsa_eval_ctx *c)
{
    struct dsa_gsm8k_eval_opts *o = opts;
    if (o->limit < 0)
        return usage_error("--limit must be >= 0 (0: all questions)");
    if (o->max_tokens < 0)
        return usage_error("--max-tokens must be > 0");
    if (o->expect_mtp)
        o->mtp = true;
    if (!(o->mode = dsa_gsm8k_mode_find(o->prompt))) {
        dsa_errorf("unknown prompt mode '%s' (vllm5, cot8, gsm8k, sglang5, chat)", o->prompt);
        return DSA_EXIT_USAGE;
    }
    o->extract_mode = o->mode->extract;
    if (o->extract && dsa_gsm8k_extract_parse(o->extract, &o->extract_mode)) {
        dsa_errorf("unknown extraction '%s' (vllm, cot-strict, gsm8k-strict, flexible)",
                   o->extract);
        return DSA_EXIT_USAGE;
    }
    if (c->inprocess && !o->print_prompts && !c->out)
        return usage_error("--out DIR is required with --backend inprocess");
    if (c->inprocess && !c->traces && o->mtp && (o->mtp_n < 0 || o->mtp_n > 3))
        return usage_error("--mtp N must be 0..3 in-process (next_n = N+1 <= 4)");
    return DSA_EXIT_OK;
}

/* --traces DIR: real activations, the traces' query rows as the decode rows (no GSM8K data);
   no filters */
static int traces(void *opts, struct dsa_traces_opts *t)
{
    const struct dsa_gsm8k_eval_opts *o = opts;
    t->eval = "gsm8k";
    t->mtp = o->mtp ? o->mtp_n : 0;
    return DSA_EXIT_OK;
}

static int load(void *opts, const struct dsa_eval_ctx *c, void **ev)
{
    const struct dsa_gsm8k_eval_opts *o = opts;
    struct dsa_gsm8k_eval *r = dsa_xcalloc(1, sizeof *r);
    r->o = o;
    r->c = c;
    r->mode = o->mode;
    r->extract = o->extract_mode;
    dsa_buf_init(&r->prompt);
    *ev = r;
    return load_questions(r);
}

static int offline(void *ev)
{
    struct dsa_gsm8k_eval *r = ev;
    return r->o->print_prompts ? print_prompts(r, stdout) : -1;
}

static int mtp_n(const struct dsa_gsm8k_eval *r)
{
    return r->o->mtp ? r->o->mtp_n : 0;
}

/* the API the dialect and mode call for, this shard's questions, the counters before */
static int begin(void *ev, dsa_backend *b)
{
    struct dsa_gsm8k_eval *r = ev;
    r->b = b;
    r->n_limit = r->n;
    keep_shard(r);
    if (r->c->inprocess) {
        r->api = DSA_API_MTP_VERIFY;
        return DSA_EXIT_OK;
    }
    if (r->mode->chat)
        r->api = DSA_API_CHAT;
    else if (!strcmp(dsa_endpoint_dialect(b), "sglang"))
        r->api = DSA_API_GENERATE;
    else
        r->api = DSA_API_COMPLETION;
    r->x = dsa_gsm8k_extractor_new();
    /* counters before the first request */
    r->scrape = r->o->mtp && r->api != DSA_API_GENERATE;
    struct fetch_ctx fc = {r->b};
    if (r->scrape) {
        int ret = mtp_read(r, &fc, false, &r->d.before, &r->d.have_before);
        if (ret)
            return ret;
    }
    return DSA_EXIT_OK;
}

static long total(void *ev)
{
    return (long)((struct dsa_gsm8k_eval *)ev)->n;
}

static void label(void *ev, int ri, char *buf, size_t size)
{
    (void)ev, (void)ri;
    snprintf(buf, size, "gsm8k");
}

static void header(void *ev, dsa_backend *b, int ri, json_t *h, json_t *old)
{
    (void)ri, (void)old;
    struct dsa_gsm8k_eval *r = ev;
    if (r->c->inprocess) {
        dsa_inproc_gsm8k_header(h, &r->c->stack, r->mode->name, dsa_gsm8k_sha256(r->test), mtp_n(r),
                                r->n_limit);
        return;
    }
    json_object_set_new(h, "match", match_json(r, dsa_endpoint_model(b), r->c->extra_body));
    json_object_set_new(h, "dataset", dataset_json(r));
    json_object_set_new(h, "params",
                        json_pack("{s:i,s:i,s:b,s:b,s:i}", "limit", (int)r->n_limit, "concurrency",
                                  r->c->concurrency, "mtp", r->o->mtp, "stream", r->o->stream,
                                  "timeout_s", (int)r->c->timeout_s));
}

/* resume: take the records of this run's questions that an earlier attempt finished */
static int start(void *ev, dsa_backend *b, dsa_run *run, const char *path)
{
    struct dsa_gsm8k_eval *r = ev;
    r->next = 0;
    if (r->c->inprocess) {
        if (!r->c->as_json)
            dsa_inproc_gsm8k_banner(b, &r->c->stack, mtp_n(r), path);
        return DSA_EXIT_OK;
    }
    for (size_t i = 0; run && i < r->n; i++) {
        json_t *rec = dsa_run_get(run, r->items[i].id);
        if (!rec)
            continue;
        const char *sha = json_string_value(json_object_get(rec, "prompt_sha256"));
        if (!sha || strcmp(sha, r->items[i].prompt_sha256)) {
            dsa_errorf("run file '%s' holds question %zu with another prompt; use --force-new",
                       path, r->items[i].idx);
            return DSA_EXIT_MISMATCH;
        }
        r->items[i].record = json_incref(rec);
        r->d.resumed++;
    }
    r->t0 = now_s(); /* the throughput's clock: the requests alone */
    return DSA_EXIT_OK;
}

/* ---- questions, requests, records ---- */

static int next(void *ev, void **job, const char **id)
{
    struct dsa_gsm8k_eval *r = ev;
    if (r->next >= r->n)
        return 0;
    struct item *it = &r->items[r->next++];
    *job = it;
    *id = it->id;
    return 1;
}

static int request(void *ev, void *job, struct dsa_request *rq, json_t **rec)
{
    (void)rec;
    struct dsa_gsm8k_eval *r = ev;
    struct item *it = job;
    if (build_prompt(r, (size_t)(it - r->items), &r->prompt))
        return -DSA_EXIT_INTERNAL;
    rq->api = r->api;
    if (r->c->inprocess) {
        const struct dsa_gsm8k_row *row = dsa_gsm8k_row(r->test, it->idx);
        rq->body = dsa_inproc_gsm8k_body(r->prompt.data, r->prompt.len, row->answer,
                                         row->answer_len, mtp_n(r));
        return 0;
    }
    rq->body = request_body(r, r->prompt.data, r->prompt.len);
    rq->stream = r->o->stream && r->api != DSA_API_GENERATE;
    r->sent++;
    return 0;
}

static void grade(void *ev, void *job, const struct dsa_result *res, json_t **rec,
                  struct dsa_request *rq)
{
    (void)rq;
    struct dsa_gsm8k_eval *r = ev;
    struct item *it = job;
    *rec = r->c->inprocess ? dsa_inproc_gsm8k_record(it->id, res) : answer_record(r, it, res);
}

/* the items are the run state's */
static void job_free(void *ev, void *job)
{
    (void)ev, (void)job;
}

/* ---- the summary ---- */

/* The summary of a finished run: printed (text, or the document with --json) and written
   next to the run file. Returns an enum dsa_exit. */
static int summarize(struct dsa_gsm8k_eval *r, const struct drive_out *d, const char *run_path)
{
    int ret;
    struct dsa_gsm8k_summary_in in = {
        .mode = r->mode->name,
        .extract = r->extract,
        .n = r->n,
        .resumed = d->resumed,
        .sent = r->sent,
        .completion_tokens = r->completion_tokens,
        .mtp = r->o->mtp,
        .sglang = r->api == DSA_API_GENERATE,
        .have_counters = d->have_before && d->have_after,
        .before = &d->before,
        .after = &d->after,
        .perreq = &r->perreq,
        .expect_mtp = r->o->expect_mtp,
        .wall_s = d->wall_s,
    };
    /* an attempt that measures no acceptance (a resume without --mtp, or with nothing left to
       send) keeps, and prints, the one an earlier attempt measured */
    char *sp = run_path ? dsa_gsm8k_summary_path(run_path) : NULL;
    json_t *old = sp ? dsa_gsm8k_summary_read(sp) : NULL;
    in.stored_mtp = json_object_get(old, "mtp");
    json_t **records = dsa_xcalloc(r->n ? r->n : 1, sizeof *records);
    for (size_t i = 0; i < r->n; i++)
        records[i] = r->items[i].record;
    json_t *summary = NULL;
    /* --json: the summary document on stdout instead of the text */
    char *text = NULL;
    size_t text_len = 0;
    FILE *out = r->c->as_json ? open_memstream(&text, &text_len) : stdout;
    ret = dsa_gsm8k_summarize(&in, records, out ? out : stdout, &summary);
    if (r->c->as_json && out)
        fclose(out);
    free(text);
    free(records);
    if (summary) {
        json_t *old_mtp = json_object_get(old, "mtp");
        json_t *new_mtp = json_object_get(summary, "mtp");
        if (json_is_true(json_object_get(old_mtp, "measured")) &&
            !json_is_true(json_object_get(new_mtp, "measured")))
            json_object_set(summary, "mtp", old_mtp);
        if (r->c->as_json) {
            char *js =
                json_dumps(summary, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
            printf("%s\n", js);
            free(js);
        }
    }
    if (sp && summary && dsa_gsm8k_summary_write(sp, summary) && !ret)
        ret = DSA_EXIT_IO;
    free(sp);
    json_decref(old);
    json_decref(summary);

    return ret;
}

static int summary(void *ev, const struct dsa_eval_summary_in *in)
{
    struct dsa_gsm8k_eval *r = ev;
    int ret = in->ret;
    if (r->c->inprocess) {
        if (json_array_size(in->runs)) {
            int sr = dsa_inproc_gsm8k_summary(in->runs, !r->c->as_json);
            if (ret == DSA_EXIT_OK)
                ret = sr;
        }
        /* --json is honoured by every backend */
        if (r->c->as_json && (ret == DSA_EXIT_OK || ret == DSA_EXIT_FAIL))
            dsa_summary_print(in->runs, true, stdout);
        return ret;
    }
    if (ret)
        return ret;
    r->d.wall_s = now_s() - r->t0;
    /* counters after the last response, once they stop moving */
    struct fetch_ctx fc = {r->b};
    if (r->scrape && r->d.have_before &&
        (ret = mtp_read(r, &fc, true, &r->d.after, &r->d.have_after)))
        return ret;
    return summarize(r, &r->d, in->path);
}

const struct dsa_eval_hooks dsa_gsm8k_hooks = {
    .check = check,
    .traces = traces,
    .load = load,
    .offline = offline,
    .begin = begin,
    .total = total,
    .label = label,
    .header = header,
    .start = start,
    .next = next,
    .request = request,
    .grade = grade,
    .job_free = job_free,
    .summary = summary,
    .free = free_state,
    /* a short wait: at --concurrency 1 each request waits for the loop to notice its answer,
       and 200 ms measured 8 requests/s against an instant server */
    .poll_ms = 20,
};
