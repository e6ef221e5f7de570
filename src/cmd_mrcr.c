/*
 * dsa-eval mrcr: OpenAI MRCR multi-needle against one or more endpoints (or, later, the
 * in-process backend), binned by context length, one run file per run, resumable.
 * Usage, records and exit codes: docs/mrcr.md. Backend behaviour: docs/endpoint.md.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "backend/endpoint.h"
#include "backend/inprocess.h"
#include "datasets/samples.h"
#include "evals/inproc_mrcr.h"
#include "evals/inproc_traces.h"
#include "commands.h"
#include "datasets/mrcr.h"
#include "evals/mrcr_eval.h"
#include "evals/evals.h"
#include "evals/summary.h"
#include "run/endpoint_cli.h"
#include "run/inproc_cli.h"
#include "run/loop.h"
#include "util/shard.h"
#include "store/store.h"
#include "util/buf.h"
#include "util/exitcode.h"
#include "util/fs.h"
#include "util/msg.h"
#include "util/opt.h"
#include "util/progress.h"

#define DEFAULT_DATASET "openai/mrcr"

static const char *const usage[] = {
    "dsa-eval mrcr --endpoint URL [--endpoint URL2 ...] --out DIR [options]",
    "dsa-eval mrcr --backend inprocess --out DIR [--device cuda|cpu] [--variant K=V]... "
    "[--kernels PATH.so] [options]",
    NULL,
};

/* A dataset argument is a file, or the name of the official data as `dsa-eval datasets fetch
   mrcr` stores it: "openai/mrcr" (the pinned revision) or "openai/mrcr@<sha>", found as
   <cache>/mrcr/<revision>/<N>needle.jsonl, one file per needle count asked for. */
static int resolve_dataset(const char *arg, unsigned needles_mask, struct dsa_strlist *paths)
{
    /* a file, or a shipped sample ("sample:<name>", embedded in the binary), which the
       reader opens itself */
    if (dsa_is_file(arg) || !strncmp(arg, "sample:", 7)) {
        dsa_strlist_push(paths, dsa_xstrdup(arg));
        return 0;
    }
    const char *at = strchr(arg, '@');
    size_t nlen = at ? (size_t)(at - arg) : strlen(arg);
    if (!((nlen == 11 && !strncmp(arg, "openai/mrcr", 11)) ||
          (nlen == 4 && !strncmp(arg, "mrcr", 4)))) {
        dsa_errorf("dataset '%s' is not a file, a sample:<name> nor openai/mrcr[@REVISION]", arg);
        return -1;
    }
    const char *rev = at ? at + 1 : DSA_MRCR_DEFAULT_REVISION;
    char *cache = dsa_cache_dir();
    int ret = 0;
    for (int n = 2; n <= 8 && !ret; n *= 2) {
        if (needles_mask && !(needles_mask & (1u << n)))
            continue;
        struct dsa_buf p = DSA_BUF_INIT;
        dsa_buf_addf(&p, "%s/mrcr/%s/%dneedle.jsonl", cache, rev, n);
        if (!dsa_is_file(p.data)) {
            dsa_errorf("dataset '%s' is not in the cache ('%s' is missing); run 'dsa-eval "
                       "datasets fetch mrcr --needles %d%s%s' or give a JSONL file",
                       arg, p.data, n, at ? " --revision " : "", at ? rev : "");
            ret = -1;
        } else {
            dsa_strlist_push(paths, dsa_xstrdup(p.data));
        }
        dsa_buf_release(&p);
    }
    free(cache);
    return ret;
}

static void free_paths(struct dsa_strlist *paths)
{
    for (size_t i = 0; i < paths->n; i++)
        free((char *)paths->v[i]);
    dsa_strlist_release(paths);
}

static bool shard_keep(void *ud, const char *id)
{
    return dsa_shard_keep(ud, id);
}

struct progress_ctx {
    dsa_progress *p;
    long seen_done, seen_retries, seen_failed;
};

static void on_progress(void *ud, const struct dsa_mrcr_eval_counts *c)
{
    struct progress_ctx *pc = ud;
    if (!pc->p)
        return;
    while (pc->seen_retries < c->retries) {
        dsa_progress_retry(pc->p);
        pc->seen_retries++;
    }
    for (; pc->seen_failed < c->failed; pc->seen_failed++, pc->seen_done++)
        dsa_progress_done(pc->p, true);
    for (; pc->seen_done < c->done; pc->seen_done++)
        dsa_progress_done(pc->p, false);
    dsa_progress_poll(pc->p);
}

/* --json is honoured by every backend: after an in-process run, the summary document of its
   run file instead of the text table. Returns ret, or DSA_EXIT_DATA if the document could not
   be printed. */
static int print_json_summary(bool as_json, const char *out, int ret)
{
    if (!as_json || (ret != DSA_EXIT_OK && ret != DSA_EXIT_FAIL && ret != DSA_EXIT_INTERRUPTED))
        return ret;
    char *path = dsa_run_file_name(out, 1);
    json_t *h = NULL, *recs = NULL;
    if (dsa_run_load(path, &h, &recs) == 0) {
        json_t *runs = json_pack("[o]", recs);
        if (dsa_summary_print(runs, true, stdout) < 0 && ret == DSA_EXIT_OK)
            ret = DSA_EXIT_DATA;
        json_decref(runs);
        json_decref(h);
    }
    free(path);
    return ret;
}

/* --backend inprocess: the indexer stack on the dataset's prompts (evals/inproc_mrcr.h) */
static int run_inprocess(const char *dataset, const char *out, const struct dsa_mrcr_filter *filt,
                         const struct dsa_loop_inproc *ip, int max_query, uint64_t seed,
                         bool force_new, const char *traces, bool as_json, bool quiet,
                         json_t *command, const struct dsa_shard *shard)
{
    struct dsa_inproc_run o;
    dsa_inproc_run_init(&o);
    int rc = dsa_loop_inproc_opts(ip, &o.stack);
    if (rc)
        return rc;
    if (max_query < 0) {
        dsa_errorf("--max-query must be >= 0");
        return DSA_EXIT_USAGE;
    }
    o.out_dir = out;
    o.limit = filt->limit;
    o.bins_mask = filt->bins_mask;
    o.needles_mask = filt->needles_mask;
    o.force_new = force_new;
    o.json = as_json;
    o.quiet = quiet;
    o.command = command;
    o.interrupted = &dsa_interrupted;
    o.drive = dsa_loop_drive;
    o.shard = *shard;
    if (traces) { /* the model's activations instead of the proxy model: no dataset */
        o.traces_dir = traces;
        return print_json_summary(as_json, out, dsa_inproc_traces_run(&o));
    }
    struct dsa_strlist paths = {0};
    int ret;
    if (!strncmp(dataset, DSA_SAMPLE_PREFIX, strlen(DSA_SAMPLE_PREFIX))) {
        char *p = dsa_sample_path(dataset);
        if (!p)
            return DSA_EXIT_DATA;
        dsa_strlist_push(&paths, p);
    } else if (resolve_dataset(dataset, filt->needles_mask, &paths) < 0) {
        return DSA_EXIT_DATA;
    }
    o.max_query = max_query;
    o.stack.seed = seed;
    o.dataset_name = dataset;
    o.datasets = paths.v;
    o.ndatasets = paths.n;
    ret = dsa_inproc_mrcr_run(&o);
    ret = print_json_summary(as_json, out, ret);
    free_paths(&paths);
    return ret;
}

int cmd_mrcr(int argc, char **argv)
{
    int cmd_argc = argc;
    char **cmd_argv = argv;
    json_t *command = dsa_run_command_json(cmd_argc, cmd_argv); /* before argv is permuted */
    struct dsa_loop_endpoint ep;
    dsa_loop_endpoint_init(&ep, 8, 5, 1800, NULL); /* the defaults of docs/mrcr.md */
    const char *dataset = NULL, *out = NULL, *needles = "8", *bins = NULL;
    const char *max_bin = NULL, *backend_kind = "endpoint";
    long limit = 0, max_tokens = 4096, seed = 0;
    int runs = 1;
    const char *traces = NULL;
    struct dsa_loop_inproc ip;
    dsa_loop_inproc_init(&ip, 2048);
    int max_query = 32;
    double temperature = 0.0;
    bool quiet = false, as_json = false, force_new = false, stream = false;
    bool strip_think = false, no_count = false, retry_failed = false;
    const char *seed_text = NULL, *shard_text = NULL;
    struct dsa_option opts[] = {
        DSA_OPT_STRING(0, "dataset", &dataset, "PATH|NAME",
                       "MRCR JSONL or /rows pages, or a cached dataset name (openai/mrcr)"),
        DSA_OPT_STRING('o', "out", &out, "DIR", "run directory (run-001.jsonl, ...)"),
        DSA_OPT_STRING(0, "needles", &needles, "LIST", "needle counts: 2,4,8 (default 8)"),
        DSA_OPT_STRING(0, "bins", &bins, "LIST", "bins by upper edge: 8k,16k,...,1M (default all)"),
        DSA_OPT_STRING(0, "max-bin", &max_bin, "EDGE", "keep bins up to EDGE (e.g. 256k)"),
        DSA_OPT_LONG(0, "limit", &limit, "N", "at most N rows per (needles, bin)"),
        DSA_OPT_INT(0, "runs", &runs, "N", "independent runs of the same rows (default 1)"),
        DSA_OPT_BOOL(0, "force-new", &force_new,
                     "start over when the run files were made by another command"),
        DSA_OPT_BOOL(0, "retry-failed", &retry_failed,
                     "send the rows recorded as failed in the run files again"),
        DSA_OPT_STRING(0, "shard", &shard_text, "I/N",
                       "run shard I of N (rows split by id; join with dsa-eval merge)"),
        DSA_OPT_STRING(0, "backend", &backend_kind, "KIND", "endpoint (default) or inprocess"),
        DSA_LOOP_INPROC_OPTIONS(&ip),
        DSA_OPT_STRING(0, "traces", &traces, "DIR",
                       "inprocess: captured model traces (manifest.jsonl) instead of the proxy"),
        DSA_OPT_INT(0, "max-query", &max_query, "N",
                    "inprocess: query rows = the last N question tokens (default 32, 0 = all)"),
        DSA_LOOP_ENDPOINT_OPTIONS(&ep),
        DSA_OPT_LONG(0, "max-tokens", &max_tokens, "N", "max_tokens per request (default 4096)"),
        DSA_OPT_DOUBLE(0, "temperature", &temperature, "T", "sampling temperature (default 0)"),
        DSA_OPT_STRING(0, "seed", &seed_text, "N", "sampling seed sent with every request"),
        DSA_OPT_BOOL(0, "stream", &stream, "stream responses (records ttft_ms, decode_ms)"),
        DSA_OPT_BOOL(0, "no-count-tokens", &no_count,
                     "skip the /tokenize pre-count (over-context rows then come from 400s)"),
        DSA_OPT_BOOL(0, "strip-think", &strip_think,
                     "also record score_strip_think (content after </think>, stripped)"),
        DSA_OPT_BOOL('q', "quiet", &quiet, "no progress and notes"),
        DSA_OPT_BOOL(0, "json", &as_json, "print the summary as JSON"),
        DSA_OPT_END(),
    };
    int ret = DSA_EXIT_USAGE;
    struct dsa_strlist dataset_paths = {0};
    json_t *runs_records = NULL, *backend_id = NULL;
    dsa_backend *b = NULL;
    struct dsa_mrcr_eval_opts eo;
    memset(&eo, 0, sizeof eo);

    if (dsa_opt_parse_no_args(&argc, argv, opts, usage, &ret))
        goto cleanup;
    dsa_msg_quiet = quiet;
    if (!out) {
        dsa_errorf("--out DIR is required");
        goto cleanup;
    }
    if (runs < 1 || runs > 999 || max_tokens < 1 || limit < 0 || temperature < 0) {
        dsa_errorf("--runs (1..999), --max-tokens (> 0), --limit and --temperature (>= 0) must "
                   "be in range");
        goto cleanup;
    }
    if ((ret = dsa_loop_endpoint_check(&ep)))
        goto cleanup;
    ret = DSA_EXIT_USAGE;
    if (seed_text) {
        char *end;
        errno = 0;
        seed = strtol(seed_text, &end, 10);
        if (errno || end == seed_text || *end) {
            dsa_errorf("--seed '%s' is not an integer", seed_text);
            goto cleanup;
        }
    }
    if (dsa_shard_parse(shard_text, &eo.shard) < 0)
        goto cleanup;
    eo.interrupted = &dsa_interrupted;
    eo.drive = dsa_loop_drive;
    if (dsa_mrcr_parse_needles(needles, &eo.filter.needles_mask) < 0)
        goto cleanup;
    if (bins && dsa_mrcr_parse_bins(bins, &eo.filter.bins_mask) < 0)
        goto cleanup;
    if (max_bin) {
        unsigned m;
        if (dsa_mrcr_parse_max_bin(max_bin, &m) < 0)
            goto cleanup;
        eo.filter.bins_mask = eo.filter.bins_mask ? eo.filter.bins_mask & m : m;
    }
    eo.filter.limit = limit;
    if (traces && strcmp(backend_kind, "inprocess")) {
        dsa_errorf("--traces DIR is for --backend inprocess");
        goto cleanup;
    }
    if (traces && dataset) {
        dsa_errorf("--traces DIR replaces --dataset (the traces hold the prompts)");
        goto cleanup;
    }
    if (dsa_eval_check_backend(dsa_eval_find("mrcr"), backend_kind))
        goto cleanup;
    if (!strcmp(backend_kind, "inprocess")) {
        if (retry_failed) {
            dsa_errorf("--retry-failed is for --backend endpoint (an in-process row fails "
                       "the same way every time)");
            goto cleanup;
        }
        ret = run_inprocess(dataset ? dataset : DSA_SAMPLE_MRCR_DEFAULT, out, &eo.filter, &ip,
                            max_query, seed_text ? (uint64_t)seed : 1, force_new, traces, as_json,
                            quiet, command, &eo.shard);
        goto cleanup;
    }
    if (!dataset)
        dataset = DEFAULT_DATASET;
    if (strcmp(backend_kind, "endpoint")) {
        dsa_errorf("unknown backend '%s' (endpoint or inprocess)", backend_kind);
        goto cleanup;
    }
    if (ep.urls.n == 0) {
        dsa_errorf("--endpoint URL is required with --backend endpoint");
        goto cleanup;
    }
    if (resolve_dataset(dataset, eo.filter.needles_mask, &dataset_paths) < 0) {
        ret = DSA_EXIT_DATA;
        goto cleanup;
    }

    /* the dataset first: a bad file is reported before any network traffic */
    long total = 0, total_all = 0; /* this shard's rows, and every shard's */
    json_t *dataset_id =
        json_pack("{s:s, s:[], s:o}", "name", dataset, "files", "revision", json_null());
    json_t *shas = json_array();
    const char *bins_src = NULL;
    for (size_t i = 0; i < dataset_paths.n; i++) {
        dsa_mrcr_reader *rd = dsa_mrcr_open(dataset_paths.v[i], &eo.filter);
        if (!rd) {
            json_decref(dataset_id);
            json_decref(shas);
            ret = DSA_EXIT_DATA;
            goto cleanup;
        }
        total_all += dsa_mrcr_nselected(rd);
        total += dsa_mrcr_nselected_if(rd, shard_keep, &eo.shard);
        json_array_append_new(
            json_object_get(dataset_id, "files"),
            json_pack("{s:s, s:s}", "path", dataset_paths.v[i], "sha256", dsa_mrcr_sha256(rd)));
        json_array_append_new(shas, json_string(dsa_mrcr_sha256(rd)));
        if (dsa_mrcr_revision(rd))
            json_object_set_new(dataset_id, "revision", json_string(dsa_mrcr_revision(rd)));
        enum dsa_mrcr_bins_source bs = dsa_mrcr_bins_source(rd);
        const char *src = bs == DSA_MRCR_BINS_OFFICIAL   ? "official"
                          : bs == DSA_MRCR_BINS_EXPLICIT ? "explicit"
                                                         : "mixed";
        bins_src = !bins_src || !strcmp(bins_src, src) ? src : "mixed";
        dsa_mrcr_free(&rd);
    }
    json_object_set_new(dataset_id, "bins", json_string(bins_src));
    if (total_all == 0) { /* an empty shard of rows that exist is a run of nothing */
        dsa_errorf("no rows of '%s' pass the filters (--needles %s%s%s)", dataset, needles,
                   bins ? " --bins " : "", bins ? bins : "");
        json_decref(dataset_id);
        json_decref(shas);
        ret = DSA_EXIT_DATA;
        goto cleanup;
    }

    if ((ret = dsa_loop_endpoint_open(&ep, &b))) {
        json_decref(dataset_id);
        json_decref(shas);
        goto cleanup;
    }
    backend_id = dsa_backend_describe(b);
    eo.dataset_paths = dataset_paths.v;
    eo.n_datasets = (int)dataset_paths.n;
    eo.max_tokens = max_tokens;
    eo.temperature = temperature;
    eo.has_seed = seed_text != NULL;
    eo.seed = seed;
    eo.stream = stream;
    eo.max_model_len = dsa_endpoint_max_model_len(b);
    eo.count_tokens = !no_count;
    eo.strip_think = strip_think;

    /* what must be equal for a resume: the rows, the model and everything in the body */
    json_t *params = json_pack(
        "{s:I, s:f, s:o, s:O?}", "max_tokens", (json_int_t)max_tokens, "temperature", temperature,
        "seed", seed_text ? json_integer(seed) : json_null(), "extra_body", ep.extra_body);
    json_t *filters = json_pack("{s:s, s:s?, s:s?, s:I}", "needles", needles, "bins", bins,
                                "max_bin", max_bin, "limit", (json_int_t)limit);
    json_t *match =
        json_pack("{s:s, s:o, s:o, s:s, s:s, s:O, s:O, s:b}", "eval", "mrcr", "dataset_sha256",
                  shas, "dataset_revision", json_incref(json_object_get(dataset_id, "revision")),
                  "backend", "endpoint", "model", dsa_endpoint_model(b), "params", params,
                  "filters", filters, "strip_think", strip_think);
    dsa_shard_match(&eo.shard, match);
    json_t *run_params = json_deep_copy(params);
    json_object_set_new(run_params, "stream", json_boolean(stream));
    json_object_set_new(run_params, "concurrency", json_integer(ep.concurrency));
    json_object_set_new(run_params, "retries", json_integer(ep.retries));
    json_object_set_new(run_params, "timeout_s", json_real(ep.timeout_s));
    json_object_set_new(run_params, "count_tokens", json_boolean(!no_count));
    json_object_set_new(run_params, "filters", filters);
    json_decref(params);

    runs_records = json_array();
    struct dsa_mrcr_eval_counts all = {0};
    ret = DSA_EXIT_OK;
    for (int ri = 1; ri <= runs && ret == DSA_EXIT_OK; ri++) {
        /* the store adds the format version, the tool and the creation time */
        json_t *header = json_pack("{s:O, s:s, s:i, s:O, s:O, s:O, s:O}", "command", command,
                                   "eval", "mrcr", "run", ri, "match", match, "dataset", dataset_id,
                                   "backend", backend_id, "params", run_params);
        char *path = dsa_run_file_name(out, ri);
        dsa_run *run = NULL;
        unsigned flags =
            (force_new ? DSA_RUN_FORCE_NEW : 0) | (retry_failed ? DSA_RUN_RETRY_FAILED : 0);
        ret = dsa_run_open_status(&run, path, header, flags);
        json_decref(header);
        if (ret != DSA_EXIT_OK) {
            free(path);
            break;
        }
        char label[48];
        snprintf(label, sizeof label, "mrcr run %d/%d", ri, runs);
        size_t resumed = dsa_run_count(run);
        dsa_run_note_resume(resumed, (size_t)total, path);
        struct progress_ctx pc = {NULL, 0, 0, 0};
        if (!quiet)
            pc.p = dsa_progress_new(label, (size_t)total,
                                    resumed < (size_t)total ? resumed : (size_t)total);
        /* backend totals are cumulative over runs; the meter counts this run's */
        long r0, e0;
        dsa_backend_stats(b, &r0, &e0);
        pc.seen_retries = r0;
        (void)e0;
        struct dsa_mrcr_eval_counts c;
        struct progress_ctx *pcp = &pc;
        ret = dsa_mrcr_eval_run(b, run, &eo, on_progress, pcp, &c);
        if (pc.p) {
            dsa_progress_finish(pc.p);
            dsa_progress_free(&pc.p);
        }
        all.ok += c.ok;
        all.failed += c.failed;
        all.excluded += c.excluded;
        if (ret == DSA_EXIT_DATA) {
            dsa_run_discard_if_empty(&run); /* a bad row stopped it before any sample */
            free(path);
            break;
        }
        dsa_run_free(&run);
        /* the summary reads the file back: records resumed and new, in file order */
        if (dsa_run_load_into(path, runs_records) < 0 && ret == DSA_EXIT_OK)
            ret = DSA_EXIT_IO;
        free(path);
    }
    json_decref(run_params);
    json_decref(match);
    json_decref(dataset_id);

    if ((ret == DSA_EXIT_OK || ret == DSA_EXIT_INTERRUPTED) && json_array_size(runs_records))
        dsa_summary_print(runs_records, as_json, stdout);
    if (ret == DSA_EXIT_OK) {
        /* failed rows anywhere in the run files (this invocation or an earlier one) */
        long failed = 0;
        size_t i, k;
        json_t *recs, *rec;
        json_array_foreach(runs_records, i, recs) json_array_foreach(recs, k, rec)
        {
            const char *s = json_string_value(json_object_get(rec, "status"));
            if (s && !strcmp(s, "failed"))
                failed++;
        }
        if (failed) {
            dsa_warnf("%ld request%s failed after retries and %s not scored (see the summary)",
                      failed, failed == 1 ? "" : "s", failed == 1 ? "is" : "are");
            ret = DSA_EXIT_FAIL;
        }
    } else if (ret == DSA_EXIT_INTERRUPTED) {
        dsa_notef("interrupted: finished records are in '%s'; run the same command again to "
                  "continue",
                  out);
    }

cleanup:
    dsa_loop_inproc_release(&ip);
    dsa_backend_free(&b);
    json_decref(backend_id);
    json_decref(runs_records);
    json_decref(command);
    free_paths(&dataset_paths);
    dsa_loop_endpoint_release(&ep);
    return ret;
}
