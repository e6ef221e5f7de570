/*
 * dsa-eval ruler: NVIDIA RULER's synthetic tasks (docs/ruler.md) against endpoints (chat or
 * completions) or in-process (recall@k and needle retention of the indexer's selection), one
 * run file per run, resumable and shardable. The eval is evals/ruler_eval.h over the RULER
 * library (evals/ruler.h), driven by the run loop (src/run/run.h); this file is its options.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "commands.h"
#include "evals/evals.h"
#include "evals/ruler_eval.h"
#include "run/run.h"
#include "util/exitcode.h"
#include "util/opt.h"

static const char *const usage[] = {
    "dsa-eval ruler --endpoint URL --out DIR [--tasks LIST] [--lengths LIST] [--limit N] "
    "[options]",
    "dsa-eval ruler --backend inprocess --out DIR [--device cuda|cpu] [--variant K=V]... "
    "[options]",
    "dsa-eval ruler --backend inprocess --traces DIR --out DIR [--tasks LIST] [--lengths LIST] "
    "[options]",
    NULL,
};

int cmd_ruler(int argc, char **argv)
{
    struct dsa_loop_opts lo; /* as mrcr: long prompts */
    dsa_loop_opts_init(&lo, argc, argv, 8, 5, 1800, NULL, 2048);
    lo.interrupted = &dsa_interrupted;
    struct dsa_ruler_eval_opts ro = {.tasks = "all", .api = "chat", .limit = 10, .max_query = 32};
    struct dsa_option opts[] = {
        DSA_LOOP_ENDPOINT_OPTIONS(&lo.ep),
        DSA_OPT_STRING('o', "out", &lo.out, "DIR", "run directory (run-001.jsonl, ...)"),
        DSA_OPT_STRING(0, "tasks", &ro.tasks, "LIST",
                       "niah_single_1,…,vt,cwe or all (default all)"),
        DSA_OPT_STRING(0, "lengths", &ro.lengths, "LIST",
                       "4k,8k,16k,…,1m or all (default 4k,8k,16k; with --traces all)"),
        DSA_OPT_INT(0, "limit", &ro.limit, "N", "samples per task and length (default 10)"),
        DSA_OPT_STRING(0, "haystack", &ro.haystack, "FILE",
                       "essay text or PaulGrahamEssays.json (default: the shipped substitute)"),
        DSA_OPT_STRING(0, "seed", &ro.seed_text, "N", "sample seed (default 0)"),
        DSA_OPT_STRING(0, "api", &ro.api, "KIND", "endpoint: chat (default) or completions"),
        DSA_OPT_BOOL(0, "stream", &ro.stream, "endpoint: stream responses"),
        DSA_OPT_INT(0, "runs", &lo.runs, "N", "independent runs of the same samples (default 1)"),
        DSA_OPT_STRING(0, "shard", &lo.shard, "I/N",
                       "run shard I of N (samples split by id; join with dsa-eval merge)"),
        DSA_OPT_BOOL(0, "force-new", &lo.force_new,
                     "start over when the run files were made by another command"),
        DSA_OPT_STRING(0, "backend", &lo.backend, "KIND", "endpoint (default) or inprocess"),
        DSA_LOOP_INPROC_OPTIONS(&lo.ip),
        DSA_OPT_STRING(0, "traces", &lo.traces, "DIR",
                       "inprocess: captured model traces (manifest.jsonl) instead of the proxy"),
        DSA_OPT_INT(0, "max-query", &ro.max_query, "N",
                    "inprocess: query rows = the last N prompt tokens (default 32, 0 = all)"),
        DSA_OPT_BOOL('q', "quiet", &lo.quiet, "no progress and notes"),
        DSA_OPT_BOOL(0, "json", &lo.as_json, "print the summary as JSON"),
        DSA_OPT_END(),
    };
    int ret = DSA_EXIT_USAGE;
    if (!dsa_opt_parse_no_args(&argc, argv, opts, usage, &ret))
        ret = dsa_loop_run(dsa_eval_find("ruler"), &ro, &lo);
    dsa_loop_opts_release(&lo);
    return ret;
}
