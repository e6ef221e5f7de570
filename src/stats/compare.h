/*
 * The comparison of two sets of runs (docs/design.md "Contracts"): loads run files or plain score
 * files, pairs samples by id within each bin, applies one exclusion set to both sides, runs
 * stats.h per bin and overall, and builds the comparison document (JSON) that `compare`
 * prints and every report format renders. The document's schema is in docs/compare.md.
 *
 * Ownership: a dsa_cmp_side owns its paths, headers and records (released by
 * dsa_cmp_side_release); dsa_cmp_build() borrows the sides and returns a new reference.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_STATS_COMPARE_H
#define DSA_STATS_COMPARE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "stats/stats.h"
#include "util/opt.h"

/* one run: a run file (header + records) or a plain score file (header = {}) */
struct dsa_cmp_run {
    char *path;
    json_t *header;  /* object */
    json_t *records; /* array of objects, file order */
};

/* one side of a comparison: a directory of runs (*.jsonl, sorted by name) or one file */
struct dsa_cmp_side {
    char *path;
    size_t n_runs;
    struct dsa_cmp_run *runs;
};

/* Loads `path` (file or directory). Returns 0, or -1 with one line printed (exit
   DSA_EXIT_DATA: unreadable, unparsable, no run files, wrong types, duplicate ids). */
int dsa_cmp_side_load(struct dsa_cmp_side *side, const char *path);
void dsa_cmp_side_release(struct dsa_cmp_side *side);
/* Adds one run already parsed (header: object, records: array; both references are stolen)
   under the display name `path`, after checking its records as dsa_cmp_side_load() does.
   Returns 0, or -1 with one line printed. Initialise the side with {0} first. */
int dsa_cmp_side_add(struct dsa_cmp_side *side, const char *path, json_t *header, json_t *records);

/* an eval's identity check of two sides (see "Eval-specific identity checks" below) */
typedef json_t *(*dsa_cmp_identity_fn)(const struct dsa_cmp_side *base,
                                       const struct dsa_cmp_side *cand);

/* an eval's statistic of speculative decoding over two sides (compare's "acceptance": schema in
   docs/compare.md "Acceptance length"), NULL when it has none; a new reference */
typedef json_t *(*dsa_cmp_acceptance_fn)(const struct dsa_cmp_side *base,
                                         const struct dsa_cmp_side *cand,
                                         const struct dsa_boot_cfg *cfg);

struct dsa_cmp_opts {
    struct dsa_boot_cfg boot;
    const char *label_base; /* display labels (reports); never part of a stream seed */
    const char *label_cand;
    double fail_if_worse;    /* NAN = off; else flag bins whose CI lies wholly below -x */
    int threads;             /* bins computed in parallel; results never depend on it */
    double fail_if_al_drops; /* NAN = off; else flag an acceptance-length ratio CI below 1 - x */
    /* the identity hook of an eval named by the run headers (the eval table's lookup,
       evals/evals.h), NULL for none; runs that name no eval get the built-in check */
    dsa_cmp_identity_fn (*identity_for)(const char *eval);
    /* the acceptance hook of an eval (the eval table's lookup; called with NULL for runs
       that name no eval), NULL: no "acceptance" for any run */
    dsa_cmp_acceptance_fn (*acceptance_for)(const char *eval);
};

/*
 * Eval-specific identity checks, e.g. GSM8K greedy runs: "same outputs 32/32; acceptance
 * length 3.4904 vs 3.4904". A hook compares the two sides' run files and returns a new JSON
 * object (schema in docs/compare.md, "identity") with at least
 *     {"eval": "gsm8k", "n": 32, "same": 32, "identical": true,
 *      "first_diff": null | {"id": "q0017", "offset": 812},
 *      "acceptance_length": {"base": 3.4904, "cand": 3.4904} | null}
 * or NULL when there is nothing to compare. "identical": false makes `compare` exit 1 for an
 * eval whose row says so (evals/evals.h identity_gates). Hooks are looked up by the run
 * headers' "eval" through dsa_cmp_opts.identity_for (the eval table); runs that name no eval
 * get the built-in check when their records carry "output" strings (byte equality per id)
 * and their headers an acceptance length.
 */

/* Builds the comparison document; `aa` (a second set of baseline runs, A/A noise) may be
   NULL. Returns NULL with one line printed on inconsistent input (a sample in two bins). */
json_t *dsa_cmp_build(const struct dsa_cmp_side *base, const struct dsa_cmp_side *cand,
                      const struct dsa_cmp_side *aa, const struct dsa_cmp_opts *opts);

/* The acceptance length a run header records ("acceptance_length", or "mtp" of it) in the
   first run of s that has one; false when none does. */
bool dsa_cmp_header_al(const struct dsa_cmp_side *s, double *al);
/* [lo, hi] as a JSON array, or null when an end is not finite (new reference) */
json_t *dsa_cmp_json_ci(double lo, double hi);

/* Verdicts (docs/compare.md "Verdicts"): dsa_cmp_build() judges each bin object of the
   document from its CI, two-level CI and MDE80 (tolerance: --fail-if-worse X, or NAN), as
   {"verdict": "worse"|"better"|"no change detected"|"inconclusive", "reason": null |
   "identical" | "n too small" | "runs disagree" | "no paired samples", "interval":
   "bootstrap"|"two-level", "text": "no change detected (MDE80 0.044)"}, and sums the bins up
   ({"verdict": … | "mixed", "text"}): "verdict" in every bin and at the top. */

/* Loads the sides named by the paths (aa_path may be NULL) and builds the document into
 *doc. Returns DSA_EXIT_OK, or DSA_EXIT_DATA after printing why. */
int dsa_cmp_load_build(const char *base_path, const char *cand_path, const char *aa_path,
                       const struct dsa_cmp_opts *opts, json_t **doc);

/* The options compare and report share (one table fragment, one validation). */
struct dsa_cmp_cli {
    long resamples;
    double confidence;
    const char *ci, *rng;
    long seed;
    const char *baseline_aa;
    const char *label_base, *label_cand;
    int threads; /* 0 = the number of online CPUs, at most 8 */
};
#define DSA_CMP_CLI_INIT                                                                           \
    {                                                                                              \
        10000, 0.95, "percentile", "taus2", 1, NULL, "baseline", "candidate", 0                    \
    }
#define DSA_CMP_CLI_OPTIONS(c)                                                                     \
    DSA_OPT_STRING(0, "baseline-aa", &(c)->baseline_aa, "RUNS",                                    \
                   "second set of baseline runs: adds the A/A (noise floor) rows"),                \
        DSA_OPT_LONG(0, "resamples", &(c)->resamples, "B", "bootstrap resamples (10000)"),         \
        DSA_OPT_DOUBLE(0, "confidence", &(c)->confidence, "C", "two-sided CI level (0.95)"),       \
        DSA_OPT_STRING(0, "ci", &(c)->ci, "METHOD", "percentile (default) or bca"),                \
        DSA_OPT_LONG(0, "seed", &(c)->seed, "S", "bootstrap seed (default 1)"),                    \
        DSA_OPT_STRING(0, "rng", &(c)->rng, "NAME", "taus2 (default) or mt19937"),                 \
        DSA_OPT_STRING(0, "label-base", &(c)->label_base, "TEXT",                                  \
                       "name of the baseline in outputs (default: baseline)"),                     \
        DSA_OPT_STRING(0, "label-cand", &(c)->label_cand, "TEXT",                                  \
                       "name of the candidate in outputs (default: candidate)"),                   \
        DSA_OPT_INT(0, "threads", &(c)->threads, "N",                                              \
                    "bins computed in parallel (default: CPUs, at most 8); never changes a "       \
                    "number")
/* Validates the shared options into o (fail_if_worse = NAN). Returns 0, or -1 after printing
   a usage error (exit DSA_EXIT_USAGE). */
int dsa_cmp_cli_apply(const struct dsa_cmp_cli *c, struct dsa_cmp_opts *o);

/* Planning from one side's runs (`plan`): per bin (and "all"), the variance components of
   stats.h and the runs per side needed to detect `detect` (NAN: skip), plus the MDE with
   1..max_runs runs per side. Bins whose label or token edge matches `only_bin` (NULL = all).
   Returns {"source", "runs", "detect", "confidence", "power", "bins": [...]} (schema in
   docs/compare.md), or NULL with a message when no bin matched. */
json_t *dsa_cmp_plan(const struct dsa_cmp_side *s, const char *only_bin, double detect,
                     long max_runs, double confidence, double power);

#endif
