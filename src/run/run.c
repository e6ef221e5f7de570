/* The run loop of the eval commands; see run.h.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "run/run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evals/inproc_traces.h"
#include "run/loop.h"
#include "store/store.h"
#include "util/buf.h"
#include "util/exitcode.h"
#include "util/msg.h"
#include "util/progress.h"

void dsa_loop_opts_init(struct dsa_loop_opts *o, int argc, char **argv, int concurrency,
                        int retries, double timeout_s, const char *concurrency_why, int topk)
{
    memset(o, 0, sizeof *o);
    o->backend = "endpoint";
    o->runs = 1;
    o->command = dsa_run_command_json(argc, argv);
    dsa_loop_endpoint_init(&o->ep, concurrency, retries, timeout_s, concurrency_why);
    dsa_loop_inproc_init(&o->ip, topk);
}

void dsa_loop_opts_release(struct dsa_loop_opts *o)
{
    dsa_loop_endpoint_release(&o->ep);
    dsa_loop_inproc_release(&o->ip);
    json_decref(o->command);
    o->command = NULL;
}

/* The state of one invocation: the eval, its run state, and the run being driven. */
struct loop {
    const struct dsa_eval *e;
    const struct dsa_eval_hooks *h;
    void *ev;
    const struct dsa_eval_ctx *ctx;
    dsa_backend *b;
    dsa_run *run; /* the run file of the run being driven; NULL without --out */
    dsa_progress *pg;
    long seen_retries; /* the backend's retries the meter has counted */
    /* records appended since the last sync (group commit): reported to the meter after it */
    size_t unsynced_done, unsynced_failed;
    int ret;       /* an exit status that stopped the run (a failed write), or 0 */
    bool stop;     /* stop issuing (the drive's must_stop) */
    char *stopped; /* the error of the request that found the server gone, or NULL */
};

/* one job in flight, with the loop it reports to */
struct flight {
    struct loop *l;
    void *job;
};

/* ---- the shared options ---- */

static int backend_ctx(const struct dsa_eval *e, struct dsa_loop_opts *o, struct dsa_eval_ctx *c)
{
    if (strcmp(o->backend, "endpoint") && strcmp(o->backend, "inprocess")) {
        dsa_errorf("unknown backend '%s' (endpoint or inprocess)", o->backend);
        return DSA_EXIT_USAGE;
    }
    if (dsa_eval_check_backend(e, o->backend))
        return DSA_EXIT_USAGE;
    c->inprocess = !strcmp(o->backend, "inprocess");
    if (o->traces && !c->inprocess) {
        dsa_errorf("--traces DIR is for --backend inprocess");
        return DSA_EXIT_USAGE;
    }
    if (o->retry_failed && c->inprocess) {
        dsa_errorf("--retry-failed is for --backend endpoint (an in-process row fails the same "
                   "way every time)");
        return DSA_EXIT_USAGE;
    }
    if (c->inprocess)
        return dsa_loop_inproc_opts(&o->ip, &c->stack);
    dsa_inproc_opts_init(&c->stack);
    return DSA_EXIT_OK;
}

/* the shared options checked into c, then the eval's own */
static int prepare(const struct dsa_eval *e, void *eval_opts, struct dsa_loop_opts *o,
                   struct dsa_eval_ctx *c)
{
    memset(c, 0, sizeof *c);
    if (o->quiet)
        dsa_msg_quiet = true;
    if (!e || !e->hooks) {
        dsa_errorf("'%s' is not an eval that runs", e ? e->name : "(none)");
        return DSA_EXIT_INTERNAL;
    }
    int ret = dsa_loop_endpoint_check(&o->ep);
    if (ret)
        return ret;
    if (dsa_shard_parse(o->shard, &c->shard) < 0)
        return DSA_EXIT_USAGE;
    if ((ret = backend_ctx(e, o, c)))
        return ret;
    c->out = o->out;
    c->runs = o->runs;
    c->traces = o->traces;
    c->as_json = o->as_json;
    c->quiet = o->quiet;
    c->force_new = o->force_new;
    c->retry_failed = o->retry_failed;
    c->command = o->command;
    c->endpoints = (int)o->ep.urls.n;
    c->concurrency = o->ep.concurrency;
    c->retries = o->ep.retries;
    c->timeout_s = o->ep.timeout_s;
    c->extra_body = o->ep.extra_body;
    c->interrupted = o->interrupted;
    return e->hooks->check(eval_opts, c);
}

/* ---- one request and its answer ---- */

/* Appends a record (taken), written at once and made durable by the next sync(): every record
   finished in one turn of the drive shares one fdatasync (a group commit; docs/runfiles.md
   "Crash safety"). -1 when the write failed (the run stops). */
static int store(struct loop *l, json_t *rec)
{
    const char *status = json_string_value(json_object_get(rec, "status"));
    bool failed = status && !strcmp(status, "failed");
    int rc = 0;
    if (l->run && dsa_run_append_unsynced(l->run, rec)) {
        l->ret = DSA_EXIT_IO;
        l->stop = true;
        rc = -1;
    } else {
        l->unsynced_done++;
        l->unsynced_failed += failed;
    }
    json_decref(rec);
    return rc;
}

/* The records stored since the last call made durable, then counted by the meter: none is
   reported finished before its sync. -1 when the sync failed (the run stops). */
static int sync_stored(struct loop *l)
{
    if (!l->unsynced_done)
        return 0;
    if (l->run && dsa_run_sync(l->run)) {
        l->ret = DSA_EXIT_IO;
        l->stop = true;
        l->unsynced_done = l->unsynced_failed = 0;
        return -1;
    }
    for (size_t i = 0; l->pg && i < l->unsynced_done; i++)
        dsa_progress_done(l->pg, i < l->unsynced_failed);
    l->unsynced_done = l->unsynced_failed = 0;
    return 0;
}

static void on_done(const struct dsa_result *r);

/* submits rq (its body released) for the job in f; 0 or -1 */
static int submit(struct loop *l, struct flight *f, struct dsa_request *rq)
{
    rq->done = on_done;
    rq->ud = f;
    int rc = dsa_backend_submit(l->b, rq);
    json_decref(rq->body);
    return rc ? -1 : 0;
}

static void on_done(const struct dsa_result *r)
{
    struct flight *f = r->ud;
    struct loop *l = f->l;
    if (r->status == DSA_RES_CANCELLED) {
        /* interrupted or stopped: no record, a rerun sends it */
    } else if (dsa_eval_run_stopper(r)) {
        /* the server went away (or the stack failed): not this sample's fault, so no record */
        if (!l->stopped)
            l->stopped = dsa_xstrdup(r->error ? r->error : "cannot connect");
        l->stop = true;
    } else if (dsa_eval_run_bad_input(r)) {
        /* the sample's input cannot be read (printed): exit 3, the finished records kept */
        if (!l->ret)
            l->ret = DSA_EXIT_DATA;
        l->stop = true;
    } else {
        json_t *rec = NULL;
        struct dsa_request rq = {.endpoint = -1};
        l->h->grade(l->ev, f->job, r, &rec, &rq);
        if (rq.body) { /* the job's next request (mrcr: the chat after the count) */
            if (submit(l, f, &rq) == 0)
                return;
            l->ret = DSA_EXIT_INTERNAL;
            l->stop = true;
        } else if (rec) {
            store(l, rec);
        }
    }
    l->h->job_free(l->ev, f->job);
    free(f);
}

/* the drive's submit_next: the eval's next sample of this shard without a record, sent */
static int next_sample(void *ud, dsa_backend *b)
{
    (void)b;
    struct loop *l = ud;
    for (;;) {
        void *job = NULL;
        const char *id = NULL;
        int rc = l->h->next(l->ev, &job, &id);
        if (rc <= 0)
            return rc;
        if (!dsa_shard_keep(&l->ctx->shard, id) || (l->run && dsa_run_has(l->run, id))) {
            l->h->job_free(l->ev, job);
            continue;
        }
        json_t *rec = NULL;
        struct dsa_request rq = {.endpoint = -1};
        rc = l->h->request(l->ev, job, &rq, &rec);
        if (rc < 0 || rec) { /* an error, or a record without a request */
            l->h->job_free(l->ev, job);
            json_decref(rq.body);
            if (rc < 0)
                return rc;
            if (store(l, rec) < 0)
                return -DSA_EXIT_IO;
            continue;
        }
        struct flight *f = dsa_xcalloc(1, sizeof *f);
        *f = (struct flight){l, job};
        if (submit(l, f, &rq) < 0) {
            l->h->job_free(l->ev, job);
            free(f);
            return -DSA_EXIT_INTERNAL;
        }
        return 1;
    }
}

static bool must_stop(void *ud)
{
    return ((struct loop *)ud)->stop;
}

/* after each turn: the turn's records synced, the backend's retries and the meter */
static void tick(void *ud, dsa_backend *b)
{
    struct loop *l = ud;
    sync_stored(l);
    if (!l->pg)
        return;
    long retries, errors;
    dsa_backend_stats(b, &retries, &errors);
    for (; l->seen_retries < retries; l->seen_retries++)
        dsa_progress_retry(l->pg);
    dsa_progress_poll(l->pg);
}

/* ---- one run ---- */

static json_t *run_header(struct loop *l, int ri, const char *path)
{
    json_t *header = dsa_run_header_new(l->e->name, ri, 0, NULL);
    if (l->ctx->command)
        json_object_set(header, "command", l->ctx->command);
    json_object_set_new(header, "backend", dsa_backend_describe(l->b));
    json_t *old = path ? dsa_run_read_header(path) : NULL; /* a resume: the file's own */
    l->h->header(l->ev, l->b, ri, header, old);
    json_decref(old);
    dsa_shard_match(&l->ctx->shard, json_object_get(header, "match"));
    return header;
}

/* the run file of run ri opened (resumed), the meter started; DSA_EXIT_OK or the open's code */
static int open_run(struct loop *l, int ri, const char *path)
{
    const struct dsa_eval_ctx *c = l->ctx;
    json_t *header = run_header(l, ri, path);
    unsigned flags =
        (c->force_new ? DSA_RUN_FORCE_NEW : 0) | (c->retry_failed ? DSA_RUN_RETRY_FAILED : 0);
    int ret = path ? dsa_run_open_status(&l->run, path, header, flags) : DSA_EXIT_OK;
    json_decref(header);
    if (ret || (l->h->start && (ret = l->h->start(l->ev, l->b, l->run, path))))
        return ret;
    size_t total = (size_t)l->h->total(l->ev);
    size_t resumed = l->run ? dsa_run_count(l->run) : 0;
    dsa_run_note_resume(resumed, total, path);
    if (!c->quiet) {
        char label[64];
        snprintf(label, sizeof label, "%s run %d/%d", l->e->name, ri, c->runs);
        if (l->h->label)
            l->h->label(l->ev, ri, label, sizeof label);
        l->pg = dsa_progress_new(label, total, resumed < total ? resumed : total);
        /* backend totals are cumulative over runs; the meter counts this run's */
        long errors;
        dsa_backend_stats(l->b, &l->seen_retries, &errors);
    }
    return DSA_EXIT_OK;
}

/* the drive's end as an exit status: a stop the loop saw comes before "done" */
static int drive_status(struct loop *l, int ret)
{
    if (l->stopped && ret == DSA_EXIT_OK) {
        /* the stack prints its own failure; a server gone is said here */
        if (!l->ctx->inprocess)
            dsa_errorf("stopped: %s; finished records are kept, run the same command again "
                       "to continue",
                       l->stopped);
        ret = DSA_EXIT_BACKEND;
    }
    if (l->ret && ret == DSA_EXIT_OK)
        ret = l->ret;
    return ret;
}

/* runs (or resumes) run ri into its file; its records appended to runs */
static int run_one(struct loop *l, int ri, json_t *runs, char **first_path)
{
    char *path = l->ctx->out ? dsa_run_file_name(l->ctx->out, ri) : NULL;
    int ret = open_run(l, ri, path);
    if (ret == DSA_EXIT_OK) {
        const struct dsa_loop_feed feed = {next_sample, must_stop, tick,
                                           l->ctx->inprocess ? 0 : l->h->poll_ms};
        int dr = dsa_loop_drive(l->b, &feed, l, l->ctx->interrupted);
        sync_stored(l); /* records stored after the last turn (a stop, the last samples) */
        ret = drive_status(l, dr);
    }
    if (l->pg) {
        dsa_progress_finish(l->pg);
        dsa_progress_free(&l->pg);
    }
    if (ret == DSA_EXIT_DATA) {
        dsa_run_discard_if_empty(&l->run); /* a bad sample stopped it before any record */
    } else if (l->run) {
        dsa_run_free(&l->run);
        /* the summary reads the file back: records resumed and new, in file order */
        if (dsa_run_load_into(path, runs) < 0 && ret == DSA_EXIT_OK)
            ret = DSA_EXIT_IO;
    }
    dsa_run_free(&l->run);
    if (ri == 1)
        *first_path = path;
    else
        free(path);
    return ret;
}

static int run_loaded(const struct dsa_eval *e, const struct dsa_eval_hooks *h, void *ev,
                      const struct dsa_eval_ctx *c, dsa_backend *b)
{
    struct loop l = {.e = e, .h = h, .ev = ev, .ctx = c, .b = b};
    int ret = l.h->begin ? l.h->begin(ev, b) : DSA_EXIT_OK;
    json_t *runs = json_array();
    char *first_path = NULL;
    for (int ri = 1; ri <= c->runs && ret == DSA_EXIT_OK; ri++)
        ret = run_one(&l, ri, runs, &first_path);
    struct dsa_eval_summary_in in = {runs, ret, b, first_path};
    ret = l.h->summary(ev, &in);
    if (ret == DSA_EXIT_INTERRUPTED && c->out)
        dsa_notef("interrupted: finished records are in '%s'; run the same command again to "
                  "continue",
                  c->out);
    free(l.stopped);
    free(first_path);
    json_decref(runs);
    return ret;
}

static int open_backend(const struct dsa_eval_ctx *c, const struct dsa_loop_opts *o,
                        dsa_backend **b)
{
    if (!c->inprocess)
        return dsa_loop_endpoint_open(&o->ep, b);
    return (*b = dsa_inproc_backend_new(&c->stack)) ? DSA_EXIT_OK : DSA_EXIT_BACKEND;
}

/* --traces DIR: the model's activations instead of the samples. The eval's traces hook takes
   its options into *t; the traces hooks then stand in for the eval's. */
static int traces_source(const struct dsa_eval *e, void *eval_opts, struct dsa_eval_ctx *c,
                         struct dsa_traces_opts *t)
{
    if (!e->hooks->traces) {
        dsa_errorf("'%s' has no traces run (--traces)", e->name);
        return DSA_EXIT_USAGE;
    }
    t->dir = c->traces;
    t->stack = &c->stack;
    return e->hooks->traces(eval_opts, t);
}

int dsa_loop_run(const struct dsa_eval *e, void *eval_opts, struct dsa_loop_opts *o)
{
    struct dsa_eval_ctx c;
    struct dsa_traces_opts t = {0};
    const struct dsa_eval_hooks *h = e ? e->hooks : NULL;
    void *ev = NULL;
    dsa_backend *b = NULL;
    int ret = prepare(e, eval_opts, o, &c);
    if (ret)
        return ret;
    if (c.traces) {
        if ((ret = traces_source(e, eval_opts, &c, &t)))
            goto cleanup;
        h = &dsa_traces_hooks;
        eval_opts = &t;
    }
    if ((ret = h->load(eval_opts, &c, &ev)))
        goto cleanup;
    if (h->offline && (ret = h->offline(ev)) >= 0)
        goto cleanup;
    if ((ret = open_backend(&c, o, &b)))
        goto cleanup;
    ret = run_loaded(e, h, ev, &c, b);
cleanup:
    dsa_backend_free(&b);
    if (ev)
        h->free(ev);
    json_decref(t.filters);
    return ret;
}

int dsa_loop_run_on(const struct dsa_eval *e, void *eval_opts, struct dsa_loop_opts *o,
                    dsa_backend *b)
{
    struct dsa_eval_ctx c;
    int ret = prepare(e, eval_opts, o, &c);
    if (ret)
        return ret;
    void *ev = NULL;
    if (!(ret = e->hooks->load(eval_opts, &c, &ev)))
        ret = run_loaded(e, e->hooks, ev, &c, b);
    if (ev)
        e->hooks->free(ev);
    return ret;
}
