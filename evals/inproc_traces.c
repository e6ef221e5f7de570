/*
 * MRCR and RULER in-process on captured traces (inproc_traces.h).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "evals/inproc_traces.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datasets/mrcr.h"
#include "evals/inproc_header.h"
#include "evals/ruler.h"
#include "store/store.h"
#include "util/buf.h"
#include "util/exitcode.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/msg.h"
#include "util/progress.h"

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

/* the eval of a run's options: "ruler", else MRCR */
static const struct traces_eval *eval_of(const struct dsa_inproc_run *o)
{
    return o->eval && !strcmp(o->eval, "ruler") ? &ruler_eval : &mrcr_eval;
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
    const struct traces_eval *ev = !strcmp(eval, "ruler") ? &ruler_eval : &mrcr_eval;
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
    if (dsa_sha256_file(path, m->sha256))
        return dsa_errorf("cannot read traces manifest '%s'", path);
    FILE *f = fopen(path, "r");
    if (!f)
        return dsa_errorf("cannot read traces manifest '%s'", path);
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

/* One request of a trace row through the backend (the in-process backend runs one request per
   poll, so a blocking call keeps the rows in manifest order). The answer's raw (a new
   reference), or NULL with *exit_code set: DATA for a trace that cannot be read or does not fit,
   BACKEND when the stack failed, INTERRUPTED when cancelled, INTERNAL when the backend refused
   the request (each printed where it happened). */
static json_t *trace_call(dsa_backend *b, enum dsa_api api, json_t *body, int *exit_code)
{
    struct dsa_request req = {.api = api, .body = body, .endpoint = -1};
    struct dsa_result res;
    json_t *raw = NULL;
    dsa_backend_call(b, &req, &res);
    if (res.status == DSA_RES_OK)
        raw = json_incref(res.raw);
    else if (res.status == DSA_RES_CANCELLED)
        *exit_code = DSA_EXIT_INTERRUPTED;
    else if (res.unreachable)
        *exit_code = DSA_EXIT_BACKEND;
    else if (res.error && !strcmp(res.error, DSA_INPROC_BAD_TRACE))
        *exit_code = DSA_EXIT_DATA;
    else /* the request itself was refused (printed): not the data's fault */
        *exit_code = DSA_EXIT_INTERNAL;
    dsa_result_release(&res);
    json_decref(body);
    return raw;
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

/* one row -> one record (new reference), or NULL with *exit set (printed) */
static json_t *run_row(dsa_backend *b, const struct dsa_inproc_run *o, const struct trow *r,
                       int *exit_code)
{
    char *path = dsa_path_join(o->traces_dir, r->file);
    json_t *raw = trace_call(
        b, DSA_API_SELECT, json_pack("{s:s, s:O}", "trace", path, "needles", r->spans), exit_code);
    free(path);
    if (!raw)
        return NULL;
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
    const struct traces_eval *ev = eval_of(o);
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
        json_object_get(raw, "query_tokens"), "needle_tokens", ntok, "topk", o->stack.topk, "trace",
        r->file, "elapsed_ms", json_object_get(raw, "elapsed_ms"), "layers", layers,
        "stage_us_per_token", json_object_get(raw, "stage_us_per_token"));
    if (ev == &ruler_eval)
        json_object_set_new(rec, "task", json_string(dsa_ruler_task_name(r->group)));
    json_decref(raw);
    *exit_code = DSA_EXIT_OK;
    return rec;
}

/* rope (unless --variant rope=… was given) and index heads from the first trace */
static int flags_from_trace(struct dsa_inproc_run *o, const struct trow *r)
{
    char *path = dsa_path_join(o->traces_dir, r->file);
    int rc = dsa_inproc_opts_from_trace(&o->stack, path);
    free(path);
    return rc;
}

/* the run header: the in-process identity, with the traces (and their model) instead of the
   proxy model; a resume must see the same manifest */
static json_t *traces_header(dsa_backend *b, const char *eval, const struct dsa_inproc_run *o,
                             const struct manifest *m, const char *mpath)
{
    json_t *header = dsa_inproc_header_new(dsa_backend_describe(b), eval, o);
    json_t *match = json_object_get(header, "match"), *be = json_object_get(header, "backend");
    json_t *tr = json_pack("{s:s, s:s, s:s?}", "dir", o->traces_dir, "manifest_sha256", m->sha256,
                           "model", m->model);
    json_object_del(match, "proxy");
    json_object_del(match, "seed");
    json_object_set_new(match, "traces",
                        json_pack("{s:s, s:s?}", "manifest_sha256", m->sha256, "model", m->model));
    json_object_set_new(match, "limit", json_integer(o->limit));
    if (!strcmp(eval, "ruler")) {
        json_object_set_new(match, "lengths_mask", json_integer(o->bins_mask));
        json_object_set_new(match, "tasks_mask", json_integer(o->tasks_mask));
    } else {
        json_object_set_new(match, "bins_mask", json_integer(o->bins_mask));
        json_object_set_new(match, "needles_mask", json_integer(o->needles_mask));
    }
    json_object_del(be, "proxy");
    json_object_del(be, "seed");
    json_object_set_new(be, "source", json_string("traces"));
    json_object_set_new(be, "traces", tr);
    json_t *ds = json_object_get(header, "dataset");
    json_object_set_new(ds, "name", json_string(o->traces_dir));
    json_object_set_new(ds, "files", json_pack("[{s:s, s:s}]", "path", mpath, "sha256", m->sha256));
    return header;
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

/* makes one row's record: run_row (prefill) or mtp_row (MTP verify) */
typedef json_t *(*row_fn)(dsa_backend *b, const struct dsa_inproc_run *o, const struct trow *r,
                          int *exit_code);

/* The row's record (new reference): the run file's when an earlier attempt finished it
   (*made = false), else made and appended (*made = true). NULL with *ret set when making or
   appending it failed. */
static json_t *row_record(dsa_run *run, row_fn make, dsa_backend *b, const struct dsa_inproc_run *o,
                          const struct trow *r, int *ret, bool *made)
{
    json_t *rec = dsa_run_get(run, r->id);
    *made = !rec;
    if (rec)
        return json_incref(rec);
    int rc;
    if (!(rec = make(b, o, r, &rc))) {
        *ret = rc; /* only a failure's code: a made record leaves *ret alone */
        return NULL;
    }
    if (dsa_run_append(run, rec)) {
        json_decref(rec);
        *ret = DSA_EXIT_IO;
        return NULL;
    }
    return rec;
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
static bool keep_row(const struct traces_eval *ev, const struct dsa_inproc_run *o,
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
static size_t select_rows(const struct traces_eval *ev, const struct dsa_inproc_run *o,
                          const struct manifest *m, bool *sel)
{
    long counts[MAX_GROUPS][MAX_BINS] = {{0}};
    size_t first = m->n;
    for (size_t i = 0; i < m->n; i++)
        if ((sel[i] = keep_row(ev, o, &m->v[i], counts)) && first == m->n)
            first = i;
    return first;
}

/* the rows of this shard, the notes of a rerun, and the first line of the text output */
static dsa_progress *start_rows(const struct traces_eval *ev, const struct dsa_inproc_run *o,
                                const struct manifest *m, bool *sel, dsa_run *run, json_t *header,
                                dsa_backend *b, const char *path)
{
    /* a rerun says what it found, and rows (seconds each on the CPU) drive the meter, as the
       proxy run does */
    size_t selected = 0, resumed = 0;
    for (size_t i = 0; i < m->n; i++)
        if ((sel[i] = sel[i] && dsa_shard_keep(&o->shard, m->v[i].id))) {
            selected++;
            resumed += dsa_run_get(run, m->v[i].id) != NULL;
        }
    dsa_run_note_resume(resumed, selected, path);
    char label[48];
    snprintf(label, sizeof label, "%s in-process", ev->name);
    dsa_progress *pg = o->quiet ? NULL : dsa_progress_new(label, selected, resumed);
    if (!o->json)
        printf(
            "%s in-process on traces '%s' (model: %s): %s on %s, %s, top-%d -> %s\n", ev->name,
            o->traces_dir, m->model ? m->model : "unnamed",
            json_string_value(json_object_get(
                json_object_get(json_object_get(header, "match"), "kernels"), "name")),
            dsa_inproc_backend_device(b),
            json_string_value(json_object_get(json_object_get(header, "backend"), "variant_str")),
            o->stack.topk, path);
    fflush(stdout);
    return pg;
}

int dsa_inproc_traces_run(const struct dsa_inproc_run *o_in)
{
    struct dsa_inproc_run o = *o_in;
    const struct traces_eval *ev = eval_of(&o);
    struct manifest m = {0};
    struct bin_sum sums[MAX_BINS] = {{0}};
    struct dsa_inproc_stage_sum stages = {{0}, 0};
    dsa_backend *b = NULL;
    dsa_run *run = NULL;
    json_t *header = NULL;
    char *path = NULL, *mpath = dsa_path_join(o.traces_dir, "manifest.jsonl");
    int ret = DSA_EXIT_DATA;
    bool *sel = NULL;
    dsa_progress *pg = NULL;
    if (read_manifest(ev, mpath, &m))
        goto cleanup;
    sel = dsa_xcalloc(m.n, sizeof *sel);
    size_t first = select_rows(ev, &o, &m, sel);
    if (first == m.n) {
        dsa_errorf("no rows of '%s' pass the filters (%s)", mpath, ev->filter_opts);
        goto cleanup;
    }
    if (flags_from_trace(&o, &m.v[first]))
        goto cleanup;
    ret = DSA_EXIT_BACKEND;
    if (!(b = dsa_inproc_backend_new(&o.stack)))
        goto cleanup;
    header = traces_header(b, ev->name, &o, &m, mpath);
    dsa_shard_match(&o.shard, json_object_get(header, "match"));
    path = dsa_run_file_name(o.out_dir, 1);
    if ((ret = dsa_run_open_status(&run, path, header, o.force_new ? DSA_RUN_FORCE_NEW : 0)))
        goto cleanup;
    pg = start_rows(ev, &o, &m, sel, run, header, b, path);
    ret = DSA_EXIT_OK;
    for (size_t i = 0; i < m.n && ret == DSA_EXIT_OK; i++) {
        if (!sel[i])
            continue;
        bool made;
        json_t *rec = row_record(run, run_row, b, &o, &m.v[i], &ret, &made);
        if (!rec)
            break;
        if (made && pg)
            dsa_progress_done(pg, strcmp(json_string_value(json_object_get(rec, "status")), "ok"));
        add_to_bin(&sums[m.v[i].bin], rec);
        dsa_inproc_stage_sum_add(&stages, rec);
        json_decref(rec);
        if (o.interrupted && *o.interrupted)
            ret = DSA_EXIT_INTERRUPTED;
    }
    if (pg)
        dsa_progress_finish(pg);
    if (!o.json) { /* --json: the caller prints the run's summary document instead */
        print_summary(ev, sums);
        dsa_inproc_stage_sum_print(&stages);
    }
cleanup:
    dsa_progress_free(&pg);
    dsa_run_free(&run);
    json_decref(header);
    free(path);
    free(mpath);
    free(sel);
    manifest_release(&m);
    dsa_backend_free(&b); /* unloads a plugin */
    return ret;
}

/* ---- gsm8k --backend inprocess --mtp N --traces DIR: the MTP verify shapes on real q/k/w ---- */

static json_t *mtp_row(dsa_backend *b, const struct dsa_inproc_run *o, const struct trow *r,
                       int *exit_code)
{
    char *path = dsa_path_join(o->traces_dir, r->file);
    json_t *raw = trace_call(b, DSA_API_MTP_VERIFY,
                             json_pack("{s:s, s:i}", "trace", path, "mtp", o->mtp), exit_code);
    free(path);
    if (!raw)
        return NULL;
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
    json_t *rec = json_pack(
        "{s:s, s:s, s:s, s:f, s:n, s:b, s:b, s:O, s:i, s:i, s:s, s:s, s:O}", "id", r->id, "bin",
        dsa_mrcr_bin_label(r->bin), "status", "ok", "score", same ? 1.0 : 0.0, "error", "identical",
        same, "logits_identical", logits, "rows", json_object_get(raw, "rows"), "mtp", o->mtp,
        "topk", o->stack.topk, "selection_sha256", hex, "trace", r->file, "layers", layers);
    json_decref(raw);
    *exit_code = DSA_EXIT_OK;
    return rec;
}

int dsa_inproc_traces_mtp_run(const struct dsa_inproc_run *o_in)
{
    struct dsa_inproc_run o = *o_in;
    struct manifest m = {0};
    dsa_backend *b = NULL;
    dsa_run *run = NULL;
    json_t *header = NULL;
    char *path = NULL, *mpath = dsa_path_join(o.traces_dir, "manifest.jsonl");
    int ret = DSA_EXIT_DATA;
    size_t nsame = 0, nlogits = 0, ndone = 0;
    if (o.mtp < 0 || o.mtp > 3) {
        ret = DSA_EXIT_USAGE;
        dsa_errorf("--mtp N must be 0..3 in-process (next_n = N+1 <= 4)");
        goto cleanup;
    }
    if (read_manifest(&mrcr_eval, mpath, &m) || flags_from_trace(&o, &m.v[0]))
        goto cleanup;
    ret = DSA_EXIT_BACKEND;
    if (!(b = dsa_inproc_backend_new(&o.stack)))
        goto cleanup;
    header = traces_header(b, "gsm8k", &o, &m, mpath);
    json_object_set_new(json_object_get(header, "match"), "mtp", json_integer(o.mtp));
    dsa_shard_match(&o.shard, json_object_get(header, "match"));
    path = dsa_run_file_name(o.out_dir, 1);
    if ((ret = dsa_run_open_status(&run, path, header, o.force_new ? DSA_RUN_FORCE_NEW : 0)))
        goto cleanup;
    printf("gsm8k in-process on traces '%s' (model: %s): MTP verify next_n=%d vs one row at a "
           "time, %s on %s, top-%d -> %s\n",
           o.traces_dir, m.model ? m.model : "unnamed", o.mtp + 1,
           json_string_value(json_object_get(
               json_object_get(json_object_get(header, "match"), "kernels"), "name")),
           dsa_inproc_backend_device(b), o.stack.topk, path);
    fflush(stdout);
    ret = DSA_EXIT_OK;
    for (size_t i = 0; i < m.n && (!o.limit || (long)i < o.limit); i++) {
        if (!dsa_shard_keep(&o.shard, m.v[i].id))
            continue;
        bool made;
        json_t *rec = row_record(run, mtp_row, b, &o, &m.v[i], &ret, &made);
        if (!rec)
            break;
        ndone++;
        nsame += json_is_true(json_object_get(rec, "identical"));
        nlogits += json_is_true(json_object_get(rec, "logits_identical"));
        json_decref(rec);
        if (o.interrupted && *o.interrupted) {
            ret = DSA_EXIT_INTERRUPTED;
            break;
        }
    }
    printf("identical selections: %zu/%zu traces; bit-identical logits: %zu/%zu\n", nsame, ndone,
           nlogits, ndone);
    if (ret == DSA_EXIT_OK && nsame != ndone)
        ret = DSA_EXIT_FAIL;
cleanup:
    dsa_run_free(&run);
    json_decref(header);
    free(path);
    free(mpath);
    manifest_release(&m);
    dsa_backend_free(&b);
    return ret;
}
