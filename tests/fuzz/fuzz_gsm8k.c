/* Fuzz target: a GSM8K dataset line (datasets/gsm8k.c) and every answer extractor plus the
 * lm-eval normalisation (evals/gsm8k_extract.c) on the same bytes as model output.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "datasets/gsm8k.h"
#include "evals/gsm8k_extract.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static dsa_gsm8k_extractor *x;
    if (!x)
        x = dsa_gsm8k_extractor_new(); /* compiled once, like the real run */
    char *text = fuzz_cstr(data, size);
    if (!text)
        return 0;
    struct dsa_json_where w = {"fuzz.jsonl", 1};
    struct dsa_gsm8k_row row;
    if (dsa_gsm8k_parse_line(text, size, &w, &row) == 0)
        dsa_gsm8k_row_release(&row);
    for (int m = 0; m < DSA_GSM8K_EXTRACT_N; m++) {
        char *pred = dsa_gsm8k_extract(x, (enum dsa_gsm8k_extract_mode)m, text, size);
        (void)dsa_gsm8k_is_correct(x, (enum dsa_gsm8k_extract_mode)m, pred, text, size);
        free(pred);
    }
    char *norm = dsa_gsm8k_normalize(x, text, size);
    free(norm);
    free(text);
    return 0;
}
