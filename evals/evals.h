/*
 * The evaluations, as rows of one table (like the commands[] of src/main.c): what the command
 * line, compare and report need to know of an eval, so that none of them names one.
 *
 * Adding an eval: its files under evals/ (load and filter samples, build requests, grade
 * answers), its row in dsa_evals[] (evals/evals.c), a thin src/cmd_<name>.c over the run loop
 * (src/run/loop.h), docs/<name>.md and its tests (docs/design.md "Adding an eval").
 *
 * Ownership: rows are static; nothing to free.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_EVALS_EVALS_H
#define DSA_EVALS_EVALS_H

#include <stdbool.h>

#include "stats/compare.h"

struct dsa_eval {
    const char *name;  /* the run headers' "eval": "mrcr" */
    const char *title; /* in report headings: "MRCR" */
    /* runs on the in-process backend (--backend inprocess); false: the command refuses it */
    bool inprocess;
    /* compare's "identity" of two sides (NULL: none); "identical": false then makes compare
       exit 1 when identity_gates */
    dsa_cmp_identity_fn compare_identity;
    bool identity_gates;
};

/* The table, ended by a row whose name is NULL. */
extern const struct dsa_eval dsa_evals[];

/* The row of `name`, or NULL. */
const struct dsa_eval *dsa_eval_find(const char *name);
/* The identity hook of an eval (compare's dsa_cmp_opts.identity_for), NULL when it has none. */
dsa_cmp_identity_fn dsa_eval_identity_for(const char *name);
/* Checks that `name` runs on backend `kind` ("endpoint", "inprocess"). Returns 0, or -1 with
   one line printed: "'ruler' does not run in-process (--backend inprocess); use --endpoint". */
int dsa_eval_check_backend(const struct dsa_eval *e, const char *kind);

#endif
