/*
 * dsa-eval kernels check: the DSA indexer kernels against the C reference, and the C
 * reference against its fp64 golden model (kernels/check.h); kernels bench: the CUDA kernels
 * timed next to their floors (kernels/bench.h); kernels trace: the stack on captured traces.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "kernels/bench.h"
#include "kernels/check.h"
#include "util/buf.h"
#ifndef DSA_KERNELS_ONLY_BUILD /* kernels-only builds have no jansson: no trace files */
#include "backend/inprocess.h"
#include "kernels/trace.h"
#endif
#include "kernels/plugin.h"
#include "util/exitcode.h"
#include "util/msg.h"
#include "util/opt.h"

static const char *const usage[] = {
    "dsa-eval kernels check [--device cuda|cpu] [--kernels PATH.so] [-k FILTER] [--quick]",
    "",
    "Runs every stage of the indexer stack (k_prep, q_prep, logits_decode, logits_prefill,",
    "topk) over many shapes and prints one row per case. With --device cuda (the default",
    "when a GPU is present) or --kernels PATH.so, the implementation is compared with the C",
    "reference; with --device cpu, the C reference is compared with its fp64 golden model.",
    "Exit status 1 when any case fails; \"not supported\" cases are skipped.",
    "",
    "dsa-eval kernels trace FILE.safetensors... [--device cuda|cpu] [--kernels PATH.so]",
    "                      [--variant K=V]... [--topk K]",
    "",
    "Runs the stack on q/k/w captured from a model (docs/kernels.md \"Trace files\") and",
    "prints recall@k of each query row against the fp64 golden selection, per layer, and",
    "the share of the model's own selection that the stack and the golden model select",
    "when the trace holds it (scripts/capture_traces.py writes such traces).",
    "",
    "dsa-eval kernels bench [--json] [-k FILTER] [--iters N] [--seed N]",
    "",
    "Times the CUDA kernels (S3a decode logits, S3b prefill logits, S4 top-k) at the shapes",
    "of docs/kernels.md \"Benchmarks\": the median of N (>= 20) calls after warm-up, inputs",
    "rotated beyond the L2, GB/s or TFLOP/s, the floor and the ratio to it, and a check",
    "against the C reference. Needs a CUDA GPU (exit status 4 without one).",
    NULL};

#ifndef DSA_KERNELS_ONLY_BUILD
/* one layer of a trace (prefix "" or "layers.<L>."), printed as one block:
 *   trace 'x.safetensors' layer 1: T=8192 rows=4 rope=neox,… on cuda
 *          pos  recall@2048  model:stack  model:golden
 *         8188       0.9951       0.9912        1.0000
 *   mean recall@2048 0.9940, selection_sha256 3f2a…
 *   model selection: stack 0.9930, golden 0.9998
 * (the two model columns and the last line only when the trace holds the model's top-k)
 */
static int trace_layer(const dsa_trace *tr, const char *path, int layer,
                       const struct dsa_inproc_opts *base, bool rope_given)
{
    char prefix[32] = "", qname[48];
    if (layer >= 0)
        snprintf(prefix, sizeof prefix, "layers.%d.", layer);
    snprintf(qname, sizeof qname, "%sq_raw", prefix);
    struct dsa_inproc_opts o = *base;
    const struct dsa_trace_tensor *q = dsa_trace_get(tr, qname);
    if (q && q->ndim == 3 && (q->shape[1] == 32 || q->shape[1] == 64))
        o.flags.heads = (int)q->shape[1]; /* the trace says how many index heads */
    const char *rope = dsa_trace_meta(tr, "rope");
    if (rope && !rope_given) {
        char kv[64];
        snprintf(kv, sizeof kv, "rope=%s", rope);
        if (dsa_k_flags_set(&o.flags, kv)) {
            dsa_errorf("trace '%s' has an unknown rope '%s' in __metadata__", path, rope);
            return DSA_EXIT_DATA;
        }
    }
    struct dsa_inproc_inputs in;
    if (dsa_inproc_trace_layer_inputs(tr, prefix, o.flags.heads, &in))
        return DSA_EXIT_DATA;
    int ret = DSA_EXIT_BACKEND, K = o.topk;
    dsa_inproc *ip = NULL;
    int32_t *idx = dsa_xmalloc((size_t)in.M * K * 4), *gold = dsa_xmalloc((size_t)in.M * K * 4),
            *model = dsa_xmalloc((size_t)in.M * K * 4);
    double *rec = dsa_xmalloc((size_t)in.M * sizeof *rec);
    int has_model = dsa_inproc_trace_model_topk(tr, prefix, in.M, K, model);
    if (has_model < 0 ||
        (has_model > 0 && dsa_inproc_check_model_rows(path, &in, model, has_model, K))) {
        ret = DSA_EXIT_DATA;
        goto cleanup;
    }
    if (has_model > 0 && has_model != K) {
        dsa_notef("trace '%s' holds the model's top-%d, not a top-%d: no model columns", path,
                  has_model, K);
        has_model = 0;
    }
    ip = dsa_inproc_new(&o);
    if (!ip || dsa_inproc_select_inputs(ip, &in, idx, gold))
        goto cleanup;
    char hex[65], vs[256], where[48] = "";
    double mean = dsa_inproc_recall(idx, gold, in.M, K, rec, hex), ms = 0.0, mg = 0.0;
    dsa_k_flags_str(&o.flags, vs, sizeof vs);
    if (layer >= 0)
        snprintf(where, sizeof where, " layer %d", layer);
    printf("trace '%s'%s: T=%ld rows=%d %s on %s\n", path, where, in.T, in.M, vs,
           dsa_inproc_device(ip));
    printf("%10s %12s%d%s\n", "pos", "recall@", K, has_model ? "  model:stack  model:golden" : "");
    for (int m = 0; m < in.M; m++) {
        printf("%10ld %13.4f", in.qpos[m], rec[m]);
        if (has_model) {
            const int32_t *mr = model + (size_t)m * K;
            double as = dsa_inproc_agreement(idx + (size_t)m * K, mr, K),
                   ag = dsa_inproc_agreement(gold + (size_t)m * K, mr, K);
            ms += as;
            mg += ag;
            printf(" %12.4f %13.4f", as, ag);
        }
        printf("\n");
    }
    printf("mean recall@%d %.4f, selection_sha256 %s\n", K, mean, hex);
    if (has_model)
        printf("model selection: stack %.4f, golden %.4f\n", ms / in.M, mg / in.M);
    ret = DSA_EXIT_OK;
cleanup:
    free(idx);
    free(gold);
    free(model);
    free(rec);
    dsa_inproc_free(&ip);
    dsa_inproc_trace_inputs_release(&in);
    return ret;
}

static int run_trace(const char *path, const struct dsa_inproc_opts *base, bool rope_given)
{
    dsa_trace *tr = NULL;
    if (dsa_trace_open(path, &tr))
        return DSA_EXIT_DATA;
    int layers[256];
    int n = dsa_inproc_trace_layers(tr, layers, 256), ret = n < 0 ? DSA_EXIT_DATA : DSA_EXIT_OK;
    for (int i = 0; i < n && ret == DSA_EXIT_OK; i++)
        ret = trace_layer(tr, path, layers[i], base, rope_given);
    dsa_trace_free(&tr);
    return ret;
}

#endif

/* kernels bench: one table (or one JSON document) on stdout; exit 4 without a GPU */
static int run_bench(const char *filter, bool json, int iters, long seed)
{
    if (iters < DSA_KBENCH_MIN_ITERS) {
        dsa_errorf("--iters must be >= %d, not %d", DSA_KBENCH_MIN_ITERS, iters);
        return DSA_EXIT_USAGE;
    }
    const struct dsa_kernels_api *impl = dsa_kernels_cuda();
    if (!impl) {
#ifdef DSA_HAVE_CUDA
        dsa_errorf("'kernels bench' times the CUDA kernels, and no CUDA GPU is usable here");
#else
        dsa_errorf("'kernels bench' times the CUDA kernels, and this build has none (rebuild "
                   "with nvcc)");
#endif
        return DSA_EXIT_BACKEND;
    }
    struct dsa_kbench_opts o = {impl, filter, iters, json, (uint64_t)seed};
    struct dsa_kbench_result res;
    if (dsa_kbench_run(&o, stdout, &res) < 0)
        return DSA_EXIT_BACKEND;
    if (!res.cases) {
        dsa_errorf("no shape matches -k '%s'", filter ? filter : "");
        return DSA_EXIT_USAGE;
    }
    if (!json)
        printf("%d timed, %d failed their check\n", res.cases, res.failed);
    return res.failed ? DSA_EXIT_FAIL : DSA_EXIT_OK;
}

int cmd_kernels(int argc, char **argv)
{
    const char *device = NULL, *filter = NULL, *plugin = NULL;
    bool quick = false, json = false;
    int reruns = -1, topk = 2048, iters = DSA_KBENCH_MIN_ITERS;
    struct dsa_strlist variants = {0};
    long seed = 1;
    struct dsa_option opts[] = {
        DSA_OPT_STRING(0, "device", &device, "cuda|cpu",
                       "where the stack runs (default: cuda if present)"),
        DSA_OPT_STRING(0, "kernels", &plugin, "PATH.so", "check another build of dsa_kernels.h"),
        DSA_OPT_STRING('k', "filter", &filter, "TEXT",
                       "only cases whose 'stage/case' contains TEXT"),
        DSA_OPT_INT(0, "reruns", &reruns, "N", "determinism reruns (default 20; 2 on the cpu)"),
        DSA_OPT_LONG(0, "seed", &seed, "N", "seed of the random inputs (default 1)"),
        DSA_OPT_BOOL(0, "quick", &quick, "skip the largest shapes (T=4096, 64K rows)"),
        DSA_OPT_STRLIST(0, "variant", &variants, "K=V", "trace: a variant flag; repeatable"),
        DSA_OPT_INT(0, "topk", &topk, "K", "trace: top-k (512|1024|2048, default 2048)"),
        DSA_OPT_BOOL(0, "json", &json, "bench: one JSON document instead of the table"),
        DSA_OPT_INT(0, "iters", &iters, "N", "bench: timed calls per shape (default 20)"),
        DSA_OPT_END(),
    };
    int n = dsa_opt_parse(&argc, argv, opts, usage);
    if (n < 0)
        return dsa_opt_exit(n);
#ifndef DSA_KERNELS_ONLY_BUILD
    if (n >= 1 && !strcmp(argv[0], "trace")) {
        struct dsa_inproc_opts io;
        dsa_inproc_opts_init(&io);
        bool rope_given = false;
        for (size_t i = 0; i < variants.n; i++) {
            if (dsa_k_flags_set(&io.flags, variants.v[i]) < 0) {
                dsa_errorf("unknown variant '%s' (see docs/kernels.md \"Variant flags\")",
                           variants.v[i]);
                dsa_strlist_release(&variants);
                return DSA_EXIT_USAGE;
            }
            rope_given |= !strncmp(variants.v[i], "rope=", 5);
        }
        dsa_strlist_release(&variants);
        if (n < 2 || (topk != 512 && topk != 1024 && topk != 2048) ||
            (device && strcmp(device, "cuda") && strcmp(device, "cpu"))) {
            dsa_errorf("usage: dsa-eval kernels trace FILE... (--topk 512|1024|2048, "
                       "--device cuda|cpu)");
            return DSA_EXIT_USAGE;
        }
        io.device = device;
        io.kernels_so = plugin;
        io.topk = topk;
        int ret = DSA_EXIT_OK;
        for (int i = 1; i < n && ret == DSA_EXIT_OK; i++)
            ret = run_trace(argv[i], &io, rope_given);
        dsa_kernels_unload();
        return ret;
    }
#endif
    dsa_strlist_release(&variants);
    if (n == 1 && !strcmp(argv[0], "bench"))
        return run_bench(filter, json, iters, seed);
    if (n != 1 || strcmp(argv[0], "check")) {
        dsa_errorf("expected 'dsa-eval kernels check|bench|trace' (see 'dsa-eval kernels --help')");
        return DSA_EXIT_USAGE;
    }
    if (reruns < -1) { /* -1: the option was not given */
        dsa_errorf("--reruns must be >= 0, not %d", reruns);
        return DSA_EXIT_USAGE;
    }
    const struct dsa_kernels_api *impl =
        plugin ? dsa_kernels_load(plugin) : dsa_kernels_pick(device ? device : "auto");
    if (!impl)
        return plugin
                   ? DSA_EXIT_BACKEND
                   : (device && strcmp(device, "cuda") && strcmp(device, "cpu") ? DSA_EXIT_USAGE
                                                                                : DSA_EXIT_BACKEND);
    int vs_golden = impl == dsa_kernels_cpu();
    struct dsa_kcheck_opts o = {impl,           vs_golden,
                                filter,         reruns >= 0 ? reruns : (vs_golden ? 2 : 20),
                                (uint64_t)seed, quick};
    printf("kernels check: %s on %s vs %s\n", impl->name, impl->device(),
           vs_golden ? "the fp64 golden model" : "the C reference");
    struct dsa_kcheck_result res;
    int rc = dsa_kcheck_run(&o, stdout, &res);
    printf("%d passed, %d failed, %d skipped\n", res.passed, res.failed, res.skipped);
    dsa_kernels_unload();
    if (rc < 0)
        return DSA_EXIT_BACKEND;
    if (filter && !res.passed && !res.failed && !res.skipped) {
        /* a mistyped filter must not read as a clean pass */
        dsa_errorf("no case matches -k '%s'", filter);
        return DSA_EXIT_USAGE;
    }
    return res.failed ? DSA_EXIT_FAIL : DSA_EXIT_OK;
}
