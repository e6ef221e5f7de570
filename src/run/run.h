/*
 * The run loop of every eval command (docs/design.md "The pipeline"), written once for every
 * eval and both backends: the options the commands share checked, the eval's hooks
 * (evals/evals.h, struct dsa_eval_hooks) driven — load the samples, open the backend, for each
 * of --runs N the run file (header, match keys with --shard, resume), the progress meter, the
 * drive (src/run/loop.h: submit while slots are idle, signals, stops), every answer graded and
 * appended, then the summary, the exit status and the interrupted note.
 *
 * A command file parses its option table into a struct dsa_loop_opts (the shared options) and
 * the eval's own options struct, finds its row (dsa_eval_find) and calls dsa_loop_run.
 *
 * Ownership: dsa_loop_opts owns the command line JSON and what its endpoint and in-process
 * parts own (released by dsa_loop_opts_release); the loop borrows the row, the eval's
 * options and the backend given to dsa_loop_run_on.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_RUN_RUN_H
#define DSA_RUN_RUN_H

#include <jansson.h>
#include <stdbool.h>

#include "backend/backend.h"
#include "evals/evals.h"
#include "run/endpoint_cli.h"
#include "run/inproc_cli.h"

struct dsa_loop_opts {
    const char *backend; /* --backend: "endpoint" (default) or "inprocess" */
    const char *out;     /* --out DIR */
    const char *shard;   /* --shard I/N, NULL: unsharded */
    const char *traces;  /* --traces DIR (in-process), NULL: none */
    int runs;            /* --runs N (default 1) */
    bool force_new, retry_failed, quiet, as_json;
    struct dsa_loop_endpoint ep; /* --endpoint … --timeout */
    struct dsa_loop_inproc ip;   /* --device, --variant, --kernels, --topk */
    json_t *command;             /* the command line, as the run headers record it */
    volatile int *interrupted;   /* the signal flag, or NULL */
};

/* Sets the defaults: endpoint backend, one run, the command line of argv (before the option
   parser permutes it), the endpoint defaults (dsa_loop_endpoint_init) and the top-k default
   (dsa_loop_inproc_init) of this command. */
void dsa_loop_opts_init(struct dsa_loop_opts *o, int argc, char **argv, int concurrency,
                        int retries, double timeout_s, const char *concurrency_why, int topk);
void dsa_loop_opts_release(struct dsa_loop_opts *o);

/* Runs eval `e` (a row with hooks) with its options `eval_opts` and the shared options: checks,
   load (with --traces: the traces hooks of evals/inproc_traces.h on the eval's options), the
   backend the options name, the runs, the summary. Returns an enum
   dsa_exit (each failure printed as one line). */
int dsa_loop_run(const struct dsa_eval *e, void *eval_opts, struct dsa_loop_opts *o);

/* The same on a backend the caller opened (borrowed; tests, and callers that hold one):
   --traces and --print-prompts do not apply. */
int dsa_loop_run_on(const struct dsa_eval *e, void *eval_opts, struct dsa_loop_opts *o,
                    dsa_backend *b);

#endif
