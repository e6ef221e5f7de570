/* GSM8K output identity between two runs; see gsm8k_compare.h.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "evals/gsm8k_compare.h"

#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "evals/gsm8k_run.h"
#include "stats/compare.h"
#include "store/store.h"
#include "util/buf.h"
#include "util/exitcode.h"
#include "util/fs.h"
#include "util/msg.h"

/* true when a run header says "eval": "gsm8k" (or its "match" does) */
static bool is_gsm8k_run(json_t *header)
{
    const char *e = json_string_value(json_object_get(header, "eval"));
    if (!e)
        e = json_string_value(json_object_get(json_object_get(header, "match"), "eval"));
    return e && !strcmp(e, "gsm8k");
}

double dsa_gsm8k_mcnemar_p(unsigned b, unsigned c)
{
    unsigned n = b + c;
    if (n == 0)
        return 1.0;
    double p = 2.0 * gsl_cdf_binomial_P(b < c ? b : c, 0.5, n);
    return p > 1.0 ? 1.0 : p;
}

static bool rec_ok(json_t *rec)
{
    const char *st = json_string_value(json_object_get(rec, "status"));
    return (!st || !strcmp(st, "ok")) && json_is_string(json_object_get(rec, "output"));
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* records keyed by id; duplicates cannot occur in a store file (ids are written once) */
static json_t *by_id(json_t *records)
{
    json_t *m = json_object();
    size_t i;
    json_t *rec;
    json_array_foreach(records, i, rec)
    {
        const char *id = json_string_value(json_object_get(rec, "id"));
        if (id)
            json_object_set(m, id, rec);
    }
    return m;
}

/* A display excerpt of s[from, to) moved to UTF-8 character boundaries, escaped. */
static void excerpt(struct dsa_buf *b, const char *s, size_t len, size_t at)
{
    size_t from = at > 32 ? at - 32 : 0, to = at + 32 < len ? at + 32 : len;
    while (from > 0 && ((unsigned char)s[from] & 0xC0) == 0x80)
        from--;
    while (to < len && ((unsigned char)s[to] & 0xC0) == 0x80)
        to++;
    dsa_buf_adds(b, from ? "\"..." : "\"");
    for (size_t i = from; i < to; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '\n')
            dsa_buf_adds(b, "\\n");
        else if (ch == '\t')
            dsa_buf_adds(b, "\\t");
        else if (ch == '"' || ch == '\\')
            dsa_buf_addf(b, "\\%c", ch);
        else if (ch < 0x20 || ch == 0x7f)
            dsa_buf_addf(b, "\\x%02x", ch);
        else
            dsa_buf_addch(b, (char)ch);
    }
    dsa_buf_adds(b, to < len ? "...\"" : "\"");
}

/* The run's acceptance length: its summary file's, else one its header carries (runs written
   by other tools may record it there, as "mtp": {"acceptance_length"} or at the top). */
static double summary_al(const struct dsa_gsm8k_side *s)
{
    json_t *al = json_object_get(json_object_get(s->summary, "mtp"), "acceptance_length");
    if (!json_is_number(al))
        al = json_object_get(json_object_get(s->header, "mtp"), "acceptance_length");
    if (!json_is_number(al))
        al = json_object_get(s->header, "acceptance_length");
    return json_is_number(al) ? json_number_value(al) : NAN;
}

/* "correct" as dsa-eval writes it, else a score of 1 (plain GSM8K runs of other tools) */
static bool rec_correct(json_t *rec)
{
    json_t *c = json_object_get(rec, "correct");
    if (json_is_boolean(c))
        return json_is_true(c);
    json_t *sc = json_object_get(rec, "score");
    return json_is_number(sc) && json_number_value(sc) == 1.0;
}

static const char *prompt_mode(const struct dsa_gsm8k_side *s)
{
    const char *m =
        json_string_value(json_object_get(json_object_get(s->header, "match"), "prompt"));
    return m ? m : "?";
}

int dsa_gsm8k_compare(const struct dsa_gsm8k_side *a, const struct dsa_gsm8k_side *b, FILE *out,
                      json_t **doc)
{
    json_t *ma = by_id(a->records), *mb = by_id(b->records);
    json_t *keys = json_array();
    int ret = DSA_EXIT_DATA;
    const char *id;
    json_t *ra, *rb;
    size_t n = 0, identical = 0, fail_a = 0, fail_b = 0;
    size_t ok_a = 0, ok_b = 0, cor_a = 0, cor_b = 0;
    unsigned disc_ab = 0, disc_ba = 0; /* A right B wrong, A wrong B right (both graded) */
    const char *first = NULL, *first_why = NULL;
    size_t first_off = 0;
    const char *nc_id = NULL, *nc_why = NULL; /* why the runs are not comparable */
    struct dsa_buf ex_a = DSA_BUF_INIT, ex_b = DSA_BUF_INIT;
    dsa_buf_init(&ex_a);
    dsa_buf_init(&ex_b);

    /* 1. the same questions, asked with the same prompts */
    json_object_foreach(ma, id, ra)
    {
        rb = json_object_get(mb, id);
        if (!rb) {
            dsa_errorf("cannot compare: question '%s' is in '%s' but not in '%s'", id, a->name,
                       b->name);
            nc_id = id;
            nc_why = "missing from the candidate";
            goto cleanup;
        }
        const char *pa = json_string_value(json_object_get(ra, "prompt_sha256"));
        const char *pb = json_string_value(json_object_get(rb, "prompt_sha256"));
        if (!pa || !pb || strcmp(pa, pb)) {
            dsa_errorf("cannot compare: question '%s' was asked with different prompts "
                       "(sha256 %.12s vs %.12s; prompt modes %s and %s)",
                       id, pa ? pa : "none", pb ? pb : "none", prompt_mode(a), prompt_mode(b));
            nc_id = id;
            nc_why = "different prompt";
            goto cleanup;
        }
        json_array_append_new(keys, json_string(id));
    }
    json_object_foreach(mb, id, rb)
    {
        if (!json_object_get(ma, id)) {
            dsa_errorf("cannot compare: question '%s' is in '%s' but not in '%s'", id, b->name,
                       a->name);
            nc_id = id;
            nc_why = "missing from the baseline";
            goto cleanup;
        }
    }
    n = json_array_size(keys);
    if (n == 0) {
        dsa_errorf("cannot compare: '%s' and '%s' hold no questions", a->name, b->name);
        goto cleanup;
    }

    /* 2. byte identity, in question order ("q0007" ids sort numerically as strings) */
    size_t i;
    json_t *k;
    const char **order = dsa_xcalloc(n, sizeof *order);
    json_array_foreach(keys, i, k) order[i] = json_string_value(k);
    qsort(order, n, sizeof *order, cmp_str);
    for (i = 0; i < n; i++) {
        ra = json_object_get(ma, order[i]);
        rb = json_object_get(mb, order[i]);
        bool oka = rec_ok(ra), okb = rec_ok(rb);
        fail_a += !oka;
        fail_b += !okb;
        bool ca = oka && rec_correct(ra);
        bool cb = okb && rec_correct(rb);
        ok_a += oka;
        ok_b += okb;
        cor_a += ca;
        cor_b += cb;
        if (oka && okb) {
            disc_ab += ca && !cb;
            disc_ba += !ca && cb;
        }
        if (!oka || !okb) {
            if (!first) {
                first = order[i];
                first_why = !oka ? "failed in the baseline" : "failed in the candidate";
                first_off = 0;
                dsa_buf_adds(&ex_a, oka ? "(output)" : "(failed)");
                dsa_buf_adds(&ex_b, okb ? "(output)" : "(failed)");
            }
            continue;
        }
        json_t *oa = json_object_get(ra, "output"), *ob = json_object_get(rb, "output");
        const char *sa = json_string_value(oa), *sb = json_string_value(ob);
        size_t la = json_string_length(oa), lb = json_string_length(ob);
        json_t *ta = json_object_get(ra, "token_ids"), *tb = json_object_get(rb, "token_ids");
        bool same = la == lb && !memcmp(sa, sb, la);
        bool same_tokens = !ta || !tb || json_equal(ta, tb);
        if (same && same_tokens) {
            identical++;
            continue;
        }
        if (!first) {
            first = order[i];
            first_why = same ? "different token ids" : "different output";
            size_t off = 0;
            while (off < la && off < lb && sa[off] == sb[off])
                off++;
            first_off = off;
            excerpt(&ex_a, sa, la, off);
            excerpt(&ex_b, sb, lb, off);
            if (same) {
                dsa_buf_reset(&ex_a);
                dsa_buf_reset(&ex_b);
                dsa_buf_adds(&ex_a, "(same text, different token ids)");
                dsa_buf_adds(&ex_b, "(same text, different token ids)");
            }
        }
    }
    free(order);

    double acc_a = ok_a ? (double)cor_a / (double)ok_a : NAN;
    double acc_b = ok_b ? (double)cor_b / (double)ok_b : NAN;
    double p = dsa_gsm8k_mcnemar_p(disc_ab, disc_ba);
    double al_a = summary_al(a), al_b = summary_al(b);
    bool al_same = !isnan(al_a) && !isnan(al_b) && fabs(al_a - al_b) < 0.00005;
    char ala[32], alb[32];
    snprintf(ala, sizeof ala, isnan(al_a) ? "n/a" : "%.4f", al_a);
    snprintf(alb, sizeof alb, isnan(al_b) ? "n/a" : "%.4f", al_b);
    /* the same value printed to 4 decimals counts as the same acceptance length */
    if (!isnan(al_a) && !isnan(al_b))
        al_same = !strcmp(ala, alb);

    fprintf(out, "gsm8k: %s (A) vs %s (B)\n", a->name, b->name);
    if (strcmp(prompt_mode(a), "?"))
        fprintf(out, "questions           %zu, same set and prompts (%s)\n", n, prompt_mode(a));
    else
        fprintf(out, "questions           %zu, same set and prompts\n", n);
    fprintf(out, "identical outputs   %zu/%zu\n", identical, n);
    if (first) {
        fprintf(out, "first difference    question %s at byte %zu\n", first, first_off);
        fprintf(out, "  A  %s\n  B  %s\n", ex_a.data, ex_b.data);
    }
    fprintf(out,
            "accuracy            A %.4f (%zu/%zu)   B %.4f (%zu/%zu)   McNemar exact p %.4f "
            "(%u vs %u)\n",
            acc_a, cor_a, ok_a, acc_b, cor_b, ok_b, p, disc_ab, disc_ba);
    fprintf(out, "acceptance length   A %s   B %s%s\n", ala, alb,
            isnan(al_a) || isnan(al_b) ? ""
            : al_same                  ? "   same"
                                       : "   differ");
    if (identical == n)
        fprintf(out, "result              same outputs (%zu/%zu)%s%s%s\n", identical, n,
                al_same ? " and the same acceptance length (" : "", al_same ? ala : "",
                al_same ? ")" : "");
    else
        fprintf(out, "result              outputs differ: %zu/%zu identical\n", identical, n);

    if (doc) {
        /* the keys of compare's "identity" object (docs/compare.md), then the details */
        *doc = json_pack("{s:s,s:I,s:I,s:b,s:b}", "eval", "gsm8k", "n", (json_int_t)n, "same",
                         (json_int_t)identical, "identical", identical == n, "comparable", 1);
        json_object_set_new(*doc, "first_diff",
                            first ? json_pack("{s:s,s:I,s:s,s:s,s:s}", "id", first, "offset",
                                              (json_int_t)first_off, "why", first_why, "base",
                                              ex_a.data, "cand", ex_b.data)
                                  : json_null());
        /* both sides or null, as compare prints "acceptance length A vs B" */
        json_object_set_new(*doc, "acceptance_length",
                            isnan(al_a) || isnan(al_b) ? json_null()
                                                       : json_pack("{s:f,s:f,s:b}", "base", al_a,
                                                                   "cand", al_b, "same", al_same));
        json_object_set_new(
            *doc, "failed",
            json_pack("{s:I,s:I}", "base", (json_int_t)fail_a, "cand", (json_int_t)fail_b));
        json_object_set_new(*doc, "accuracy",
                            json_pack("{s:o,s:o}", "base", ok_a ? json_real(acc_a) : json_null(),
                                      "cand", ok_b ? json_real(acc_b) : json_null()));
        json_object_set_new(*doc, "mcnemar",
                            json_pack("{s:i,s:i,s:f}", "base_only", (int)disc_ab, "cand_only",
                                      (int)disc_ba, "p", p));
    }
    ret = identical == n ? DSA_EXIT_OK : DSA_EXIT_FAIL;
cleanup:
    if (ret == DSA_EXIT_DATA && doc) {
        /* not comparable: compare prints the first question that differs and exits 1 */
        size_t u = json_object_size(ma);
        json_object_foreach(mb, id, rb) u += !json_object_get(ma, id);
        *doc = json_pack("{s:s,s:I,s:I,s:b,s:b,s:n}", "eval", "gsm8k", "n", (json_int_t)u, "same",
                         (json_int_t)0, "identical", 0, "comparable", 0, "acceptance_length");
        json_object_set_new(
            *doc, "first_diff",
            nc_id ? json_pack("{s:s,s:I,s:s}", "id", nc_id, "offset", (json_int_t)0, "why", nc_why)
                  : json_null());
        json_object_set_new(*doc, "error",
                            json_string(nc_why ? "the runs asked different questions or prompts"
                                               : "the runs hold no questions"));
    }
    json_decref(ma);
    json_decref(mb);
    json_decref(keys);
    dsa_buf_release(&ex_a);
    dsa_buf_release(&ex_b);
    return ret;
}

int dsa_gsm8k_side_load(const char *path, struct dsa_gsm8k_side *side)
{
    memset(side, 0, sizeof *side);
    side->name = path;
    char *file = dsa_is_dir(path) ? dsa_run_file_name(path, 1) : dsa_xstrdup(path);
    int ret = 0;
    if (dsa_run_load(file, &side->header, &side->records)) {
        ret = DSA_EXIT_DATA;
        goto cleanup;
    }
    if (!is_gsm8k_run(side->header)) {
        dsa_errorf("'%s' is not a GSM8K run", file);
        ret = DSA_EXIT_DATA;
        goto cleanup;
    }
    char *sp = dsa_gsm8k_summary_path(file);
    side->summary = dsa_gsm8k_summary_read(sp);
    free(sp);
cleanup:
    free(file);
    if (ret)
        dsa_gsm8k_side_release(side);
    return ret;
}

void dsa_gsm8k_side_release(struct dsa_gsm8k_side *side)
{
    json_decref(side->header);
    json_decref(side->records);
    json_decref(side->summary);
    side->header = side->records = side->summary = NULL;
}

json_t *dsa_gsm8k_compare_identity(const struct dsa_cmp_side *base, const struct dsa_cmp_side *cand)
{
    if (!base->n_runs || !cand->n_runs)
        return NULL;
    struct dsa_gsm8k_side s[2] = {
        {base->path, base->runs[0].header, base->runs[0].records, NULL},
        {cand->path, cand->runs[0].header, cand->runs[0].records, NULL},
    };
    const char *paths[2] = {base->runs[0].path, cand->runs[0].path};
    for (int k = 0; k < 2; k++) {
        char *sp = dsa_gsm8k_summary_path(paths[k]);
        s[k].summary = dsa_gsm8k_summary_read(sp);
        free(sp);
    }
    char *text = NULL;
    size_t len = 0;
    json_t *doc = NULL;
    FILE *f = open_memstream(&text, &len);
    /* not comparable: the reason is printed, and "identical": false makes compare exit 1 */
    int rc = f ? dsa_gsm8k_compare(&s[0], &s[1], f, &doc) : DSA_EXIT_INTERNAL;
    if (f)
        fclose(f);
    if (!doc)
        doc = json_pack("{s:s,s:I,s:I,s:b,s:b,s:n,s:n,s:s}", "eval", "gsm8k", "n", (json_int_t)0,
                        "same", (json_int_t)0, "identical", 0, "comparable", 0, "first_diff",
                        "acceptance_length", "error", "comparison failed");
    else if (rc != DSA_EXIT_DATA)
        json_object_set_new(doc, "report", json_stringn(text ? text : "", len));
    free(text);
    json_decref(s[0].summary);
    json_decref(s[1].summary);
    return doc;
}
