/*
 * MRCR in-process on captured traces (inproc_traces.h).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "evals/inproc_traces.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "datasets/mrcr.h"
#include "evals/inproc_header.h"
#include "kernels/plugin.h"
#include "store/store.h"
#include "util/buf.h"
#include "util/exitcode.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/msg.h"
#include "util/progress.h"

/* one line of manifest.jsonl */
struct trow {
    char *id, *file;
    int bin, needles;          /* needles: from the id "n<N>/…", 0 when it has no such prefix */
    long needle_lo, needle_hi; /* [lo, hi) token span of the needle, -1 when none */
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
    }
    free(m->v);
    free(m->model);
    memset(m, 0, sizeof *m);
}

static int bin_of_label(const char *s)
{
    for (int b = 0; s && b < DSA_MRCR_NBINS; b++)
        if (!strcmp(s, dsa_mrcr_bin_label(b)))
            return b;
    return -1;
}

/* one manifest line into *r; returns NULL or what is wrong */
static const char *parse_row(json_t *o, struct trow *r)
{
    const char *id = json_string_value(json_object_get(o, "id"));
    const char *file = json_string_value(json_object_get(o, "file"));
    json_t *needle = json_object_get(o, "needle");
    if (!json_is_object(o) || !id || !*id)
        return "no \"id\" string";
    if (!file || !*file || strchr(file, '/') || !strcmp(file, "..") || !strcmp(file, "."))
        return "\"file\" must name a file inside the traces folder";
    int bin = bin_of_label(json_string_value(json_object_get(o, "bin")));
    if (bin < 0)
        return "\"bin\" is not one of the MRCR bin labels (≤8K … ≤1M)";
    long lo = -1, hi = -1;
    if (needle && !json_is_null(needle)) {
        json_t *a = json_array_get(needle, 0), *b = json_array_get(needle, 1);
        if (json_array_size(needle) != 2 || !json_is_integer(a) || !json_is_integer(b) ||
            json_integer_value(a) < 0 || json_integer_value(b) < json_integer_value(a))
            return "\"needle\" must be null or [lo, hi] with 0 <= lo <= hi";
        lo = (long)json_integer_value(a);
        hi = (long)json_integer_value(b);
    }
    int n = 0;
    if (sscanf(id, "n%d/", &n) != 1)
        n = 0;
    *r = (struct trow){dsa_xstrdup(id), dsa_xstrdup(file), bin, n, lo, hi};
    return NULL;
}

#ifdef DSA_UNITTEST_BUILD
int dsa_inproc_traces_parse_line(const char *text, size_t len, char *why, size_t cap)
{
    json_error_t je;
    json_t *o = json_loadb(text, len, 0, &je);
    struct trow r;
    const char *bad = o ? parse_row(o, &r) : je.text;
    if (!bad) {
        free(r.id);
        free(r.file);
    } else {
        snprintf(why, cap, "%s", bad);
    }
    json_decref(o);
    return bad ? -1 : 0;
}
#endif

/* DIR/manifest.jsonl -> rows; -1 (printed: "cannot parse line N of '…': …") */
static int read_manifest(const char *path, struct manifest *m)
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
        const char *why = o ? parse_row(o, &r) : je.text;
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

/* per-layer results of one row */
struct layer_res {
    double recall, recall_last, agree, agree_gold, needle, needle_gold, needle_model;
    int has_model;
    char hex[65];
};

static double in_span(const int32_t *row, int K, long lo, long hi)
{
    int c = 0;
    for (int i = 0; i < K; i++)
        c += row[i] >= lo && row[i] < hi;
    return hi > lo ? (double)c / (double)(hi - lo) : 0.0;
}

/* the inputs of one layer (-1: the single-layer form) of an open trace; 0 or -1 (printed) */
static int layer_inputs(const dsa_trace *tr, int layer, const struct dsa_inproc_run *o,
                        char prefix[32], struct dsa_inproc_inputs *in)
{
    prefix[0] = 0;
    if (layer >= 0)
        snprintf(prefix, 32, "layers.%d.", layer);
    return dsa_inproc_trace_layer_inputs(tr, prefix, o->stack.flags.heads, in);
}

/* one layer of an open trace; 0, or an exit status (printed) */
static int run_layer(dsa_inproc *ip, const struct dsa_inproc_run *o, const dsa_trace *tr,
                     const char *path, int layer, const struct trow *r, struct layer_res *res,
                     long *T_out, int *M_out)
{
    char prefix[32];
    struct dsa_inproc_inputs in;
    if (layer_inputs(tr, layer, o, prefix, &in))
        return DSA_EXIT_DATA;
    int K = o->stack.topk, M = in.M, ret = DSA_EXIT_OK;
    int32_t *idx = dsa_xmalloc((size_t)M * K * 4), *gold = dsa_xmalloc((size_t)M * K * 4),
            *model = dsa_xmalloc((size_t)M * K * 4);
    double *per = dsa_xmalloc((size_t)M * sizeof *per);
    int kc = dsa_inproc_trace_model_topk(tr, prefix, M, K, model);
    if (kc < 0 || (kc > 0 && dsa_inproc_check_model_rows(path, &in, model, kc, K))) {
        ret = DSA_EXIT_DATA;
        goto cleanup;
    }
    if (dsa_inproc_select_inputs(ip, &in, idx, gold)) {
        ret = DSA_EXIT_BACKEND;
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
    res->needle = in_span(idx + last, K, r->needle_lo, r->needle_hi);
    res->needle_gold = in_span(gold + last, K, r->needle_lo, r->needle_hi);
    res->needle_model = res->has_model ? in_span(model + last, K, r->needle_lo, r->needle_hi) : 0;
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

static json_t *num_or_null(int ok, double v)
{
    return ok ? json_real(v) : json_null();
}

/* one row -> one record (new reference), or NULL with *exit set (printed) */
static json_t *run_row(dsa_inproc *ip, const struct dsa_inproc_run *o, const struct trow *r,
                       int *exit_code)
{
    char *path = dsa_path_join(o->traces_dir, r->file);
    dsa_trace *tr = NULL;
    json_t *rec = NULL, *layers = json_array();
    struct timespec t0, t1;
    dsa_inproc_times_reset(ip);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int ls[256], nl = -1;
    *exit_code = DSA_EXIT_DATA;
    if (dsa_trace_open(path, &tr) || (nl = dsa_inproc_trace_layers(tr, ls, 256)) < 0)
        goto cleanup;
    struct layer_res sum = {0};
    int all_model = 1;
    long T = 0;
    int M = 0;
    dsa_sha256 *h = dsa_sha256_new();
    for (int i = 0; i < nl; i++) {
        struct layer_res lr;
        int rc = run_layer(ip, o, tr, path, ls[i], r, &lr, &T, &M);
        if (rc) {
            *exit_code = rc;
            dsa_sha256_free(&h);
            goto cleanup;
        }
        all_model &= lr.has_model;
        dsa_sha256_update(h, lr.hex, 64);
        sum.recall += lr.recall / nl;
        sum.recall_last += lr.recall_last / nl;
        sum.agree += lr.agree / nl;
        sum.agree_gold += lr.agree_gold / nl;
        sum.needle += lr.needle / nl;
        sum.needle_gold += lr.needle_gold / nl;
        sum.needle_model += lr.needle_model / nl;
        int hn = r->needle_hi > r->needle_lo;
        json_array_append_new(
            layers,
            json_pack("{s:i, s:f, s:o, s:o, s:o, s:o, s:o, s:s}", "layer", ls[i], "recall",
                      lr.recall, "model_agreement", num_or_null(lr.has_model, lr.agree),
                      "model_agreement_golden", num_or_null(lr.has_model, lr.agree_gold),
                      "needle_retention", num_or_null(hn, lr.needle), "needle_retention_golden",
                      num_or_null(hn, lr.needle_gold), "needle_retention_model",
                      num_or_null(hn && lr.has_model, lr.needle_model), "selection_sha256",
                      lr.hex));
    }
    char hex[65];
    dsa_sha256_final_hex(h, hex);
    dsa_sha256_free(&h);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    int hn = r->needle_hi > r->needle_lo;
    rec = json_pack(
        "{s:s, s:s, s:I, s:s, s:f, s:n, s:f, s:o, s:o, s:o, s:o, s:o, s:s, s:I, s:I, "
        "s:I, s:i, s:s, s:f, s:O}",
        "id", r->id, "bin", dsa_mrcr_bin_label(r->bin), "bin_tokens", (json_int_t)(8192L << r->bin),
        "status", "ok", "score", sum.recall, "error", "recall_last", sum.recall_last,
        "model_agreement", num_or_null(all_model, sum.agree), "model_agreement_golden",
        num_or_null(all_model, sum.agree_gold), "needle_retention", num_or_null(hn, sum.needle),
        "needle_retention_golden", num_or_null(hn, sum.needle_gold), "needle_retention_model",
        num_or_null(hn && all_model, sum.needle_model), "selection_sha256", hex, "context_tokens",
        (json_int_t)T, "query_tokens", (json_int_t)M, "needle_tokens",
        (json_int_t)(hn ? r->needle_hi - r->needle_lo : 0), "topk", o->stack.topk, "trace", r->file,
        "elapsed_ms", ms, "layers", layers);
    json_object_set_new(rec, "stage_us_per_token", dsa_inproc_times_json(ip, T)); /* all layers */
    *exit_code = DSA_EXIT_OK;
cleanup:
    json_decref(layers);
    dsa_trace_free(&tr);
    free(path);
    return rec;
}

/* rope (unless --variant rope=… was given) and index heads from the first trace */
static int flags_from_trace(struct dsa_inproc_run *o, const struct trow *r)
{
    char *path = dsa_path_join(o->traces_dir, r->file);
    dsa_trace *tr = NULL;
    int ls[256], rc = -1;
    if (dsa_trace_open(path, &tr) || dsa_inproc_trace_layers(tr, ls, 256) < 0)
        goto cleanup;
    char name[48] = "q_raw";
    if (ls[0] >= 0)
        snprintf(name, sizeof name, "layers.%d.q_raw", ls[0]);
    const struct dsa_trace_tensor *q = dsa_trace_get(tr, name);
    if (q && q->ndim == 3 && (q->shape[1] == 32 || q->shape[1] == 64))
        o->stack.flags.heads = (int)q->shape[1];
    const char *rope = dsa_trace_meta(tr, "rope");
    char kv[64];
    snprintf(kv, sizeof kv, "rope=%s", rope ? rope : "");
    if (rope && !o->stack.rope_given && dsa_k_flags_set(&o->stack.flags, kv)) {
        dsa_errorf("trace '%s' has an unknown rope '%s' in __metadata__", path, rope);
        goto cleanup;
    }
    rc = 0;
cleanup:
    dsa_trace_free(&tr);
    free(path);
    return rc;
}

/* the run header: the in-process identity, with the traces (and their model) instead of the
   proxy model; a resume must see the same manifest */
static json_t *traces_header(dsa_inproc *ip, const char *eval, const struct dsa_inproc_run *o,
                             const struct manifest *m, const char *mpath)
{
    json_t *header = dsa_inproc_header_new(dsa_inproc_describe(ip), eval, o);
    json_t *match = json_object_get(header, "match"), *be = json_object_get(header, "backend");
    json_t *tr = json_pack("{s:s, s:s, s:s?}", "dir", o->traces_dir, "manifest_sha256", m->sha256,
                           "model", m->model);
    json_object_del(match, "proxy");
    json_object_del(match, "seed");
    json_object_set_new(match, "traces",
                        json_pack("{s:s, s:s?}", "manifest_sha256", m->sha256, "model", m->model));
    json_object_set_new(match, "limit", json_integer(o->limit));
    json_object_set_new(match, "bins_mask", json_integer(o->bins_mask));
    json_object_set_new(match, "needles_mask", json_integer(o->needles_mask));
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
typedef json_t *(*row_fn)(dsa_inproc *ip, const struct dsa_inproc_run *o, const struct trow *r,
                          int *exit_code);

/* The row's record (new reference): the run file's when an earlier attempt finished it
   (*made = false), else made and appended (*made = true). NULL with *ret set when making or
   appending it failed. */
static json_t *row_record(dsa_run *run, row_fn make, dsa_inproc *ip, const struct dsa_inproc_run *o,
                          const struct trow *r, int *ret, bool *made)
{
    json_t *rec = dsa_run_get(run, r->id);
    *made = !rec;
    if (rec)
        return json_incref(rec);
    int rc;
    if (!(rec = make(ip, o, r, &rc))) {
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
 * ("-" where the traces hold no model selection or no needle span)
 */
static void print_summary(const struct bin_sum *sums)
{
    printf("%-6s %5s %12s %12s %13s %8s %15s %14s\n", "bin", "rows", "recall@k", "model:stack",
           "model:golden", "needle", "needle(golden)", "needle(model)");
    for (int b = 0; b < DSA_MRCR_NBINS; b++) {
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
        printf("%-6s %5d %12.4f %12s %13s %8s %15s %14s\n", dsa_mrcr_bin_label(b), s->n,
               s->score / s->n, a, ag, n, ng, nm);
    }
}

static bool keep_row(const struct dsa_inproc_run *o, const struct trow *r, long counts[9][8])
{
    if (o->bins_mask && !(o->bins_mask & (1u << r->bin)))
        return false;
    if (o->needles_mask && r->needles > 0 && r->needles < 32 &&
        !(o->needles_mask & (1u << r->needles)))
        return false;
    long *c = &counts[r->needles > 0 && r->needles <= 8 ? r->needles : 0][r->bin];
    if (o->limit && *c >= o->limit)
        return false;
    (*c)++;
    return true;
}

int dsa_inproc_traces_run(const struct dsa_inproc_run *o_in)
{
    struct dsa_inproc_run o = *o_in;
    struct manifest m = {0};
    struct bin_sum sums[DSA_MRCR_NBINS] = {{0}};
    struct dsa_inproc_stage_sum stages = {{0}, 0};
    dsa_inproc *ip = NULL;
    dsa_run *run = NULL;
    json_t *header = NULL;
    char *path = NULL, *mpath = dsa_path_join(o.traces_dir, "manifest.jsonl");
    int ret = DSA_EXIT_DATA;
    long counts[9][8] = {{0}};
    bool *sel = NULL;
    dsa_progress *pg = NULL;
    if (read_manifest(mpath, &m))
        goto cleanup;
    sel = dsa_xcalloc(m.n, sizeof *sel);
    size_t first = m.n;
    for (size_t i = 0; i < m.n; i++)
        if ((sel[i] = keep_row(&o, &m.v[i], counts)) && first == m.n)
            first = i;
    if (first == m.n) {
        dsa_errorf("no rows of '%s' pass the filters (--needles, --bins)", mpath);
        goto cleanup;
    }
    if (flags_from_trace(&o, &m.v[first]))
        goto cleanup;
    ret = DSA_EXIT_BACKEND;
    if (!(ip = dsa_inproc_new(&o.stack)))
        goto cleanup;
    header = traces_header(ip, "mrcr", &o, &m, mpath);
    dsa_shard_match(&o.shard, json_object_get(header, "match"));
    path = dsa_run_file_name(o.out_dir, 1);
    if ((ret = dsa_run_open_status(&run, path, header, o.force_new ? DSA_RUN_FORCE_NEW : 0)))
        goto cleanup;
    /* a rerun says what it found, and rows (seconds each on the CPU) drive the meter, as the
       proxy run does */
    size_t selected = 0, resumed = 0;
    for (size_t i = 0; i < m.n; i++)
        if ((sel[i] = sel[i] && dsa_shard_keep(&o.shard, m.v[i].id))) {
            selected++;
            resumed += dsa_run_get(run, m.v[i].id) != NULL;
        }
    dsa_run_note_resume(resumed, selected, path);
    pg = o.quiet ? NULL : dsa_progress_new("mrcr in-process", selected, resumed);
    if (!o.json)
        printf(
            "mrcr in-process on traces '%s' (model: %s): %s on %s, %s, top-%d -> %s\n",
            o.traces_dir, m.model ? m.model : "unnamed",
            json_string_value(json_object_get(
                json_object_get(json_object_get(header, "match"), "kernels"), "name")),
            dsa_inproc_device(ip),
            json_string_value(json_object_get(json_object_get(header, "backend"), "variant_str")),
            o.stack.topk, path);
    fflush(stdout);
    ret = DSA_EXIT_OK;
    for (size_t i = 0; i < m.n && ret == DSA_EXIT_OK; i++) {
        if (!sel[i])
            continue;
        bool made;
        json_t *rec = row_record(run, run_row, ip, &o, &m.v[i], &ret, &made);
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
        print_summary(sums);
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
    dsa_inproc_free(&ip);
    dsa_kernels_unload();
    return ret;
}

/* ---- gsm8k --backend inprocess --mtp N --traces DIR: the MTP verify shapes on real q/k/w ---- */

/* one layer: the trace's query rows (consecutive positions P..P+R-1) as decode rows over the keys
   0..P+R-1; 0 or an exit status (printed) */
static int mtp_layer(dsa_inproc *ip, const struct dsa_inproc_run *o, const dsa_trace *tr,
                     const char *path, int layer, json_t *layers, int *all_same, int *all_logits,
                     long *rows_out, dsa_sha256 *h)
{
    char prefix[32];
    struct dsa_inproc_inputs in;
    if (layer_inputs(tr, layer, o, prefix, &in))
        return DSA_EXIT_DATA;
    int n = o->mtp + 1, K = o->stack.topk, ret = DSA_EXIT_OK;
    long P = in.qpos[0], R = in.M;
    if (in.qpos[in.M - 1] != P + R - 1) {
        dsa_errorf("trace '%s': the query rows are not consecutive positions, so they cannot "
                   "stand for MTP decode rows",
                   path);
        dsa_inproc_trace_inputs_release(&in);
        return DSA_EXIT_DATA;
    }
    struct dsa_inproc_inputs view = in;
    view.T = P + R; /* keys after the last row are never seen */
    long maxsteps = R / n + 1;
    unsigned char *same = dsa_xcalloc((size_t)maxsteps, 1), *ls = dsa_xcalloc((size_t)maxsteps, 1);
    int32_t *sel = dsa_xmalloc((size_t)maxsteps * n * K * 4);
    long steps = 0;
    if (dsa_inproc_mtp_inputs(ip, &view, P, n, &steps, same, ls, sel)) {
        ret = DSA_EXIT_BACKEND;
        goto cleanup;
    }
    int s_all = 1, l_all = 1;
    for (long s = 0; s < steps; s++) {
        s_all &= same[s];
        l_all &= ls[s];
    }
    char hex[65];
    dsa_inproc_rows_sha256(sel, steps * n, K, hex);
    dsa_sha256_update(h, hex, 64);
    json_array_append_new(layers, json_pack("{s:i, s:b, s:b, s:I, s:s}", "layer", layer,
                                            "identical", s_all, "logits_identical", l_all, "steps",
                                            (json_int_t)steps, "selection_sha256", hex));
    *all_same &= s_all;
    *all_logits &= l_all;
    *rows_out = steps * n;
    if (!steps) {
        dsa_errorf("trace '%s' has %ld query rows, fewer than one verify step of %d", path, R, n);
        ret = DSA_EXIT_DATA;
    }
cleanup:
    free(same);
    free(ls);
    free(sel);
    dsa_inproc_trace_inputs_release(&in);
    return ret;
}

static json_t *mtp_row(dsa_inproc *ip, const struct dsa_inproc_run *o, const struct trow *r,
                       int *exit_code)
{
    char *path = dsa_path_join(o->traces_dir, r->file);
    dsa_trace *tr = NULL;
    json_t *rec = NULL, *layers = json_array();
    int ls[256], nl, same = 1, logits = 1;
    long rows = 0;
    *exit_code = DSA_EXIT_DATA;
    dsa_sha256 *h = dsa_sha256_new();
    if (dsa_trace_open(path, &tr) || (nl = dsa_inproc_trace_layers(tr, ls, 256)) < 0)
        goto cleanup;
    for (int i = 0; i < nl; i++)
        if ((*exit_code = mtp_layer(ip, o, tr, path, ls[i], layers, &same, &logits, &rows, h)))
            goto cleanup;
    char hex[65];
    dsa_sha256_final_hex(h, hex);
    rec = json_pack("{s:s, s:s, s:s, s:f, s:n, s:b, s:b, s:I, s:i, s:i, s:s, s:s, s:O}", "id",
                    r->id, "bin", dsa_mrcr_bin_label(r->bin), "status", "ok", "score",
                    same ? 1.0 : 0.0, "error", "identical", same, "logits_identical", logits,
                    "rows", (json_int_t)rows, "mtp", o->mtp, "topk", o->stack.topk,
                    "selection_sha256", hex, "trace", r->file, "layers", layers);
cleanup:
    dsa_sha256_free(&h);
    json_decref(layers);
    dsa_trace_free(&tr);
    free(path);
    return rec;
}

int dsa_inproc_traces_mtp_run(const struct dsa_inproc_run *o_in)
{
    struct dsa_inproc_run o = *o_in;
    struct manifest m = {0};
    dsa_inproc *ip = NULL;
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
    if (read_manifest(mpath, &m) || flags_from_trace(&o, &m.v[0]))
        goto cleanup;
    ret = DSA_EXIT_BACKEND;
    if (!(ip = dsa_inproc_new(&o.stack)))
        goto cleanup;
    header = traces_header(ip, "gsm8k", &o, &m, mpath);
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
           dsa_inproc_device(ip), o.stack.topk, path);
    fflush(stdout);
    ret = DSA_EXIT_OK;
    for (size_t i = 0; i < m.n && (!o.limit || (long)i < o.limit); i++) {
        if (!dsa_shard_keep(&o.shard, m.v[i].id))
            continue;
        bool made;
        json_t *rec = row_record(run, mtp_row, ip, &o, &m.v[i], &ret, &made);
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
    dsa_inproc_free(&ip);
    dsa_kernels_unload();
    return ret;
}
