/*
 * dsa-eval ruler: NVIDIA RULER's synthetic tasks (docs/ruler.md) against endpoints (chat or
 * completions) or in-process (recall@k and needle retention of the indexer's selection), one
 * run file per run, resumable and shardable. The eval is evals/ruler_eval.h over the RULER
 * library (evals/ruler.h); this file is its options.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/endpoint.h"
#include "backend/inprocess.h"
#include "commands.h"
#include "evals/evals.h"
#include "evals/inproc_traces.h"
#include "evals/ruler_eval.h"
#include "evals/summary.h"
#include "run/endpoint_cli.h"
#include "run/inproc_cli.h"
#include "run/loop.h"
#include "store/store.h"
#include "util/exitcode.h"
#include "util/msg.h"
#include "util/opt.h"
#include "util/progress.h"
#include "util/shard.h"

static const char *const usage[] = {
    "dsa-eval ruler --endpoint URL --out DIR [--tasks LIST] [--lengths LIST] [--limit N] "
    "[options]",
    "dsa-eval ruler --backend inprocess --out DIR [--device cuda|cpu] [--variant K=V]... "
    "[options]",
    "dsa-eval ruler --backend inprocess --traces DIR --out DIR [--tasks LIST] [--lengths LIST] "
    "[options]",
    NULL,
};

struct ruler_cli {
    const char *out, *tasks, *lengths, *haystack, *backend, *api, *shard, *traces;
    const char *seed_text;
    int limit, runs, max_query;
    bool force_new, stream, quiet, as_json;
    struct dsa_loop_endpoint ep;
    struct dsa_loop_inproc ip;
};

/* what a resume must agree on: the samples (tasks, lengths, limit, seed, haystack), how they
   are sent, and the backend's identity */
static json_t *match_json(const struct ruler_cli *c, const struct dsa_ruler_eval_opts *eo,
                          const dsa_ruler_haystack *h, dsa_backend *b)
{
    json_t *m = json_pack("{s:s, s:s, s:s, s:i, s:I, s:s, s:s, s:s}", "eval", "ruler", "tasks",
                          c->tasks, "lengths", c->lengths, "limit", c->limit, "seed",
                          (json_int_t)eo->seed, "haystack", dsa_ruler_haystack_name(h),
                          "haystack_sha256", dsa_ruler_haystack_sha256(h), "backend",
                          eo->inprocess ? "inprocess" : "endpoint");
    json_t *id = dsa_backend_describe(b);
    if (eo->inprocess) {
        json_object_set(m, "device", json_object_get(id, "device"));
        json_object_set(m, "kernels", json_object_get(id, "kernels"));
        json_object_set(m, "variant", json_object_get(id, "variant"));
        json_object_set(m, "topk", json_object_get(id, "topk"));
        json_object_set_new(m, "max_query", json_integer(eo->max_query));
        /* the samples plant their needles' retrieval structure in the proxy, as MRCR rows do */
        json_object_set_new(m, "proxy", json_string(DSA_INPROC_PROXY_MRCR));
    } else {
        json_object_set_new(m, "api", json_string(eo->completions ? "completions" : "chat"));
        json_object_set_new(m, "model", json_string(dsa_endpoint_model(b)));
        json_object_set(m, "extra_body", c->ep.extra_body ? c->ep.extra_body : json_null());
    }
    json_decref(id);
    dsa_shard_match(&eo->shard, m);
    return m;
}

static int run_one(const struct ruler_cli *c, const struct dsa_ruler_eval_opts *eo,
                   const dsa_ruler_haystack *h, dsa_backend *b, json_t *command, int ri,
                   json_t *runs_records)
{
    json_t *header = json_pack(
        "{s:O, s:s, s:i, s:o, s:{s:s, s:s, s:s, s:I}, s:o, s:{s:i}}", "command", command, "eval",
        "ruler", "run", ri, "match", match_json(c, eo, h, b), "dataset", "name", "ruler",
        "haystack", dsa_ruler_haystack_name(h), "haystack_sha256", dsa_ruler_haystack_sha256(h),
        "haystack_words", (json_int_t)dsa_ruler_haystack_words(h), "backend",
        dsa_backend_describe(b), "params", "limit", c->limit);
    if (eo->inprocess)
        json_object_set_new(json_object_get(header, "backend"), "proxy",
                            json_string(DSA_INPROC_PROXY_MRCR));
    char *path = dsa_run_file_name(c->out, ri);
    dsa_run *run = NULL;
    int ret = dsa_run_open_status(&run, path, header, c->force_new ? DSA_RUN_FORCE_NEW : 0);
    json_decref(header);
    if (ret) {
        free(path);
        return ret;
    }
    size_t total = (size_t)dsa_ruler_eval_count(eo);
    size_t resumed = dsa_run_count(run);
    dsa_run_note_resume(resumed, total, path);
    char label[48];
    snprintf(label, sizeof label, "ruler run %d/%d", ri, c->runs);
    dsa_progress *pg =
        c->quiet ? NULL : dsa_progress_new(label, total, resumed < total ? resumed : total);
    ret = dsa_ruler_eval_run(b, run, eo, pg);
    if (pg) {
        dsa_progress_finish(pg);
        dsa_progress_free(&pg);
    }
    dsa_run_free(&run);
    if (dsa_run_load_into(path, runs_records) < 0 && ret == DSA_EXIT_OK)
        ret = DSA_EXIT_IO;
    free(path);
    return ret;
}

/* the values that need parsing; 0, or -1 with one line printed */
static int check_values(struct ruler_cli *c, struct dsa_ruler_eval_opts *eo)
{
    const char *bad = NULL;
    if (!c->out)
        return dsa_errorf("--out DIR is required");
    if (c->limit < 1 || c->runs < 1 || c->runs > 999 || c->max_query < 0)
        return dsa_errorf("--limit (>= 1), --runs (1..999) and --max-query (>= 0) must be in "
                          "range");
    if (dsa_ruler_parse_tasks(c->tasks, &eo->tasks_mask, &bad))
        return dsa_errorf("unknown RULER task '%s' (see docs/ruler.md \"Tasks\")",
                          bad ? bad : c->tasks);
    if (dsa_ruler_parse_lengths(c->lengths, &eo->lengths_mask, &bad))
        return dsa_errorf("unknown RULER length '%s' (4k, 8k, …, 1m)", bad ? bad : c->lengths);
    if (strcmp(c->api, "chat") && strcmp(c->api, "completions"))
        return dsa_errorf("--api must be chat or completions, not '%s'", c->api);
    if (strcmp(c->backend, "endpoint") && strcmp(c->backend, "inprocess"))
        return dsa_errorf("unknown backend '%s' (endpoint or inprocess)", c->backend);
    if (c->seed_text) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(c->seed_text, &end, 10);
        if (errno || end == c->seed_text || *end || c->seed_text[0] == '-')
            return dsa_errorf("--seed '%s' is not an integer >= 0", c->seed_text);
        eo->seed = v;
    }
    if (dsa_shard_parse(c->shard, &eo->shard) < 0)
        return -1;
    return dsa_eval_check_backend(dsa_eval_find("ruler"), c->backend);
}

/* every option's check; DSA_EXIT_OK or DSA_EXIT_USAGE (printed) */
static int check(struct ruler_cli *c, struct dsa_ruler_eval_opts *eo)
{
    if (check_values(c, eo) < 0)
        return DSA_EXIT_USAGE;
    return dsa_loop_endpoint_check(&c->ep);
}

static int open_backend(const struct ruler_cli *c, struct dsa_ruler_eval_opts *eo, dsa_backend **b)
{
    if (eo->inprocess) {
        struct dsa_inproc_opts io;
        int ret = dsa_loop_inproc_opts(&c->ip, &io);
        if (ret)
            return ret;
        return (*b = dsa_inproc_backend_new(&io)) ? DSA_EXIT_OK : DSA_EXIT_BACKEND;
    }
    int ret = dsa_loop_endpoint_open(&c->ep, b);
    if (!ret)
        eo->max_model_len = dsa_endpoint_max_model_len(*b);
    return ret;
}

/* --traces DIR: the stack on a model's captured activations of RULER prompts
   (evals/inproc_traces.h) instead of the proxy; with --json the run's summary document */
static int run_traces(const struct ruler_cli *c, const struct dsa_ruler_eval_opts *eo,
                      json_t *command)
{
    struct dsa_inproc_run o;
    dsa_inproc_run_init(&o);
    int ret = dsa_loop_inproc_opts(&c->ip, &o.stack);
    if (ret)
        return ret;
    o.eval = "ruler";
    o.traces_dir = c->traces;
    o.out_dir = c->out;
    o.limit = c->limit;
    o.bins_mask = eo->lengths_mask;
    o.tasks_mask = eo->tasks_mask;
    o.force_new = c->force_new;
    o.json = c->as_json;
    o.quiet = c->quiet;
    o.command = command;
    o.interrupted = &dsa_interrupted;
    o.shard = eo->shard;
    ret = dsa_inproc_traces_run(&o);
    if (!c->as_json || (ret != DSA_EXIT_OK && ret != DSA_EXIT_INTERRUPTED))
        return ret;
    json_t *runs = json_array();
    char *path = dsa_run_file_name(c->out, 1);
    if (dsa_run_load_into(path, runs) < 0 || dsa_summary_print(runs, true, stdout) < 0)
        ret = ret ? ret : DSA_EXIT_DATA;
    free(path);
    json_decref(runs);
    return ret;
}

/* records with status "failed" in every run (this invocation or an earlier one) */
static long failed_count(json_t *runs_records)
{
    long failed = 0;
    size_t i, k;
    json_t *recs, *rec;
    json_array_foreach(runs_records, i, recs) json_array_foreach(recs, k, rec)
    {
        const char *s = json_string_value(json_object_get(rec, "status"));
        failed += s && !strcmp(s, "failed");
    }
    return failed;
}

int cmd_ruler(int argc, char **argv)
{
    json_t *command = dsa_run_command_json(argc, argv); /* before argv is permuted */
    struct ruler_cli c = {.tasks = "all",
                          .backend = "endpoint",
                          .api = "chat",
                          .limit = 10,
                          .runs = 1,
                          .max_query = 32};
    dsa_loop_endpoint_init(&c.ep, 8, 5, 1800, NULL); /* as mrcr: long prompts */
    dsa_loop_inproc_init(&c.ip, 2048);
    struct dsa_option opts[] = {
        DSA_LOOP_ENDPOINT_OPTIONS(&c.ep),
        DSA_OPT_STRING('o', "out", &c.out, "DIR", "run directory (run-001.jsonl, ...)"),
        DSA_OPT_STRING(0, "tasks", &c.tasks, "LIST", "niah_single_1,…,vt,cwe or all (default all)"),
        DSA_OPT_STRING(0, "lengths", &c.lengths, "LIST",
                       "4k,8k,16k,…,1m or all (default 4k,8k,16k; with --traces all)"),
        DSA_OPT_INT(0, "limit", &c.limit, "N", "samples per task and length (default 10)"),
        DSA_OPT_STRING(0, "haystack", &c.haystack, "FILE",
                       "essay text or PaulGrahamEssays.json (default: the shipped substitute)"),
        DSA_OPT_STRING(0, "seed", &c.seed_text, "N", "sample seed (default 0)"),
        DSA_OPT_STRING(0, "api", &c.api, "KIND", "endpoint: chat (default) or completions"),
        DSA_OPT_BOOL(0, "stream", &c.stream, "endpoint: stream responses"),
        DSA_OPT_INT(0, "runs", &c.runs, "N", "independent runs of the same samples (default 1)"),
        DSA_OPT_STRING(0, "shard", &c.shard, "I/N",
                       "run shard I of N (samples split by id; join with dsa-eval merge)"),
        DSA_OPT_BOOL(0, "force-new", &c.force_new,
                     "start over when the run files were made by another command"),
        DSA_OPT_STRING(0, "backend", &c.backend, "KIND", "endpoint (default) or inprocess"),
        DSA_LOOP_INPROC_OPTIONS(&c.ip),
        DSA_OPT_STRING(0, "traces", &c.traces, "DIR",
                       "inprocess: captured model traces (manifest.jsonl) instead of the proxy"),
        DSA_OPT_INT(0, "max-query", &c.max_query, "N",
                    "inprocess: query rows = the last N prompt tokens (default 32, 0 = all)"),
        DSA_OPT_BOOL('q', "quiet", &c.quiet, "no progress and notes"),
        DSA_OPT_BOOL(0, "json", &c.as_json, "print the summary as JSON"),
        DSA_OPT_END(),
    };
    struct dsa_ruler_eval_opts eo = {.interrupted = &dsa_interrupted, .drive = dsa_loop_drive};
    dsa_ruler_haystack *h = NULL;
    dsa_backend *b = NULL;
    json_t *runs_records = json_array();
    int ret = DSA_EXIT_USAGE;
    if (dsa_opt_parse_no_args(&argc, argv, opts, usage, &ret))
        goto cleanup;
    dsa_msg_quiet = c.quiet;
    if (!c.lengths) /* the traces' rows are whatever lengths were captured */
        c.lengths = c.traces ? "all" : "4k,8k,16k";
    if ((ret = check(&c, &eo)))
        goto cleanup;
    if (c.traces) { /* the traces hold the prompts: no samples are made */
        ret = DSA_EXIT_USAGE;
        if (strcmp(c.backend, "inprocess"))
            dsa_errorf("--traces DIR is for --backend inprocess");
        else if (c.haystack || c.seed_text)
            dsa_errorf("--traces DIR replaces --haystack and --seed (the traces hold the prompts)");
        else
            ret = run_traces(&c, &eo, command);
        goto cleanup;
    }
    eo.limit = c.limit;
    eo.inprocess = !strcmp(c.backend, "inprocess");
    eo.completions = !strcmp(c.api, "completions");
    eo.stream = c.stream;
    eo.max_model_len = -1;
    eo.max_query = c.max_query;
    int herr = 0;
    if (!(h = dsa_ruler_haystack_new(c.haystack, &herr))) {
        dsa_errorf("cannot use haystack '%s': %s", c.haystack ? c.haystack : "(shipped)",
                   dsa_ruler_strerror(herr));
        ret = DSA_EXIT_DATA;
        goto cleanup;
    }
    eo.haystack = h;
    if ((ret = open_backend(&c, &eo, &b)))
        goto cleanup;
    for (int ri = 1; ri <= c.runs && ret == DSA_EXIT_OK; ri++)
        ret = run_one(&c, &eo, h, b, command, ri, runs_records);
    if ((ret == DSA_EXIT_OK || ret == DSA_EXIT_INTERRUPTED) && json_array_size(runs_records)) {
        if (eo.inprocess && !c.as_json)
            dsa_ruler_inproc_summary_print(runs_records);
        else
            dsa_summary_print(runs_records, c.as_json, stdout);
    }
    if (ret == DSA_EXIT_OK && failed_count(runs_records)) {
        dsa_warnf("%ld samples failed after retries and are not scored (see the summary)",
                  failed_count(runs_records));
        ret = DSA_EXIT_FAIL;
    }
    if (ret == DSA_EXIT_INTERRUPTED)
        dsa_notef("interrupted: finished records are in '%s'; run the same command again to "
                  "continue",
                  c.out);
cleanup:
    dsa_backend_free(&b);
    dsa_ruler_haystack_free(&h);
    json_decref(runs_records);
    json_decref(command);
    dsa_loop_inproc_release(&c.ip);
    dsa_loop_endpoint_release(&c.ep);
    return ret;
}
