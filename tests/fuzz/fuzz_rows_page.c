/*
 * Fuzz target: a whole MRCR input file through the reader (datasets/mrcr.c): format
 * detection (JSONL rows, /rows pages one per line, one pretty-printed page), pass 1 (ids,
 * bins, official-layout check), pass 2 (full rows). The input is written to a temporary
 * file because the reader streams files by design.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdint.h>

#include "datasets/mrcr.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_input_file(data, size, ".jsonl");
    struct dsa_mrcr_filter filter = {0, 0, 0};
    dsa_mrcr_reader *rd = dsa_mrcr_open(path, &filter);
    if (rd) {
        struct dsa_mrcr_row row = {0};
        while (dsa_mrcr_next(rd, &row) > 0)
            ;
        dsa_mrcr_row_release(&row);
        dsa_mrcr_free(&rd);
    }
    return 0;
}
