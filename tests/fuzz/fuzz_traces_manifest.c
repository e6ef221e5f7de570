/*
 * Fuzz target: one line of a traces manifest (evals/inproc_traces.c, `mrcr|ruler --traces DIR`):
 * JSON, then the id, file (inside the folder), bin label and needle span checks, as MRCR's and
 * as RULER's reader (sample ids, lengths, needle lists). Errors are a reason string and must
 * never crash.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdint.h>
#include <stdlib.h>

#include "evals/inproc_traces.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *buf = fuzz_copy(data, size); /* exact size: reads past the end are caught */
    if (!buf)
        return 0;
    char why[256];
    (void)dsa_inproc_traces_parse_line("mrcr", (const char *)buf, size, why, sizeof why);
    (void)dsa_inproc_traces_parse_line("ruler", (const char *)buf, size, why, sizeof why);
    free(buf);
    return 0;
}
