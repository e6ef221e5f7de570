/*
 * The traces runs of mrcr, ruler and gsm8k --mtp on the run loop (inproc_traces.h).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "evals/inproc_traces.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datasets/mrcr.h"
#include "evals/inproc_header.h"
#include "evals/ruler.h"
#include "evals/summary.h"
#include "store/store.h"
#include "util/buf.h"
#include "util/exitcode.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/msg.h"

/* what the manifest's rows of one eval look like: their bins, and what groups their ids */
struct traces_eval {
    const char *name; /* the run headers' eval */
    int nbins;
    const char *(*label)(int bin);
    long (*bin_tokens)(int bin);
    const char *bad_bin;     /* the reader's message for a bin that is not a label */
    const char *filter_opts; /* the options that select rows, for "no rows pass" */
};

static long mrcr_bin_tokens(int b)
{
    return 8192L << b;
}

static const struct traces_eval mrcr_eval = {
    "mrcr",
    DSA_MRCR_NBINS,
    dsa_mrcr_bin_label,
    mrcr_bin_tokens,
    "\"bin\" is not one of the MRCR bin labels (≤8K … ≤1M)",
    "--needles, --bins"};
static const struct traces_eval ruler_eval = {"ruler",
                                              DSA_RULER_NLENGTHS,
                                              dsa_ruler_length_name,
                                              dsa_ruler_length_tokens,
                                              "\"bin\" is not one of the RULER lengths (4k … 1m)",
                                              "--tasks, --lengths, --limit"};

/* the rows of eval `name`: RULER's, else MRCR's (gsm8k's MTP run reads MRCR's manifests) */
static const struct traces_eval *eval_named(const char *name)
{
    return name && !strcmp(name, "ruler") ? &ruler_eval : &mrcr_eval;
}

#define MAX_BINS   9 /* the most bins of an eval above (RULER's lengths) */
#define MAX_GROUPS 16

/* one line of manifest.jsonl */
struct trow {
    char *id, *file;
    int bin;
    int group;     /* MRCR: needles from the id "n<N>/…" (0 when it has no such prefix); RULER:
                      the task */
    json_t *spans; /* [[lo, hi]...] token ranges of the needle(s), [] when none */
};

struct manifest {
    struct trow *v;
    size_t n;
    char sha256[65];
    char *model; /* of the first row, or NULL */
};

static void manifest_release(struct manifest *m)
{
    for (size_t i = 0; i < m->n; i++) {
        free(m->v[i].id);
        free(m->v[i].file);
        json_decref(m->v[i].spans);
    }
    free(m->v);
    free(m->model);
    memset(m, 0, sizeof *m);
}

static int bin_of_label(const struct traces_eval *ev, const char *s)
{
    for (int b = 0; s && b < ev->nbins; b++)
        if (!strcmp(s, ev->label(b)))
            return b;
    return -1;
}

/* [lo, hi] with 0 <= lo <= hi, appended to spans; false when v is not one */
static bool add_span(json_t *v, json_t *spans)
{
    json_t *a = json_array_get(v, 0), *b = json_array_get(v, 1);
    if (json_array_size(v) != 2 || !json_is_integer(a) || !json_is_integer(b) ||
        json_integer_value(a) < 0 || json_integer_value(b) < json_integer_value(a))
        return false;
    json_array_append_new(spans, json_pack("[I, I]", json_integer_value(a), json_integer_value(b)));
    return true;
}

/* "needle": [lo, hi] or null (MRCR's one needle message) and "needles": [[lo, hi]...] or null
   (RULER's needles inside one prompt) into one list; NULL or what is wrong */
static const char *parse_spans(json_t *o, json_t *spans)
{
    json_t *needle = json_object_get(o, "needle"), *needles = json_object_get(o, "needles"), *v;
    if (needle && !json_is_null(needle) && !add_span(needle, spans))
        return "\"needle\" must be null or [lo, hi] with 0 <= lo <= hi";
    if (needles && !json_is_null(needles) && !json_is_array(needles))
        return "\"needles\" must be null or a list of [lo, hi] with 0 <= lo <= hi";
    for (size_t i = 0; (v = json_array_get(needles, i)); i++)
        if (!add_span(v, spans))
            return "\"needles\" must be null or a list of [lo, hi] with 0 <= lo <= hi";
    return NULL;
}

/* the row's group: MRCR's needle count from its id, RULER's task (whose length must be the
   row's bin); -1 when a RULER id is not one */
static int group_of(const struct traces_eval *ev, const char *id, int bin)
{
    if (ev == &ruler_eval) {
        enum dsa_ruler_task t;
        int len, idx;
        return dsa_ruler_parse_id(id, &t, &len, &idx) || len != bin ? -1 : (int)t;
    }
    int n = 0;
    return sscanf(id, "n%d/", &n) == 1 ? n : 0;
}

/* one manifest line into *r; returns NULL or what is wrong */
static const char *parse_row(const struct traces_eval *ev, json_t *o, struct trow *r)
{
    const char *id = json_string_value(json_object_get(o, "id"));
    const char *file = json_string_value(json_object_get(o, "file"));
    if (!json_is_object(o) || !id || !*id)
        return "no \"id\" string";
    if (!file || !*file || strchr(file, '/') || !strcmp(file, "..") || !strcmp(file, "."))
        return "\"file\" must name a file inside the traces folder";
    int bin = bin_of_label(ev, json_string_value(json_object_get(o, "bin")));
    if (bin < 0)
        return ev->bad_bin;
    json_t *spans = json_array();
    const char *why = parse_spans(o, spans);
    int group = why ? 0 : group_of(ev, id, bin);
    if (!why && group < 0)
        why = "\"id\" is not a RULER sample id (task/length/index) of the row's \"bin\"";
    if (why) {
        json_decref(spans);
        return why;
    }
    *r = (struct trow){dsa_xstrdup(id), dsa_xstrdup(file), bin, group, spans};
    return NULL;
}

#ifdef DSA_UNITTEST_BUILD
int dsa_inproc_traces_parse_line(const char *eval, const char *text, size_t len, char *why,
                                 size_t cap)
{
    json_error_t je;
    json_t *o = json_loadb(text, len, 0, &je);
    struct trow r;
    const struct traces_eval *ev = eval_named(eval);
    const char *bad = o ? parse_row(ev, o, &r) : je.text;
    if (!bad) {
        free(r.id);
        free(r.file);
        json_decref(r.spans);
    } else {
        snprintf(why, cap, "%s", bad);
    }
    json_decref(o);
    return bad ? -1 : 0;
}
#endif

/* DIR/manifest.jsonl -> rows; -1 (printed: "cannot parse line N of '…': …") */
static int read_manifest(const struct traces_eval *ev, const char *path, struct manifest *m)
{
    memset(m, 0, sizeof *m);
    FILE *f = fopen(path, "r");
    if (!f)
        return dsa_errorf("cannot read traces manifest '%s': %s", path, strerror(errno));
    if (dsa_sha256_file(path, m->sha256)) { /* it printed the one line of why */
        fclose(f);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0, vcap = 0;
    long lineno = 0;
    int rc = 0;
    while (getline(&line, &cap, f) > 0) {
        lineno++;
        if (strspn(line, " \t\r\n") == strlen(line))
            continue;
        json_error_t je;
        json_t *o = json_loads(line, 0, &je);
        struct trow r;
        const char *why = o ? parse_row(ev, o, &r) : je.text;
        if (why) {
            rc = dsa_errorf("cannot parse line %ld of '%s': %s", lineno, path, why);
            json_decref(o);
            break;
        }
        if (!m->model && json_string_value(json_object_get(o, "model")))
            m->model = dsa_xstrdup(json_string_value(json_object_get(o, "model")));
        json_decref(o);
        if (m->n == vcap) {
            vcap = vcap ? 2 * vcap : 16;
            m->v = dsa_xrealloc(m->v, vcap * sizeof *m->v);
        }
        m->v[m->n++] = r;
    }
    free(line);
    fclose(f);
    if (!rc && !m->n)
        rc = dsa_errorf("traces manifest '%s' has no rows", path);
    if (rc)
        manifest_release(m);
    return rc;
}

/* the means over layers of one row's measures, in layer order */
struct row_sum {
    double recall, recall_last, agree, agree_gold, needle, needle_gold, needle_model;
};

/* one layer of the backend's answer into the row's sums; its copy without recall_last (the
   record's layer object) goes to layers */
static void add_layer(struct row_sum *sum, json_t *l, int nl, dsa_sha256 *h, int *all_model,
                      json_t *layers)
{
#define V(k) json_number_value(json_object_get(l, k))
    *all_model &= !json_is_null(json_object_get(l, "model_agreement"));
    dsa_sha256_update(h, json_string_value(json_object_get(l, "selection_sha256")), 64);
    sum->recall += V("recall") / nl;
    sum->recall_last += V("recall_last") / nl;
    sum->agree += V("model_agreement") / nl;
    sum->agree_gold += V("model_agreement_golden") / nl;
    sum->needle += V("needle_retention") / nl;
    sum->needle_gold += V("needle_retention_golden") / nl;
    sum->needle_model += V("needle_retention_model") / nl;
#undef V
    json_t *c = json_copy(l);
    json_object_del(c, "recall_last");
    json_array_append_new(layers, c);
}

static json_t *num_or_null(int ok, double v)
{
    return ok ? json_real(v) : json_null();
}

/* the run state of a traces run: the manifest, the rows the filters keep, where next is */
struct tstate {
    const struct dsa_traces_opts *t;
    const struct dsa_eval_ctx *c;
    const struct traces_eval *ev; /* the manifest's rows */
    bool mtp;                     /* gsm8k: the MTP verify run */
    struct manifest m;
    char *mpath; /* DIR/manifest.jsonl */
    bool *sel;   /* sel[i]: the filters keep row i */
    long total;  /* the kept rows of this shard */
    size_t pos;  /* the next row next looks at */
};

/* one row's DSA_API_SELECT answer -> its record (new reference) */
static json_t *select_record(const struct tstate *st, const struct trow *r, json_t *raw)
{
    json_t *rl = json_object_get(raw, "layers"), *l, *layers = json_array();
    int nl = (int)json_array_size(rl), all_model = 1;
    struct row_sum sum = {0};
    dsa_sha256 *h = dsa_sha256_new();
    size_t i;
    json_array_foreach(rl, i, l) add_layer(&sum, l, nl, h, &all_model, layers);
    char hex[65];
    dsa_sha256_final_hex(h, hex);
    dsa_sha256_free(&h);
    json_int_t ntok = json_integer_value(json_object_get(raw, "needle_tokens"));
    int hn = ntok > 0;
    const struct traces_eval *ev = st->ev;
    json_t *rec = json_pack(
        "{s:s, s:s, s:I, s:s, s:f, s:n, s:f, s:o, s:o, s:o, s:o, s:o, s:s, s:O, s:O, "
        "s:I, s:i, s:s, s:O, s:o, s:O}",
        "id", r->id, "bin", ev->label(r->bin), "bin_tokens", (json_int_t)ev->bin_tokens(r->bin),
        "status", "ok", "score", sum.recall, "error", "recall_last", sum.recall_last,
        "model_agreement", num_or_null(all_model, sum.agree), "model_agreement_golden",
        num_or_null(all_model, sum.agree_gold), "needle_retention", num_or_null(hn, sum.needle),
        "needle_retention_golden", num_or_null(hn, sum.needle_gold), "needle_retention_model",
        num_or_null(hn && all_model, sum.needle_model), "selection_sha256", hex, "context_tokens",
        json_object_get(raw, "context_tokens"), "query_tokens",
        json_object_get(raw, "query_tokens"), "needle_tokens", ntok, "topk", st->c->stack.topk,
        "trace", r->file, "elapsed_ms", json_object_get(raw, "elapsed_ms"), "layers", layers,
        "stage_us_per_token", json_object_get(raw, "stage_us_per_token"));
    if (ev == &ruler_eval)
        json_object_set_new(rec, "task", json_string(dsa_ruler_task_name(r->group)));
    return rec;
}

/* one row's DSA_API_MTP_VERIFY answer -> its record (new reference) */
static json_t *mtp_record(const struct tstate *st, const struct trow *r, json_t *raw)
{
    json_t *layers = json_object_get(raw, "layers"), *l;
    int same = 1, logits = 1;
    dsa_sha256 *h = dsa_sha256_new();
    size_t i;
    json_array_foreach(layers, i, l)
    {
        same &= json_is_true(json_object_get(l, "identical"));
        logits &= json_is_true(json_object_get(l, "logits_identical"));
        dsa_sha256_update(h, json_string_value(json_object_get(l, "selection_sha256")), 64);
    }
    char hex[65];
    dsa_sha256_final_hex(h, hex);
    dsa_sha256_free(&h);
    return json_pack(
        "{s:s, s:s, s:s, s:f, s:n, s:b, s:b, s:O, s:i, s:i, s:s, s:s, s:O}", "id", r->id, "bin",
        dsa_mrcr_bin_label(r->bin), "status", "ok", "score", same ? 1.0 : 0.0, "error", "identical",
        same, "logits_identical", logits, "rows", json_object_get(raw, "rows"), "mtp", st->t->mtp,
        "topk", st->c->stack.topk, "selection_sha256", hex, "trace", r->file, "layers", layers);
}

struct bin_sum {
    int n, nm, nn, nnm;
    double score, agree, agree_gold, needle, needle_gold, needle_model;
};

static void add_to_bin(struct bin_sum *b, json_t *rec)
{
    json_t *a = json_object_get(rec, "model_agreement");
    json_t *nd = json_object_get(rec, "needle_retention");
    json_t *nm = json_object_get(rec, "needle_retention_model");
    b->n++;
    b->score += json_real_value(json_object_get(rec, "score"));
    if (json_is_number(a)) {
        b->nm++;
        b->agree += json_number_value(a);
        b->agree_gold += json_number_value(json_object_get(rec, "model_agreement_golden"));
    }
    if (json_is_number(nd)) {
        b->nn++;
        b->needle += json_number_value(nd);
        b->needle_gold += json_number_value(json_object_get(rec, "needle_retention_golden"));
    }
    if (json_is_number(nm)) {
        b->nnm++;
        b->needle_model += json_number_value(nm);
    }
}

/*
 *   bin      rows     recall@k  model:stack  model:golden   needle  needle(golden)  needle(model)
 *   ≤8K         1       0.9960       0.9960        1.0000    0.317           0.317          0.317
 * ("-" where the traces hold no model selection or no needle span; RULER's rows by length)
 */
static void print_summary(const struct traces_eval *ev, const struct bin_sum *sums)
{
    printf("%-6s %5s %12s %12s %13s %8s %15s %14s\n", "bin", "rows", "recall@k", "model:stack",
           "model:golden", "needle", "needle(golden)", "needle(model)");
    for (int b = 0; b < ev->nbins; b++) {
        const struct bin_sum *s = &sums[b];
        if (!s->n)
            continue;
        char a[32] = "-", ag[32] = "-", n[32] = "-", ng[32] = "-", nm[32] = "-";
        if (s->nm) {
            snprintf(a, sizeof a, "%.4f", s->agree / s->nm);
            snprintf(ag, sizeof ag, "%.4f", s->agree_gold / s->nm);
        }
        if (s->nn) {
            snprintf(n, sizeof n, "%.3f", s->needle / s->nn);
            snprintf(ng, sizeof ng, "%.3f", s->needle_gold / s->nn);
        }
        if (s->nnm)
            snprintf(nm, sizeof nm, "%.3f", s->needle_model / s->nnm);
        printf("%-6s %5d %12.4f %12s %13s %8s %15s %14s\n", ev->label(b), s->n, s->score / s->n, a,
               ag, n, ng, nm);
    }
}

/* the options' filters: MRCR by bin and needle count, RULER by length and task; --limit rows
   per (group, bin) */
static bool keep_row(const struct traces_eval *ev, const struct dsa_traces_opts *o,
                     const struct trow *r, long counts[MAX_GROUPS][MAX_BINS])
{
    if (o->bins_mask && !(o->bins_mask & (1u << r->bin)))
        return false;
    int g;
    if (ev == &ruler_eval) {
        if (o->tasks_mask && !(o->tasks_mask & (1u << r->group)))
            return false;
        g = r->group;
    } else {
        if (o->needles_mask && r->group > 0 && r->group < 32 &&
            !(o->needles_mask & (1u << r->group)))
            return false;
        g = r->group > 0 && r->group <= 8 ? r->group : 0;
    }
    long *c = &counts[g][r->bin];
    if (o->limit && *c >= o->limit)
        return false;
    (*c)++;
    return true;
}

/* the rows the filters keep (sel[i]); the first one's index, m->n when none */
static size_t select_rows(const struct traces_eval *ev, const struct dsa_traces_opts *o,
                          const struct manifest *m, bool *sel)
{
    long counts[MAX_GROUPS][MAX_BINS] = {{0}};
    size_t first = m->n;
    for (size_t i = 0; i < m->n; i++)
        if ((sel[i] = keep_row(ev, o, &m->v[i], counts)) && first == m->n)
            first = i;
    return first;
}

/* ---- the hooks the run loop drives (src/run/run.c) ---- */

static void tfree(void *ev)
{
    struct tstate *st = ev;
    manifest_release(&st->m);
    free(st->mpath);
    free(st->sel);
    free(st);
}

/* the options no traces run takes; -1 (printed) or 0 */
static int check_ctx(const struct tstate *st)
{
    if (st->mtp && (st->t->mtp < 0 || st->t->mtp > 3))
        return dsa_errorf("--mtp N must be 0..3 in-process (next_n = N+1 <= 4)");
    if (!st->c->out)
        return dsa_errorf("--out DIR is required with --traces");
    if (st->c->runs != 1) /* the stack on one trace is deterministic: one file says it all */
        return dsa_errorf("--runs N does not apply to --traces (one run file)");
    return 0;
}

/* the manifest read and its rows selected; rope (unless --variant rope=… was given) and index
   heads of the stack from the first kept row's trace */
static int load(void *opts, const struct dsa_eval_ctx *c, void **evp)
{
    const struct dsa_traces_opts *t = opts;
    struct tstate *st = dsa_xcalloc(1, sizeof *st);
    *st = (struct tstate){.t = t, .c = c, .ev = eval_named(t->eval)};
    st->mtp = !strcmp(t->eval, "gsm8k");
    st->mpath = dsa_path_join(t->dir, "manifest.jsonl");
    *evp = st;
    if (check_ctx(st))
        return DSA_EXIT_USAGE;
    if (read_manifest(st->ev, st->mpath, &st->m))
        return DSA_EXIT_DATA;
    st->sel = dsa_xcalloc(st->m.n, sizeof *st->sel);
    size_t first = 0;
    if (st->mtp) /* every row: its query rows are the decode rows */
        memset(st->sel, 1, st->m.n * sizeof *st->sel);
    else if ((first = select_rows(st->ev, t, &st->m, st->sel)) == st->m.n) {
        dsa_errorf("no rows of '%s' pass the filters (%s)", st->mpath, st->ev->filter_opts);
        return DSA_EXIT_DATA;
    }
    char *path = dsa_path_join(t->dir, st->m.v[first].file);
    int rc = dsa_inproc_opts_from_trace(t->stack, path);
    free(path);
    if (rc)
        return DSA_EXIT_DATA;
    for (size_t i = 0; i < st->m.n; i++)
        st->total += st->sel[i] && dsa_shard_keep(&c->shard, st->m.v[i].id);
    return DSA_EXIT_OK;
}

static long total(void *ev)
{
    return ((struct tstate *)ev)->total;
}

static void label(void *ev, int ri, char *buf, size_t size)
{
    (void)ri;
    snprintf(buf, size, "%s in-process", ((struct tstate *)ev)->t->eval);
}

/* The stack's identity (the loop's header has backend = describe()), with the traces (and
   their model) in place of the proxy model; a resume must see the same manifest. The filters
   go in match.filters as the proxy runs write them; a run file of an older build holds them as
   masks (match.limit …): resumed in that form. */
static void header(void *ev, dsa_backend *b, int ri, json_t *h, json_t *old)
{
    (void)b, (void)ri;
    struct tstate *st = ev;
    const struct dsa_traces_opts *t = st->t;
    const struct manifest *m = &st->m;
    json_t *be = json_object_get(h, "backend"), *match = json_object();
    dsa_inproc_match_set(match, be, t->eval, &st->c->stack);
    json_object_del(match, "proxy");
    json_object_del(match, "seed");
    json_object_set_new(match, "traces",
                        json_pack("{s:s, s:s?}", "manifest_sha256", m->sha256, "model", m->model));
    if (json_object_get(json_object_get(old, "match"), "limit")) { /* the form of older builds */
        bool ruler = st->ev == &ruler_eval && !st->mtp;
        json_object_set_new(match, "limit", json_integer(t->limit));
        json_object_set_new(match, ruler ? "lengths_mask" : "bins_mask",
                            json_integer(t->bins_mask));
        json_object_set_new(match, ruler ? "tasks_mask" : "needles_mask",
                            json_integer(ruler ? t->tasks_mask : t->needles_mask));
    } else if (t->filters) {
        json_object_set(match, "filters", t->filters);
    }
    if (st->mtp)
        json_object_set_new(match, "mtp", json_integer(t->mtp));
    json_object_set_new(h, "match", match);
    json_object_del(be, "proxy");
    json_object_del(be, "seed");
    json_object_set_new(be, "source", json_string("traces"));
    json_object_set_new(be, "traces",
                        json_pack("{s:s, s:s, s:s?}", "dir", t->dir, "manifest_sha256", m->sha256,
                                  "model", m->model));
    json_object_set_new(h, "dataset",
                        json_pack("{s:s, s:[{s:s, s:s}]}", "name", t->dir, "files", "path",
                                  st->mpath, "sha256", m->sha256));
}

/* the first line of the text output; next starts from the manifest's first row */
static int start(void *ev, dsa_backend *b, dsa_run *run, const char *path)
{
    (void)run;
    struct tstate *st = ev;
    const struct dsa_traces_opts *t = st->t;
    st->pos = 0;
    json_t *id = dsa_backend_describe(b);
    const char *kernels =
        json_string_value(json_object_get(json_object_get(id, "kernels"), "name"));
    const char *model = st->m.model ? st->m.model : "unnamed";
    if (st->mtp)
        printf("gsm8k in-process on traces '%s' (model: %s): MTP verify next_n=%d vs one row at a "
               "time, %s on %s, top-%d -> %s\n",
               t->dir, model, t->mtp + 1, kernels, dsa_inproc_backend_device(b), st->c->stack.topk,
               path);
    else if (!st->c->as_json)
        printf("%s in-process on traces '%s' (model: %s): %s on %s, %s, top-%d -> %s\n",
               st->ev->name, t->dir, model, kernels, dsa_inproc_backend_device(b),
               json_string_value(json_object_get(id, "variant_str")), st->c->stack.topk, path);
    fflush(stdout);
    json_decref(id);
    return DSA_EXIT_OK;
}

/* the manifest's kept rows in order; a job is its row (borrowed from the manifest) */
static int next(void *ev, void **job, const char **id)
{
    struct tstate *st = ev;
    while (st->pos < st->m.n && !st->sel[st->pos])
        st->pos++;
    if (st->pos == st->m.n)
        return 0;
    struct trow *r = &st->m.v[st->pos++];
    *job = r;
    *id = r->id;
    return 1;
}

static void job_free(void *ev, void *job)
{
    (void)ev, (void)job;
}

/* one request of the in-process backend naming the row's trace (inprocess_backend.c) */
static int request(void *ev, void *job, struct dsa_request *rq, json_t **rec)
{
    (void)rec;
    struct tstate *st = ev;
    const struct trow *r = job;
    char *path = dsa_path_join(st->t->dir, r->file);
    rq->api = st->mtp ? DSA_API_MTP_VERIFY : DSA_API_SELECT;
    rq->body = st->mtp ? json_pack("{s:s, s:i}", "trace", path, "mtp", st->t->mtp)
                       : json_pack("{s:s, s:O}", "trace", path, "needles", r->spans);
    free(path);
    return 0;
}

/* a trace that cannot be read stops the run before this (dsa_eval_run_bad_input), a failed
   stack too (dsa_eval_run_stopper): what is left is an answer */
static void grade(void *ev, void *job, const struct dsa_result *r, json_t **rec,
                  struct dsa_request *rq)
{
    (void)rq;
    struct tstate *st = ev;
    const struct trow *row = job;
    if (r->status != DSA_RES_OK)
        *rec = json_pack("{s:s, s:s, s:s, s:s?}", "id", row->id, "bin", st->ev->label(row->bin),
                         "status", "failed", "error", r->error);
    else
        *rec = st->mtp ? mtp_record(st, row, r->raw) : select_record(st, row, r->raw);
}

/* "identical selections: X/Y traces; bit-identical logits: X/Y"; FAIL when one differs */
static int mtp_summary(json_t *recs, int ret)
{
    size_t n = 0, same = 0, logits = 0, i;
    json_t *rec;
    json_array_foreach(recs, i, rec)
    {
        n++;
        same += json_is_true(json_object_get(rec, "identical"));
        logits += json_is_true(json_object_get(rec, "logits_identical"));
    }
    printf("identical selections: %zu/%zu traces; bit-identical logits: %zu/%zu\n", same, n, logits,
           n);
    return ret == DSA_EXIT_OK && same != n ? DSA_EXIT_FAIL : ret;
}

/* A run stopped by a trace it cannot read (exit 3) ends before the loop reads its file back:
   the summary of the rows before it, as the file holds them; NULL when it left none. */
static json_t *stopped_runs(const struct dsa_eval_summary_in *in)
{
    json_t *runs = json_array();
    if (in->ret != DSA_EXIT_DATA || !in->path || !dsa_is_file(in->path) ||
        dsa_run_load_into(in->path, runs) < 0) {
        json_decref(runs);
        return NULL;
    }
    return runs;
}

/* the by-bin table and the time per stage, or the summary document with --json */
static int bin_summary(const struct tstate *st, json_t *runs, int ret)
{
    if (st->c->as_json)
        return dsa_summary_print_json_if(runs, ret);
    struct bin_sum sums[MAX_BINS] = {{0}};
    struct dsa_inproc_stage_sum stages = {{0}, 0};
    json_t *rec;
    size_t i;
    json_array_foreach(json_array_get(runs, 0), i, rec)
    {
        int b = bin_of_label(st->ev, json_string_value(json_object_get(rec, "bin")));
        const char *status = json_string_value(json_object_get(rec, "status"));
        if (b < 0 || !status || strcmp(status, "ok"))
            continue;
        add_to_bin(&sums[b], rec);
        dsa_inproc_stage_sum_add(&stages, rec);
    }
    print_summary(st->ev, sums);
    dsa_inproc_stage_sum_print(&stages);
    return ret;
}

/* Run 1's records (one run, check_ctx) summed. A run file refused (another command's), or
   none left: no summary. */
static int summary(void *ev, const struct dsa_eval_summary_in *in)
{
    struct tstate *st = ev;
    json_t *own = json_array_size(in->runs) ? NULL : stopped_runs(in);
    json_t *runs = own ? own : in->runs;
    int ret = in->ret;
    if (json_array_size(runs))
        ret = st->mtp ? mtp_summary(json_array_get(runs, 0), ret) : bin_summary(st, runs, ret);
    json_decref(own);
    return ret;
}

/* check: the eval's own (the loop runs it before the traces hook); no offline run, no begin */
const struct dsa_eval_hooks dsa_traces_hooks = {
    .load = load,
    .total = total,
    .label = label,
    .header = header,
    .start = start,
    .next = next,
    .request = request,
    .grade = grade,
    .job_free = job_free,
    .summary = summary,
    .free = tfree,
    .poll_ms = 0,
};
