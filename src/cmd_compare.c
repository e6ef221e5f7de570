/*
 * dsa-eval compare: paired per-bin differences with bootstrap CIs between two sets of runs
 * (docs/compare.md "Statistics"). The numbers come from stats/compare.h; this file prints them.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "evals/evals.h"
#include "stats/compare.h"
#include "util/json.h"
#include "util/exitcode.h"
#include "util/fmt.h"
#include "util/msg.h"
#include "util/opt.h"

static const char *const usage[] = {
    "dsa-eval compare BASELINE CANDIDATE [--json] [--baseline-aa RUNS] [--fail-if-worse X]  "
    "(each: a directory of run files, one run file, or a plain score file)",
    NULL,
};

static long inum(json_t *o, const char *key)
{
    return (long)json_integer_value(json_object_get(o, key));
}

/* the decimals of a bin's numbers: from its CI width (util/fmt.h), so a 1e-4 change shows */
static int bin_decimals(json_t *b)
{
    json_t *ci = json_object_get(b, "ci");
    return dsa_fmt_diff_decimals(dsa_json_num(b, "diff"), json_real_value(json_array_get(ci, 0)),
                                 json_real_value(json_array_get(ci, 1)));
}

/* "+0.009 [-0.029, +0.047]", or "n/a" */
static void print_diff_ci(double d, json_t *ci, int dec)
{
    if (isnan(d)) {
        printf("n/a");
        return;
    }
    struct dsa_buf b = DSA_BUF_INIT;
    dsa_fmt_diff_ci(&b, d, json_is_array(ci), json_real_value(json_array_get(ci, 0)),
                    json_real_value(json_array_get(ci, 1)), dec);
    printf("%s%s", b.data, json_is_array(ci) ? "" : " [n/a]");
    dsa_buf_release(&b);
}

/* the permutation line; "cannot reach 5%" is said once, after the bins (print_runs_note) */
static void print_perm(json_t *p, const char *what)
{
    printf("  run-level permutation p = %ld/%ld = %.4f (%s)%s\n", inum(p, "k"), inum(p, "N"),
           dsa_json_num(p, "p"), what,
           json_is_true(json_object_get(p, "cannot_reach_5pct")) ? " *" : "");
}

/* once per output: why a permutation p marked * can never be below 0.05 with these runs */
static void print_runs_note(json_t *doc)
{
    json_t *bins = json_object_get(doc, "bins");
    for (size_t k = 0; k < json_array_size(bins); k++) {
        json_t *b = json_array_get(bins, k), *p = json_object_get(b, "permutation");
        if (json_is_true(json_object_get(p, "cannot_reach_5pct"))) {
            printf("\n* with %ld vs %ld runs the run-level permutation test cannot reach p < 0.05 "
                   "(its smallest p is 2/%ld); it needs at least 4 runs per side\n",
                   inum(b, "runs_base"), inum(b, "runs_cand"), inum(p, "N"));
            return;
        }
    }
}

/*
 * One block per bin, "all" last:
 *
 *   ≤8K  n 100 used, 0 excluded, 0 dropped
 *     baseline    0.912
 *     candidate   0.921
 *     difference  +0.009 [-0.029, +0.047]  SE 0.019  MDE80 0.053
 *     run 1 vs 1  +0.010 [-0.030, +0.050]  0.900 vs 0.910 (n 100)     several runs only
 *     runs disagree (candidate F = 13.00, p = 0.0002): two-level CI [-0.389, +0.361]
 *     run-level permutation p = 2/20 = 0.1000 (...)
 *     McNemar exact p = 0.1480 (28 baseline-only correct, 41 candidate-only correct)
 *     A/A         +0.002 [-0.020, +0.024]                              --baseline-aa only
 */
static void print_bin(json_t *b, const char *lb, const char *lc)
{
    printf("%s  n %ld used, %ld excluded, %ld dropped\n",
           json_string_value(json_object_get(b, "bin")), inum(b, "n"), inum(b, "n_excluded"),
           inum(b, "n_dropped"));
    if (inum(b, "n") == 0) {
        printf("  no paired samples\n");
        return;
    }
    int dec = bin_decimals(b);
    json_t *v = json_object_get(b, "verdict");
    const char *reason = json_string_value(json_object_get(v, "reason"));
    bool identical = reason && !strcmp(reason, "identical");
    printf("  %-11s %.*f\n", lb, dec, dsa_json_num(b, "base"));
    printf("  %-11s %.*f\n", lc, dec, dsa_json_num(b, "cand"));
    printf("  difference  ");
    if (identical) {
        printf("0 (identical: all %ld paired differences are 0)", inum(b, "n"));
    } else {
        print_diff_ci(dsa_json_num(b, "diff"), json_object_get(b, "ci"), dec);
        if (json_is_true(json_object_get(b, "degenerate"))) {
            printf("  (all %ld paired differences are equal: no spread)", inum(b, "n"));
        } else if (!isnan(dsa_json_num(b, "se"))) {
            struct dsa_buf t = DSA_BUF_INIT;
            dsa_buf_adds(&t, "  SE ");
            dsa_fmt_sig(&t, dsa_json_num(b, "se"), 4);
            dsa_buf_adds(&t, "  MDE80 ");
            dsa_fmt_sig(&t, dsa_json_num(b, "mde80"), 3);
            printf("%s", t.data);
            dsa_buf_release(&t);
        }
    }
    if (json_is_true(json_object_get(b, "small_n")))
        printf("  (small n)");
    long rb = inum(b, "runs_base"), rc = inum(b, "runs_cand");
    if (rb > 1 || rc > 1)
        printf("  pooled over %ld vs %ld runs", rb, rc);
    printf("\n");
    json_t *runs = json_object_get(b, "runs");
    for (size_t k = 0; k < json_array_size(runs); k++) {
        json_t *r = json_array_get(runs, k);
        char name[32];
        snprintf(name, sizeof name, "run %ld vs %ld", inum(r, "base_run"), inum(r, "cand_run"));
        printf("  %-11s ", name);
        print_diff_ci(dsa_json_num(r, "diff"), json_object_get(r, "ci"), dec);
        printf("  %.*f vs %.*f (n %ld)\n", dec, dsa_json_num(r, "base"), dec,
               dsa_json_num(r, "cand"), inum(r, "n"));
    }
    json_t *re = json_object_get(b, "run_effect");
    if (json_is_true(json_object_get(re, "disagree"))) {
        printf("  runs disagree (");
        const char *sep = "";
        for (int s = 0; s < 2; s++) {
            json_t *a = json_object_get(re, s ? "cand" : "base");
            if (!isnan(dsa_json_num(a, "p")) && dsa_json_num(a, "p") < 0.01) {
                printf("%s%s F = %.2f, p = %.2g", sep, s ? lc : lb, dsa_json_num(a, "F"),
                       dsa_json_num(a, "p"));
                sep = "; ";
            }
        }
        printf(")");
        json_t *tl = json_object_get(b, "two_level");
        if (tl) {
            printf(": two-level CI ");
            print_diff_ci(dsa_json_num(b, "diff"), json_object_get(tl, "ci"), dec);
        }
        printf("\n");
    }
    json_t *perm = json_object_get(b, "permutation");
    if (perm)
        print_perm(perm, "mean score per run");
    json_t *mc = json_object_get(b, "mcnemar");
    if (mc)
        printf("  McNemar exact p = %.4f (%ld %s-only correct, %ld %s-only correct)\n",
               dsa_json_num(mc, "p"), inum(mc, "b"), lb, inum(mc, "c"), lc);
    json_t *sel = json_object_get(b, "selections");
    if (sel)
        printf("  %-11s %ld/%ld samples select bit-identical top-k sets\n", "selections",
               inum(sel, "identical"), inum(sel, "n"));
    json_t *aa = json_object_get(b, "aa");
    if (aa) {
        printf("  %-11s ", "A/A");
        print_diff_ci(dsa_json_num(aa, "diff"), json_object_get(aa, "ci"), dec);
        printf("  (n %ld)\n", inum(aa, "n"));
    }
    printf("  %-11s %s\n", "verdict", json_string_value(json_object_get(v, "text")));
}

/* "2.4961 [2.4102, 2.5811]", the CI left out when there is none */
static void print_al_value(double x, json_t *ci)
{
    printf("%.4f", x);
    if (json_is_array(ci))
        printf(" [%.4f, %.4f]", json_real_value(json_array_get(ci, 0)),
               json_real_value(json_array_get(ci, 1)));
}

/*
 * acceptance length: candidate vs baseline over 32 requests (per-request draft counts), 95% …
 *   baseline    2.4961 [2.4102, 2.5811]
 *   candidate   2.3118 [2.2290, 2.3950]
 *   difference  -0.1843 [-0.2412, -0.1290]
 *   ratio       0.9262 [0.9051, 0.9484]  (-7.4%)
 */
static void print_acceptance(json_t *doc, const char *lb, const char *lc)
{
    json_t *al = json_object_get(doc, "acceptance");
    if (!json_is_object(al))
        return;
    bool per = !strcmp(json_string_value(json_object_get(al, "source")), "per-request");
    if (per)
        printf("\nacceptance length: over %ld paired requests (per-request draft counts), %g%% "
               "paired bootstrap CIs\n",
               inum(al, "n"), dsa_json_num(json_object_get(doc, "method"), "confidence") * 100);
    else
        printf("\nacceptance length: from the runs' counters (no per-request counts: no CI)\n");
    printf("  %-11s ", lb);
    print_al_value(dsa_json_num(al, "base"), json_object_get(al, "base_ci"));
    printf("\n  %-11s ", lc);
    print_al_value(dsa_json_num(al, "cand"), json_object_get(al, "cand_ci"));
    printf("\n  difference  %+.4f", dsa_json_num(al, "diff"));
    json_t *dci = json_object_get(al, "diff_ci");
    if (json_is_array(dci))
        printf(" [%+.4f, %+.4f]", json_real_value(json_array_get(dci, 0)),
               json_real_value(json_array_get(dci, 1)));
    printf("\n  ratio       ");
    print_al_value(dsa_json_num(al, "ratio"), json_object_get(al, "ratio_ci"));
    printf("  (%+.1f%%)\n", (dsa_json_num(al, "ratio") - 1) * 100);
}

static void print_text(json_t *doc)
{
    json_t *base = json_object_get(doc, "base"), *cand = json_object_get(doc, "cand");
    const char *lb = json_string_value(json_object_get(base, "label"));
    const char *lc = json_string_value(json_object_get(cand, "label"));
    printf("%s\n", json_string_value(json_object_get(json_object_get(doc, "method"), "text")));
    json_t *sides[3] = {base, cand, json_object_get(doc, "aa")};
    for (int s = 0; s < 3; s++) {
        if (!sides[s])
            continue;
        size_t nr = json_array_size(json_object_get(sides[s], "runs"));
        printf("%-11s %s (%zu run%s)\n", json_string_value(json_object_get(sides[s], "label")),
               json_string_value(json_object_get(sides[s], "path")), nr, nr == 1 ? "" : "s");
    }
    json_t *verdict = json_object_get(doc, "verdict");
    if (verdict)
        printf("verdict     %s\n", json_string_value(json_object_get(verdict, "text")));
    json_t *bins = json_object_get(doc, "bins");
    for (size_t k = 0; k < json_array_size(bins); k++) {
        printf("\n");
        print_bin(json_array_get(bins, k), lb, lc);
    }
    json_t *lat = json_object_get(doc, "latency");
    if (json_is_object(lat)) {
        printf("\nlatency: median per-request ratio %s/%s with a %g%% paired bootstrap CI\n", lc,
               lb, dsa_json_num(json_object_get(doc, "method"), "confidence") * 100);
        json_t *rows[2] = {json_object_get(lat, "aa"), lat};
        for (int q = 0; q < 2; q++) {
            json_t *r = rows[q], *ci = json_object_get(r, "ci");
            if (!r)
                continue;
            double lo = json_real_value(json_array_get(ci, 0)),
                   hi = json_real_value(json_array_get(ci, 1));
            int dec = dsa_fmt_decimals(hi - lo, 2, 3);
            printf("  %-11s %.*f [%.*f, %.*f]  (%ld requests)\n", q ? lc : "A/A", dec,
                   dsa_json_num(r, "ratio"), dec, lo, dec, hi, inum(r, "n"));
        }
        json_t *perm = json_object_get(lat, "permutation");
        if (perm)
            print_perm(perm, "log median latency per run");
    }
    json_t *id = json_object_get(doc, "identity");
    if (json_is_object(id)) {
        printf("\noutputs: ");
        if (inum(id, "n") > 0) {
            printf("same %ld/%ld", inum(id, "same"), inum(id, "n"));
            json_t *fd = json_object_get(id, "first_diff");
            if (json_is_object(fd)) {
                /* "why" is optional: hooks may leave it out */
                const char *why = json_string_value(json_object_get(fd, "why"));
                const char *fid = json_string_value(json_object_get(fd, "id"));
                printf(" (first difference: '%s', %s at byte %ld)", fid ? fid : "?",
                       why ? why : "output", inum(fd, "offset"));
            }
        } else {
            printf("no output text recorded");
        }
        json_t *al = json_object_get(id, "acceptance_length");
        if (json_is_object(al))
            printf("; acceptance length %.4f vs %.4f", dsa_json_num(al, "base"),
                   dsa_json_num(al, "cand"));
        printf("\n");
        /* an eval's own identity report (GSM8K: evals/gsm8k_compare.c) */
        if (json_is_string(json_object_get(id, "report")))
            printf("\n%s", json_string_value(json_object_get(id, "report")));
    }
    print_acceptance(doc, lb, lc);
    print_runs_note(doc);
    json_t *ex = json_object_get(doc, "excluded");
    if (json_array_size(ex)) {
        /* at most 20 ids here; --json lists them all */
        printf("\nnot compared (%zu, the same set on both sides):", json_array_size(ex));
        for (size_t k = 0; k < json_array_size(ex) && k < 20; k++) {
            json_t *e = json_array_get(ex, k);
            printf("%s %s (%s)", k ? "," : "", json_string_value(json_object_get(e, "id")),
                   json_string_value(json_object_get(e, "reason")));
        }
        if (json_array_size(ex) > 20)
            printf(", and %zu more (see --json)", json_array_size(ex) - 20);
        printf("\n");
    }
}

int cmd_compare(int argc, char **argv)
{
    bool as_json = false;
    double fail_if_worse = NAN, fail_if_al_drops = NAN;
    struct dsa_cmp_cli cli = DSA_CMP_CLI_INIT;
    struct dsa_option opts[] = {
        DSA_OPT_BOOL(0, "json", &as_json, "print the comparison document (JSON) instead of text"),
        DSA_OPT_DOUBLE(0, "fail-if-worse", &fail_if_worse, "X",
                       "exit 1 if any bin's CI lies wholly below -X"),
        DSA_OPT_DOUBLE(0, "fail-if-al-drops", &fail_if_al_drops, "X",
                       "exit 1 if the acceptance length drops by more than X (0.05: 5%; its "
                       "CI)"),
        DSA_CMP_CLI_OPTIONS(&cli),
        DSA_OPT_END(),
    };
    int n = dsa_opt_parse(&argc, argv, opts, usage);
    if (n < 0)
        return dsa_opt_exit(n);
    if (n != 2) {
        dsa_errorf("compare needs two run sets, BASELINE and CANDIDATE (got %d)", n);
        return DSA_EXIT_USAGE;
    }
    struct dsa_cmp_opts o;
    if (dsa_cmp_cli_apply(&cli, &o) < 0)
        return DSA_EXIT_USAGE;
    dsa_eval_cmp_hooks(&o);
    if (!isnan(fail_if_worse) && !(fail_if_worse >= 0)) {
        dsa_errorf("--fail-if-worse must be >= 0, not %g", fail_if_worse);
        return DSA_EXIT_USAGE;
    }
    o.fail_if_worse = fail_if_worse;
    if (!isnan(fail_if_al_drops) && !(fail_if_al_drops >= 0 && fail_if_al_drops < 1)) {
        dsa_errorf("--fail-if-al-drops must be in [0, 1), not %g", fail_if_al_drops);
        return DSA_EXIT_USAGE;
    }
    o.fail_if_al_drops = fail_if_al_drops;
    json_t *doc;
    int ret = dsa_cmp_load_build(argv[0], argv[1], cli.baseline_aa, &o, &doc);
    if (ret)
        return ret;
    if (as_json) {
        dsa_json_print_doc(doc, stdout);
    } else {
        print_text(doc);
    }
    json_t *worse = json_object_get(json_object_get(doc, "fail_if_worse"), "bins");
    for (size_t k = 0; k < json_array_size(worse); k++) {
        dsa_errorf("regression: the CI of bin '%s' lies wholly below -%g",
                   json_string_value(json_array_get(worse, k)), fail_if_worse);
        ret = DSA_EXIT_FAIL;
    }
    json_t *ald = json_object_get(doc, "fail_if_al_drops");
    if (!isnan(fail_if_al_drops) && !json_is_object(json_object_get(doc, "acceptance"))) {
        dsa_errorf("--fail-if-al-drops: neither side has an acceptance length (run gsm8k --mtp)");
        ret = DSA_EXIT_FAIL;
    } else if (json_is_true(json_object_get(ald, "dropped"))) {
        dsa_errorf("regression: the acceptance length dropped by more than %g%% (ratio %.4f)",
                   fail_if_al_drops * 100,
                   json_number_value(json_object_get(json_object_get(doc, "acceptance"), "ratio")));
        ret = DSA_EXIT_FAIL;
    }
    json_t *id = json_object_get(doc, "identity");
    const struct dsa_eval *ev = dsa_eval_find(json_string_value(json_object_get(id, "eval")));
    if (json_is_object(id) && json_is_false(json_object_get(id, "identical")) && ev &&
        ev->identity_gates) {
        dsa_errorf("outputs differ: %ld of %ld identical",
                   (long)json_integer_value(json_object_get(id, "same")),
                   (long)json_integer_value(json_object_get(id, "n")));
        ret = DSA_EXIT_FAIL;
    }
    json_decref(doc);
    return ret;
}
