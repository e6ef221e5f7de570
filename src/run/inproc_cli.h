/*
 * The in-process options of every eval command (--backend inprocess), declared once: the rows
 * of the option table (DSA_LOOP_INPROC_OPTIONS) and their checks into the stack's options
 * (backend/inprocess.h). Each command keeps its own default top-k (mrcr and ruler 2048, gsm8k
 * 512), given to dsa_loop_inproc_init(); the help line prints it.
 *
 * Ownership: string values point into argv; the variant list is owned (released by
 * dsa_loop_inproc_release).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_RUN_INPROC_CLI_H
#define DSA_RUN_INPROC_CLI_H

#include "backend/inprocess.h"
#include "util/opt.h"

struct dsa_loop_inproc {
    const char *device, *kernels_so;
    struct dsa_strlist variants;
    int topk;
    char help_topk[80];
};

void dsa_loop_inproc_init(struct dsa_loop_inproc *e, int topk);
void dsa_loop_inproc_release(struct dsa_loop_inproc *e);

#define DSA_LOOP_INPROC_OPTIONS(e)                                                                 \
    DSA_OPT_STRING(0, "device", &(e)->device, "cuda|cpu",                                          \
                   "inprocess: where the indexer stack runs (default: cuda if present)"),          \
        DSA_OPT_STRLIST(                                                                           \
            0, "variant", &(e)->variants, "K=V",                                                   \
            "inprocess: a variant flag (weights=bf16, rope=interleaved, …); repeatable"),          \
        DSA_OPT_STRING(0, "kernels", &(e)->kernels_so, "PATH.so",                                  \
                       "inprocess: another build of dsa_kernels.h (plugin ABI)"),                  \
        DSA_OPT_INT(0, "topk", &(e)->topk, "K", (e)->help_topk)

/* The stack's options from the values: variants, device ("cuda", "cpu" or "auto"), top-k.
   Returns an enum dsa_exit (DSA_EXIT_USAGE with one line printed). */
int dsa_loop_inproc_opts(const struct dsa_loop_inproc *e, struct dsa_inproc_opts *io);

#endif
