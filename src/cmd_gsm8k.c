/*
 * dsa-eval gsm8k: GSM8K greedy decoding against an endpoint, with the MTP acceptance length
 * measured from the server's spec-decode counters (docs/gsm8k.md "MTP acceptance (`--mtp`)").
 *
 *   dsa-eval gsm8k --endpoint http://127.0.0.1:8000 --mtp --limit 32 --out runs/main-gsm8k
 *   dsa-eval gsm8k --print-prompts --prompt cot8 --limit 3
 *
 * The options, checked, into the eval's run (evals/gsm8k_eval.c: data, prompts, requests,
 * records, /metrics and the summary) on the backend they name.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "commands.h"
#include "evals/evals.h"
#include "evals/gsm8k_eval.h"
#include "evals/inproc_gsm8k.h"
#include "evals/inproc_traces.h"
#include "evals/summary.h"
#include "run/endpoint_cli.h"
#include "run/inproc_cli.h"
#include "run/loop.h"
#include "store/store.h"
#include "util/buf.h"
#include "util/exitcode.h"
#include "util/msg.h"
#include "util/opt.h"
#include "util/shard.h"

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

struct opts {
    struct dsa_loop_endpoint ep;
    struct dsa_gsm8k_eval_opts ev; /* the eval's options, set in place */
    const char *prompt, *extract, *shard_text;
    bool print_prompts, quiet;
    /* --backend inprocess */
    const char *traces;
    struct dsa_loop_inproc ip;
    int mtp_n;
};

static int open_backend(const struct opts *o, dsa_backend **b)
{
    /* --backend inprocess never gets here (run_inprocess) */
    if (strcmp(o->ev.backend, "endpoint")) {
        dsa_errorf("unknown backend '%s' (endpoint, inprocess)", o->ev.backend);
        return DSA_EXIT_USAGE;
    }
    return dsa_loop_endpoint_open(&o->ep, b);
}

static int usage_error(const char *msg)
{
    dsa_errorf("%s", msg);
    return DSA_EXIT_USAGE;
}

/* --json with --backend inprocess: the summary document of the run file */
static void print_inprocess_json(const char *out_dir)
{
    char *path = dsa_run_file_name(out_dir, 1);
    json_t *h = NULL, *recs = NULL;
    if (dsa_run_load(path, &h, &recs) == 0) {
        json_t *runs = json_pack("[o]", recs);
        dsa_summary_print(runs, true, stdout);
        json_decref(runs);
        json_decref(h);
    }
    free(path);
}

/* --backend inprocess: the MTP verify shapes of the indexer stack (evals/inproc_gsm8k.h) over
   the loaded questions of ev, or over captured traces (--traces, ev NULL) */
static int run_inprocess(const struct opts *o, dsa_gsm8k_eval *ev, int argc0, char **argv0)
{
    struct dsa_inproc_run io;
    dsa_inproc_run_init(&io);
    int rc = dsa_loop_inproc_opts(&o->ip, &io.stack);
    if (rc)
        return rc;
    if (!o->ev.out) {
        dsa_errorf("--out DIR is required with --backend inprocess");
        return DSA_EXIT_USAGE;
    }
    io.mtp = o->ev.mtp ? o->mtp_n : 0;
    io.out_dir = o->ev.out;
    io.force_new = o->ev.force_new;
    io.json = o->ev.as_json;
    io.interrupted = &dsa_interrupted;
    io.drive = dsa_loop_drive;
    io.shard = o->ev.shard;
    io.command = dsa_run_command_json(argc0, argv0);
    if (o->traces) { /* real activations: the traces' query rows are the decode rows */
        io.traces_dir = o->traces;
        int tr = dsa_inproc_traces_mtp_run(&io);
        json_decref(io.command);
        return tr;
    }
    int ret = dsa_gsm8k_eval_inprocess(ev, &io);
    /* --json is honoured by every backend */
    if (o->ev.as_json && (ret == DSA_EXIT_OK || ret == DSA_EXIT_FAIL))
        print_inprocess_json(o->ev.out);
    json_decref(io.command);
    return ret;
}

static int check_opts(struct opts *o)
{
    if (o->ev.limit < 0)
        return usage_error("--limit must be >= 0 (0: all questions)");
    if (o->ev.max_tokens < 0)
        return usage_error("--max-tokens must be > 0");
    int rc = dsa_loop_endpoint_check(&o->ep);
    if (rc)
        return rc;
    /* what the run header records of the endpoint options */
    o->ev.concurrency = o->ep.concurrency;
    o->ev.timeout_s = o->ep.timeout_s;
    o->ev.extra_body = o->ep.extra_body;
    if (o->ev.expect_mtp)
        o->ev.mtp = true;
    if (dsa_shard_parse(o->shard_text, &o->ev.shard) < 0)
        return DSA_EXIT_USAGE;
    return 0;
}

int cmd_gsm8k(int argc, char **argv)
{
    struct opts o = {
        .ev.backend = "endpoint",
        .prompt = "vllm5",
        .ev.limit = 32,
        .ev.seed = 42,
        .ev.token_ids = true,
        .ev.interrupted = &dsa_interrupted,
        .ev.drive = dsa_loop_drive,
        .mtp_n = 3,
    };
    /* the defaults of docs/gsm8k.md */
    dsa_loop_endpoint_init(&o.ep, 1, 3, 600, "same batches every run");
    dsa_loop_inproc_init(&o.ip, 512);
    struct dsa_option opts[] = {
        DSA_LOOP_ENDPOINT_OPTIONS(&o.ep),
        DSA_OPT_STRING(0, "backend", &o.ev.backend, "KIND", "endpoint (default) or inprocess"),
        DSA_OPT_STRING(0, "data", &o.ev.data_dir, "DIR",
                       "folder with test.jsonl and train.jsonl (default: the fetch cache)"),
        DSA_OPT_STRING('o', "out", &o.ev.out, "DIR", "run folder (run-001.jsonl; resumes)"),
        DSA_OPT_STRING(0, "prompt", &o.prompt, "MODE",
                       "vllm5 (default), cot8, gsm8k, sglang5, chat"),
        DSA_OPT_STRING(0, "extract", &o.extract, "MODE",
                       "scoring: vllm, cot-strict, gsm8k-strict, flexible (default: the mode's)"),
        DSA_OPT_INT('n', "limit", &o.ev.limit, "N", "first N test questions (default 32; 0: all)"),
        DSA_OPT_INT(0, "max-tokens", &o.ev.max_tokens, "N",
                    "default: the mode's (256; sglang5 512)"),
        DSA_OPT_LONG(0, "seed", &o.ev.seed, "N", "request seed (default 42)"),
        DSA_OPT_BOOL(0, "mtp", &o.ev.mtp, "measure the acceptance length (vLLM /metrics deltas)"),
        DSA_OPT_BOOL(0, "expect-mtp", &o.ev.expect_mtp,
                     "--mtp, and fail (exit 4) when the server shows no speculative decoding"),
        DSA_OPT_BOOL(0, "stream", &o.ev.stream, "stream responses (SSE)"),
        DSA_OPT_BOOL(0, "token-ids", &o.ev.token_ids,
                     "ask for token ids (vLLM return_token_ids; default on)"),
        DSA_OPT_BOOL(0, "print-prompts", &o.print_prompts,
                     "write each prompt and one NUL byte to stdout, send nothing"),
        DSA_OPT_BOOL(0, "force-new", &o.ev.force_new,
                     "start the run file anew when it was made by another command"),
        DSA_OPT_STRING(0, "shard", &o.shard_text, "I/N",
                       "run shard I of N (questions split by id; join with dsa-eval merge)"),
        DSA_OPT_BOOL('q', "quiet", &o.quiet, "no progress or notes"),
        DSA_OPT_BOOL(0, "json", &o.ev.as_json,
                     "print the summary as JSON (the summary file's document)"),
        DSA_LOOP_INPROC_OPTIONS(&o.ip),
        DSA_OPT_STRING(0, "traces", &o.traces, "DIR",
                       "inprocess: captured model traces (manifest.jsonl) instead of the proxy"),
        DSA_OPT_END(),
    };
    /* the command line for the run header, before parsing reorders argv */
    int argc0 = argc;
    char **argv0 = dsa_xcalloc((size_t)argc + 1, sizeof *argv0);
    memcpy(argv0, argv, (size_t)argc * sizeof *argv);
    o.ev.argc = argc0;
    o.ev.argv = argv0;
    int npos = dsa_opt_parse(&argc, argv, opts, usage);
    if (npos < 0) {
        free(argv0);
        return dsa_opt_exit(npos);
    }
    dsa_gsm8k_eval *ev = NULL;
    dsa_backend *b = NULL;
    int ret = DSA_EXIT_USAGE;
    dsa_msg_quiet = dsa_msg_quiet || o.quiet;

    /* in-process, "--mtp N" names the draft count: the N is left as a positional argument */
    if (npos == 1 && o.ev.mtp && !strcmp(o.ev.backend, "inprocess") && argv[0][0] >= '0' &&
        argv[0][0] <= '9' && !argv[0][1]) {
        o.mtp_n = argv[0][0] - '0';
        npos = 0;
    }
    if (npos > 0) {
        dsa_errorf("unexpected argument '%s' (see 'dsa-eval gsm8k --help')", argv[0]);
        goto cleanup;
    }
    if ((ret = check_opts(&o)))
        goto cleanup;
    ret = DSA_EXIT_USAGE;
    if (!(o.ev.mode = dsa_gsm8k_mode_find(o.prompt))) {
        dsa_errorf("unknown prompt mode '%s' (vllm5, cot8, gsm8k, sglang5, chat)", o.prompt);
        goto cleanup;
    }
    o.ev.extract = o.ev.mode->extract;
    if (o.extract && dsa_gsm8k_extract_parse(o.extract, &o.ev.extract)) {
        dsa_errorf("unknown extraction '%s' (vllm, cot-strict, gsm8k-strict, flexible)", o.extract);
        goto cleanup;
    }
    if (dsa_eval_check_backend(dsa_eval_find("gsm8k"), o.ev.backend))
        goto cleanup;
    if (o.traces && strcmp(o.ev.backend, "inprocess")) {
        dsa_errorf("--traces DIR is for --backend inprocess");
        goto cleanup;
    }
    if (o.traces) { /* no GSM8K data: the traces hold the prompts */
        ret = run_inprocess(&o, NULL, argc0, argv0);
        goto cleanup;
    }
    ev = dsa_gsm8k_eval_new(&o.ev);
    if ((ret = dsa_gsm8k_eval_load(ev)))
        goto cleanup;
    if (o.print_prompts)
        ret = dsa_gsm8k_eval_print_prompts(ev, stdout);
    else if (!strcmp(o.ev.backend, "inprocess"))
        ret = run_inprocess(&o, ev, argc0, argv0);
    else if (!(ret = open_backend(&o, &b)))
        ret = dsa_gsm8k_eval_run(ev, b);

cleanup:
    dsa_gsm8k_eval_free(&ev);
    dsa_backend_free(&b);
    dsa_loop_endpoint_release(&o.ep);
    dsa_loop_inproc_release(&o.ip);
    free(argv0);
    return ret;
}
