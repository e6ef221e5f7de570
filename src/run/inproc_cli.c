/* The in-process options of the eval commands; see inproc_cli.h.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "run/inproc_cli.h"

#include <stdio.h>
#include <string.h>

#include "util/exitcode.h"
#include "util/msg.h"

void dsa_loop_inproc_init(struct dsa_loop_inproc *e, int topk)
{
    memset(e, 0, sizeof *e);
    e->topk = topk;
    snprintf(e->help_topk, sizeof e->help_topk,
             "inprocess: top-k of the indexer (512|1024|2048; default %d)", topk);
}

void dsa_loop_inproc_release(struct dsa_loop_inproc *e)
{
    dsa_strlist_release(&e->variants);
}

int dsa_loop_inproc_opts(const struct dsa_loop_inproc *e, struct dsa_inproc_opts *io)
{
    dsa_inproc_opts_init(io);
    for (size_t i = 0; i < e->variants.n; i++) {
        if (dsa_k_flags_set(&io->flags, e->variants.v[i]) < 0) {
            dsa_errorf("unknown variant '%s' (see docs/kernels.md \"Variant flags\")",
                       e->variants.v[i]);
            return DSA_EXIT_USAGE;
        }
        io->rope_given |= !strncmp(e->variants.v[i], "rope=", 5);
    }
    if (e->device && strcmp(e->device, "cuda") && strcmp(e->device, "cpu") &&
        strcmp(e->device, "auto")) {
        dsa_errorf("unknown device '%s' (use cuda or cpu)", e->device);
        return DSA_EXIT_USAGE;
    }
    if (e->topk != 512 && e->topk != 1024 && e->topk != 2048) {
        dsa_errorf("--topk must be 512, 1024 or 2048");
        return DSA_EXIT_USAGE;
    }
    io->device = e->device;
    io->kernels_so = e->kernels_so;
    io->topk = e->topk;
    return DSA_EXIT_OK;
}
