/* The MRCR eval's hooks; see mrcr_eval.h.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "evals/mrcr_eval.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/endpoint.h"
#include "backend/llamacpp.h"
#include "datasets/samples.h"
#include "evals/inproc_mrcr.h"
#include "evals/inproc_traces.h"
#include "evals/mrcr_grade.h"
#include "evals/summary.h"
#include "util/buf.h"
#include "util/exitcode.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/msg.h"

#define DEFAULT_DATASET "openai/mrcr"

/* the run state: the dataset files, what the header records of them, and the reader */
struct state {
    const struct dsa_mrcr_eval_opts *o;
    const struct dsa_eval_ctx *c;
    const char *dataset;      /* as given, or the default */
    struct dsa_strlist paths; /* resolved files (owned strings), read in order */
    json_t *dataset_id;       /* endpoint: the header's "dataset" */
    json_t *files, *shas;     /* [{path, sha256}], [sha256] */
    long total;               /* this shard's rows */
    long max_model_len;       /* server context (tokens), -1 unknown: no pre-count then */
    /* one reader per file, opened (checked and hashed) by load and read by the runs: the
       first run goes on from the check, later ones rewind (dsa_mrcr_rewind) */
    dsa_mrcr_reader **rds;
    size_t cur;  /* the file being read */
    bool rewind; /* a run has read them: rewind before the next */
    struct dsa_mrcr_row row;
};

/* One row on its way: what the request and the record need after the reader moved on. */
struct job {
    char id[32];
    int n_needles;
    int bin;
    long bin_tokens;
    const char *bin_label;
    /* the row's message list; on the endpoint, an empty stand-in for msgs_json, the list's
       compact JSON that the bodies carry (dsa_mrcr_set_messages_json, backend.h raw_value) */
    json_t *messages;
    char *msgs_json;
    size_t msgs_len;
    long desired_msg_index;
    char *answer;
    size_t answer_len;
    char prefix[64];
    long prompt_tokens; /* from the pre-count, -1 unknown */
    bool counting;      /* the request in flight is the /tokenize pre-count */
};

/* The request body for one row (messages verbatim + sampling parameters); a new reference. */
static json_t *request_body(const struct dsa_mrcr_eval_opts *o, json_t *messages)
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

/* ---- options and dataset ---- */

/* the values that need parsing; 0, or -1 with one line printed */
static int check_values(struct dsa_mrcr_eval_opts *o, struct dsa_eval_ctx *c)
{
    if (!c->out)
        return dsa_errorf("--out DIR is required");
    if (c->runs < 1 || c->runs > 999 || o->max_tokens < 1 || o->limit < 0 || o->temperature < 0)
        return dsa_errorf("--runs (1..999), --max-tokens (> 0), --limit and --temperature (>= "
                          "0) must be in range");
    if (o->seed_text) {
        char *end;
        errno = 0;
        o->seed = strtol(o->seed_text, &end, 10);
        if (errno || end == o->seed_text || *end)
            return dsa_errorf("--seed '%s' is not an integer", o->seed_text);
    }
    o->has_seed = o->seed_text != NULL;
    memset(&o->filter, 0, sizeof o->filter);
    if (dsa_mrcr_parse_needles(o->needles, &o->filter.needles_mask) < 0 ||
        (o->bins && dsa_mrcr_parse_bins(o->bins, &o->filter.bins_mask) < 0))
        return -1;
    if (o->max_bin) {
        unsigned m;
        if (dsa_mrcr_parse_max_bin(o->max_bin, &m) < 0)
            return -1;
        o->filter.bins_mask = o->filter.bins_mask ? o->filter.bins_mask & m : m;
    }
    o->filter.limit = o->limit;
    if (c->traces && o->dataset)
        return dsa_errorf("--traces DIR replaces --dataset (the traces hold the prompts)");
    if (c->inprocess && o->max_query < 0)
        return dsa_errorf("--max-query must be >= 0");
    /* before the dataset: a command without a server is a usage error whatever its data */
    if (!c->inprocess && !c->endpoints)
        return dsa_errorf("--endpoint URL is required with --backend endpoint");
    return 0;
}

static int check(void *opts, struct dsa_eval_ctx *c)
{
    struct dsa_mrcr_eval_opts *o = opts;
    if (check_values(o, c) < 0)
        return DSA_EXIT_USAGE;
    if (c->inprocess && !c->traces) /* the proxy's seed */
        c->stack.seed = o->has_seed ? (uint64_t)o->seed : 1;
    return DSA_EXIT_OK;
}

/* A dataset argument is a file, or the name of the official data as `dsa-eval datasets fetch
   mrcr` stores it: "openai/mrcr" (the pinned revision) or "openai/mrcr@<sha>", found as
   <cache>/mrcr/<revision>/<N>needle.jsonl, one file per needle count asked for. */
static int resolve_dataset(const char *arg, unsigned needles_mask, struct dsa_strlist *paths)
{
    /* a file, or a shipped sample ("sample:<name>", embedded in the binary), which the
       reader opens itself */
    if (dsa_is_file(arg) || !strncmp(arg, "sample:", 7)) {
        dsa_strlist_push(paths, dsa_xstrdup(arg));
        return 0;
    }
    const char *at = strchr(arg, '@');
    size_t nlen = at ? (size_t)(at - arg) : strlen(arg);
    if (!((nlen == 11 && !strncmp(arg, "openai/mrcr", 11)) ||
          (nlen == 4 && !strncmp(arg, "mrcr", 4)))) {
        dsa_errorf("dataset '%s' is not a file, a sample:<name> nor openai/mrcr[@REVISION]", arg);
        return -1;
    }
    const char *rev = at ? at + 1 : DSA_MRCR_DEFAULT_REVISION;
    char *cache = dsa_cache_dir();
    int ret = 0;
    for (int n = 2; n <= 8 && !ret; n *= 2) {
        if (needles_mask && !(needles_mask & (1u << n)))
            continue;
        struct dsa_buf p = DSA_BUF_INIT;
        dsa_buf_addf(&p, "%s/mrcr/%s/%dneedle.jsonl", cache, rev, n);
        if (!dsa_is_file(p.data)) {
            dsa_errorf("dataset '%s' is not in the cache ('%s' is missing); run 'dsa-eval "
                       "datasets fetch mrcr --needles %d%s%s' or give a JSONL file",
                       arg, p.data, n, at ? " --revision " : "", at ? rev : "");
            ret = -1;
        } else {
            dsa_strlist_push(paths, dsa_xstrdup(p.data));
        }
        dsa_buf_release(&p);
    }
    free(cache);
    return ret;
}

/* the files of the dataset argument; in-process, a shipped sample is its extracted file */
static int dataset_files(struct state *st)
{
    if (st->c->inprocess && !strncmp(st->dataset, DSA_SAMPLE_PREFIX, strlen(DSA_SAMPLE_PREFIX))) {
        char *p = dsa_sample_path(st->dataset);
        if (!p)
            return DSA_EXIT_DATA;
        dsa_strlist_push(&st->paths, p);
        return DSA_EXIT_OK;
    }
    return resolve_dataset(st->dataset, st->o->filter.needles_mask, &st->paths) < 0 ? DSA_EXIT_DATA
                                                                                    : DSA_EXIT_OK;
}

static bool shard_keep(void *ud, const char *id)
{
    return dsa_shard_keep(ud, id);
}

/* every file checked (and hashed) before any work: the header's dataset and this shard's rows;
   the readers are kept, so the run's rows come from the same open (one check pass and one
   pass over the rows per file, not a second check) */
static int read_files(struct state *st)
{
    const char *bins_src = NULL;
    long all = 0;
    st->dataset_id =
        json_pack("{s:s, s:[], s:o}", "name", st->dataset, "files", "revision", json_null());
    st->rds = dsa_xcalloc(st->paths.n ? st->paths.n : 1, sizeof *st->rds);
    for (size_t i = 0; i < st->paths.n; i++) {
        dsa_mrcr_reader *rd = st->rds[i] = dsa_mrcr_open(st->paths.v[i], &st->o->filter);
        if (!rd)
            return DSA_EXIT_DATA;
        if (!st->c->inprocess) /* the bodies embed the messages: bytes, not a tree */
            dsa_mrcr_set_messages_json(rd);
        all += (long)dsa_mrcr_nselected(rd);
        st->total += dsa_mrcr_nselected_if(rd, shard_keep, (void *)&st->c->shard);
        json_array_append_new(st->files, json_pack("{s:s, s:s}", "path", st->paths.v[i], "sha256",
                                                   dsa_mrcr_sha256(rd)));
        json_array_append_new(st->shas, json_string(dsa_mrcr_sha256(rd)));
        if (dsa_mrcr_revision(rd))
            json_object_set_new(st->dataset_id, "revision", json_string(dsa_mrcr_revision(rd)));
        enum dsa_mrcr_bins_source bs = dsa_mrcr_bins_source(rd);
        const char *src = bs == DSA_MRCR_BINS_OFFICIAL   ? "official"
                          : bs == DSA_MRCR_BINS_EXPLICIT ? "explicit"
                                                         : "mixed";
        bins_src = !bins_src || !strcmp(bins_src, src) ? src : "mixed";
    }
    json_object_set(st->dataset_id, "files", st->files);
    json_object_set_new(st->dataset_id, "bins", json_string(bins_src));
    if (all) /* an empty shard of rows that exist is a run of nothing */
        return DSA_EXIT_OK;
    /* an empty table with exit 0 would read as a pass */
    if (st->c->inprocess)
        dsa_errorf("no rows of '%s' pass the filters (--needles, --bins)", st->dataset);
    else
        dsa_errorf("no rows of '%s' pass the filters (--needles %s%s%s)", st->dataset,
                   st->o->needles, st->o->bins ? " --bins " : "", st->o->bins ? st->o->bins : "");
    return DSA_EXIT_DATA;
}

static void free_state(void *ev)
{
    struct state *st = ev;
    for (size_t i = 0; i < st->paths.n; i++)
        free((char *)st->paths.v[i]);
    /* the readers first: releasing the list zeroes its count */
    for (size_t i = 0; st->rds && i < st->paths.n; i++)
        dsa_mrcr_free(&st->rds[i]);
    free(st->rds);
    dsa_strlist_release(&st->paths);
    json_decref(st->dataset_id);
    json_decref(st->files);
    json_decref(st->shas);
    dsa_mrcr_row_release(&st->row);
    free(st);
}

static int load(void *opts, const struct dsa_eval_ctx *c, void **ev)
{
    const struct dsa_mrcr_eval_opts *o = opts;
    struct state *st = dsa_xcalloc(1, sizeof *st);
    *st = (struct state){
        .o = o, .c = c, .files = json_array(), .shas = json_array(), .max_model_len = -1};
    st->dataset = o->dataset     ? o->dataset
                  : c->inprocess ? DSA_SAMPLE_MRCR_DEFAULT
                                 : DEFAULT_DATASET;
    *ev = st;
    int ret = dataset_files(st);
    return ret ? ret : read_files(st);
}

static int begin(void *ev, dsa_backend *b)
{
    struct state *st = ev;
    if (!st->c->inprocess)
        st->max_model_len = dsa_endpoint_max_model_len(b);
    return DSA_EXIT_OK;
}

static long total(void *ev)
{
    return ((struct state *)ev)->total;
}

/* in-process, a single meter names the backend (rows take seconds each) */
static void label(void *ev, int ri, char *buf, size_t size)
{
    struct state *st = ev;
    if (st->c->inprocess && st->c->runs == 1)
        snprintf(buf, size, "mrcr in-process");
    (void)ri;
}

/* The row filters as given (--needles, --bins, --max-bin, --limit): match.filters of every
   new MRCR header, on both backends (docs/runfiles.md "MRCR filters"). */
static json_t *filters_json(const struct dsa_mrcr_eval_opts *o)
{
    return json_pack("{s:s, s:s?, s:s?, s:I}", "needles", o->needles, "bins", o->bins, "max_bin",
                     o->max_bin, "limit", (json_int_t)o->limit);
}

/* --traces DIR: the model's activations instead of the proxy model (no dataset); the same
   filters */
static int traces(void *opts, struct dsa_traces_opts *t)
{
    const struct dsa_mrcr_eval_opts *o = opts;
    t->eval = "mrcr";
    t->limit = o->filter.limit;
    t->bins_mask = o->filter.bins_mask;
    t->needles_mask = o->filter.needles_mask;
    t->filters = filters_json(o);
    return DSA_EXIT_OK;
}

/* what must be equal for a resume: the rows, the model and everything in the body */
static void endpoint_header(struct state *st, dsa_backend *b, json_t *h)
{
    const struct dsa_mrcr_eval_opts *o = st->o;
    const struct dsa_eval_ctx *c = st->c;
    json_t *params =
        json_pack("{s:I, s:f, s:o, s:O?}", "max_tokens", (json_int_t)o->max_tokens, "temperature",
                  o->temperature, "seed", o->has_seed ? json_integer(o->seed) : json_null(),
                  "extra_body", c->extra_body);
    json_t *filters = filters_json(o);
    json_object_set_new(h, "match",
                        json_pack("{s:s, s:O, s:O, s:s, s:s, s:O, s:O, s:b}", "eval", "mrcr",
                                  "dataset_sha256", st->shas, "dataset_revision",
                                  json_object_get(st->dataset_id, "revision"), "backend",
                                  "endpoint", "model", dsa_endpoint_model(b), "params", params,
                                  "filters", filters, "strip_think", o->strip_think));
    json_object_set(h, "dataset", st->dataset_id);
    json_t *run_params = json_deep_copy(params);
    json_object_set_new(run_params, "stream", json_boolean(o->stream));
    json_object_set_new(run_params, "concurrency", json_integer(c->concurrency));
    json_object_set_new(run_params, "retries", json_integer(c->retries));
    json_object_set_new(run_params, "timeout_s", json_real(c->timeout_s));
    json_object_set_new(run_params, "count_tokens", json_boolean(!o->no_count));
    json_object_set_new(run_params, "filters", filters);
    json_object_set_new(h, "params", run_params);
    json_decref(params);
}

static void header(void *ev, dsa_backend *b, int ri, json_t *h, json_t *old)
{
    (void)ri;
    struct state *st = ev;
    if (!st->c->inprocess) {
        endpoint_header(st, b, h);
        return;
    }
    /* in-process files of older builds hold the filters as masks (bins_mask, needles_mask,
       limit): resumed in that form */
    bool masks = json_object_get(json_object_get(old, "match"), "bins_mask") != NULL;
    json_t *filters = masks ? NULL : filters_json(st->o);
    dsa_inproc_mrcr_header(h, &st->c->stack, st->o->max_query, &st->o->filter, filters, st->dataset,
                           st->files, st->shas);
    json_decref(filters);
}

/* each run reads the files from the start */
static int start(void *ev, dsa_backend *b, dsa_run *run, const char *path)
{
    (void)run;
    struct state *st = ev;
    dsa_mrcr_row_release(&st->row);
    for (size_t i = 0; st->rewind && i < st->paths.n; i++)
        if (dsa_mrcr_rewind(st->rds[i]))
            return DSA_EXIT_DATA;
    st->rewind = true;
    st->cur = 0;
    if (st->c->inprocess && !st->c->as_json)
        dsa_inproc_mrcr_banner(b, &st->c->stack, path);
    return DSA_EXIT_OK;
}

/* ---- rows, requests, records ---- */

static void job_free(void *ev, void *job)
{
    (void)ev;
    struct job *j = job;
    json_decref(j->messages);
    free(j->msgs_json);
    free(j->answer);
    free(j);
}

static int next(void *ev, void **job, const char **id)
{
    struct state *st = ev;
    int rc = 0;
    while (st->cur < st->paths.n && (rc = dsa_mrcr_next(st->rds[st->cur], &st->row)) == 0)
        st->cur++;
    if (rc <= 0)
        return rc < 0 ? -DSA_EXIT_DATA : 0;
    const struct dsa_mrcr_row *row = &st->row;
    struct job *j = dsa_xcalloc(1, sizeof *j);
    snprintf(j->id, sizeof j->id, "%s", row->id);
    j->n_needles = row->n_needles;
    j->bin = row->bin;
    j->bin_tokens = row->bin_tokens;
    j->bin_label = row->bin_label;
    if (st->row.messages_json) { /* taken over: the row is read again only after release */
        j->msgs_json = st->row.messages_json;
        j->msgs_len = st->row.messages_json_len;
        st->row.messages_json = NULL;
        j->messages = json_array();
    } else {
        j->messages = json_incref(row->messages);
    }
    j->desired_msg_index = row->desired_msg_index;
    j->answer = dsa_xmalloc(row->answer_len + 1);
    memcpy(j->answer, row->answer, row->answer_len);
    j->answer[row->answer_len] = 0;
    j->answer_len = row->answer_len;
    snprintf(j->prefix, sizeof j->prefix, "%s", row->prefix);
    j->prompt_tokens = -1;
    *job = j;
    *id = j->id;
    return 1;
}

/* the messages' bytes in place of their stand-in, when the row came as bytes; the job holds
   them until its last answer has been graded (run.c frees it after that callback), so the
   endpoint may send them from here instead of copying them into each body (raw_held) */
static void raw_messages(const struct job *j, struct dsa_request *rq)
{
    if (!j->msgs_json)
        return;
    rq->raw_value = j->messages;
    rq->raw_bytes = j->msgs_json;
    rq->raw_len = j->msgs_len;
    rq->raw_held = true;
}

static void chat_request(const struct state *st, struct job *j, struct dsa_request *rq)
{
    j->counting = false;
    rq->api = DSA_API_CHAT;
    rq->body = request_body(st->o, j->messages);
    rq->stream = st->o->stream;
    raw_messages(j, rq);
}

/* in-process: the selection; endpoint: the pre-count where the server's context is known,
   else the chat */
static int request(void *ev, void *job, struct dsa_request *rq, json_t **rec)
{
    (void)rec;
    struct state *st = ev;
    struct job *j = job;
    if (st->c->inprocess) {
        rq->api = DSA_API_SELECT;
        rq->body = dsa_inproc_mrcr_body(st->o->max_query, j->messages, j->desired_msg_index);
    } else if (!st->o->no_count && st->max_model_len > 0) {
        j->counting = true;
        rq->api = DSA_API_TOKENIZE;
        rq->body = json_pack("{s:O}", "messages", j->messages);
        raw_messages(j, rq);
    } else {
        chat_request(st, j, rq);
    }
    return 0;
}

static json_t *base_record(const struct job *j, const char *status)
{
    return json_pack("{s:s, s:s, s:i, s:I, s:i, s:s}", "id", j->id, "bin", j->bin_label,
                     "bin_index", j->bin, "bin_tokens", (json_int_t)j->bin_tokens, "needles",
                     j->n_needles, "status", status);
}

static void set_opt_ms(json_t *rec, const char *key, double ms)
{
    /* milliseconds to 0.001: more digits would only be clock noise */
    json_object_set_new(rec, key,
                        ms >= 0 ? json_real((double)(long long)(ms * 1e3) / 1e3) : json_null());
}

static json_t *excluded_record(const struct state *st, const struct job *j, long prompt_tokens,
                               long max_len)
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
    return rec;
}

/* the record of an answered chat request */
static json_t *result_record(const struct state *st, const struct job *j,
                             const struct dsa_result *r)
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
        } else {
            rec = base_record(j, "ok");
            json_object_set_new(rec, "score", json_real(g.score));
            json_object_set_new(rec, "error", json_null());
            json_object_set_new(rec, "prefix_hit", json_boolean(g.prefix_hit));
            json_object_set_new(rec, "exact", json_boolean(g.exact));
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
    return rec;
}

/* the pre-count's answer: excluded when the prompt cannot fit, else the chat */
static void counted(struct state *st, struct job *j, const struct dsa_result *r, json_t **rec,
                    struct dsa_request *rq)
{
    if (r->status == DSA_RES_OVER_CONTEXT) {
        /* a server whose /tokenize refuses prompts longer than its context */
        long ml = r->max_model_len > 0 ? r->max_model_len : st->max_model_len;
        *rec = excluded_record(st, j, r->prompt_tokens, ml);
        return;
    }
    if (r->status == DSA_RES_OK) {
        long ml = st->max_model_len;
        if (r->max_model_len > 0 && (ml <= 0 || r->max_model_len < ml))
            ml = r->max_model_len;
        j->prompt_tokens = r->prompt_tokens;
        /* compared without the sum: a count of INT64_MAX from a hostile /tokenize would
           overflow it (undefined behaviour) and send the row instead of excluding it */
        if (ml > 0 && r->prompt_tokens > ml - st->o->max_tokens) {
            *rec = excluded_record(st, j, r->prompt_tokens, ml);
            return;
        }
    }
    /* counted and fits, or no count (unsupported, failed): the server decides, and an
       over-context 400 excludes the row then */
    chat_request(st, j, rq);
}

static void grade(void *ev, void *job, const struct dsa_result *r, json_t **rec,
                  struct dsa_request *rq)
{
    struct state *st = ev;
    struct job *j = job;
    if (st->c->inprocess) {
        *rec = dsa_inproc_mrcr_record(j->id, j->bin_label, j->bin_tokens, r);
    } else if (j->counting) {
        counted(st, j, r, rec, rq);
    } else if (r->status == DSA_RES_OVER_CONTEXT) {
        long ml = r->max_model_len > 0 ? r->max_model_len : st->max_model_len;
        *rec = excluded_record(st, j, r->prompt_tokens, ml);
    } else {
        *rec = result_record(st, j, r);
    }
}

/* ---- the summary ---- */

static int summary(void *ev, const struct dsa_eval_summary_in *in)
{
    struct state *st = ev;
    int ret = in->ret;
    if (st->c->inprocess) { /* the by-bin selection table, or the document with --json */
        if (json_array_size(in->runs)) {
            int sr = dsa_inproc_mrcr_summary(in->runs, !st->c->as_json);
            if (ret == DSA_EXIT_OK)
                ret = sr;
        }
        return st->c->as_json ? dsa_summary_print_json_if(in->runs, ret) : ret;
    }
    if ((ret == DSA_EXIT_OK || ret == DSA_EXIT_INTERRUPTED) && json_array_size(in->runs))
        dsa_summary_print(in->runs, st->c->as_json, stdout);
    /* failed rows anywhere in the run files (this invocation or an earlier one) */
    long failed = ret == DSA_EXIT_OK ? dsa_summary_failed(in->runs) : 0;
    if (failed) {
        dsa_warnf("%ld request%s failed after retries and %s not scored (see the summary)", failed,
                  failed == 1 ? "" : "s", failed == 1 ? "is" : "are");
        ret = DSA_EXIT_FAIL;
    }
    return ret;
}

const struct dsa_eval_hooks dsa_mrcr_hooks = {
    .check = check,
    .traces = traces,
    .load = load,
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
    .poll_ms = 250,
};
