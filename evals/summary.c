/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "evals/summary.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "backend/inprocess.h"
#include "util/exitcode.h"
#include "util/msg.h"

/* the in-process records' "stage_us_per_token" keys, then "total" */
#define NSTAGE (DSA_INPROC_NT + 1)

struct acc {
    long long scored, excluded, failed;
    double sum; /* scores in file order */
    long long ph_n, ph_true, ex_n, ex_true;
    /* in-process records: Σ µs·context_tokens per stage and Σ context_tokens, so that the
       summary's µs per token is total time over total tokens */
    double stage_us[NSTAGE];
    long long stage_tokens;
};

static const char *stage_key(int i)
{
    return i < DSA_INPROC_NT ? dsa_inproc_stage_keys[i] : "total";
}

static void acc_add_stages(struct acc *a, json_t *rec)
{
    json_t *st = json_object_get(rec, "stage_us_per_token");
    json_t *tok = json_object_get(rec, "context_tokens");
    if (!json_is_object(st) || !json_is_integer(tok) || json_integer_value(tok) <= 0)
        return;
    long long T = json_integer_value(tok);
    for (int i = 0; i < NSTAGE; i++)
        a->stage_us[i] += json_number_value(json_object_get(st, stage_key(i))) * (double)T;
    a->stage_tokens += T;
}

/* A table row: one (needles, bin) cell, or an "all" row over several cells. */
struct row {
    bool total;
    bool has_needles;
    long long needles;
    char *bin;
    bool has_tokens;
    long long tokens;
    struct acc *runs; /* one per run */
    struct acc pooled;
};

struct table {
    struct row **rows;
    size_t n, cap;
    size_t n_runs;
};

static struct row *row_new(struct table *t, bool total, bool has_needles, long long needles,
                           const char *bin)
{
    struct row *r = dsa_xcalloc(1, sizeof *r);
    r->total = total;
    r->has_needles = has_needles;
    r->needles = needles;
    r->bin = dsa_xstrdup(bin);
    r->runs = dsa_xcalloc(t->n_runs ? t->n_runs : 1, sizeof *r->runs);
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 16;
        t->rows = dsa_xrealloc(t->rows, t->cap * sizeof *t->rows);
    }
    t->rows[t->n++] = r;
    return r;
}

static struct row *row_find(struct table *t, bool total, bool has_needles, long long needles,
                            const char *bin)
{
    for (size_t i = 0; i < t->n; i++) {
        struct row *r = t->rows[i];
        if (r->total == total && r->has_needles == has_needles &&
            (!has_needles || r->needles == needles) && !strcmp(r->bin, bin))
            return r;
    }
    return row_new(t, total, has_needles, needles, bin);
}

static void table_release(struct table *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free(t->rows[i]->bin);
        free(t->rows[i]->runs);
        free(t->rows[i]);
    }
    free(t->rows);
}

enum status { ST_SCORED, ST_EXCLUDED, ST_FAILED };

static enum status record_status(json_t *rec)
{
    const char *st = json_string_value(json_object_get(rec, "status"));
    if (st && !strcmp(st, "excluded"))
        return ST_EXCLUDED;
    if ((!st || !strcmp(st, "ok")) && json_is_number(json_object_get(rec, "score")))
        return ST_SCORED;
    return ST_FAILED;
}

static void acc_add(struct acc *a, enum status st, json_t *rec)
{
    if (st == ST_EXCLUDED) {
        a->excluded++;
        return;
    }
    if (st == ST_FAILED) {
        a->failed++;
        return;
    }
    a->scored++;
    a->sum += json_number_value(json_object_get(rec, "score"));
    json_t *ph = json_object_get(rec, "prefix_hit"), *ex = json_object_get(rec, "exact");
    if (json_is_boolean(ph)) {
        a->ph_n++;
        a->ph_true += json_is_true(ph);
    }
    if (json_is_boolean(ex)) {
        a->ex_n++;
        a->ex_true += json_is_true(ex);
    }
    acc_add_stages(a, rec);
}

static json_t *ratio_or_null(double num, long long den)
{
    return den ? json_real(num / (double)den) : json_null();
}

static json_t *acc_json(const struct acc *a)
{
    json_t *o = json_object();
    json_object_set_new(o, "scored", json_integer(a->scored));
    json_object_set_new(o, "excluded", json_integer(a->excluded));
    json_object_set_new(o, "failed", json_integer(a->failed));
    json_object_set_new(o, "mean", ratio_or_null(a->sum, a->scored));
    json_object_set_new(o, "prefix_hit_rate", ratio_or_null((double)a->ph_true, a->ph_n));
    json_object_set_new(o, "exact_rate", ratio_or_null((double)a->ex_true, a->ex_n));
    if (a->stage_tokens) { /* only in-process runs time their stages */
        json_t *st = json_object();
        for (int i = 0; i < NSTAGE; i++)
            json_object_set_new(st, stage_key(i),
                                json_real(a->stage_us[i] / (double)a->stage_tokens));
        json_object_set_new(o, "stage_us_per_token", st);
    }
    return o;
}

/* Order of cells: needles, then bins with bin_tokens ascending, then the others by label. */
static int cell_cmp(const void *pa, const void *pb)
{
    const struct row *a = *(struct row *const *)pa, *b = *(struct row *const *)pb;
    if (a->has_needles != b->has_needles)
        return a->has_needles ? 1 : -1;
    if (a->needles != b->needles)
        return a->needles < b->needles ? -1 : 1;
    if (a->has_tokens != b->has_tokens)
        return a->has_tokens ? -1 : 1;
    if (a->has_tokens && a->tokens != b->tokens)
        return a->tokens < b->tokens ? -1 : 1;
    return strcmp(a->bin, b->bin);
}

/* The macro mean of a total row over its cells (cells: rows[0..n) that belong to it). */
static void add_macro(json_t *stats, struct row **cells, size_t n, int run)
{
    double sum = 0;
    long long k = 0;
    for (size_t i = 0; i < n; i++) {
        const struct acc *a = run < 0 ? &cells[i]->pooled : &cells[i]->runs[run];
        if (a->scored) {
            sum += a->sum / (double)a->scored;
            k++;
        }
    }
    json_object_set_new(stats, "macro_mean", ratio_or_null(sum, k));
    json_object_set_new(stats, "macro_bins", json_integer(k));
}

static json_t *row_json(const struct table *t, const struct row *r, struct row **cells,
                        size_t n_cells)
{
    json_t *o = json_object();
    if (r->has_needles)
        json_object_set_new(o, "needles", json_integer(r->needles));
    json_object_set_new(o, "bin", json_string(r->bin));
    json_object_set_new(o, "bin_tokens", r->has_tokens ? json_integer(r->tokens) : json_null());
    json_object_set_new(o, "total", json_boolean(r->total));
    json_t *runs = json_array();
    for (size_t i = 0; i < t->n_runs; i++) {
        json_t *s = acc_json(&r->runs[i]);
        if (r->total)
            add_macro(s, cells, n_cells, (int)i);
        json_array_append_new(runs, s);
    }
    json_object_set_new(o, "runs", runs);
    json_t *pooled = acc_json(&r->pooled);
    if (r->total)
        add_macro(pooled, cells, n_cells, -1);
    json_object_set_new(o, "pooled", pooled);
    return o;
}

json_t *dsa_summary_new(json_t *runs)
{
    struct table t = {0};
    json_t *doc = NULL, *failed = json_array(), *excluded = json_array();
    struct row **cells = NULL;
    t.n_runs = json_array_size(runs);

    /* grouping by needle count only pays when there are several */
    long long first_needles = 0;
    bool seen_needles = false, group = false;
    size_t ri, i;
    json_t *recs, *rec;
    json_array_foreach(runs, ri, recs) json_array_foreach(recs, i, rec)
    {
        json_t *nv = json_object_get(rec, "needles");
        if (!json_is_integer(nv))
            continue;
        if (seen_needles && json_integer_value(nv) != first_needles)
            group = true;
        first_needles = json_integer_value(nv);
        seen_needles = true;
    }

    json_array_foreach(runs, ri, recs)
    {
        json_array_foreach(recs, i, rec)
        {
            const char *id = json_string_value(json_object_get(rec, "id"));
            const char *bin = json_string_value(json_object_get(rec, "bin"));
            if (!id || !bin) {
                dsa_errorf("record %zu of run %zu has no string \"%s\"", i + 1, ri + 1,
                           id ? "bin" : "id");
                goto cleanup;
            }
            json_t *nv = json_object_get(rec, "needles");
            /* when grouping, a record without "needles" goes to needle count 0 */
            bool has_n = group;
            long long n = has_n && json_is_integer(nv) ? json_integer_value(nv) : 0;
            enum status st = record_status(rec);
            struct row *rows[3];
            size_t k = 0;
            rows[k++] = row_find(&t, false, has_n, n, bin);
            if (group)
                rows[k++] = row_find(&t, true, has_n, n, "all");
            rows[k++] = row_find(&t, true, false, 0, "all");
            json_t *tok = json_object_get(rec, "bin_tokens");
            if (!rows[0]->has_tokens && json_is_integer(tok)) {
                rows[0]->has_tokens = true;
                rows[0]->tokens = json_integer_value(tok);
            }
            for (size_t j = 0; j < k; j++) {
                acc_add(&rows[j]->runs[ri], st, rec);
                acc_add(&rows[j]->pooled, st, rec);
            }
            if (st != ST_SCORED) {
                json_t *e = json_object_get(rec, "error");
                json_t *item = json_pack("{s:I,s:s,s:s,s:O}", "run", (json_int_t)(ri + 1), "id", id,
                                         "bin", bin, st == ST_FAILED ? "error" : "reason",
                                         json_is_string(e) ? e : json_null());
                json_array_append_new(st == ST_FAILED ? failed : excluded, item);
            }
        }
    }

    /* cells sorted; each total row follows the cells it covers */
    size_t n_cells = 0;
    cells = dsa_xcalloc(t.n + 1, sizeof *cells);
    for (i = 0; i < t.n; i++)
        if (!t.rows[i]->total)
            cells[n_cells++] = t.rows[i];
    qsort(cells, n_cells, sizeof *cells, cell_cmp);

    json_t *rows = json_array();
    bool gsm_like = !group && n_cells == 1 && !strcmp(cells[0]->bin, "all");
    size_t start = 0;
    for (i = 0; i <= n_cells; i++) {
        bool group_ends = group && i > start &&
                          (i == n_cells || cells[i]->has_needles != cells[start]->has_needles ||
                           cells[i]->needles != cells[start]->needles);
        if (group_ends) {
            struct row *tot =
                row_find(&t, true, cells[start]->has_needles, cells[start]->needles, "all");
            json_array_append_new(rows, row_json(&t, tot, cells + start, i - start));
            start = i;
        }
        if (i < n_cells && !gsm_like)
            json_array_append_new(rows, row_json(&t, cells[i], NULL, 0));
    }
    if (t.n) {
        struct row *all = row_find(&t, true, false, 0, "all");
        json_array_append_new(rows, row_json(&t, all, cells, n_cells));
    }
    doc = json_pack("{s:i,s:I,s:o,s:O,s:O}", "dsa_eval_summary", 1, "runs", (json_int_t)t.n_runs,
                    "rows", rows, "failed", failed, "excluded", excluded);
cleanup:
    free(cells);
    json_decref(failed);
    json_decref(excluded);
    table_release(&t);
    return doc;
}

/* ------------------------------------------------------------------------------------- */
/* Rendering                                                                             */

/* display columns of a UTF-8 string: code points (the labels are ASCII and "≤") */
static size_t display_width(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xC0) != 0x80;
    return w;
}

static void add_padded(struct dsa_buf *out, const char *s, size_t width, bool right)
{
    size_t w = display_width(s);
    if (right)
        for (size_t i = w; i < width; i++)
            dsa_buf_addch(out, ' ');
    dsa_buf_adds(out, s);
    if (!right)
        for (size_t i = w; i < width; i++)
            dsa_buf_addch(out, ' ');
}

static void fmt_mean(json_t *v, char *buf, size_t n)
{
    if (json_is_number(v))
        snprintf(buf, n, "%.4f", json_number_value(v));
    else
        snprintf(buf, n, "-");
}

static void fmt_rate(json_t *v, char *buf, size_t n)
{
    if (json_is_number(v))
        snprintf(buf, n, "%.1f%%", 100.0 * json_number_value(v));
    else
        snprintf(buf, n, "-");
}

struct layout {
    bool needles, runs;
    size_t w_needles, w_bin;
};

static void add_line(struct dsa_buf *out, const struct layout *L, const char *needles,
                     const char *bin, const char *run, const char *const cols[6])
{
    static const size_t widths[6] = {6, 8, 6, 6, 10, 6};
    if (L->needles) {
        add_padded(out, needles, L->w_needles, true);
        dsa_buf_adds(out, "  ");
    }
    add_padded(out, bin, L->w_bin, false);
    if (L->runs) {
        dsa_buf_adds(out, "  ");
        add_padded(out, run, 3, true);
    }
    for (int i = 0; i < 6; i++) {
        dsa_buf_adds(out, "  ");
        add_padded(out, cols[i], widths[i], true);
    }
    dsa_buf_addch(out, '\n');
}

static void add_stats_line(struct dsa_buf *out, const struct layout *L, const char *needles,
                           const char *bin, const char *run, json_t *s)
{
    char c[6][32];
    snprintf(c[0], sizeof c[0], "%lld",
             (long long)json_integer_value(json_object_get(s, "scored")));
    snprintf(c[1], sizeof c[1], "%lld",
             (long long)json_integer_value(json_object_get(s, "excluded")));
    snprintf(c[2], sizeof c[2], "%lld",
             (long long)json_integer_value(json_object_get(s, "failed")));
    fmt_mean(json_object_get(s, "mean"), c[3], sizeof c[3]);
    fmt_rate(json_object_get(s, "prefix_hit_rate"), c[4], sizeof c[4]);
    fmt_rate(json_object_get(s, "exact_rate"), c[5], sizeof c[5]);
    const char *cols[6] = {c[0], c[1], c[2], c[3], c[4], c[5]};
    add_line(out, L, needles, bin, run, cols);
}

static void add_macro_line(struct dsa_buf *out, json_t *row, size_t n_runs)
{
    json_t *pooled = json_object_get(row, "pooled");
    long long bins = json_integer_value(json_object_get(pooled, "macro_bins"));
    if (bins < 2)
        return; /* one bin: the macro mean is the mean */
    char m[32];
    dsa_buf_adds(out, "macro mean");
    json_t *nv = json_object_get(row, "needles");
    if (json_is_integer(nv))
        dsa_buf_addf(out, " (%lld needles)", (long long)json_integer_value(nv));
    dsa_buf_addf(out, " over %lld bins:", bins);
    if (n_runs > 1) {
        size_t i;
        json_t *s;
        json_array_foreach(json_object_get(row, "runs"), i, s)
        {
            fmt_mean(json_object_get(s, "macro_mean"), m, sizeof m);
            dsa_buf_addf(out, " run %zu %s,", i + 1, m);
        }
        fmt_mean(json_object_get(pooled, "macro_mean"), m, sizeof m);
        dsa_buf_addf(out, " all %s\n", m);
    } else {
        fmt_mean(json_object_get(pooled, "macro_mean"), m, sizeof m);
        dsa_buf_addf(out, " %s\n", m);
    }
}

static void add_list(struct dsa_buf *out, json_t *list, const char *title, const char *key,
                     size_t n_runs)
{
    size_t n = json_array_size(list);
    if (!n)
        return;
    dsa_buf_addf(out, "%s: %zu\n", title, n);
    size_t i;
    json_t *item;
    json_array_foreach(list, i, item)
    {
        if (i == DSA_SUMMARY_TEXT_LIST_MAX) {
            dsa_buf_addf(out, "  ... and %zu more (--json lists all)\n",
                         n - DSA_SUMMARY_TEXT_LIST_MAX);
            break;
        }
        dsa_buf_adds(out, "  ");
        if (n_runs > 1)
            dsa_buf_addf(out, "run %lld  ",
                         (long long)json_integer_value(json_object_get(item, "run")));
        dsa_buf_adds(out, json_string_value(json_object_get(item, "id")));
        const char *why = json_string_value(json_object_get(item, key));
        if (why)
            dsa_buf_addf(out, "  %s", why);
        dsa_buf_addch(out, '\n');
    }
}

/* the class of an exclusion: "over_context" of "over_context: 20000 prompt tokens + …" */
static void reason_class(const char *why, char *out, size_t cap)
{
    size_t n = why ? strcspn(why, ":") : 0;
    if (!why || !n)
        why = "excluded", n = strlen("excluded");
    if (n >= cap)
        n = cap - 1;
    memcpy(out, why, n);
    out[n] = 0;
}

/*
 * Exclusions as counts per bin and reason, not one line per excluded row of every run
 * (45 lines for 15 over-context samples in 3 runs); the ids are in --json and the run files:
 *
 *   excluded: 45 (the ids are in --json and the run files)
 *     ≤256K  over_context  15 samples × 3 runs
 */
static void add_excluded_counts(struct dsa_buf *out, json_t *list, size_t n_runs)
{
    size_t n = json_array_size(list);
    if (!n)
        return;
    dsa_buf_addf(out, "excluded: %zu (the ids are in --json and the run files)\n", n);
    /* groups in first-seen order: "bin\treason" -> {records, ids: {id: true}} */
    json_t *groups = json_object(), *order = json_array();
    size_t i;
    json_t *item;
    json_array_foreach(list, i, item)
    {
        char cls[64];
        reason_class(json_string_value(json_object_get(item, "reason")), cls, sizeof cls);
        /* a run file's bin label can be anything, of any length: the key is built whole and
           the group keeps its parts, so nothing is parsed back out of it */
        const char *bin = json_string_value(json_object_get(item, "bin"));
        struct dsa_buf key = DSA_BUF_INIT;
        dsa_buf_addf(&key, "%s\t%s", bin ? bin : "?", cls);
        json_t *g = json_object_get(groups, key.data);
        if (!g) {
            g = json_pack("{s:I,s:{},s:s,s:s}", "records", (json_int_t)0, "ids", "bin",
                          bin ? bin : "?", "reason", cls);
            json_object_set_new(groups, key.data, g);
            json_array_append_new(order, json_string(key.data));
        }
        dsa_buf_release(&key);
        json_object_set_new(g, "records",
                            json_integer(json_integer_value(json_object_get(g, "records")) + 1));
        json_object_set_new(json_object_get(g, "ids"),
                            json_string_value(json_object_get(item, "id")), json_true());
    }
    json_t *k;
    json_array_foreach(order, i, k)
    {
        const char *key = json_string_value(k);
        json_t *g = json_object_get(groups, key);
        size_t recs = (size_t)json_integer_value(json_object_get(g, "records"));
        size_t ids = json_object_size(json_object_get(g, "ids"));
        dsa_buf_addf(out, "  %s  %s  %zu sample%s", json_string_value(json_object_get(g, "bin")),
                     json_string_value(json_object_get(g, "reason")), ids, ids == 1 ? "" : "s");
        if (n_runs > 1 && recs == ids * n_runs)
            dsa_buf_addf(out, " × %zu runs", n_runs);
        else if (recs != ids)
            dsa_buf_addf(out, " (%zu records)", recs);
        dsa_buf_addch(out, '\n');
    }
    json_decref(order);
    json_decref(groups);
}

void dsa_summary_render_text(json_t *summary, struct dsa_buf *out)
{
    json_t *rows = json_object_get(summary, "rows");
    size_t n_runs = (size_t)json_integer_value(json_object_get(summary, "runs"));
    struct layout L = {0};
    L.runs = n_runs > 1;
    L.w_bin = strlen("bin");
    L.w_needles = strlen("needles");
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        size_t w = display_width(json_string_value(json_object_get(row, "bin")));
        if (w > L.w_bin)
            L.w_bin = w;
        if (json_object_get(row, "needles"))
            L.needles = true;
    }
    static const char *const head[6] = {"scored", "excluded",   "failed",
                                        "mean",   "prefix hit", "exact"};
    add_line(out, &L, "needles", "bin", "run", head);
    json_array_foreach(rows, i, row)
    {
        char nbuf[32] = "";
        json_t *nv = json_object_get(row, "needles");
        bool total = json_is_true(json_object_get(row, "total"));
        if (json_is_integer(nv))
            snprintf(nbuf, sizeof nbuf, "%lld", (long long)json_integer_value(nv));
        else if (L.needles && total)
            snprintf(nbuf, sizeof nbuf, "all");
        const char *bin = json_string_value(json_object_get(row, "bin"));
        if (!L.runs) {
            add_stats_line(out, &L, nbuf, bin, "", json_array_get(json_object_get(row, "runs"), 0));
            continue;
        }
        size_t r;
        json_t *s;
        json_array_foreach(json_object_get(row, "runs"), r, s)
        {
            char rbuf[24];
            snprintf(rbuf, sizeof rbuf, "%zu", r + 1);
            add_stats_line(out, &L, r ? "" : nbuf, r ? "" : bin, rbuf, s);
        }
        add_stats_line(out, &L, "", "", "all", json_object_get(row, "pooled"));
    }
    json_array_foreach(rows, i, row) if (json_is_true(json_object_get(row, "total")))
        add_macro_line(out, row, n_runs);
    add_list(out, json_object_get(summary, "failed"), "failed", "error", n_runs);
    add_excluded_counts(out, json_object_get(summary, "excluded"), n_runs);
}

void dsa_summary_render_json(json_t *summary, struct dsa_buf *out)
{
    char *s = json_dumps(summary, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
    dsa_buf_adds(out, s);
    dsa_buf_addch(out, '\n');
    free(s);
}

int dsa_summary_print(json_t *runs, bool as_json, FILE *out)
{
    json_t *s = dsa_summary_new(runs);
    if (!s)
        return -1;
    struct dsa_buf b = DSA_BUF_INIT;
    if (as_json)
        dsa_summary_render_json(s, &b);
    else
        dsa_summary_render_text(s, &b);
    fwrite(b.data, 1, b.len, out);
    dsa_buf_release(&b);
    json_decref(s);
    return 0;
}

long dsa_summary_failed(json_t *runs)
{
    long failed = 0;
    size_t i, k;
    json_t *recs, *rec;
    json_array_foreach(runs, i, recs) json_array_foreach(recs, k, rec)
    {
        const char *s = json_string_value(json_object_get(rec, "status"));
        failed += s && !strcmp(s, "failed");
    }
    return failed;
}

int dsa_summary_print_json_if(json_t *runs, int ret)
{
    if (ret != DSA_EXIT_OK && ret != DSA_EXIT_FAIL && ret != DSA_EXIT_INTERRUPTED)
        return ret;
    if (json_array_size(runs) && dsa_summary_print(runs, true, stdout) < 0 && ret == DSA_EXIT_OK)
        ret = DSA_EXIT_DATA;
    return ret;
}
