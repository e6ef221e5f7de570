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

#include "evals/evals.h"
#include "util/json.h"
#include "util/buf.h"
#include "util/fmt.h"

/* ---- document accessors ------------------------------------------------------------------ */

static json_t *get(const json_t *o, const char *k)
{
    return json_object_get(o, k);
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
    double c = dsa_json_num(get(doc, "method"), "confidence");
    return gsl_cdf_ugaussian_Pinv(0.5 + (isnan(c) ? 0.95 : c) / 2);
}

/* the decimals of a bin's numbers, from its CI width (util/fmt.h): a 1e-4 change shows */
static int bin_dec(const json_t *bin)
{
    double lo = NAN, hi = NAN;
    ci_of(get(bin, "ci"), &lo, &hi);
    return dsa_fmt_diff_decimals(dsa_json_num(bin, "diff"), lo, hi);
}

/* every paired difference of the bin is exactly 0 (greedy runs with the same outputs) */
static bool identical(const json_t *bin)
{
    return !strcmp(str(get(bin, "verdict"), "reason"), "identical");
}

/* "+0.009 [-0.029, +0.047]" pieces */
static void add_diff(struct dsa_buf *b, double d, int dec)
{
    if (isnan(d))
        dsa_buf_adds(b, "n/a");
    else
        dsa_buf_addf(b, "%+.*f", dec, d);
}

static void add_ci(struct dsa_buf *b, const json_t *ci, int dec)
{
    double lo, hi;
    if (ci_of(ci, &lo, &hi))
        dsa_buf_addf(b, "[%+.*f, %+.*f]", dec, lo, dec, hi);
    else
        dsa_buf_adds(b, "n/a");
}

static void add_mean(struct dsa_buf *b, double x, int dec)
{
    if (isnan(x))
        dsa_buf_adds(b, "n/a");
    else
        dsa_buf_addf(b, "%.*f", dec, x);
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

/* "MRCR 8-needle", "GSM8K" or "Comparison" */
static void add_title(struct dsa_buf *b, const json_t *doc)
{
    const struct dsa_eval *e = dsa_eval_find(str(doc, "eval"));
    dsa_buf_adds(b, e ? e->title : "Comparison");
    json_t *nd = get(get(first_header(get(doc, "base")), "dataset"), "needles");
    if (e && json_is_integer(nd)) /* a needle count the dataset states (MRCR) */
        dsa_buf_addf(b, " %lld-needle", (long long)json_integer_value(nd));
}

/* the sentences shared by md and html; each call appends one paragraph's text */
static void add_runs_sentence(struct dsa_buf *b, const json_t *bin)
{
    static const char *const words[] = {"",    "one",   "two",   "three", "four", "five",
                                        "six", "seven", "eight", "nine",  "ten"};
    long rb = inum(bin, "runs_base"), rc = inum(bin, "runs_cand");
    int dec = bin_dec(bin);
    if (rb == rc && rb <= 10)
        dsa_buf_addf(b, "Pooled over the %s runs, the %s difference is ", words[rb],
                     str(bin, "bin"));
    else
        dsa_buf_addf(b, "Pooled over %ld vs %ld runs, the %s difference is ", rb, rc,
                     str(bin, "bin"));
    add_diff(b, dsa_json_num(bin, "diff"), dec);
    dsa_buf_adds(b, " ");
    add_ci(b, get(bin, "ci"), dec);
    dsa_buf_adds(b, ".");
    json_t *re = get(bin, "run_effect");
    if (json_is_true(get(re, "disagree"))) {
        dsa_buf_adds(b, " The runs disagree (");
        const char *sep = "";
        for (int s = 0; s < 2; s++) {
            json_t *a = get(re, s ? "cand" : "base");
            if (!isnan(dsa_json_num(a, "p")) && dsa_json_num(a, "p") < 0.01) {
                dsa_buf_addf(b, "%s%s F = %.2f, p = %.2g", sep, s ? "candidate" : "baseline",
                             dsa_json_num(a, "F"), dsa_json_num(a, "p"));
                sep = "; ";
            }
        }
        dsa_buf_adds(b, ")");
        json_t *tl = get(bin, "two_level");
        if (tl) {
            dsa_buf_adds(b, "; the two-level CI, which resamples runs too, is ");
            add_ci(b, get(tl, "ci"), dec);
        }
        dsa_buf_adds(b, ".");
    }
    json_t *p = get(bin, "permutation");
    if (p)
        dsa_buf_addf(b, " Run-level permutation p = %ld/%ld%s.", inum(p, "k"), inum(p, "N"),
                     json_is_true(get(p, "cannot_reach_5pct")) ? "*" : "");
}

/* once per document, not per bin: why a permutation p marked * cannot be below 0.05 */
static void add_runs_note(struct dsa_buf *b, const json_t *doc)
{
    json_t *bins = get(doc, "bins");
    for (size_t k = 0; k < json_array_size(bins); k++) {
        json_t *bin = json_array_get(bins, k), *p = get(bin, "permutation");
        if (json_is_true(get(p, "cannot_reach_5pct"))) {
            dsa_buf_addf(b,
                         "* With %ld vs %ld runs the run-level permutation test cannot reach "
                         "p < 0.05 (its smallest p is 2/%ld); it needs at least 4 runs per side.",
                         inum(bin, "runs_base"), inum(bin, "runs_cand"), inum(p, "N"));
            return;
        }
    }
}

static bool has_runs_note(const json_t *doc)
{
    json_t *bins = get(doc, "bins");
    for (size_t k = 0; k < json_array_size(bins); k++)
        if (json_is_true(get(get(json_array_get(bins, k), "permutation"), "cannot_reach_5pct")))
            return true;
    return false;
}

/* "GSM8K: same outputs 32/32; acceptance length 3.4904 vs 3.4904", or "GSM8K: outputs
   differ, 31/32 identical (first difference: …)" */
static void add_identity_sentence(struct dsa_buf *b, const json_t *doc)
{
    json_t *id = get(doc, "identity");
    const struct dsa_eval *e = dsa_eval_find(str(id, "eval"));
    dsa_buf_addf(b, "%s: ", e && e->compare_identity ? e->title : "Outputs");
    if (inum(id, "n") > 0 && inum(id, "same") == inum(id, "n"))
        dsa_buf_addf(b, "same outputs %ld/%ld", inum(id, "same"), inum(id, "n"));
    else if (inum(id, "n") > 0)
        dsa_buf_addf(b, "outputs differ, %ld/%ld identical", inum(id, "same"), inum(id, "n"));
    else
        dsa_buf_adds(b, "no output text recorded");
    json_t *fd = get(id, "first_diff");
    if (json_is_object(fd))
        dsa_buf_addf(b, " (first difference: %s, %s at byte %ld)", str(fd, "id"),
                     *str(fd, "why") ? str(fd, "why") : "output", inum(fd, "offset"));
    json_t *al = get(id, "acceptance_length");
    if (json_is_object(al))
        dsa_buf_addf(b, "; acceptance length %.4f vs %.4f", dsa_json_num(al, "base"),
                     dsa_json_num(al, "cand"));
}

/* "2.4968 [2.4526, 2.5393]" */
static void add_al_value(struct dsa_buf *b, double x, const json_t *ci)
{
    double lo, hi;
    dsa_buf_addf(b, "%.4f", x);
    if (ci_of(ci, &lo, &hi))
        dsa_buf_addf(b, " [%.4f, %.4f]", lo, hi);
}

/* "-7.9% [-8.7%, -7.2%]" of the ratio */
static void add_al_change(struct dsa_buf *b, const json_t *al)
{
    double lo, hi;
    if (dsa_json_num(al, "base") == dsa_json_num(al, "cand") &&
        !ci_of(get(al, "ratio_ci"), &lo, &hi)) {
        dsa_buf_addf(b, "the same (%.4f)", dsa_json_num(al, "base"));
        return;
    }
    dsa_buf_addf(b, "%+.1f%%", (dsa_json_num(al, "ratio") - 1) * 100);
    if (ci_of(get(al, "ratio_ci"), &lo, &hi))
        dsa_buf_addf(b, " [%+.1f%%, %+.1f%%]", (lo - 1) * 100, (hi - 1) * 100);
}

/* "Acceptance length (64 paired requests, per-request draft counts): baseline 2.4968 […],
   candidate 2.2989 […]; difference -0.1979 […], ratio 0.9207 […] (-7.9%)." */
static void add_acceptance_sentence(struct dsa_buf *b, const json_t *doc)
{
    const json_t *al = get(doc, "acceptance");
    const char *lb = str(get(doc, "base"), "label"), *lc = str(get(doc, "cand"), "label");
    bool per = !strcmp(str(al, "source"), "per-request");
    if (per)
        dsa_buf_addf(b,
                     "Acceptance length (%ld paired requests, per-request draft counts, %g%% "
                     "paired bootstrap CIs): ",
                     inum(al, "n"), dsa_json_num(get(doc, "method"), "confidence") * 100);
    else
        dsa_buf_adds(b, "Acceptance length (from the runs' counters: no per-request counts, no "
                        "CI): ");
    dsa_buf_addf(b, "%s ", lb);
    add_al_value(b, dsa_json_num(al, "base"), get(al, "base_ci"));
    dsa_buf_addf(b, ", %s ", lc);
    add_al_value(b, dsa_json_num(al, "cand"), get(al, "cand_ci"));
    double lo, hi;
    dsa_buf_addf(b, "; difference %+.4f", dsa_json_num(al, "diff"));
    if (ci_of(get(al, "diff_ci"), &lo, &hi))
        dsa_buf_addf(b, " [%+.4f, %+.4f]", lo, hi);
    dsa_buf_adds(b, ", ratio ");
    add_al_value(b, dsa_json_num(al, "ratio"), get(al, "ratio_ci"));
    dsa_buf_addf(b, " (%+.1f%%).", (dsa_json_num(al, "ratio") - 1) * 100);
}

static void add_mcnemar_sentence(struct dsa_buf *b, const json_t *mc, const char *lb,
                                 const char *lc)
{
    dsa_buf_addf(b,
                 "McNemar exact p = %.4f on the discordant pairs (%ld %s-only correct, %ld "
                 "%s-only correct).",
                 dsa_json_num(mc, "p"), inum(mc, "b"), lb, inum(mc, "c"), lc);
}

/* the "all" bin's McNemar object (binary scores, one run per side), or NULL */
static const json_t *all_mcnemar(const json_t *doc)
{
    json_t *bins = get(doc, "bins");
    json_t *all = json_array_get(bins, json_array_size(bins) - 1);
    return !strcmp(str(all, "bin"), "all") ? get(all, "mcnemar") : NULL;
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

/* one cell of the bins table (md and html): row r of bin `bin` */
enum table_row {
    ROW_N,
    ROW_BASE,
    ROW_CAND,
    ROW_DIFF,
    ROW_CI,
    ROW_SE,
    ROW_MDE,
    ROW_VERDICT,
    ROW_AA,
    ROW_SEL,
    ROW_COUNT
};

static void add_cell(struct dsa_buf *b, const json_t *bin, enum table_row r)
{
    int dec = bin_dec(bin);
    bool same = identical(bin);
    switch (r) {
    case ROW_N:
        dsa_buf_addf(b, "%ld", inum(bin, "n"));
        break;
    case ROW_BASE:
        add_mean(b, dsa_json_num(bin, "base"), dec);
        break;
    case ROW_CAND:
        add_mean(b, dsa_json_num(bin, "cand"), dec);
        break;
    case ROW_DIFF:
        if (same)
            dsa_buf_adds(b, "0 (identical)");
        else
            add_diff(b, dsa_json_num(bin, "diff"), dec);
        break;
    case ROW_CI:
        if (same)
            dsa_buf_adds(b, "identical");
        else
            add_ci(b, get(bin, "ci"), dec);
        break;
    case ROW_SE:
        if (same || json_is_true(get(bin, "degenerate")))
            dsa_buf_adds(b, "–");
        else
            dsa_fmt_sig(b, dsa_json_num(bin, "se"), 4);
        break;
    case ROW_MDE:
        if (same || json_is_true(get(bin, "degenerate")))
            dsa_buf_adds(b, "–");
        else
            dsa_fmt_sig(b, dsa_json_num(bin, "mde80"), 3);
        break;
    case ROW_VERDICT:
        dsa_buf_adds(b, str(get(bin, "verdict"), "text"));
        break;
    case ROW_AA:
        add_diff(b, dsa_json_num(get(bin, "aa"), "diff"), dec);
        dsa_buf_adds(b, " ");
        add_ci(b, get(get(bin, "aa"), "ci"), dec);
        break;
    default:
        if (get(bin, "selections"))
            dsa_buf_addf(b, "%ld/%ld", inum(get(bin, "selections"), "identical"),
                         inum(get(bin, "selections"), "n"));
        else
            dsa_buf_adds(b, "–");
    }
}

/* the row's label; false when the document has no such row */
static bool row_label(struct dsa_buf *b, const json_t *doc, enum table_row r, bool html)
{
    json_t *bins = get(doc, "bins");
    size_t nb = json_array_size(bins);
    const char *lb = str(get(doc, "base"), "label"), *lc = str(get(doc, "cand"), "label");
    if (r == ROW_AA && !get(doc, "aa"))
        return false;
    if (r == ROW_SEL && !(nb && get(json_array_get(bins, nb - 1), "selections")))
        return false;
    const char *t = r == ROW_N         ? "n"
                    : r == ROW_BASE    ? lb
                    : r == ROW_CAND    ? lc
                    : r == ROW_DIFF    ? "difference"
                    : r == ROW_SE      ? "SE"
                    : r == ROW_MDE     ? "MDE80"
                    : r == ROW_VERDICT ? "verdict"
                    : r == ROW_AA      ? "A/A difference"
                    : r == ROW_SEL     ? "identical selections"
                                       : NULL;
    if (r == ROW_CI)
        dsa_buf_addf(b, "%g%% CI", dsa_json_num(get(doc, "method"), "confidence") * 100);
    else if (html)
        add_html(b, t);
    else
        add_md(b, t);
    return true;
}

/* ---- Markdown ------------------------------------------------------------------------------ */

/* "**MRCR 8-needle: no change detected in any bin (largest MDE80 0.044 at ≤256K)**" */
static void md_verdict(struct dsa_buf *b, const json_t *doc)
{
    dsa_buf_adds(b, "**");
    add_title(b, doc);
    dsa_buf_adds(b, ": ");
    add_md(b, *str(get(doc, "verdict"), "text") ? str(get(doc, "verdict"), "text")
                                                : "no verdict (an older comparison document)");
    if (json_is_object(get(doc, "acceptance"))) {
        struct dsa_buf t = DSA_BUF_INIT;
        dsa_buf_adds(&t, "; acceptance length ");
        add_al_change(&t, get(doc, "acceptance"));
        add_md(b, t.data);
        dsa_buf_release(&t);
    }
    dsa_buf_adds(b, "**\n");
}

/*
 * ### MRCR 8-needle: candidate vs baseline
 *
 * | context    | ≤8K              | ≤16K | … | all |
 * |------------|-----------------:|-----:|---|----:|
 * | n          | 100              |      |   |     |
 * | baseline   | 0.912            |      |   |     |
 * | candidate  | 0.921            |      |   |     |
 * | difference | +0.009           |      |   |     |
 * | 95% CI     | [-0.029, +0.047] |      |   |     |
 * | SE, MDE80, verdict, A/A difference (--baseline-aa), identical selections (in-process)
 */
static void md_table(struct dsa_buf *b, const json_t *doc)
{
    json_t *bins = get(doc, "bins");
    size_t nb = json_array_size(bins);
    dsa_buf_adds(b, "### ");
    add_title(b, doc);
    dsa_buf_adds(b, ": ");
    add_md(b, str(get(doc, "cand"), "label"));
    dsa_buf_adds(b, " vs ");
    add_md(b, str(get(doc, "base"), "label"));
    dsa_buf_adds(b, "\n\n| context |");
    for (size_t k = 0; k < nb; k++) {
        dsa_buf_adds(b, " ");
        add_md(b, str(json_array_get(bins, k), "bin"));
        dsa_buf_adds(b, " |");
    }
    dsa_buf_adds(b, "\n|---|");
    for (size_t k = 0; k < nb; k++)
        dsa_buf_adds(b, "---:|");
    for (int r = 0; r < ROW_COUNT; r++) {
        struct dsa_buf label = DSA_BUF_INIT;
        if (!row_label(&label, doc, (enum table_row)r, false)) {
            dsa_buf_release(&label);
            continue;
        }
        dsa_buf_addf(b, "\n| %s |", label.data);
        dsa_buf_release(&label);
        for (size_t k = 0; k < nb; k++) {
            dsa_buf_adds(b, " ");
            struct dsa_buf cell = DSA_BUF_INIT;
            add_cell(&cell, json_array_get(bins, k), (enum table_row)r);
            add_md(b, cell.data);
            dsa_buf_release(&cell);
            dsa_buf_adds(b, " |");
        }
    }
    dsa_buf_adds(b, "\n\n");
    add_md(b, str(get(doc, "method"), "text"));
    dsa_buf_adds(b, " n counts the samples paired by id in both; the same samples are left out "
                    "of both sides (see Setup).");
    for (size_t k = 0; k < nb; k++) {
        json_t *bin = json_array_get(bins, k);
        if (json_is_true(get(bin, "small_n")) && inum(bin, "n") > 0) {
            dsa_buf_adds(b, " Bins with n < 30 are small: read their CIs with care.");
            break;
        }
    }
    dsa_buf_adds(b, "\n");
}

/* the paragraphs under the table: pooled-runs sentences, McNemar, outputs, latency */
static void md_notes(struct dsa_buf *b, const json_t *doc)
{
    json_t *bins = get(doc, "bins");
    const char *lb = str(get(doc, "base"), "label"), *lc = str(get(doc, "cand"), "label");
    double conf = dsa_json_num(get(doc, "method"), "confidence") * 100;
    bool any = false;
    for (size_t k = 0; k < json_array_size(bins); k++) {
        json_t *bin = json_array_get(bins, k);
        if (!json_array_size(get(bin, "runs")))
            continue;
        dsa_buf_adds(b, any ? "" : "\n");
        any = true;
        add_runs_sentence(b, bin);
        dsa_buf_adds(b, "\n");
    }
    if (has_runs_note(doc)) {
        dsa_buf_adds(b, "\n");
        add_runs_note(b, doc);
        dsa_buf_adds(b, "\n");
    }
    const json_t *mc = all_mcnemar(doc);
    if (mc) {
        dsa_buf_adds(b, "\n");
        add_mcnemar_sentence(b, mc, lb, lc);
        dsa_buf_adds(b, "\n");
    }
    if (json_is_object(get(doc, "identity"))) {
        dsa_buf_adds(b, "\n");
        add_identity_sentence(b, doc);
        dsa_buf_adds(b, ".\n");
    }
    if (json_is_object(get(doc, "acceptance"))) {
        dsa_buf_adds(b, "\n");
        add_acceptance_sentence(b, doc);
        dsa_buf_adds(b, "\n");
    }

    /*
     * | latency (median per-request ratio) | ratio | 95% CI         | requests |
     * | A/A (baseline vs baseline)         | 1.003 | [0.999, 1.005] | 35       |
     */
    json_t *lat = get(doc, "latency");
    if (!json_is_object(lat))
        return;
    dsa_buf_addf(b,
                 "\n#### Latency\n\n| median per-request ratio | ratio | %g%% CI | requests "
                 "|\n|---|---:|---|---:|\n",
                 conf);
    json_t *rows2[2] = {get(lat, "aa"), lat};
    for (int q = 0; q < 2; q++) {
        double lo, hi;
        if (!rows2[q] || !ci_of(get(rows2[q], "ci"), &lo, &hi))
            continue;
        dsa_buf_adds(b, "| ");
        add_md(b, q ? lc : lb);
        dsa_buf_adds(b, q ? " / " : " vs ");
        add_md(b, lb);
        dsa_buf_adds(b, q ? "" : " (A/A)");
        int dec = dsa_fmt_decimals(hi - lo, 2, 3);
        dsa_buf_addf(b, " | %.*f | [%.*f, %.*f] | %ld |\n", dec, dsa_json_num(rows2[q], "ratio"),
                     dec, lo, dec, hi, inum(rows2[q], "n"));
    }
    json_t *p = get(lat, "permutation");
    if (p)
        dsa_buf_addf(b, "\nRun-level permutation p = %ld/%ld on log median latency per run.\n",
                     inum(p, "k"), inum(p, "N"));
}

/*
 * | bin  | run    | baseline | candidate | difference | 95% CI           |
 * | ≤8K  | 1 vs 1 | 0.752    | 0.754     | +0.002     | [-0.046, +0.045] |
 * | ≤8K  | pooled | 0.728    | 0.665     | -0.063     | [-0.087, -0.039] |
 */
static void md_runs_table(struct dsa_buf *b, const json_t *doc)
{
    json_t *bins = get(doc, "bins");
    const char *lb = str(get(doc, "base"), "label"), *lc = str(get(doc, "cand"), "label");
    bool any = false;
    for (size_t k = 0; k < json_array_size(bins); k++) {
        json_t *bin = json_array_get(bins, k), *runs = get(bin, "runs");
        int dec = bin_dec(bin);
        if (!json_array_size(runs))
            continue;
        if (!any) {
            dsa_buf_adds(b, "Runs:\n\n| bin | run | ");
            add_md(b, lb);
            dsa_buf_adds(b, " | ");
            add_md(b, lc);
            dsa_buf_addf(b, " | difference | %g%% CI |\n|---|---|---:|---:|---:|---|\n",
                         dsa_json_num(get(doc, "method"), "confidence") * 100);
        }
        any = true;
        for (size_t q = 0; q <= json_array_size(runs); q++) {
            bool pooled = q == json_array_size(runs);
            const json_t *r = pooled ? bin : json_array_get(runs, q);
            dsa_buf_adds(b, "| ");
            add_md(b, str(bin, "bin"));
            if (pooled)
                dsa_buf_addf(b, " | pooled (%ld vs %ld) | ", inum(bin, "runs_base"),
                             inum(bin, "runs_cand"));
            else
                dsa_buf_addf(b, " | %ld vs %ld | ", inum(r, "base_run"), inum(r, "cand_run"));
            add_mean(b, dsa_json_num(r, "base"), dec);
            dsa_buf_adds(b, " | ");
            add_mean(b, dsa_json_num(r, "cand"), dec);
            dsa_buf_adds(b, " | ");
            add_diff(b, dsa_json_num(r, "diff"), dec);
            dsa_buf_adds(b, " | ");
            add_ci(b, get(r, "ci"), dec);
            dsa_buf_adds(b, " |\n");
        }
    }
    if (any)
        dsa_buf_adds(b, "\n");
}

static void md_setup(struct dsa_buf *b, const json_t *doc)
{
    const json_t *base = get(doc, "base"), *cand = get(doc, "cand");
    const char *lb = str(base, "label"), *lc = str(cand, "label");
    const json_t *hb = first_header(base), *hc = first_header(cand);
    dsa_buf_adds(b, "- dataset: ");
    add_kv(b, get(hb, "dataset"), false);
    dsa_buf_adds(b, "\n");
    const json_t *sides[2] = {base, cand};
    for (int s = 0; s < 2; s++) {
        const json_t *h = s ? hc : hb;
        dsa_buf_adds(b, "- ");
        add_md(b, s ? lc : lb);
        dsa_buf_adds(b, ": `");
        add_md(b, str(sides[s], "path"));
        dsa_buf_addf(b, "` (%zu run%s); ", n_runs(sides[s]), n_runs(sides[s]) == 1 ? "" : "s");
        add_kv(b, get(h, "backend"), false);
        dsa_buf_adds(b, "\n");
    }
    dsa_buf_adds(b, "- request parameters: ");
    add_kv(b, get(hb, "params"), false);
    if (!json_equal(get(hb, "params"), get(hc, "params"))) {
        dsa_buf_adds(b, " (");
        add_md(b, lc);
        dsa_buf_adds(b, ": ");
        add_kv(b, get(hc, "params"), false);
        dsa_buf_adds(b, ")");
    }
    json_t *m = get(doc, "method");
    dsa_buf_addf(b,
                 "\n- statistics: %s, B = %ld, seed %ld, %s; per-sample means over runs, "
                 "\"all\" stratified by bin\n- ",
                 str(m, "ci_method"), inum(m, "resamples"), inum(m, "seed"), str(m, "rng"));
    add_excluded_sentence(b, doc, false);
    dsa_buf_adds(b, "\n");
}

/* the collapsed block: per-run rows and the setup */
static void md_details(struct dsa_buf *b, const json_t *doc, bool many)
{
    dsa_buf_adds(b, "\n<details><summary>");
    if (many) {
        add_title(b, doc);
        dsa_buf_adds(b, ": ");
    }
    dsa_buf_adds(b, "Runs and setup</summary>\n\n");
    md_runs_table(b, doc);
    md_setup(b, doc);
    dsa_buf_adds(b, "\n</details>\n");
}

/*
 * One document for a pull request: a verdict line per comparison first, then each
 * comparison's table and notes with its collapsed block of runs and setup.
 */
int dsa_report_md_many(const json_t *const *docs, size_t n, FILE *out)
{
    struct dsa_buf b = DSA_BUF_INIT;
    for (size_t k = 0; k < n; k++)
        md_verdict(&b, docs[k]);
    for (size_t k = 0; k < n; k++) {
        dsa_buf_adds(&b, "\n");
        md_table(&b, docs[k]);
        md_notes(&b, docs[k]);
        md_details(&b, docs[k], n > 1);
    }
    return flush(&b, out);
}

int dsa_report_md(const json_t *doc, FILE *out)
{
    return dsa_report_md_many(&doc, 1, out);
}

/* ---- CSV / long-form JSON ------------------------------------------------------------------- */

static bool side_ci(const json_t *bin, int s, double z, double *lo, double *hi);

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

/* The long form: an array of {"bin", "statistic", "value", "ci_lo", "ci_hi", "n"} (value and
   ends may be null), in bin order, "all" after the bins, then "latency" and "outputs". */
static json_t *report_rows(const json_t *doc)
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
            double mu = dsa_json_num(bin, s ? "cand" : "base"), lo, hi;
            json_t *ci = side_ci(bin, s, z, &lo, &hi) ? json_pack("[ff]", lo, hi) : NULL;
            row(rows, bl, s ? "candidate" : "baseline", mu, ci, n);
            json_decref(ci);
        }
        row(rows, bl, "difference", dsa_json_num(bin, "diff"), get(bin, "ci"), n);
        /* "verdict_worse" … "verdict_no_change": the difference and the interval judged */
        json_t *v = get(bin, "verdict");
        if (v) {
            char name[64];
            const char *w = str(v, "verdict");
            snprintf(name, sizeof name, "verdict_%s",
                     !strcmp(w, "no change detected") ? "no_change" : w);
            bool two = !strcmp(str(v, "interval"), "two-level");
            row(rows, bl, name, dsa_json_num(bin, "diff"),
                get(two ? get(bin, "two_level") : bin, "ci"), n);
        }
        row(rows, bl, "se", dsa_json_num(bin, "se"), NULL, n);
        row(rows, bl, "mde80", dsa_json_num(bin, "mde80"), NULL, n);
        row(rows, bl, "rho", dsa_json_num(bin, "rho"), NULL, n);
        json_t *runs = get(bin, "runs");
        for (size_t q = 0; q < json_array_size(runs); q++) {
            json_t *r = json_array_get(runs, q);
            char name[64];
            snprintf(name, sizeof name, "run_%ld_vs_%ld_difference", inum(r, "base_run"),
                     inum(r, "cand_run"));
            row(rows, bl, name, dsa_json_num(r, "diff"), get(r, "ci"), inum(r, "n"));
        }
        json_t *re = get(bin, "run_effect");
        if (re) {
            row(rows, bl, "run_effect_p_baseline", dsa_json_num(get(re, "base"), "p"), NULL, n);
            row(rows, bl, "run_effect_p_candidate", dsa_json_num(get(re, "cand"), "p"), NULL, n);
        }
        json_t *tl = get(bin, "two_level");
        if (tl)
            row(rows, bl, "two_level_difference", dsa_json_num(bin, "diff"), get(tl, "ci"),
                inum(tl, "n"));
        json_t *p = get(bin, "permutation");
        if (p)
            row(rows, bl, "permutation_p", dsa_json_num(p, "p"), NULL, inum(p, "N"));
        json_t *mc = get(bin, "mcnemar");
        if (mc)
            row(rows, bl, "mcnemar_p", dsa_json_num(mc, "p"), NULL, inum(mc, "b") + inum(mc, "c"));
        json_t *aa = get(bin, "aa");
        if (aa)
            row(rows, bl, "aa_difference", dsa_json_num(aa, "diff"), get(aa, "ci"), inum(aa, "n"));
    }
    json_t *lat = get(doc, "latency");
    if (json_is_object(lat)) {
        row(rows, "latency", "median_ratio", dsa_json_num(lat, "ratio"), get(lat, "ci"),
            inum(lat, "n"));
        json_t *aa = get(lat, "aa");
        if (aa)
            row(rows, "latency", "aa_median_ratio", dsa_json_num(aa, "ratio"), get(aa, "ci"),
                inum(aa, "n"));
        json_t *p = get(lat, "permutation");
        if (p)
            row(rows, "latency", "permutation_p", dsa_json_num(p, "p"), NULL, inum(p, "N"));
    }
    json_t *acc = get(doc, "acceptance");
    if (json_is_object(acc)) {
        long n = json_is_integer(get(acc, "n")) ? inum(acc, "n") : -1;
        row(rows, "acceptance", "baseline", dsa_json_num(acc, "base"), get(acc, "base_ci"), n);
        row(rows, "acceptance", "candidate", dsa_json_num(acc, "cand"), get(acc, "cand_ci"), n);
        row(rows, "acceptance", "difference", dsa_json_num(acc, "diff"), get(acc, "diff_ci"), n);
        row(rows, "acceptance", "ratio", dsa_json_num(acc, "ratio"), get(acc, "ratio_ci"), n);
    }
    json_t *id = get(doc, "identity");
    if (json_is_object(id)) {
        row(rows, "outputs", "same", (double)inum(id, "same"), NULL, inum(id, "n"));
        json_t *al = get(id, "acceptance_length");
        if (json_is_object(al)) {
            row(rows, "outputs", "acceptance_length_baseline", dsa_json_num(al, "base"), NULL, -1);
            row(rows, "outputs", "acceptance_length_candidate", dsa_json_num(al, "cand"), NULL, -1);
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
    json_t *rows = report_rows(doc);
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
    json_t *rows = report_rows(doc);
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
    double x0, x1, y0, y1; /* plot area in px (of the viewBox) */
    double lo, hi;         /* data range on y: the outer ticks */
    double step;           /* tick spacing */
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

/* Heckbert's "nice numbers" (Graphics Gems, 1990): 1, 2, 5 or 10 times a power of ten */
static double nice_num(double x, bool round_it)
{
    double e = floor(log10(x)), f = x / pow(10, e), nf;
    if (round_it)
        nf = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
    else
        nf = f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10;
    return nf * pow(10, e);
}

/* The y range widened to whole ticks of a nice step (about 5 ticks), clipped to [floor,
   ceil] when the quantity cannot leave them (a score in [0, 1]). */
static void plot_range(struct plot *p, double lo, double hi, bool include_zero, double floor_v,
                       double ceil_v)
{
    if (include_zero) {
        lo = lo > 0 ? 0 : lo;
        hi = hi < 0 ? 0 : hi;
    }
    if (!(hi > lo)) {
        double w = fabs(lo) > 0 ? fabs(lo) * 0.1 : 0.05;
        lo -= w;
        hi += w;
    }
    double step = nice_num(nice_num(hi - lo, false) / 4, true);
    p->lo = floor(lo / step) * step;
    p->hi = ceil(hi / step) * step;
    if (p->lo < floor_v)
        p->lo = floor_v;
    if (p->hi > ceil_v)
        p->hi = ceil_v;
    if (!(p->hi > p->lo))
        p->hi = p->lo + step;
    p->step = step;
}

static void svg_axes(struct dsa_buf *b, const struct plot *p, const json_t *bins,
                     const char *ylabel)
{
    /* grid lines at the nice ticks, labelled with just the decimals the step needs */
    int dec = dsa_fmt_decimals(p->step, 1, 0);
    for (int t = 0;; t++) {
        double v = p->lo + p->step * t;
        if (v > p->hi + p->step * 1e-6)
            break;
        double y = px_y(p, v);
        dsa_buf_addf(b,
                     "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                     "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.*f</text>\n",
                     p->x0, y, p->x1, y, p->x0 - 6, y + 4, dec, fabs(v) < p->step * 1e-9 ? 0 : v);
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

/* the plots scale with the page: a viewBox, width 100 %, no fixed pixel size */
static void svg_open(struct dsa_buf *b, const char *id, const char *label, size_t nb)
{
    double w = nb > 6 ? 90.0 * (double)nb + 100 : 640;
    dsa_buf_addf(b,
                 "<svg id=\"%s\" class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" "
                 "viewBox=\"0 0 %.0f 290\" preserveAspectRatio=\"xMidYMid meet\" role=\"img\" "
                 "aria-label=\"%s\">\n",
                 id, w, label);
}

/* a side's CI of its mean in the document ("base_ci"/"cand_ci": Wilson for 0/1 scores, else
   normal, clipped to the score's range); older documents: normal from the SE, clipped */
static bool side_ci(const json_t *bin, int s, double z, double *lo, double *hi)
{
    if (ci_of(get(bin, s ? "cand_ci" : "base_ci"), lo, hi))
        return true;
    double mu = dsa_json_num(bin, s ? "cand" : "base"),
           se = dsa_json_num(bin, s ? "cand_se" : "base_se");
    if (isnan(mu) || isnan(se))
        return false;
    *lo = fmax(0, mu - z * se);
    *hi = fmin(1, mu + z * se);
    return true;
}

static void svg_scores(struct dsa_buf *b, const json_t *doc, double z)
{
    json_t *bins = get(doc, "bins");
    struct plot p = {70, 0, 20, 250, 0, 1, 0.1, json_array_size(bins)};
    double lo = INFINITY, hi = -INFINITY;
    for (size_t k = 0; k < p.nb; k++)
        for (int s = 0; s < 2; s++) {
            json_t *bin = json_array_get(bins, k);
            double mu = dsa_json_num(bin, s ? "cand" : "base"), l, h;
            if (isnan(mu))
                continue;
            if (!side_ci(bin, s, z, &l, &h))
                l = h = mu;
            lo = fmin(lo, l);
            hi = fmax(hi, h);
        }
    svg_open(b, "scores", "score by bin", p.nb);
    p.x1 = (p.nb > 6 ? 90.0 * (double)p.nb + 100 : 640) - 20;
    plot_range(&p, isfinite(lo) ? lo : 0, isfinite(hi) ? hi : 1, false, 0, 1);
    svg_axes(b, &p, bins, "score");
    for (size_t k = 0; k < p.nb; k++) {
        json_t *bin = json_array_get(bins, k);
        for (int s = 0; s < 2; s++) {
            double mu = dsa_json_num(bin, s ? "cand" : "base"), l, h;
            if (isnan(mu))
                continue;
            double x = px_x(&p, k) + (s ? 9 : -9);
            if (side_ci(bin, s, z, &l, &h))
                dsa_buf_addf(b,
                             "<line class=\"bar %s\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                             "y2=\"%.1f\"/>\n",
                             s ? "cand" : "base", x, px_y(&p, l), x, px_y(&p, h));
            dsa_buf_addf(b,
                         "<circle class=\"pt-%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\"><title>%.*f"
                         "</title></circle>\n",
                         s ? "cand" : "base", x, px_y(&p, mu), bin_dec(bin), mu);
        }
    }
    dsa_buf_adds(b, "</svg>\n");
}

/* The CI band of one run of consecutive bins that have a CI: upper ends left to right, then
   lower ends right to left. A bin without a CI ends the run, so the band leaves a gap there
   instead of drawing straight across it. */
static void svg_band(struct dsa_buf *b, const struct plot *p, const json_t *bins, const char *key,
                     const char *cls)
{
    size_t k = 0;
    double l, h;
    while (k < p->nb) {
        size_t a = k;
        while (k < p->nb && ci_of(get(json_array_get(bins, k), key), &l, &h))
            k++;
        if (k > a) {
            dsa_buf_addf(b, "<polygon class=\"%s\" points=\"", cls);
            for (size_t j = a; j < k; j++) {
                ci_of(get(json_array_get(bins, j), key), &l, &h);
                dsa_buf_addf(b, "%s%.1f,%.1f", j > a ? " " : "", px_x(p, j), px_y(p, h));
            }
            for (size_t j = k; j-- > a;) {
                ci_of(get(json_array_get(bins, j), key), &l, &h);
                dsa_buf_addf(b, " %.1f,%.1f", px_x(p, j), px_y(p, l));
            }
            dsa_buf_adds(b, "\"/>\n");
        }
        k++;
    }
}

/* a y-range over the CIs of `key` in every bin (lo/hi untouched if none) */
static void ci_range(const json_t *bins, const char *key, double *lo, double *hi)
{
    for (size_t k = 0; k < json_array_size(bins); k++) {
        double l, h;
        if (ci_of(get(json_array_get(bins, k), key), &l, &h)) {
            *lo = fmin(*lo, l);
            *hi = fmax(*hi, h);
        }
    }
}

static void svg_diff(struct dsa_buf *b, const json_t *doc)
{
    json_t *bins = get(doc, "bins");
    struct plot p = {70, 0, 20, 250, 0, 1, 0.1, json_array_size(bins)};
    double lo = INFINITY, hi = -INFINITY;
    ci_range(bins, "ci", &lo, &hi);
    svg_open(b, "diff", "difference by bin", p.nb);
    p.x1 = (p.nb > 6 ? 90.0 * (double)p.nb + 100 : 640) - 20;
    plot_range(&p, isfinite(lo) ? lo : -0.1, isfinite(hi) ? hi : 0.1, true, -1, 1);
    svg_axes(b, &p, bins, "difference");
    svg_band(b, &p, bins, "ci", "band");
    dsa_buf_addf(b, "<line class=\"zero\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
                 p.x0, px_y(&p, 0), p.x1, px_y(&p, 0));
    for (size_t k = 0; k < p.nb; k++) {
        json_t *bin = json_array_get(bins, k);
        double d = dsa_json_num(bin, "diff"), l, h;
        if (isnan(d))
            continue;
        double x = px_x(&p, k);
        if (ci_of(get(bin, "ci"), &l, &h))
            dsa_buf_addf(b,
                         "<line class=\"bar diff\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                         "y2=\"%.1f\"/>\n",
                         x, px_y(&p, l), x, px_y(&p, h));
        dsa_buf_addf(b,
                     "<circle class=\"pt-diff\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\"><title>%+.*f"
                     "</title></circle>\n",
                     x, px_y(&p, d), bin_dec(bin), d);
    }
    dsa_buf_adds(b, "</svg>\n");
}

/* acceptance length of each side with its CI, on nice ticks */
static void svg_acceptance(struct dsa_buf *b, const json_t *doc)
{
    const json_t *al = get(doc, "acceptance");
    json_t *labels = json_pack("[{s:s},{s:s}]", "bin", str(get(doc, "base"), "label"), "bin",
                               str(get(doc, "cand"), "label"));
    struct plot p = {70, 620, 20, 250, 0, 1, 0.1, 2};
    double lo = INFINITY, hi = -INFINITY, l, h;
    for (int s = 0; s < 2; s++) {
        double v = dsa_json_num(al, s ? "cand" : "base");
        lo = fmin(lo, v);
        hi = fmax(hi, v);
        if (ci_of(get(al, s ? "cand_ci" : "base_ci"), &l, &h)) {
            lo = fmin(lo, l);
            hi = fmax(hi, h);
        }
    }
    /* an acceptance length is at least 1 (the bonus token) */
    plot_range(&p, lo, hi, false, 1, INFINITY);
    svg_open(b, "acceptance", "acceptance length", 2);
    svg_axes(b, &p, labels, "acceptance length");
    for (int s = 0; s < 2; s++) {
        double x = px_x(&p, (size_t)s), v = dsa_json_num(al, s ? "cand" : "base");
        if (ci_of(get(al, s ? "cand_ci" : "base_ci"), &l, &h))
            dsa_buf_addf(b,
                         "<line class=\"bar %s\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                         "y2=\"%.1f\"/>\n",
                         s ? "cand" : "base", x, px_y(&p, l), x, px_y(&p, h));
        dsa_buf_addf(b,
                     "<circle class=\"al-%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\"><title>%.4f"
                     "</title></circle>\n",
                     s ? "cand" : "base", x, px_y(&p, v), v);
    }
    dsa_buf_adds(b, "</svg>\n");
    json_decref(labels);
}

static void html_p(struct dsa_buf *b, const char *id, const char *text)
{
    dsa_buf_adds(b, "<p");
    if (id)
        dsa_buf_addf(b, " id=\"%s\"", id);
    dsa_buf_adds(b, ">");
    add_html(b, text);
    dsa_buf_adds(b, "</p>\n");
}

static void html_table(struct dsa_buf *b, const json_t *doc, const char *id)
{
    json_t *bins = get(doc, "bins");
    size_t nb = json_array_size(bins);
    dsa_buf_addf(b, "<table id=\"%s\" class=\"bins\">\n<tr><th>context</th>", id);
    for (size_t k = 0; k < nb; k++) {
        dsa_buf_adds(b, "<th>");
        add_html(b, str(json_array_get(bins, k), "bin"));
        dsa_buf_adds(b, "</th>");
    }
    dsa_buf_adds(b, "</tr>\n");
    for (int r = 0; r < ROW_COUNT; r++) {
        struct dsa_buf label = DSA_BUF_INIT;
        if (!row_label(&label, doc, (enum table_row)r, true)) {
            dsa_buf_release(&label);
            continue;
        }
        dsa_buf_addf(b, "<tr%s><td>%s</td>", r == ROW_VERDICT ? " class=\"verdict\"" : "",
                     label.data);
        dsa_buf_release(&label);
        for (size_t k = 0; k < nb; k++) {
            struct dsa_buf cell = DSA_BUF_INIT;
            add_cell(&cell, json_array_get(bins, k), (enum table_row)r);
            dsa_buf_adds(b, "<td>");
            add_html(b, cell.data);
            dsa_buf_adds(b, "</td>");
            dsa_buf_release(&cell);
        }
        dsa_buf_adds(b, "</tr>\n");
    }
    dsa_buf_adds(b, "</table>\n");
}

static void html_runs(struct dsa_buf *b, const json_t *doc)
{
    json_t *bins = get(doc, "bins");
    const char *lb = str(get(doc, "base"), "label"), *lc = str(get(doc, "cand"), "label");
    double conf = dsa_json_num(get(doc, "method"), "confidence") * 100;
    for (size_t k = 0; k < json_array_size(bins); k++) {
        json_t *bin = json_array_get(bins, k), *runs = get(bin, "runs");
        int dec = bin_dec(bin);
        if (!json_array_size(runs))
            continue;
        dsa_buf_adds(b, "<h3>Runs, ");
        add_html(b, str(bin, "bin"));
        dsa_buf_adds(b, "</h3>\n<table class=\"runs\"><tr><th>run</th><th>");
        add_html(b, lb);
        dsa_buf_adds(b, "</th><th>");
        add_html(b, lc);
        dsa_buf_addf(b, "</th><th>difference</th><th>%g%% CI</th></tr>\n", conf);
        for (size_t q = 0; q <= json_array_size(runs); q++) {
            json_t *r = q < json_array_size(runs) ? json_array_get(runs, q) : bin;
            if (q < json_array_size(runs))
                dsa_buf_addf(b, "<tr><td>%ld vs %ld</td><td>", inum(r, "base_run"),
                             inum(r, "cand_run"));
            else
                dsa_buf_addf(b, "<tr><td>pooled (%ld vs %ld)</td><td>", inum(r, "runs_base"),
                             inum(r, "runs_cand"));
            add_mean(b, dsa_json_num(r, "base"), dec);
            dsa_buf_adds(b, "</td><td>");
            add_mean(b, dsa_json_num(r, "cand"), dec);
            dsa_buf_adds(b, "</td><td>");
            add_diff(b, dsa_json_num(r, "diff"), dec);
            dsa_buf_adds(b, "</td><td>");
            add_ci(b, get(r, "ci"), dec);
            dsa_buf_adds(b, "</td></tr>\n");
        }
        dsa_buf_adds(b, "</table>\n");
        struct dsa_buf s = DSA_BUF_INIT;
        add_runs_sentence(&s, bin);
        html_p(b, NULL, s.data);
        dsa_buf_release(&s);
    }
}

static void html_latency(struct dsa_buf *b, const json_t *doc)
{
    json_t *lat = get(doc, "latency");
    const char *lb = str(get(doc, "base"), "label"), *lc = str(get(doc, "cand"), "label");
    if (!json_is_object(lat))
        return;
    dsa_buf_addf(b,
                 "<h3>Latency</h3>\n<table class=\"latency\"><tr><th>median per-request "
                 "ratio</th><th>ratio</th><th>%g%% CI</th><th>requests</th></tr>\n",
                 dsa_json_num(get(doc, "method"), "confidence") * 100);
    json_t *rows2[2] = {get(lat, "aa"), lat};
    for (int q = 0; q < 2; q++) {
        double lo, hi;
        if (!rows2[q] || !ci_of(get(rows2[q], "ci"), &lo, &hi))
            continue;
        int dec = dsa_fmt_decimals(hi - lo, 2, 3);
        dsa_buf_adds(b, "<tr><td>");
        add_html(b, q ? lc : lb);
        dsa_buf_adds(b, q ? " / " : " vs ");
        add_html(b, lb);
        dsa_buf_addf(b, "%s</td><td>%.*f</td><td>[%.*f, %.*f]</td><td>%ld</td></tr>\n",
                     q ? "" : " (A/A)", dec, dsa_json_num(rows2[q], "ratio"), dec, lo, dec, hi,
                     inum(rows2[q], "n"));
    }
    dsa_buf_adds(b, "</table>\n");
    json_t *p = get(lat, "permutation");
    if (p)
        dsa_buf_addf(b, "<p>Run-level permutation p = %ld/%ld on log median latency per run.</p>\n",
                     inum(p, "k"), inum(p, "N"));
}

static void html_setup(struct dsa_buf *b, const json_t *doc)
{
    const json_t *base = get(doc, "base"), *cand = get(doc, "cand");
    const char *lb = str(base, "label"), *lc = str(cand, "label");
    dsa_buf_adds(b, "<ul class=\"setup\">\n<li>dataset: ");
    const json_t *hb = first_header(base), *hc = first_header(cand);
    add_kv(b, get(hb, "dataset"), true);
    const json_t *sides[2] = {base, cand};
    for (int s = 0; s < 2; s++) {
        dsa_buf_adds(b, "</li>\n<li>");
        add_html(b, s ? lc : lb);
        dsa_buf_adds(b, ": <code>");
        add_html(b, str(sides[s], "path"));
        dsa_buf_addf(b, "</code> (%zu run%s); ", n_runs(sides[s]),
                     n_runs(sides[s]) == 1 ? "" : "s");
        add_kv(b, get(s ? hc : hb, "backend"), true);
    }
    dsa_buf_adds(b, "</li>\n<li>request parameters: ");
    add_kv(b, get(hb, "params"), true);
    json_t *m = get(doc, "method");
    dsa_buf_addf(b,
                 "</li>\n<li>statistics: %s, B = %ld, seed %ld, %s; per-sample means over "
                 "runs, &quot;all&quot; stratified by bin</li>\n<li>",
                 str(m, "ci_method"), inum(m, "resamples"), inum(m, "seed"), str(m, "rng"));
    add_excluded_sentence(b, doc, true);
    dsa_buf_adds(b, "</li>\n</ul>\n");
}

/* one comparison's section: table, plots, notes, and the collapsed runs and setup */
static void html_section(struct dsa_buf *b, const json_t *doc, size_t k)
{
    const char *lb = str(get(doc, "base"), "label"), *lc = str(get(doc, "cand"), "label");
    double conf = dsa_json_num(get(doc, "method"), "confidence") * 100;
    struct dsa_buf t = DSA_BUF_INIT;
    dsa_buf_addf(b, "<section id=\"cmp%zu\">\n<h2>", k + 1);
    add_title(&t, doc);
    add_html(b, t.data);
    dsa_buf_release(&t);
    dsa_buf_adds(b, ": ");
    add_html(b, lc);
    dsa_buf_adds(b, " vs ");
    add_html(b, lb);
    dsa_buf_adds(b, "</h2>\n");
    char id[32] = "bins"; /* ids stay unique in the page: bins, bins-2, bins-3 … */
    if (k)
        snprintf(id, sizeof id, "bins-%zu", k + 1);
    html_table(b, doc, id);
    html_p(b, NULL, str(get(doc, "method"), "text"));
    dsa_buf_adds(b, "<h3>Score by bin</h3>\n<p class=\"legend\"><span style=\"color:#1f77b4\">"
                    "&#9679; ");
    add_html(b, lb);
    dsa_buf_adds(b, "</span><span style=\"color:#d62728\">&#9679; ");
    add_html(b, lc);
    dsa_buf_addf(b,
                 "</span>bars: %g%% CI of each mean (Wilson for 0/1 scores, else normal), "
                 "within the score's range</p>\n",
                 conf);
    svg_scores(b, doc, z_of(doc));
    dsa_buf_adds(b, "<h3>Difference by bin</h3>\n<p class=\"legend\">");
    add_html(b, lc);
    dsa_buf_adds(b, " &minus; ");
    add_html(b, lb);
    dsa_buf_addf(b,
                 ", band: %g%% paired bootstrap CI (a gap where a bin has none), dashed: "
                 "zero</p>\n",
                 conf);
    svg_diff(b, doc);
    struct dsa_buf s = DSA_BUF_INIT;
    if (has_runs_note(doc)) {
        add_runs_note(&s, doc);
        html_p(b, NULL, s.data);
        dsa_buf_reset(&s);
    }
    const json_t *mc = all_mcnemar(doc);
    if (mc) {
        add_mcnemar_sentence(&s, mc, lb, lc);
        html_p(b, "mcnemar", s.data);
        dsa_buf_reset(&s);
    }
    if (json_is_object(get(doc, "identity"))) {
        add_identity_sentence(&s, doc);
        dsa_buf_adds(&s, ".");
        html_p(b, "identity", s.data);
        dsa_buf_reset(&s);
    }
    if (json_is_object(get(doc, "acceptance"))) {
        add_acceptance_sentence(&s, doc);
        html_p(b, "acceptance", s.data);
        dsa_buf_reset(&s);
        svg_acceptance(b, doc);
    }
    dsa_buf_release(&s);
    html_latency(b, doc);
    dsa_buf_adds(b, "<details>\n<summary>Runs and setup</summary>\n");
    html_runs(b, doc);
    html_setup(b, doc);
    dsa_buf_adds(b, "</details>\n</section>\n");
}

int dsa_report_html_many(const json_t *const *docs, size_t n, FILE *out)
{
    struct dsa_buf b = DSA_BUF_INIT;
    /* self-contained: inline CSS, inline SVG, no script, no external resource */
    dsa_buf_adds(&b,
                 "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                 "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                 "<title>dsa-eval report</title>\n<style>\n"
                 "body{font-family:system-ui,sans-serif;margin:2em;color:#222}\n"
                 "table{border-collapse:collapse;margin:1em 0}\n"
                 "th,td{border:1px solid #ccc;padding:.3em .6em;text-align:right}\n"
                 "th:first-child,td:first-child{text-align:left}\n"
                 "svg.plot{display:block;width:100%;height:auto;max-height:70vh}\n"
                 ".verdict{font-weight:bold}\n"
                 ".grid{stroke:#e4e4e4}.zero{stroke:#555;stroke-dasharray:4 3}\n"
                 ".tick{font-size:11px;fill:#555}.axis{font-size:12px;fill:#333}\n"
                 ".bar{stroke-width:2}.bar.base,.pt-base{stroke:#1f77b4;fill:#1f77b4}\n"
                 ".bar.cand,.pt-cand,.al-cand{stroke:#d62728;fill:#d62728}.al-base{fill:#1f77b4}\n"
                 ".bar.diff,.pt-diff{stroke:#2b2b2b;fill:#2b2b2b}"
                 ".band{fill:#9ecae1;fill-opacity:.45;stroke:none}\n"
                 ".legend span{margin-right:1.5em}\n"
                 "</style>\n</head>\n<body>\n<h1>dsa-eval report</h1>\n<ul id=\"verdicts\">\n");
    for (size_t k = 0; k < n; k++) {
        struct dsa_buf t = DSA_BUF_INIT;
        add_title(&t, docs[k]);
        dsa_buf_adds(&t, ": ");
        dsa_buf_adds(&t, str(get(docs[k], "verdict"), "text"));
        if (json_is_object(get(docs[k], "acceptance"))) {
            dsa_buf_adds(&t, "; acceptance length ");
            add_al_change(&t, get(docs[k], "acceptance"));
        }
        dsa_buf_adds(&b, "<li class=\"verdict\">");
        add_html(&b, t.data);
        dsa_buf_adds(&b, "</li>\n");
        dsa_buf_release(&t);
    }
    dsa_buf_adds(&b, "</ul>\n");
    for (size_t k = 0; k < n; k++)
        html_section(&b, docs[k], k);
    dsa_buf_adds(&b, "</body>\n</html>\n");
    return flush(&b, out);
}

int dsa_report_html(const json_t *doc, FILE *out)
{
    return dsa_report_html_many(&doc, 1, out);
}
