/*
 * Fuzz target: a whole safetensors trace file held in memory (kernels/trace.c): the 8-byte
 * header length, the JSON header, every tensor entry's dtype/shape/data_offsets, then the
 * indexer's view of it (dsa_inproc_trace_inputs: names, dtypes, shapes, q_pos order; the
 * "layers" list, per-layer tensors and the model's top-k rows). Every
 * accepted tensor is read end to end, so an entry pointing outside the buffer shows under
 * AddressSanitizer. Errors are one line each and must never crash.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/inprocess.h"
#include "kernels/trace.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* an exact-size copy, so reads past the end are caught */
    uint8_t *buf = fuzz_copy(data, size);
    if (!buf)
        return 0;
    dsa_trace *t = NULL;
    char err[256];
    if (dsa_trace_parse(buf, size, &t, err, sizeof err) == 0) {
        unsigned sum = 0;
        for (const char *names[] = {"k_raw", "q_raw", "w_raw", "q_pos", "cos", NULL}, **n = names;
             *n; n++) {
            const struct dsa_trace_tensor *x = dsa_trace_get(t, *n);
            for (size_t i = 0; x && i < x->nbytes; i++)
                sum += ((const uint8_t *)x->data)[i];
        }
        (void)dsa_trace_meta(t, "rope");
        struct dsa_inproc_inputs in;
        if (dsa_inproc_trace_inputs(t, 64, &in) == 0)
            dsa_inproc_trace_inputs_release(&in);
        /* the multi-layer form and the model's selection (docs/kernels.md "Trace files") */
        int layers[8];
        int nl = dsa_inproc_trace_layers(t, layers, 8);
        for (int i = 0; i < nl; i++) {
            char prefix[32] = "";
            if (layers[i] >= 0)
                snprintf(prefix, sizeof prefix, "layers.%d.", layers[i]);
            if (dsa_inproc_trace_layer_inputs(t, prefix, 64, &in))
                continue;
            int32_t *sel = malloc((size_t)in.M * 16 * 4);
            int kc = sel ? dsa_inproc_trace_model_topk(t, prefix, in.M, 16, sel) : 0;
            if (kc > 0)
                (void)dsa_inproc_check_model_rows("fuzz", &in, sel, kc, 16);
            free(sel);
            dsa_inproc_trace_inputs_release(&in);
        }
        if (sum == 0xdeadbeef) /* keep the reads */
            fputc(0, stderr);
        dsa_trace_free(&t);
    }
    free(buf);
    return 0;
}
