/*
 * dsa-eval kernels check: the DSA indexer kernels against the C reference, and the C
 * reference against its fp64 golden model (kernels/check.h).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "kernels/check.h"
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
    NULL};

int cmd_kernels(int argc, char **argv)
{
    const char *device = NULL, *filter = NULL, *plugin = NULL;
    bool quick = false;
    int reruns = -1;
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
        DSA_OPT_END(),
    };
    int n = dsa_opt_parse(&argc, argv, opts, usage);
    if (n < 0)
        return dsa_opt_exit(n);
    if (n != 1 || strcmp(argv[0], "check")) {
        dsa_errorf("expected 'dsa-eval kernels check' (see 'dsa-eval kernels --help')");
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
    return res.failed ? DSA_EXIT_FAIL : DSA_EXIT_OK;
}
