/* The GSM8K eval's run; see gsm8k_eval.h.
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
#include "evals/mtp.h"
#include "store/store.h"
#include "util/buf.h"
#include "util/exitcode.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/msg.h"
#include "util/progress.h"

/* one question of the run */
struct item {
    struct dsa_gsm8k_eval *run;
    size_t idx;
    char prompt_sha256[65];
    json_t *record; /* finished (resumed or new), or NULL */
};

struct dsa_gsm8k_eval {
    const struct dsa_gsm8k_eval_opts *o;
    const struct dsa_gsm8k_mode *mode;
    enum dsa_gsm8k_extract_mode extract;
    enum dsa_api api;
    dsa_gsm8k *test, *train;
    dsa_gsm8k_extractor *x;
    dsa_backend *b;
    dsa_run *store;
    dsa_progress *progress;
    struct item *items;
    size_t n, next, sent, n_failed;
    size_t n_limit;           /* questions of --limit in every shard (n: this shard's) */
    struct dsa_buf *scratch;  /* the prompt being built */
    double completion_tokens; /* of the requests sent in this process */
    struct dsa_mtp_perreq perreq;
    int write_error;
    struct dsa_buf prompt; /* the scratch of the run */
};

/* ---- prompts ---- */

static int build_prompt(struct dsa_gsm8k_eval *r, size_t i, struct dsa_buf *out)
{
    const struct dsa_gsm8k_row *row = dsa_gsm8k_row(r->test, r->items[i].idx);
    dsa_buf_reset(out);
    return dsa_gsm8k_prompt(r->mode, r->train, r->test, row->question, row->question_len, out);
}

int dsa_gsm8k_eval_print_prompts(dsa_gsm8k_eval *r, FILE *out)
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

static void on_done(const struct dsa_result *res)
{
    struct item *it = res->ud;
    struct dsa_gsm8k_eval *r = it->run;
    if (res->status == DSA_RES_CANCELLED)
        return; /* interrupted: not recorded, a rerun sends it again */

    const struct dsa_gsm8k_row *row = dsa_gsm8k_row(r->test, it->idx);
    json_t *rec = json_object();
    char id[32];
    snprintf(id, sizeof id, "q%04zu", it->idx);
    json_object_set_new(rec, "id", json_string(id));
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
        r->n_failed++;
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
    if (r->store && dsa_run_append(r->store, rec))
        r->write_error = 1;
    it->record = rec;
    if (r->progress)
        dsa_progress_done(r->progress,
                          res->status != DSA_RES_OK && res->status != DSA_RES_OVER_CONTEXT);
}

/* the run loop's submit_next: 1 sent, 0 none left, -DSA_EXIT_INTERNAL */
static int submit_next(void *ud, dsa_backend *b)
{
    struct dsa_gsm8k_eval *r = ud;
    struct dsa_buf *prompt = r->scratch;
    while (r->next < r->n && r->items[r->next].record)
        r->next++; /* finished in an earlier attempt */
    if (r->next >= r->n)
        return 0;
    struct item *it = &r->items[r->next++];
    if (build_prompt(r, (size_t)(it - r->items), prompt))
        return -DSA_EXIT_INTERNAL;
    json_t *body = request_body(r, prompt->data, prompt->len);
    struct dsa_request req = {
        .api = r->api,
        .body = body,
        .endpoint = -1,
        .stream = r->o->stream && r->api != DSA_API_GENERATE,
        .done = on_done,
        .ud = it,
    };
    int rc = dsa_backend_submit(b, &req);
    json_decref(body);
    if (rc)
        return -DSA_EXIT_INTERNAL;
    r->sent++;
    return 1;
}

static bool must_stop(void *ud)
{
    return ((struct dsa_gsm8k_eval *)ud)->write_error;
}

static void tick(void *ud, dsa_backend *b)
{
    (void)b;
    dsa_progress_poll(((struct dsa_gsm8k_eval *)ud)->progress);
}

/* this shard's questions (all when unsharded), in index order */
static void keep_shard(struct dsa_gsm8k_eval *r)
{
    size_t k = 0;
    for (size_t i = 0; i < r->n; i++) {
        char id[32];
        snprintf(id, sizeof id, "q%04zu", r->items[i].idx);
        if (dsa_shard_keep(&r->o->shard, id))
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
                          "seed", (json_int_t)r->o->seed, "backend", r->o->backend);
    json_object_set_new(m, "test_sha256", json_string(dsa_gsm8k_sha256(r->test)));
    json_object_set_new(m, "train_sha256",
                        r->train ? json_string(dsa_gsm8k_sha256(r->train)) : json_null());
    json_object_set_new(m, "model", model ? json_string(model) : json_null());
    json_object_set(m, "extra_body", extra ? extra : json_null());
    return m;
}

static int open_store(struct dsa_gsm8k_eval *r, int argc, char **argv, char **run_path)
{
    const char *model = dsa_endpoint_model(r->b);
    json_t *params = json_pack("{s:i,s:i,s:b,s:b,s:i}", "limit", (int)r->n_limit, "concurrency",
                               r->o->concurrency, "mtp", r->o->mtp, "stream", r->o->stream,
                               "timeout_s", (int)r->o->timeout_s);
    json_t *header = dsa_run_header_new("gsm8k", 1, argc, argv);
    json_t *match = match_json(r, model, r->o->extra_body);
    dsa_shard_match(&r->o->shard, match);
    json_object_set_new(header, "match", match);
    json_object_set_new(header, "dataset", dataset_json(r));
    json_object_set_new(header, "backend", dsa_backend_describe(r->b));
    json_object_set_new(header, "params", params);
    *run_path = dsa_run_file_name(r->o->out, 1);
    int rc =
        dsa_run_open_status(&r->store, *run_path, header, r->o->force_new ? DSA_RUN_FORCE_NEW : 0);
    json_decref(header);
    if (rc)
        return rc;
    /* resume: take the records of this run's questions that an earlier attempt finished */
    for (size_t i = 0; i < r->n; i++) {
        char id[32];
        snprintf(id, sizeof id, "q%04zu", r->items[i].idx);
        json_t *rec = dsa_run_get(r->store, id);
        if (!rec)
            continue;
        const char *sha = json_string_value(json_object_get(rec, "prompt_sha256"));
        if (!sha || strcmp(sha, r->items[i].prompt_sha256)) {
            dsa_errorf("run file '%s' holds question %zu with another prompt; use --force-new",
                       *run_path, r->items[i].idx);
            return DSA_EXIT_MISMATCH;
        }
        r->items[i].record = json_incref(rec);
    }
    return 0;
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

dsa_gsm8k_eval *dsa_gsm8k_eval_new(const struct dsa_gsm8k_eval_opts *o)
{
    dsa_gsm8k_eval *r = dsa_xcalloc(1, sizeof *r);
    r->o = o;
    r->mode = o->mode;
    r->extract = o->extract;
    dsa_buf_init(&r->prompt);
    return r;
}

void dsa_gsm8k_eval_free(dsa_gsm8k_eval **ev)
{
    dsa_gsm8k_eval *r = *ev;
    if (!r)
        return;
    for (size_t i = 0; r->items && i < r->n; i++)
        json_decref(r->items[i].record);
    free(r->items);
    dsa_progress_free(&r->progress);
    dsa_run_free(&r->store);
    dsa_gsm8k_extractor_free(&r->x);
    dsa_gsm8k_free(&r->test);
    dsa_gsm8k_free(&r->train);
    dsa_buf_release(&r->prompt);
    free(r);
    *ev = NULL;
}

int dsa_gsm8k_eval_load(dsa_gsm8k_eval *r)
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
        if (build_prompt(r, i, &r->prompt))
            return DSA_EXIT_DATA;
        dsa_sha256_hex(r->prompt.data, r->prompt.len, r->items[i].prompt_sha256);
    }
    return 0;
}

/* ---- the in-process run ---- */

int dsa_gsm8k_eval_inprocess(dsa_gsm8k_eval *r, const struct dsa_inproc_run *io)
{
    struct dsa_inproc_gsm8k_item *items = dsa_xcalloc(r->n ? r->n : 1, sizeof *items);
    struct dsa_buf *prompts = dsa_xcalloc(r->n ? r->n : 1, sizeof *prompts);
    int ret = DSA_EXIT_OK;
    for (size_t i = 0; i < r->n; i++) {
        dsa_buf_init(&prompts[i]);
        if (build_prompt(r, i, &prompts[i])) {
            ret = DSA_EXIT_DATA;
            break;
        }
        const struct dsa_gsm8k_row *row = dsa_gsm8k_row(r->test, r->items[i].idx);
        items[i] = (struct dsa_inproc_gsm8k_item){r->items[i].idx, prompts[i].data, prompts[i].len,
                                                  row->answer, row->answer_len};
    }
    if (ret == DSA_EXIT_OK)
        ret = dsa_inproc_gsm8k_run(io, r->mode->name, dsa_gsm8k_sha256(r->test), items, r->n);
    for (size_t i = 0; i < r->n; i++)
        dsa_buf_release(&prompts[i]);
    free(prompts);
    free(items);
    return ret;
}

/* ---- the endpoint run ---- */
/* what one drive measured, for the summary */
struct drive_out {
    size_t resumed;
    double wall_s;
    struct dsa_mtp_counters before, after; /* /metrics around the requests */
    bool have_before, have_after;
};

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
    FILE *out = r->o->as_json ? open_memstream(&text, &text_len) : stdout;
    ret = dsa_gsm8k_summarize(&in, records, out ? out : stdout, &summary);
    if (r->o->as_json && out)
        fclose(out);
    free(text);
    free(records);
    if (summary) {
        json_t *old_mtp = json_object_get(old, "mtp");
        json_t *new_mtp = json_object_get(summary, "mtp");
        if (json_is_true(json_object_get(old_mtp, "measured")) &&
            !json_is_true(json_object_get(new_mtp, "measured")))
            json_object_set(summary, "mtp", old_mtp);
        if (r->o->as_json) {
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

int dsa_gsm8k_eval_run(dsa_gsm8k_eval *r, dsa_backend *b)
{
    char *run_path = NULL;
    int ret;
    r->b = b;
    if (r->mode->chat)
        r->api = DSA_API_CHAT;
    else if (!strcmp(dsa_endpoint_dialect(r->b), "sglang"))
        r->api = DSA_API_GENERATE;
    else
        r->api = DSA_API_COMPLETION;
    r->n_limit = r->n;
    keep_shard(r);
    r->x = dsa_gsm8k_extractor_new();
    if (r->o->out && (ret = open_store(r, r->o->argc, r->o->argv, &run_path)))
        goto cleanup;

    /* counters before the first request */
    struct fetch_ctx fc = {r->b};
    struct drive_out d;
    memset(&d, 0, sizeof d);
    bool scrape = r->o->mtp && r->api != DSA_API_GENERATE;
    if (scrape && (ret = mtp_read(r, &fc, false, &d.before, &d.have_before)))
        goto cleanup;

    for (size_t i = 0; i < r->n; i++)
        d.resumed += r->items[i].record != NULL;
    dsa_run_note_resume(d.resumed, r->n, run_path);
    r->progress = dsa_progress_new("gsm8k", r->n, d.resumed);
    double t0 = now_s();

    /* a short wait: at --concurrency 1 each request waits for the loop to notice its answer,
       and 200 ms measured 8 requests/s against an instant server */
    static const struct dsa_eval_feed feed = {submit_next, must_stop, tick, 20};
    r->scratch = &r->prompt;
    ret = r->o->drive(r->b, &feed, r, r->o->interrupted);
    dsa_progress_finish(r->progress);
    d.wall_s = now_s() - t0;
    if ((ret == DSA_EXIT_OK || ret == DSA_EXIT_INTERRUPTED) && r->write_error)
        ret = DSA_EXIT_IO;
    if ((ret == DSA_EXIT_OK || ret == DSA_EXIT_INTERRUPTED) && *r->o->interrupted) {
        size_t done = 0;
        for (size_t i = 0; i < r->n; i++)
            done += r->items[i].record != NULL;
        dsa_errorf("interrupted: %zu of %zu questions are on disk; rerun to resume", done, r->n);
        ret = DSA_EXIT_INTERRUPTED;
    }
    if (ret)
        goto cleanup;

    /* counters after the last response, once they stop moving */
    if (scrape && d.have_before && (ret = mtp_read(r, &fc, true, &d.after, &d.have_after)))
        goto cleanup;

    ret = summarize(r, &d, run_path);

cleanup:
    free(run_path);
    return ret;
}
