/*
 * Fuzz target: one MRCR row as a JSONL line (datasets/mrcr.c), every field and the prompt's
 * message list parsed, then the built-in tokenizer over every message and the answer.
 * Errors are printed to stderr (one line each) and must never crash.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "datasets/mrcr.h"
#include "datasets/tokenize.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a copy with a NUL terminator: the parser must not rely on it, but must not read past */
    char *text = fuzz_cstr(data, size);
    if (!text)
        return 0;
    struct dsa_mrcr_row row = {0};
    if (dsa_mrcr_parse_row_text(text, size, &row) == 0) {
        size_t i;
        json_t *m;
        json_array_foreach(row.messages, i, m)
        {
            json_t *c = json_object_get(m, "content");
            (void)dsa_tok_count(json_string_value(c), json_string_length(c));
        }
        (void)dsa_tok_count(row.answer, row.answer_len);
    }
    dsa_mrcr_row_release(&row);
    (void)dsa_tok_count(text, size); /* raw bytes, invalid UTF-8 included */
    free(text);
    return 0;
}
