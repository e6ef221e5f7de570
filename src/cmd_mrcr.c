/*
 * dsa-eval mrcr: OpenAI MRCR multi-needle against one or more endpoints, or in-process on the
 * indexer stack, binned by context length, one run file per run, resumable. The eval is
 * evals/mrcr_eval.h (in-process: evals/inproc_mrcr.h), driven by the run loop
 * (src/run/run.h); this file is its options.
 * Usage, records and exit codes: docs/mrcr.md. Backend behaviour: docs/endpoint.md.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "commands.h"
#include "evals/evals.h"
#include "evals/mrcr_eval.h"
#include "run/run.h"
#include "util/exitcode.h"
#include "util/opt.h"

static const char *const usage[] = {
    "dsa-eval mrcr --endpoint URL [--endpoint URL2 ...] --out DIR [options]",
    "dsa-eval mrcr --backend inprocess --out DIR [--device cuda|cpu] [--variant K=V]... "
    "[--kernels PATH.so] [options]",
    NULL,
};

int cmd_mrcr(int argc, char **argv)
{
    struct dsa_loop_opts lo; /* the defaults of docs/mrcr.md */
    dsa_loop_opts_init(&lo, argc, argv, 8, 5, 1800, NULL, 2048);
    lo.interrupted = &dsa_interrupted;
    struct dsa_mrcr_eval_opts mo = {.needles = "8", .max_tokens = 4096, .max_query = 32};
    struct dsa_option opts[] = {
        DSA_OPT_STRING(0, "dataset", &mo.dataset, "PATH|NAME",
                       "MRCR JSONL or /rows pages, or a cached dataset name (openai/mrcr)"),
        DSA_OPT_STRING('o', "out", &lo.out, "DIR", "run directory (run-001.jsonl, ...)"),
        DSA_OPT_STRING(0, "needles", &mo.needles, "LIST", "needle counts: 2,4,8 (default 8)"),
        DSA_OPT_STRING(0, "bins", &mo.bins, "LIST",
                       "bins by upper edge: 8k,16k,...,1M (default all)"),
        DSA_OPT_STRING(0, "max-bin", &mo.max_bin, "EDGE", "keep bins up to EDGE (e.g. 256k)"),
        DSA_OPT_LONG(0, "limit", &mo.limit, "N", "at most N rows per (needles, bin)"),
        DSA_OPT_INT(0, "runs", &lo.runs, "N", "independent runs of the same rows (default 1)"),
        DSA_OPT_BOOL(0, "force-new", &lo.force_new,
                     "start over when the run files were made by another command"),
        DSA_OPT_BOOL(0, "retry-failed", &lo.retry_failed,
                     "send the rows recorded as failed in the run files again"),
        DSA_OPT_STRING(0, "shard", &lo.shard, "I/N",
                       "run shard I of N (rows split by id; join with dsa-eval merge)"),
        DSA_OPT_STRING(0, "backend", &lo.backend, "KIND", "endpoint (default) or inprocess"),
        DSA_LOOP_INPROC_OPTIONS(&lo.ip),
        DSA_OPT_STRING(0, "traces", &lo.traces, "DIR",
                       "inprocess: captured model traces (manifest.jsonl) instead of the proxy"),
        DSA_OPT_INT(0, "max-query", &mo.max_query, "N",
                    "inprocess: query rows = the last N question tokens (default 32, 0 = all)"),
        DSA_LOOP_ENDPOINT_OPTIONS(&lo.ep),
        DSA_OPT_LONG(0, "max-tokens", &mo.max_tokens, "N", "max_tokens per request (default 4096)"),
        DSA_OPT_DOUBLE(0, "temperature", &mo.temperature, "T", "sampling temperature (default 0)"),
        DSA_OPT_STRING(0, "seed", &mo.seed_text, "N", "sampling seed sent with every request"),
        DSA_OPT_BOOL(0, "stream", &mo.stream, "stream responses (records ttft_ms, decode_ms)"),
        DSA_OPT_BOOL(0, "no-count-tokens", &mo.no_count,
                     "skip the /tokenize pre-count (over-context rows then come from 400s)"),
        DSA_OPT_BOOL(0, "strip-think", &mo.strip_think,
                     "also record score_strip_think (content after </think>, stripped)"),
        DSA_OPT_BOOL('q', "quiet", &lo.quiet, "no progress and notes"),
        DSA_OPT_BOOL(0, "json", &lo.as_json, "print the summary as JSON"),
        DSA_OPT_END(),
    };
    int ret = DSA_EXIT_USAGE;
    if (!dsa_opt_parse_no_args(&argc, argv, opts, usage, &ret))
        ret = dsa_loop_run(dsa_eval_find("mrcr"), &mo, &lo);
    dsa_loop_opts_release(&lo);
    return ret;
}
