/*
 * Markdown, HTML (inline SVG), CSV and long-form JSON renderings of a comparison document.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>

#include "reports/report.h"
#include "util/buf.h"

/* ---- document accessors ------------------------------------------------------------------ */

static json_t *get(const json_t *o, const char *k)
{
    return json_object_get(o, k);
}

static double num(const json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static long inum(const json_t *o, const char *k)
{
    return (long)json_integer_value(json_object_get(o, k));
}

static const char *str(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static bool ci_of(const json_t *ci, double *lo, double *hi)
{
    if (!json_is_array(ci) || json_array_size(ci) != 2)
        return false;
    *lo = json_number_value(json_array_get(ci, 0));
    *hi = json_number_value(json_array_get(ci, 1));
    return true;
}

static double z_of(const json_t *doc)
{
    double c = num(get(doc, "method"), "confidence");
    return gsl_cdf_ugaussian_Pinv(0.5 + (isnan(c) ? 0.95 : c) / 2);
}

/* "+0.009 [-0.029, +0.047]" pieces */
static void add_diff(struct dsa_buf *b, double d)
{
    if (isnan(d))
        dsa_buf_adds(b, "n/a");
    else
        dsa_buf_addf(b, "%+.3f", d);
}

static void add_ci(struct dsa_buf *b, const json_t *ci)
{
    double lo, hi;
    if (ci_of(ci, &lo, &hi))
        dsa_buf_addf(b, "[%+.3f, %+.3f]", lo, hi);
    else
        dsa_buf_adds(b, "n/a");
}

static void add_mean(struct dsa_buf *b, double x)
{
    if (isnan(x))
        dsa_buf_adds(b, "n/a");
    else
        dsa_buf_addf(b, "%.3f", x);
}

/* Markdown table cells must not contain '|' or newlines */
static void add_md(struct dsa_buf *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            dsa_buf_adds(b, "\\|");
        else if (*s == '\n' || *s == '\r')
            dsa_buf_addch(b, ' ');
        else
            dsa_buf_addch(b, *s);
    }
}

static void add_html(struct dsa_buf *b, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&':
            dsa_buf_adds(b, "&amp;");
            break;
        case '<':
            dsa_buf_adds(b, "&lt;");
            break;
        case '>':
            dsa_buf_adds(b, "&gt;");
            break;
        case '"':
            dsa_buf_adds(b, "&quot;");
            break;
        default:
            dsa_buf_addch(b, *s);
        }
    }
}

static int flush(struct dsa_buf *b, FILE *out)
{
    size_t w = fwrite(b->data, 1, b->len, out);
    int ret = w == b->len && !ferror(out) ? 0 : -1;
    dsa_buf_release(b);
    return ret;
}

/* "key value, key value" of an object's scalar members (setup block) */
/* one "key value" pair of the setup block */
static void add_pair(struct dsa_buf *b, const char *key, const char *val, bool html, bool *first)
{
    dsa_buf_adds(b, *first ? "" : ", ");
    *first = false;
    if (html) {
        add_html(b, key);
        dsa_buf_adds(b, " ");
        add_html(b, val);
    } else {
        add_md(b, key);
        dsa_buf_adds(b, " `");
        add_md(b, val);
        dsa_buf_adds(b, "`");
    }
}

/* "key value, key value" of a header object: scalars, with nested objects and arrays
   flattened to dotted keys ("servers.url"; "files.1.path" when an array has several
   elements); nulls are left out; 3 levels at most */
static void add_kv_at(struct dsa_buf *b, const json_t *v, const char *key, bool html, bool *first,
                      int depth)
{
    char tmp[64];
    const char *s = NULL;
    if (json_is_string(v))
        s = json_string_value(v);
    else if (json_is_integer(v))
        snprintf(tmp, sizeof tmp, "%lld", (long long)json_integer_value(v)), s = tmp;
    else if (json_is_real(v))
        snprintf(tmp, sizeof tmp, "%g", json_real_value(v)), s = tmp;
    else if (json_is_boolean(v))
        s = json_is_true(v) ? "true" : "false";
    if (s) {
        add_pair(b, key, s, html, first);
        return;
    }
    if (depth >= 3)
        return;
    struct dsa_buf k = DSA_BUF_INIT;
    if (json_is_object(v)) {
        const char *sub;
        json_t *w;
        json_object_foreach((json_t *)v, sub, w)
        {
            dsa_buf_reset(&k);
            dsa_buf_addf(&k, "%s%s%s", key, *key ? "." : "", sub);
            add_kv_at(b, w, k.data, html, first, depth + 1);
        }
    } else if (json_is_array(v)) {
        size_t n = json_array_size(v);
        for (size_t i = 0; i < n; i++) {
            dsa_buf_reset(&k);
            if (n > 1)
                dsa_buf_addf(&k, "%s.%zu", key, i + 1);
            else
                dsa_buf_adds(&k, key);
            add_kv_at(b, json_array_get(v, i), k.data, html, first, depth + 1);
        }
    }
    dsa_buf_release(&k);
}

static void add_kv(struct dsa_buf *b, const json_t *o, bool html)
{
    bool first = true;
    if (json_is_object(o))
        add_kv_at(b, o, "", html, &first, 0);
    if (first)
        dsa_buf_adds(b, "(not recorded)");
}

static const json_t *first_header(const json_t *side)
{
    return get(json_array_get(get(side, "runs"), 0), "header");
}

static size_t n_runs(const json_t *side)
{
    return json_array_size(get(side, "runs"));
}

static const char *eval_title(const json_t *doc)
{
    const char *e = str(doc, "eval");
    return !strcmp(e, "mrcr") ? "MRCR" : !strcmp(e, "gsm8k") ? "GSM8K" : "Comparison";
}

/* the sentences shared by md and html; each call appends one paragraph's text */
static void add_runs_sentence(struct dsa_buf *b, const json_t *bin)
{
    static const char *const words[] = {"",    "one",   "two",   "three", "four", "five",
                                        "six", "seven", "eight", "nine",  "ten"};
    long rb = inum(bin, "runs_base"), rc = inum(bin, "runs_cand");
    if (rb == rc && rb <= 10)
        dsa_buf_addf(b, "Pooled over the %s runs, the %s difference is ", words[rb],
                     str(bin, "bin"));
    else
        dsa_buf_addf(b, "Pooled over %ld vs %ld runs, the %s difference is ", rb, rc,
                     str(bin, "bin"));
    add_diff(b, num(bin, "diff"));
    dsa_buf_adds(b, " ");
    add_ci(b, get(bin, "ci"));
    dsa_buf_adds(b, ".");
    json_t *re = get(bin, "run_effect");
    if (json_is_true(get(re, "disagree"))) {
        dsa_buf_adds(b, " The runs disagree (");
        const char *sep = "";
        for (int s = 0; s < 2; s++) {
            json_t *a = get(re, s ? "cand" : "base");
            if (!isnan(num(a, "p")) && num(a, "p") < 0.01) {
                dsa_buf_addf(b, "%s%s F = %.2f, p = %.2g", sep, s ? "candidate" : "baseline",
                             num(a, "F"), num(a, "p"));
                sep = "; ";
            }
        }
        dsa_buf_adds(b, ")");
        json_t *tl = get(bin, "two_level");
        if (tl) {
            dsa_buf_adds(b, "; the two-level CI, which resamples runs too, is ");
            add_ci(b, get(tl, "ci"));
        }
        dsa_buf_adds(b, ".");
    }
    json_t *p = get(bin, "permutation");
    if (p) {
        dsa_buf_addf(b, " Run-level permutation p = %ld/%ld", inum(p, "k"), inum(p, "N"));
        if (json_is_true(get(p, "cannot_reach_5pct")))
            dsa_buf_addf(b, " (%ld vs %ld runs cannot reach 5%%; use at least 4 per side)", rb, rc);
        dsa_buf_adds(b, ".");
    }
}

static void add_identity_sentence(struct dsa_buf *b, const json_t *doc)
{
    json_t *id = get(doc, "identity");
    const char *ev = str(id, "eval");
    dsa_buf_addf(b, "%s: ", !strcmp(ev, "gsm8k") ? "GSM8K" : "Outputs");
    if (inum(id, "n") > 0)
        dsa_buf_addf(b, "%s outputs %ld/%ld",
                     inum(id, "same") == inum(id, "n") ? "same" : "different", inum(id, "same"),
                     inum(id, "n"));
    else
        dsa_buf_adds(b, "no output text recorded");
    json_t *fd = get(id, "first_diff");
    if (json_is_object(fd))
        dsa_buf_addf(b, " (first difference: %s, %s at byte %ld)", str(fd, "id"),
                     *str(fd, "why") ? str(fd, "why") : "output", inum(fd, "offset"));
    json_t *al = get(id, "acceptance_length");
    if (json_is_object(al))
        dsa_buf_addf(b, "; acceptance length %.4f vs %.4f", num(al, "base"), num(al, "cand"));
}

static void add_excluded_sentence(struct dsa_buf *b, const json_t *doc, bool html)
{
    json_t *ex = get(doc, "excluded");
    dsa_buf_addf(b, "not compared on either side (%zu): ", json_array_size(ex));
    for (size_t k = 0; k < json_array_size(ex); k++) {
        json_t *e = json_array_get(ex, k);
        dsa_buf_adds(b, k ? ", " : "");
        if (html)
            add_html(b, str(e, "id"));
        else {
            dsa_buf_adds(b, "`");
            add_md(b, str(e, "id"));
            dsa_buf_adds(b, "`");
        }
        dsa_buf_adds(b, " (");
        const char *why = *str(e, "detail") ? str(e, "detail") : str(e, "reason");
        if (html)
            add_html(b, why);
        else
            add_md(b, why);
        dsa_buf_adds(b, ")");
    }
    if (!json_array_size(ex))
        dsa_buf_adds(b, "none");
}

/* ---- Markdown ------------------------------------------------------------------------------ */

/*
 * | context    | ≤8K              | ≤16K | … | all |
 * |------------|-----------------:|-----:|---|----:|
 * | n          | 100              |      |   |     |
 * | baseline   | 0.912            |      |   |     |
 * | candidate  | 0.921            |      |   |     |
 * | difference | +0.009           |      |   |     |
 * | 95% CI     | [-0.029, +0.047] |      |   |     |
 * | A/A        | +0.002 [-0.020, +0.024] (--baseline-aa only)
 */
int dsa_report_md(const json_t *doc, FILE *out)
{
    struct dsa_buf b = DSA_BUF_INIT;
    json_t *bins = get(doc, "bins"), *base = get(doc, "base"), *cand = get(doc, "cand");
    const char *lb = str(base, "label"), *lc = str(cand, "label");
    size_t nb = json_array_size(bins);
    dsa_buf_addf(&b, "### %s: ", eval_title(doc));
    add_md(&b, lc);
    dsa_buf_adds(&b, " vs ");
    add_md(&b, lb);
    dsa_buf_adds(&b, "\n\n| context |");
    for (size_t k = 0; k < nb; k++) {
        dsa_buf_adds(&b, " ");
        add_md(&b, str(json_array_get(bins, k), "bin"));
        dsa_buf_adds(&b, " |");
    }
    dsa_buf_adds(&b, "\n|---|");
    for (size_t k = 0; k < nb; k++)
        dsa_buf_adds(&b, "---:|");
    const char *rows[] = {"n", "baseline", "candidate", "difference", "ci", "aa"};
    bool has_aa = get(doc, "aa") != NULL;
    double conf = num(get(doc, "method"), "confidence") * 100;
    for (size_t r = 0; r < 6; r++) {
        if (r == 5 && !has_aa)
            break;
        dsa_buf_adds(&b, "\n| ");
        if (r == 1)
            add_md(&b, lb);
        else if (r == 2)
            add_md(&b, lc);
        else if (r == 4)
            dsa_buf_addf(&b, "%g%% CI", conf);
        else if (r == 5)
            dsa_buf_adds(&b, "A/A difference");
        else
            dsa_buf_adds(&b, rows[r]);
        dsa_buf_adds(&b, " |");
        for (size_t k = 0; k < nb; k++) {
            json_t *bin = json_array_get(bins, k);
            dsa_buf_adds(&b, " ");
            switch (r) {
            case 0:
                dsa_buf_addf(&b, "%ld", inum(bin, "n"));
                break;
            case 1:
                add_mean(&b, num(bin, "base"));
                break;
            case 2:
                add_mean(&b, num(bin, "cand"));
                break;
            case 3:
                add_diff(&b, num(bin, "diff"));
                break;
            case 4:
                add_ci(&b, get(bin, "ci"));
                break;
            default:
                add_diff(&b, num(get(bin, "aa"), "diff"));
                dsa_buf_adds(&b, " ");
                add_ci(&b, get(get(bin, "aa"), "ci"));
            }
            dsa_buf_adds(&b, " |");
        }
    }
    dsa_buf_adds(&b, "\n\n");
    add_md(&b, str(get(doc, "method"), "text"));
    dsa_buf_adds(&b, " n counts the samples paired by id in both; the same samples are left out "
                     "of both sides (see Setup).");
    for (size_t k = 0; k < nb; k++) {
        json_t *bin = json_array_get(bins, k);
        if (json_is_true(get(bin, "small_n")) && inum(bin, "n") > 0) {
            dsa_buf_adds(&b, " Bins with n < 30 are small: read their CIs with care.");
            break;
        }
    }
    dsa_buf_adds(&b, "\n");

    /*
     * | bin  | run    | baseline | candidate | difference | 95% CI           |
     * | ≤8K  | 1 vs 1 | 0.752    | 0.754     | +0.002     | [-0.046, +0.045] |
     * | ≤8K  | pooled | 0.728    | 0.665     | -0.063     | [-0.087, -0.039] |
     */
    bool any_runs = false;
    for (size_t k = 0; k < nb; k++) {
        json_t *bin = json_array_get(bins, k), *runs = get(bin, "runs");
        if (!json_array_size(runs))
            continue;
        if (!any_runs)
            dsa_buf_addf(&b,
                         "\n#### Runs\n\n| bin | run | %s | %s | difference | %g%% CI |\n"
                         "|---|---|---:|---:|---:|---|\n",
                         lb, lc, conf);
        any_runs = true;
        for (size_t q = 0; q < json_array_size(runs); q++) {
            json_t *r = json_array_get(runs, q);
            dsa_buf_adds(&b, "| ");
            add_md(&b, str(bin, "bin"));
            dsa_buf_addf(&b, " | %ld vs %ld | ", inum(r, "base_run"), inum(r, "cand_run"));
            add_mean(&b, num(r, "base"));
            dsa_buf_adds(&b, " | ");
            add_mean(&b, num(r, "cand"));
            dsa_buf_adds(&b, " | ");
            add_diff(&b, num(r, "diff"));
            dsa_buf_adds(&b, " | ");
            add_ci(&b, get(r, "ci"));
            dsa_buf_adds(&b, " |\n");
        }
        dsa_buf_adds(&b, "| ");
        add_md(&b, str(bin, "bin"));
        dsa_buf_addf(&b, " | pooled (%ld vs %ld) | ", inum(bin, "runs_base"),
                     inum(bin, "runs_cand"));
        add_mean(&b, num(bin, "base"));
        dsa_buf_adds(&b, " | ");
        add_mean(&b, num(bin, "cand"));
        dsa_buf_adds(&b, " | ");
        add_diff(&b, num(bin, "diff"));
        dsa_buf_adds(&b, " | ");
        add_ci(&b, get(bin, "ci"));
        dsa_buf_adds(&b, " |\n");
    }
    if (any_runs) {
        dsa_buf_adds(&b, "\n");
        for (size_t k = 0; k < nb; k++) {
            json_t *bin = json_array_get(bins, k);
            if (!json_array_size(get(bin, "runs")))
                continue;
            add_runs_sentence(&b, bin);
            dsa_buf_adds(&b, "\n");
        }
    }
    for (size_t k = 0; k < nb; k++) {
        json_t *bin = json_array_get(bins, k), *mc = get(bin, "mcnemar");
        if (mc && !strcmp(str(bin, "bin"), "all"))
            dsa_buf_addf(&b,
                         "\nMcNemar exact p = %.4f on the discordant pairs (%ld %s-only "
                         "correct, %ld %s-only correct).\n",
                         num(mc, "p"), inum(mc, "b"), lb, inum(mc, "c"), lc);
    }
    if (json_is_object(get(doc, "identity"))) {
        dsa_buf_adds(&b, "\n");
        add_identity_sentence(&b, doc);
        dsa_buf_adds(&b, ".\n");
    }

    /*
     * | latency (median per-request ratio) | ratio | 95% CI         | requests |
     * | A/A (baseline vs baseline)         | 1.003 | [0.999, 1.005] | 35       |
     */
    json_t *lat = get(doc, "latency");
    if (json_is_object(lat)) {
        dsa_buf_addf(&b,
                     "\n#### Latency\n\n| median per-request ratio | ratio | %g%% CI | requests "
                     "|\n|---|---:|---|---:|\n",
                     conf);
        json_t *rows2[2] = {get(lat, "aa"), lat};
        for (int q = 0; q < 2; q++) {
            double lo, hi;
            if (!rows2[q] || !ci_of(get(rows2[q], "ci"), &lo, &hi))
                continue;
            dsa_buf_adds(&b, "| ");
            if (q == 0) {
                add_md(&b, lb);
                dsa_buf_adds(&b, " vs ");
                add_md(&b, lb);
                dsa_buf_adds(&b, " (A/A)");
            } else {
                add_md(&b, lc);
                dsa_buf_adds(&b, " / ");
                add_md(&b, lb);
            }
            dsa_buf_addf(&b, " | %.3f | [%.3f, %.3f] | %ld |\n", num(rows2[q], "ratio"), lo, hi,
                         inum(rows2[q], "n"));
        }
        json_t *p = get(lat, "permutation");
        if (p)
            dsa_buf_addf(&b, "\nRun-level permutation p = %ld/%ld on log median latency per run.\n",
                         inum(p, "k"), inum(p, "N"));
    }

    dsa_buf_adds(&b, "\n<details><summary>Setup</summary>\n\n");
    const json_t *hb = first_header(base), *hc = first_header(cand);
    dsa_buf_adds(&b, "- dataset: ");
    add_kv(&b, get(hb, "dataset"), false);
    dsa_buf_adds(&b, "\n");
    const json_t *sides[2] = {base, cand};
    for (int s = 0; s < 2; s++) {
        const json_t *h = s ? hc : hb;
        dsa_buf_adds(&b, "- ");
        add_md(&b, s ? lc : lb);
        dsa_buf_adds(&b, ": `");
        add_md(&b, str(sides[s], "path"));
        dsa_buf_addf(&b, "` (%zu run%s); ", n_runs(sides[s]), n_runs(sides[s]) == 1 ? "" : "s");
        add_kv(&b, get(h, "backend"), false);
        dsa_buf_adds(&b, "\n");
    }
    dsa_buf_adds(&b, "- request parameters: ");
    add_kv(&b, get(hb, "params"), false);
    if (!json_equal(get(hb, "params"), get(hc, "params"))) {
        dsa_buf_adds(&b, " (");
        add_md(&b, lc);
        dsa_buf_adds(&b, ": ");
        add_kv(&b, get(hc, "params"), false);
        dsa_buf_adds(&b, ")");
    }
    json_t *m = get(doc, "method");
    dsa_buf_addf(&b,
                 "\n- statistics: %s, B = %ld, seed %ld, %s; per-sample means over runs, "
                 "\"all\" stratified by bin\n- ",
                 str(m, "ci_method"), inum(m, "resamples"), inum(m, "seed"), str(m, "rng"));
    add_excluded_sentence(&b, doc, false);
    dsa_buf_adds(&b, "\n\n</details>\n");
    return flush(&b, out);
}

/* ---- CSV / long-form JSON ------------------------------------------------------------------- */

static void row(json_t *rows, const char *bin, const char *stat, double v, const json_t *ci, long n)
{
    double lo = NAN, hi = NAN;
    ci_of(ci, &lo, &hi);
    json_t *o = json_pack("{s:s,s:s}", "bin", bin, "statistic", stat);
    json_object_set_new(o, "value", isfinite(v) ? json_real(v) : json_null());
    json_object_set_new(o, "ci_lo", isfinite(lo) ? json_real(lo) : json_null());
    json_object_set_new(o, "ci_hi", isfinite(hi) ? json_real(hi) : json_null());
    json_object_set_new(o, "n", n >= 0 ? json_integer(n) : json_null());
    json_array_append_new(rows, o);
}

json_t *dsa_report_rows(const json_t *doc)
{
    json_t *rows = json_array(), *bins = get(doc, "bins");
    double z = z_of(doc);
    for (size_t k = 0; k < json_array_size(bins); k++) {
        json_t *bin = json_array_get(bins, k);
        const char *bl = str(bin, "bin");
        long n = inum(bin, "n");
        row(rows, bl, "n_excluded", (double)inum(bin, "n_excluded"), NULL, n);
        row(rows, bl, "n_dropped", (double)inum(bin, "n_dropped"), NULL, n);
        for (int s = 0; s < 2; s++) {
            double mu = num(bin, s ? "cand" : "base"), se = num(bin, s ? "cand_se" : "base_se");
            json_t *ci = isfinite(se) ? json_pack("[ff]", mu - z * se, mu + z * se) : NULL;
            row(rows, bl, s ? "candidate" : "baseline", mu, ci, n);
            json_decref(ci);
        }
        row(rows, bl, "difference", num(bin, "diff"), get(bin, "ci"), n);
        row(rows, bl, "se", num(bin, "se"), NULL, n);
        row(rows, bl, "mde80", num(bin, "mde80"), NULL, n);
        row(rows, bl, "rho", num(bin, "rho"), NULL, n);
        json_t *runs = get(bin, "runs");
        for (size_t q = 0; q < json_array_size(runs); q++) {
            json_t *r = json_array_get(runs, q);
            char name[64];
            snprintf(name, sizeof name, "run_%ld_vs_%ld_difference", inum(r, "base_run"),
                     inum(r, "cand_run"));
            row(rows, bl, name, num(r, "diff"), get(r, "ci"), inum(r, "n"));
        }
        json_t *re = get(bin, "run_effect");
        if (re) {
            row(rows, bl, "run_effect_p_baseline", num(get(re, "base"), "p"), NULL, n);
            row(rows, bl, "run_effect_p_candidate", num(get(re, "cand"), "p"), NULL, n);
        }
        json_t *tl = get(bin, "two_level");
        if (tl)
            row(rows, bl, "two_level_difference", num(bin, "diff"), get(tl, "ci"), inum(tl, "n"));
        json_t *p = get(bin, "permutation");
        if (p)
            row(rows, bl, "permutation_p", num(p, "p"), NULL, inum(p, "N"));
        json_t *mc = get(bin, "mcnemar");
        if (mc)
            row(rows, bl, "mcnemar_p", num(mc, "p"), NULL, inum(mc, "b") + inum(mc, "c"));
        json_t *aa = get(bin, "aa");
        if (aa)
            row(rows, bl, "aa_difference", num(aa, "diff"), get(aa, "ci"), inum(aa, "n"));
    }
    json_t *lat = get(doc, "latency");
    if (json_is_object(lat)) {
        row(rows, "latency", "median_ratio", num(lat, "ratio"), get(lat, "ci"), inum(lat, "n"));
        json_t *aa = get(lat, "aa");
        if (aa)
            row(rows, "latency", "aa_median_ratio", num(aa, "ratio"), get(aa, "ci"), inum(aa, "n"));
        json_t *p = get(lat, "permutation");
        if (p)
            row(rows, "latency", "permutation_p", num(p, "p"), NULL, inum(p, "N"));
    }
    json_t *id = get(doc, "identity");
    if (json_is_object(id)) {
        row(rows, "outputs", "same", (double)inum(id, "same"), NULL, inum(id, "n"));
        json_t *al = get(id, "acceptance_length");
        if (json_is_object(al)) {
            row(rows, "outputs", "acceptance_length_baseline", num(al, "base"), NULL, -1);
            row(rows, "outputs", "acceptance_length_candidate", num(al, "cand"), NULL, -1);
        }
    }
    return rows;
}

static void csv_field(struct dsa_buf *b, const char *s)
{
    bool quote = strpbrk(s, ",\"\n\r") != NULL;
    if (!quote) {
        dsa_buf_adds(b, s);
        return;
    }
    dsa_buf_addch(b, '"');
    for (; *s; s++) {
        if (*s == '"')
            dsa_buf_addch(b, '"');
        dsa_buf_addch(b, *s);
    }
    dsa_buf_addch(b, '"');
}

static void csv_num(struct dsa_buf *b, const json_t *v)
{
    if (json_is_integer(v))
        dsa_buf_addf(b, "%lld", (long long)json_integer_value(v));
    else if (json_is_number(v))
        dsa_buf_addf(b, "%.10g", json_number_value(v));
}

int dsa_report_csv(const json_t *doc, FILE *out)
{
    json_t *rows = dsa_report_rows(doc);
    struct dsa_buf b = DSA_BUF_INIT;
    dsa_buf_adds(&b, "bin,statistic,value,ci_lo,ci_hi,n\n");
    for (size_t k = 0; k < json_array_size(rows); k++) {
        json_t *r = json_array_get(rows, k);
        csv_field(&b, str(r, "bin"));
        dsa_buf_addch(&b, ',');
        csv_field(&b, str(r, "statistic"));
        const char *cols[] = {"value", "ci_lo", "ci_hi", "n"};
        for (int c = 0; c < 4; c++) {
            dsa_buf_addch(&b, ',');
            csv_num(&b, get(r, cols[c]));
        }
        dsa_buf_addch(&b, '\n');
    }
    json_decref(rows);
    return flush(&b, out);
}

int dsa_report_json(const json_t *doc, FILE *out)
{
    json_t *rows = dsa_report_rows(doc);
    json_t *o = json_pack("{s:I,s:O,s:o}", "dsa_eval_report", (json_int_t)1, "method",
                          get(doc, "method"), "rows", rows);
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    json_decref(o);
    struct dsa_buf b = DSA_BUF_INIT;
    dsa_buf_adds(&b, s);
    dsa_buf_addch(&b, '\n');
    free(s);
    return flush(&b, out);
}

/* ---- HTML + SVG ------------------------------------------------------------------------------ */

struct plot {
    double x0, x1, y0, y1; /* plot area in px */
    double lo, hi;         /* data range on y */
    size_t nb;
};

static double px_x(const struct plot *p, size_t k)
{
    return p->x0 + (p->x1 - p->x0) * ((double)k + 0.5) / (double)p->nb;
}

static double px_y(const struct plot *p, double v)
{
    return p->y1 - (p->y1 - p->y0) * (v - p->lo) / (p->hi - p->lo);
}

static void plot_range(struct plot *p, double lo, double hi, bool include_zero)
{
    if (include_zero) {
        lo = lo > 0 ? 0 : lo;
        hi = hi < 0 ? 0 : hi;
    }
    if (!(hi > lo)) {
        lo -= 0.5;
        hi += 0.5;
    }
    double pad = (hi - lo) * 0.08;
    p->lo = lo - pad;
    p->hi = hi + pad;
}

static void svg_axes(struct dsa_buf *b, const struct plot *p, const json_t *bins,
                     const char *ylabel)
{
    /* 5 horizontal grid lines with labels, the bin names under the x axis */
    for (int t = 0; t <= 4; t++) {
        double v = p->lo + (p->hi - p->lo) * t / 4.0, y = px_y(p, v);
        dsa_buf_addf(b,
                     "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                     "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.3f</text>\n",
                     p->x0, y, p->x1, y, p->x0 - 6, y + 4, v);
    }
    for (size_t k = 0; k < p->nb; k++) {
        dsa_buf_addf(b, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
                     px_x(p, k), p->y1 + 18);
        add_html(b, str(json_array_get(bins, k), "bin"));
        dsa_buf_adds(b, "</text>\n");
    }
    dsa_buf_addf(b,
                 "<text class=\"axis\" x=\"14\" y=\"%.1f\" transform=\"rotate(-90 14 %.1f)\" "
                 "text-anchor=\"middle\">%s</text>\n",
                 (p->y0 + p->y1) / 2, (p->y0 + p->y1) / 2, ylabel);
}

static void svg_scores(struct dsa_buf *b, const json_t *doc, double z)
{
    json_t *bins = get(doc, "bins");
    struct plot p = {70, 620, 20, 250, 0, 1, json_array_size(bins)};
    double lo = INFINITY, hi = -INFINITY;
    for (size_t k = 0; k < p.nb; k++)
        for (int s = 0; s < 2; s++) {
            json_t *bin = json_array_get(bins, k);
            double mu = num(bin, s ? "cand" : "base"), se = num(bin, s ? "cand_se" : "base_se");
            if (isnan(mu))
                continue;
            se = isnan(se) ? 0 : se;
            lo = fmin(lo, mu - z * se);
            hi = fmax(hi, mu + z * se);
        }
    plot_range(&p, isfinite(lo) ? lo : 0, isfinite(hi) ? hi : 1, false);
    dsa_buf_adds(b, "<svg id=\"scores\" xmlns=\"http://www.w3.org/2000/svg\" width=\"640\" "
                    "height=\"290\" viewBox=\"0 0 640 290\" role=\"img\" aria-label=\"score by "
                    "bin\">\n");
    svg_axes(b, &p, bins, "score");
    for (size_t k = 0; k < p.nb; k++) {
        json_t *bin = json_array_get(bins, k);
        for (int s = 0; s < 2; s++) {
            double mu = num(bin, s ? "cand" : "base"), se = num(bin, s ? "cand_se" : "base_se");
            if (isnan(mu))
                continue;
            double x = px_x(&p, k) + (s ? 9 : -9);
            if (!isnan(se))
                dsa_buf_addf(b,
                             "<line class=\"bar %s\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                             "y2=\"%.1f\"/>\n",
                             s ? "cand" : "base", x, px_y(&p, mu - z * se), x,
                             px_y(&p, mu + z * se));
            dsa_buf_addf(b,
                         "<circle class=\"pt-%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\"><title>%.3f"
                         "</title></circle>\n",
                         s ? "cand" : "base", x, px_y(&p, mu), mu);
        }
    }
    dsa_buf_adds(b, "</svg>\n");
}

static void svg_diff(struct dsa_buf *b, const json_t *doc)
{
    json_t *bins = get(doc, "bins");
    struct plot p = {70, 620, 20, 250, 0, 1, json_array_size(bins)};
    double lo = INFINITY, hi = -INFINITY;
    for (size_t k = 0; k < p.nb; k++) {
        double l, h;
        if (ci_of(get(json_array_get(bins, k), "ci"), &l, &h)) {
            lo = fmin(lo, l);
            hi = fmax(hi, h);
        }
    }
    plot_range(&p, isfinite(lo) ? lo : -0.1, isfinite(hi) ? hi : 0.1, true);
    dsa_buf_adds(b, "<svg id=\"diff\" xmlns=\"http://www.w3.org/2000/svg\" width=\"640\" "
                    "height=\"290\" viewBox=\"0 0 640 290\" role=\"img\" aria-label=\"difference "
                    "by bin\">\n");
    svg_axes(b, &p, bins, "difference");
    /* the CI band: upper ends left to right, then lower ends right to left */
    struct dsa_buf pts = DSA_BUF_INIT;
    size_t m = 0;
    for (size_t k = 0; k < p.nb; k++) {
        double l, h;
        if (ci_of(get(json_array_get(bins, k), "ci"), &l, &h)) {
            dsa_buf_addf(&pts, "%s%.1f,%.1f", m++ ? " " : "", px_x(&p, k), px_y(&p, h));
        }
    }
    for (size_t k = p.nb; k-- > 0;) {
        double l, h;
        if (ci_of(get(json_array_get(bins, k), "ci"), &l, &h))
            dsa_buf_addf(&pts, " %.1f,%.1f", px_x(&p, k), px_y(&p, l));
    }
    if (m)
        dsa_buf_addf(b, "<polygon class=\"band\" points=\"%s\"/>\n", pts.data);
    dsa_buf_release(&pts);
    dsa_buf_addf(b, "<line class=\"zero\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
                 p.x0, px_y(&p, 0), p.x1, px_y(&p, 0));
    for (size_t k = 0; k < p.nb; k++) {
        json_t *bin = json_array_get(bins, k);
        double d = num(bin, "diff"), l, h;
        if (isnan(d))
            continue;
        double x = px_x(&p, k);
        if (ci_of(get(bin, "ci"), &l, &h))
            dsa_buf_addf(b,
                         "<line class=\"bar diff\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                         "y2=\"%.1f\"/>\n",
                         x, px_y(&p, l), x, px_y(&p, h));
        dsa_buf_addf(b,
                     "<circle class=\"pt-diff\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\"><title>%+.3f"
                     "</title></circle>\n",
                     x, px_y(&p, d), d);
    }
    dsa_buf_adds(b, "</svg>\n");
}

int dsa_report_html(const json_t *doc, FILE *out)
{
    struct dsa_buf b = DSA_BUF_INIT;
    json_t *bins = get(doc, "bins"), *base = get(doc, "base"), *cand = get(doc, "cand");
    const char *lb = str(base, "label"), *lc = str(cand, "label");
    size_t nb = json_array_size(bins);
    double conf = num(get(doc, "method"), "confidence") * 100;
    /* self-contained: inline CSS, inline SVG, no script, no external resource */
    dsa_buf_adds(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                     "<title>dsa-eval ");
    dsa_buf_adds(&b, eval_title(doc));
    dsa_buf_adds(&b, " report</title>\n<style>\n"
                     "body{font-family:system-ui,sans-serif;margin:2em;max-width:60em;color:#222}\n"
                     "table{border-collapse:collapse;margin:1em 0}\n"
                     "th,td{border:1px solid #ccc;padding:.3em .6em;text-align:right}\n"
                     "th:first-child,td:first-child{text-align:left}\n"
                     ".grid{stroke:#e4e4e4}.zero{stroke:#555;stroke-dasharray:4 3}\n"
                     ".tick{font-size:11px;fill:#555}.axis{font-size:12px;fill:#333}\n"
                     ".bar{stroke-width:2}.bar.base,.pt-base{stroke:#1f77b4;fill:#1f77b4}\n"
                     ".bar.cand,.pt-cand{stroke:#d62728;fill:#d62728}\n"
                     ".bar.diff,.pt-diff{stroke:#2b2b2b;fill:#2b2b2b}"
                     ".band{fill:#9ecae1;fill-opacity:.45;stroke:none}\n"
                     ".legend span{margin-right:1.5em}\n"
                     "</style>\n</head>\n<body>\n<h1>");
    dsa_buf_adds(&b, eval_title(doc));
    dsa_buf_adds(&b, ": ");
    add_html(&b, lc);
    dsa_buf_adds(&b, " vs ");
    add_html(&b, lb);
    dsa_buf_adds(&b, "</h1>\n<table id=\"bins\">\n<tr><th>context</th>");
    for (size_t k = 0; k < nb; k++) {
        dsa_buf_adds(&b, "<th>");
        add_html(&b, str(json_array_get(bins, k), "bin"));
        dsa_buf_adds(&b, "</th>");
    }
    dsa_buf_adds(&b, "</tr>\n");
    bool has_aa = get(doc, "aa") != NULL;
    for (int r = 0; r < 6; r++) {
        if (r == 5 && !has_aa)
            break;
        dsa_buf_adds(&b, "<tr><td>");
        if (r == 0)
            dsa_buf_adds(&b, "n");
        else if (r == 1)
            add_html(&b, lb);
        else if (r == 2)
            add_html(&b, lc);
        else if (r == 3)
            dsa_buf_adds(&b, "difference");
        else if (r == 4)
            dsa_buf_addf(&b, "%g%% CI", conf);
        else
            dsa_buf_adds(&b, "A/A difference");
        dsa_buf_adds(&b, "</td>");
        for (size_t k = 0; k < nb; k++) {
            json_t *bin = json_array_get(bins, k);
            dsa_buf_adds(&b, "<td>");
            if (r == 0)
                dsa_buf_addf(&b, "%ld", inum(bin, "n"));
            else if (r == 1)
                add_mean(&b, num(bin, "base"));
            else if (r == 2)
                add_mean(&b, num(bin, "cand"));
            else if (r == 3)
                add_diff(&b, num(bin, "diff"));
            else if (r == 4)
                add_ci(&b, get(bin, "ci"));
            else {
                add_diff(&b, num(get(bin, "aa"), "diff"));
                dsa_buf_adds(&b, " ");
                add_ci(&b, get(get(bin, "aa"), "ci"));
            }
            dsa_buf_adds(&b, "</td>");
        }
        dsa_buf_adds(&b, "</tr>\n");
    }
    dsa_buf_adds(&b, "</table>\n<p>");
    add_html(&b, str(get(doc, "method"), "text"));
    dsa_buf_adds(&b, "</p>\n");
    dsa_buf_addf(&b, "<h2>Score by bin</h2>\n<p class=\"legend\"><span style=\"color:#1f77b4\">"
                     "&#9679; ");
    add_html(&b, lb);
    dsa_buf_adds(&b, "</span><span style=\"color:#d62728\">&#9679; ");
    add_html(&b, lc);
    dsa_buf_addf(&b, "</span>bars: %g%% normal CI of each mean</p>\n", conf);
    svg_scores(&b, doc, z_of(doc));
    dsa_buf_adds(&b, "<h2>Difference by bin</h2>\n<p class=\"legend\">");
    add_html(&b, lc);
    dsa_buf_adds(&b, " &minus; ");
    add_html(&b, lb);
    dsa_buf_addf(&b, ", band: %g%% paired bootstrap CI, dashed: zero</p>\n", conf);
    svg_diff(&b, doc);
    for (size_t k = 0; k < nb; k++) {
        json_t *bin = json_array_get(bins, k), *runs = get(bin, "runs");
        if (!json_array_size(runs))
            continue;
        dsa_buf_adds(&b, "<h3>Runs, ");
        add_html(&b, str(bin, "bin"));
        dsa_buf_adds(&b, "</h3>\n<table class=\"runs\"><tr><th>run</th><th>");
        add_html(&b, lb);
        dsa_buf_adds(&b, "</th><th>");
        add_html(&b, lc);
        dsa_buf_addf(&b, "</th><th>difference</th><th>%g%% CI</th></tr>\n", conf);
        for (size_t q = 0; q <= json_array_size(runs); q++) {
            json_t *r = q < json_array_size(runs) ? json_array_get(runs, q) : bin;
            if (q < json_array_size(runs))
                dsa_buf_addf(&b, "<tr><td>%ld vs %ld</td><td>", inum(r, "base_run"),
                             inum(r, "cand_run"));
            else
                dsa_buf_addf(&b, "<tr><td>pooled (%ld vs %ld)</td><td>", inum(r, "runs_base"),
                             inum(r, "runs_cand"));
            add_mean(&b, num(r, "base"));
            dsa_buf_adds(&b, "</td><td>");
            add_mean(&b, num(r, "cand"));
            dsa_buf_adds(&b, "</td><td>");
            add_diff(&b, num(r, "diff"));
            dsa_buf_adds(&b, "</td><td>");
            add_ci(&b, get(r, "ci"));
            dsa_buf_adds(&b, "</td></tr>\n");
        }
        dsa_buf_adds(&b, "</table>\n<p>");
        struct dsa_buf s = DSA_BUF_INIT;
        add_runs_sentence(&s, bin);
        add_html(&b, s.data);
        dsa_buf_release(&s);
        dsa_buf_adds(&b, "</p>\n");
    }
    if (json_is_object(get(doc, "identity"))) {
        struct dsa_buf s = DSA_BUF_INIT;
        add_identity_sentence(&s, doc);
        dsa_buf_adds(&b, "<p id=\"identity\">");
        add_html(&b, s.data);
        dsa_buf_adds(&b, ".</p>\n");
        dsa_buf_release(&s);
    }
    json_t *lat = get(doc, "latency");
    if (json_is_object(lat)) {
        dsa_buf_addf(&b,
                     "<h2>Latency</h2>\n<table id=\"latency\"><tr><th>median per-request "
                     "ratio</th><th>ratio</th><th>%g%% CI</th><th>requests</th></tr>\n",
                     conf);
        json_t *rows2[2] = {get(lat, "aa"), lat};
        for (int q = 0; q < 2; q++) {
            double lo, hi;
            if (!rows2[q] || !ci_of(get(rows2[q], "ci"), &lo, &hi))
                continue;
            dsa_buf_adds(&b, "<tr><td>");
            add_html(&b, q ? lc : lb);
            dsa_buf_adds(&b, q ? " / " : " vs ");
            add_html(&b, lb);
            dsa_buf_addf(&b, "%s</td><td>%.3f</td><td>[%.3f, %.3f]</td><td>%ld</td></tr>\n",
                         q ? "" : " (A/A)", num(rows2[q], "ratio"), lo, hi, inum(rows2[q], "n"));
        }
        dsa_buf_adds(&b, "</table>\n");
    }
    dsa_buf_adds(&b, "<h2>Setup</h2>\n<ul id=\"setup\">\n<li>dataset: ");
    const json_t *hb = first_header(base), *hc = first_header(cand);
    add_kv(&b, get(hb, "dataset"), true);
    const json_t *sides[2] = {base, cand};
    for (int s = 0; s < 2; s++) {
        dsa_buf_adds(&b, "</li>\n<li>");
        add_html(&b, s ? lc : lb);
        dsa_buf_adds(&b, ": <code>");
        add_html(&b, str(sides[s], "path"));
        dsa_buf_addf(&b, "</code> (%zu run%s); ", n_runs(sides[s]),
                     n_runs(sides[s]) == 1 ? "" : "s");
        add_kv(&b, get(s ? hc : hb, "backend"), true);
    }
    dsa_buf_adds(&b, "</li>\n<li>request parameters: ");
    add_kv(&b, get(hb, "params"), true);
    dsa_buf_adds(&b, "</li>\n<li>");
    add_excluded_sentence(&b, doc, true);
    dsa_buf_adds(&b, "</li>\n</ul>\n</body>\n</html>\n");
    return flush(&b, out);
}
