/*
 * dsa-eval gsm8k: GSM8K greedy decoding against an endpoint, with the MTP acceptance length
 * measured from the server's spec-decode counters (docs/gsm8k.md "MTP acceptance (`--mtp`)").
 *
 *   dsa-eval gsm8k --endpoint http://127.0.0.1:8000 --mtp --limit 32 --out runs/main-gsm8k
 *   dsa-eval gsm8k --print-prompts --prompt cot8 --limit 3
 *
 * The options, into the eval's row (evals/gsm8k_eval.c: data, prompts, requests, records,
 * /metrics and the summary) driven by the run loop (src/run/run.h).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <string.h>

#include "commands.h"
#include "evals/evals.h"
#include "evals/gsm8k_eval.h"
#include "run/run.h"
#include "util/exitcode.h"
#include "util/msg.h"
#include "util/opt.h"

static const char *const usage[] = {
    "dsa-eval gsm8k --endpoint URL [--mtp] [--limit N] [--out DIR] [options]",
    "dsa-eval gsm8k --print-prompts [--prompt MODE] [--limit N] [--data DIR]",
    "",
    "GSM8K with greedy decoding (temperature 0, top_p 1, fixed seed) against a vLLM, SGLang or",
    "OpenAI-compatible server: accuracy with its standard error, the invalid-answer rate and,",
    "with --mtp, the speculative-decoding acceptance length from /metrics counter deltas",
    "(SGLang: from per-request meta_info). Prompt modes: vllm5 (default; vLLM CI 5-shot),",
    "cot8 (lm-eval gsm8k_cot), gsm8k (lm-eval strict '#### N' form), sglang5 (SGLang bench),",
    "chat (zero-shot, /v1/chat/completions). See docs/gsm8k.md.",
    "",
    "Byte-for-byte comparisons (dsa-eval compare) need the same batches on both servers:",
    "keep --concurrency 1 (the default), or run the servers batch-invariant",
    "(VLLM_BATCH_INVARIANT=1); greedy outputs can change with batch composition.",
    "With --mtp the server must be otherwise idle: the counters are server-wide.",
    NULL,
};

/* in-process, "--mtp N" names the draft count: the N is left as a positional argument */
static int draft_count(int npos, char **argv, const struct dsa_loop_opts *lo,
                       struct dsa_gsm8k_eval_opts *go)
{
    if (npos == 1 && go->mtp && !strcmp(lo->backend, "inprocess") && argv[0][0] >= '0' &&
        argv[0][0] <= '9' && !argv[0][1]) {
        go->mtp_n = argv[0][0] - '0';
        npos = 0;
    }
    if (npos > 0)
        return dsa_errorf("unexpected argument '%s' (see 'dsa-eval gsm8k --help')", argv[0]);
    return 0;
}

int cmd_gsm8k(int argc, char **argv)
{
    struct dsa_loop_opts lo; /* the defaults of docs/gsm8k.md */
    dsa_loop_opts_init(&lo, argc, argv, 1, 3, 600, "same batches every run", 512);
    lo.interrupted = &dsa_interrupted;
    struct dsa_gsm8k_eval_opts go = {
        .prompt = "vllm5", .limit = 32, .seed = 42, .token_ids = true, .mtp_n = 3};
    struct dsa_option opts[] = {
        DSA_LOOP_ENDPOINT_OPTIONS(&lo.ep),
        DSA_OPT_STRING(0, "backend", &lo.backend, "KIND", "endpoint (default) or inprocess"),
        DSA_OPT_STRING(0, "data", &go.data_dir, "DIR",
                       "folder with test.jsonl and train.jsonl (default: the fetch cache)"),
        DSA_OPT_STRING('o', "out", &lo.out, "DIR", "run folder (run-001.jsonl; resumes)"),
        DSA_OPT_STRING(0, "prompt", &go.prompt, "MODE",
                       "vllm5 (default), cot8, gsm8k, sglang5, chat"),
        DSA_OPT_STRING(0, "extract", &go.extract, "MODE",
                       "scoring: vllm, cot-strict, gsm8k-strict, flexible (default: the mode's)"),
        DSA_OPT_INT('n', "limit", &go.limit, "N", "first N test questions (default 32; 0: all)"),
        DSA_OPT_INT(0, "max-tokens", &go.max_tokens, "N", "default: the mode's (256; sglang5 512)"),
        DSA_OPT_LONG(0, "seed", &go.seed, "N", "request seed (default 42)"),
        DSA_OPT_BOOL(0, "mtp", &go.mtp, "measure the acceptance length (vLLM /metrics deltas)"),
        DSA_OPT_BOOL(0, "expect-mtp", &go.expect_mtp,
                     "--mtp, and fail (exit 4) when the server shows no speculative decoding"),
        DSA_OPT_BOOL(0, "stream", &go.stream, "stream responses (SSE)"),
        DSA_OPT_BOOL(0, "token-ids", &go.token_ids,
                     "ask for token ids (vLLM return_token_ids; default on)"),
        DSA_OPT_BOOL(0, "print-prompts", &go.print_prompts,
                     "write each prompt and one NUL byte to stdout, send nothing"),
        DSA_OPT_BOOL(0, "force-new", &lo.force_new,
                     "start the run file anew when it was made by another command"),
        DSA_OPT_STRING(0, "shard", &lo.shard, "I/N",
                       "run shard I of N (questions split by id; join with dsa-eval merge)"),
        DSA_OPT_BOOL('q', "quiet", &lo.quiet, "no progress or notes"),
        DSA_OPT_BOOL(0, "json", &lo.as_json,
                     "print the summary as JSON (the summary file's document)"),
        DSA_LOOP_INPROC_OPTIONS(&lo.ip),
        DSA_OPT_STRING(0, "traces", &lo.traces, "DIR",
                       "inprocess: captured model traces (manifest.jsonl) instead of the proxy"),
        DSA_OPT_END(),
    };
    int ret = DSA_EXIT_USAGE;
    int npos = dsa_opt_parse(&argc, argv, opts, usage);
    if (npos < 0)
        ret = dsa_opt_exit(npos);
    else if (draft_count(npos, argv, &lo, &go) == 0)
        ret = dsa_loop_run(dsa_eval_find("gsm8k"), &go, &lo);
    dsa_loop_opts_release(&lo);
    return ret;
}
