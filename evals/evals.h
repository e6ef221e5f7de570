/*
 * The evaluations, as rows of one table (like the commands[] of src/main.c): what the command
 * line, compare and report need to know of an eval, so that none of them names one.
 *
 * Adding an eval: its files under evals/ (load and filter samples, build requests, grade
 * answers), its row in dsa_evals[] (evals/evals.c), a thin src/cmd_<name>.c over the run loop
 * handed to it, docs/<name>.md and its tests (docs/design.md "Adding an eval").
 *
 * Ownership: rows are static; nothing to free.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_EVALS_EVALS_H
#define DSA_EVALS_EVALS_H

#include <stdbool.h>

#include "backend/backend.h"
#include "stats/compare.h"

/* What an eval gives the run loop's drive (src/run/loop.h); ud is the eval's state. */
struct dsa_eval_feed {
    /* Submits the next sample that still needs a request: 1 submitted, 0 nothing more to
       submit, or a negative enum dsa_exit (-DSA_EXIT_DATA …) that ends the run. */
    int (*submit_next)(void *ud, dsa_backend *b);
    /* true when the eval must stop issuing (a write error, the server gone); NULL: never */
    bool (*must_stop)(void *ud);
    /* after each turn of the backend (progress); NULL: none */
    void (*tick)(void *ud, dsa_backend *b);
    int poll_ms; /* longest wait of one turn of the backend */
};

/* The drive an eval is run with (the command passes dsa_loop_drive): returns an enum dsa_exit.
   Evals never call the run loop by name, so the folders point one way. */
typedef int (*dsa_eval_drive_fn)(dsa_backend *b, const struct dsa_eval_feed *feed, void *ud,
                                 volatile int *interrupted);

struct dsa_eval {
    const char *name;  /* the run headers' "eval": "mrcr" */
    const char *title; /* in report headings: "MRCR" */
    /* runs on the in-process backend (--backend inprocess); false: the command refuses it */
    bool inprocess;
    /* compare's "identity" of two sides (NULL: none); "identical": false then makes compare
       exit 1 when identity_gates */
    dsa_cmp_identity_fn compare_identity;
    bool identity_gates;
    /* compare's "acceptance" of two sides (speculative decoding), NULL: none */
    dsa_cmp_acceptance_fn compare_acceptance;
};

/* A failure that is the server's state, not the sample's: nothing listening, the key refused
   (revoked mid-run), or the in-process stack failed. The run stops (exit 4) instead of
   recording every remaining sample as failed; a rerun sends them. */
bool dsa_eval_run_stopper(const struct dsa_result *r);

/* The table, ended by a row whose name is NULL. */
extern const struct dsa_eval dsa_evals[];

/* The row of `name`, or NULL. */
const struct dsa_eval *dsa_eval_find(const char *name);
/* The identity hook of an eval (compare's dsa_cmp_opts.identity_for), NULL when it has none. */
dsa_cmp_identity_fn dsa_eval_identity_for(const char *name);
/* The acceptance hook of an eval (compare's dsa_cmp_opts.acceptance_for). Runs that name no
   eval (name NULL: plain score files) get GSM8K's, which reads any counts they carry. */
dsa_cmp_acceptance_fn dsa_eval_acceptance_for(const char *name);
/* Sets compare's lookups of the eval hooks (identity_for, acceptance_for) to the table's. */
void dsa_eval_cmp_hooks(struct dsa_cmp_opts *o);
/* Checks that `name` runs on backend `kind` ("endpoint", "inprocess"). Returns 0, or -1 with
   one line printed: "'ruler' does not run in-process (--backend inprocess); use --endpoint". */
int dsa_eval_check_backend(const struct dsa_eval *e, const char *kind);

#endif
