/*
 * The evaluations, as rows of one table (like the commands[] of src/main.c): what the command
 * line, compare and report need to know of an eval, so that none of them names one.
 *
 * Adding an eval: its files under evals/ (its options struct and its struct dsa_eval_hooks:
 * load and filter samples, build requests, grade answers, summary lines), its row in
 * dsa_evals[] (evals/evals.c), a thin src/cmd_<name>.c that parses into the options and calls
 * the run loop (src/run/run.h) with the row, docs/<name>.md and its tests (docs/design.md
 * "Adding an eval").
 *
 * Ownership: rows and hooks are static; nothing to free. The hooks' ownership is stated at
 * each one.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_EVALS_EVALS_H
#define DSA_EVALS_EVALS_H

#include <stdbool.h>

#include <jansson.h>
#include <stddef.h>

#include "backend/backend.h"
#include "backend/inprocess.h"
#include "stats/compare.h"
#include "store/store.h"
#include "util/shard.h"

/*
 * What the run loop (src/run/run.h) tells an eval of the run it drives: the options every eval
 * command shares, checked. Borrowed for the whole run; check may fill `stack` (the in-process
 * seed an eval takes from its own options).
 */
struct dsa_eval_ctx {
    bool inprocess;         /* --backend inprocess (else the endpoint) */
    struct dsa_shard shard; /* --shard i/n; n = 0: every sample */
    const char *out;        /* the run folder; NULL only where the eval allows it (gsm8k) */
    int runs;               /* --runs N: run files 1..N of the same samples */
    const char *traces;     /* --traces DIR (the manifest's rows are the samples), or NULL */
    bool as_json, quiet;    /* --json, -q */
    bool force_new;         /* --force-new */
    bool retry_failed;      /* --retry-failed */
    json_t *command;        /* the command line for the run headers (dsa_run_command_json) */
    /* endpoint: how many --endpoint URLs, and what the run headers record of its options */
    int endpoints;
    int concurrency, retries;
    double timeout_s;
    json_t *extra_body; /* NULL: none */
    /* inprocess: the stack's options (the backend is opened with them) */
    struct dsa_inproc_opts stack;
    /* set by SIGINT/SIGTERM (the loop's drive polls it) */
    volatile int *interrupted;
};

struct dsa_traces_opts;

/* What the summary hook is given once every run has ended. */
struct dsa_eval_summary_in {
    json_t *runs;     /* the records of every run file, resumed and new (an array of arrays) */
    int ret;          /* how the runs ended: an enum dsa_exit */
    dsa_backend *b;   /* the backend, still open (counters read after the run) */
    const char *path; /* run 1's file, or NULL without --out */
};

/*
 * The hooks of an eval, which the run loop (src/run/run.c) drives for both backends. `opts` is
 * the eval's own options struct (declared in its header, filled by its thin command file);
 * `ev` the eval's run state made by load. A "job" is one sample on its way, the eval's. Hooks
 * return an enum dsa_exit unless said otherwise, and print what they refuse.
 *
 * The loop owns everything around them: the backend, the run files (header, match keys with
 * the shard, resume), the progress meter, signals, stops, --runs N, --shard i/n (by each id
 * next gives), and the interrupted note.
 */
struct dsa_eval_hooks {
    /* checks and parses the eval's options for the run ctx describes (may set ctx->stack's
       seed). DSA_EXIT_OK or DSA_EXIT_USAGE */
    int (*check)(void *opts, struct dsa_eval_ctx *ctx);
    /* --traces DIR: what the captured-traces run of this eval takes of its options (filters,
       --mtp) into *t (evals/inproc_traces.h); the loop then drives dsa_traces_hooks in place
       of this struct's load … free. NULL: the eval has none */
    int (*traces)(void *opts, struct dsa_traces_opts *t);
    /* loads and filters the samples (the dataset with the options, --limit, the bins; a bad
       dataset is reported before any network traffic) into a new *ev */
    int (*load)(void *opts, const struct dsa_eval_ctx *ctx, void **ev);
    /* NULL, or the run that needs no backend when the options ask for one (gsm8k
       --print-prompts): -1 to go on, else the exit status */
    int (*offline)(void *ev);
    /* the backend is open: what the eval reads of it (context length, dialect, counters) */
    int (*begin)(void *ev, dsa_backend *b);
    /* the samples of this shard (the meter and the resume note) */
    long (*total)(void *ev);
    /* NULL, or the progress meter's label of run ri in place of "<name> run i/n" */
    void (*label)(void *ev, int ri, char *buf, size_t size);
    /* run `ri`'s header: the loop made it (command, eval, run, backend = describe()); the
       eval adds match, dataset and params (the loop then adds the shard to match). `old` is
       the header of the run file already there (a resume), or NULL: an eval whose match keys
       changed form writes them in the old file's form when they say the same, so that run
       files of older builds resume */
    void (*header)(void *ev, dsa_backend *b, int ri, json_t *header, json_t *old);
    /* run ri begins, its file open (NULL without --out): next starts again from the first
       sample; resume checks, the line naming the file. NULL: nothing to do */
    int (*start)(void *ev, dsa_backend *b, dsa_run *run, const char *path);
    /* the next sample in order: a new job whose id (borrowed from the job) is *id. 1, 0 when
       none is left, or a negative enum dsa_exit. The loop skips ids of other shards and ids
       the run file holds (job_free) */
    int (*next)(void *ev, void **job, const char **id);
    /* the request of a job into *rq (api, body: a new reference, stream); or a record that
       needs no request into *rec (over the context by the built-in count). 0 or a negative
       enum dsa_exit */
    int (*request)(void *ev, void *job, struct dsa_request *rq, json_t **rec);
    /* the record of an answer into *rec (a new reference), or a follow-up request of the same
       job into *rq (mrcr: the count, then the chat). Cancelled requests and those that stop
       the run (dsa_eval_run_stopper) never get here */
    void (*grade)(void *ev, void *job, const struct dsa_result *r, json_t **rec,
                  struct dsa_request *rq);
    void (*job_free)(void *ev, void *job);
    /* the summary lines (text, or the document with --json) and the final exit status */
    int (*summary)(void *ev, const struct dsa_eval_summary_in *in);
    void (*free)(void *ev);
    /* longest wait of one turn of the endpoint backend, ms (in-process: 0, a turn runs one
       request) */
    int poll_ms;
};

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
    /* load, request, grade, summary: what the run loop drives (NULL: a row for compare and
       report only) */
    const struct dsa_eval_hooks *hooks;
};

/* A failure that is the server's state, not the sample's: nothing listening, the key refused
   (revoked mid-run), or the in-process stack failed. The run stops (exit 4) instead of
   recording every remaining sample as failed; a rerun sends them. */
bool dsa_eval_run_stopper(const struct dsa_result *r);

/* A failure that is the sample's input: the in-process backend cannot read the trace a request
   names, or it does not fit (printed there). The run stops with exit 3, its finished records
   kept. */
bool dsa_eval_run_bad_input(const struct dsa_result *r);

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
