/*
 * dsa-eval plan: from one or more baseline runs, how many runs per side a comparison needs to
 * detect a given change at 80 % power, and what a given number of runs can detect.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "stats/compare.h"
#include "util/json.h"
#include "util/exitcode.h"
#include "util/msg.h"
#include "util/opt.h"

static const char *const usage[] = {
    "dsa-eval plan --from RUNS [--bin 256k] [--detect 0.02] [--runs 5] [--json]  "
    "(RUNS: baseline run files; several runs estimate the run-to-run noise)",
    NULL,
};

/* one bin planned by samples: greedy runs that are identical, or one run */
static void print_by_samples(json_t *b, double detect)
{
    bool identical = !strcmp(json_string_value(json_object_get(b, "why")), "identical runs");
    printf(" %6.3f %9.3f  %s; MDE80 %.3f with these %lld samples", dsa_json_num(b, "mean"),
           sqrt(dsa_json_num(b, "var_sample")),
           identical ? "runs identical (greedy): more runs do not help" : "one run†",
           dsa_json_num(b, "mde_n"), (long long)json_integer_value(json_object_get(b, "n")));
    json_t *need = json_object_get(b, "samples_needed");
    if (!isnan(detect) && json_is_integer(need))
        printf(", %lld samples to detect %.3f", (long long)json_integer_value(need), detect);
    else if (!isnan(detect))
        printf(", no number of samples detects %.3f", detect);
    printf("\n");
}

/*
 * Runs per side to detect a change of 0.020 (power 80%, two-sided 95%), from runs/main (3 runs)
 * bin         n  runs   mean  sample sd  noise sd  run sd  runs needed  MDE with 1 2 3 4 5 runs
 * ≤256K      94     3  0.612      0.110     0.080   0.021            5  0.045 0.032 ...
 * ≤128K      90     3  0.700      0.120  runs identical (greedy): more runs do not help; MDE80 …
 * ≤512K       0     3  n/a: all 40 samples are over the served context (excluded)
 */
static void print_plan(json_t *doc, long max_runs)
{
    double detect = dsa_json_num(doc, "detect");
    printf("Runs per side ");
    if (!isnan(detect))
        printf("to detect a change of %.3f ", detect);
    printf("(power %g%%, two-sided %g%%), from %s (%lld run%s)\n", dsa_json_num(doc, "power") * 100,
           dsa_json_num(doc, "confidence") * 100, json_string_value(json_object_get(doc, "source")),
           (long long)json_integer_value(json_object_get(doc, "runs")),
           json_integer_value(json_object_get(doc, "runs")) == 1 ? "" : "s");
    json_t *bins = json_object_get(doc, "bins");
    printf("%-8s %5s %4s %6s %9s %8s %6s %11s  MDE with", "bin", "n", "runs", "mean", "sample sd",
           "noise sd", "run sd", "runs needed");
    for (long k = 1; k <= max_runs; k++)
        printf(" %ld", k);
    printf(" run%s per side\n", max_runs == 1 ? "" : "s");
    bool any_one = false, any_same = false;
    for (size_t k = 0; k < json_array_size(bins); k++) {
        json_t *b = json_array_get(bins, k);
        /* "≤" is 3 bytes wide and 1 column: pad by display width */
        const char *label = json_string_value(json_object_get(b, "bin"));
        int extra = strncmp(label, "\xe2\x89\xa4", 3) ? 0 : 2;
        printf("%-*s %5lld %4lld", 8 + extra, label,
               (long long)json_integer_value(json_object_get(b, "n")),
               (long long)json_integer_value(json_object_get(b, "runs")));
        if (isnan(dsa_json_num(b, "mean"))) {
            printf("  n/a: %s\n", json_string_value(json_object_get(b, "no_figure")));
            continue;
        }
        const char *mode = json_string_value(json_object_get(b, "mode"));
        if (!strcmp(mode, "samples")) {
            bool same = !strcmp(json_string_value(json_object_get(b, "why")), "identical runs");
            any_same |= same;
            any_one |= !same;
            print_by_samples(b, detect);
            continue;
        }
        printf(" %6.3f %9.3f %7.3f  %6.3f", dsa_json_num(b, "mean"),
               sqrt(dsa_json_num(b, "var_sample")), sqrt(dsa_json_num(b, "var_resid")),
               sqrt(dsa_json_num(b, "var_run")));
        json_t *need = json_object_get(b, "runs_needed");
        if (json_is_integer(need))
            printf(" %11lld ", (long long)json_integer_value(need));
        else
            printf(" %11s ", "-");
        json_t *mde = json_object_get(b, "mde");
        for (size_t q = 0; q < json_array_size(mde); q++)
            printf(" %.3f", dsa_json_num(json_array_get(mde, q), "mde"));
        printf("\n");
    }
    if (any_same)
        printf("runs identical (greedy decoding): a repeated run adds no information, only more "
               "samples shrink the MDE; the figures assume a paired correlation of 0 (an upper "
               "bound)\n");
    if (any_one)
        printf("† one run cannot show whether runs differ: planned as greedy, from the per-sample "
               "variance; with sampling, give plan two or more runs\n");
    printf("A run-level permutation test needs at least 4 runs per side to reach p < 0.05.\n");
}

int cmd_plan(int argc, char **argv)
{
    const char *from = NULL, *bin = NULL;
    double detect = NAN, confidence = 0.95, power = 0.8;
    long runs = 5;
    bool as_json = false;
    struct dsa_option opts[] = {
        DSA_OPT_STRING(0, "from", &from, "RUNS", "baseline runs: a directory or one run file"),
        DSA_OPT_STRING(0, "bin", &bin, "BIN", "only this bin (label or edge: 256k, ≤256K)"),
        DSA_OPT_DOUBLE(0, "detect", &detect, "DELTA", "the change to detect (e.g. 0.02)"),
        DSA_OPT_LONG(0, "runs", &runs, "K", "print the MDE for 1..K runs per side (5)"),
        DSA_OPT_DOUBLE(0, "power", &power, "P", "power (0.8)"),
        DSA_OPT_DOUBLE(0, "confidence", &confidence, "C", "two-sided level (0.95)"),
        DSA_OPT_BOOL(0, "json", &as_json, "print JSON"),
        DSA_OPT_END(),
    };
    int n = dsa_opt_parse(&argc, argv, opts, usage);
    if (n < 0)
        return dsa_opt_exit(n);
    if (n == 1 && !from)
        from = argv[0];
    else if (n > 0) {
        dsa_errorf("plan takes its runs from --from");
        return DSA_EXIT_USAGE;
    }
    if (!from) {
        dsa_errorf("plan needs --from RUNS");
        return DSA_EXIT_USAGE;
    }
    if (!isnan(detect) && !(detect > 0)) {
        dsa_errorf("--detect must be > 0, not %g", detect);
        return DSA_EXIT_USAGE;
    }
    if (runs < 1 || runs > 100) {
        dsa_errorf("--runs must be between 1 and 100, not %ld", runs);
        return DSA_EXIT_USAGE;
    }
    if (!(power > 0 && power < 1) || !(confidence >= 0.5 && confidence < 1)) {
        dsa_errorf("--power must be in (0, 1) and --confidence in [0.5, 1)");
        return DSA_EXIT_USAGE;
    }
    struct dsa_cmp_side side;
    if (dsa_cmp_side_load(&side, from) < 0) {
        dsa_cmp_side_release(&side);
        return DSA_EXIT_DATA;
    }
    size_t nrec = 0;
    for (size_t q = 0; q < side.n_runs; q++)
        nrec += json_array_size(side.runs[q].records);
    if (!nrec) { /* an empty file would otherwise print a table of n/a and exit 0 */
        dsa_errorf("no records in '%s': nothing to plan from", from);
        dsa_cmp_side_release(&side);
        return DSA_EXIT_DATA;
    }
    json_t *doc = dsa_cmp_plan(&side, bin, detect, runs, confidence, power);
    dsa_cmp_side_release(&side);
    if (!doc)
        return DSA_EXIT_DATA;
    if (as_json) {
        dsa_json_print_doc(doc, stdout);
    } else {
        print_plan(doc, runs);
    }
    json_decref(doc);
    return DSA_EXIT_OK;
}
