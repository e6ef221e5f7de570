/*
 * Fuzz target: one MRCR row as a JSONL line (datasets/mrcr.c), every field and the prompt's
 * message list parsed, then the built-in tokenizer over every message and the answer.
 * Errors are printed to stderr (one line each) and must never crash.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "datasets/mrcr.h"
#include "datasets/tokenize.h"
#include "util/json_pick.h"
#include "fuzz.h"

/* The head reader of pass 1 (util/json_pick.h) takes a line only when jansson reads it as an
   object, with the same members; and takes every such line without a NUL byte or "u0000". */
static void check_pick(const char *text, size_t size)
{
    static const char *const head[] = {"n_needles", "n_chars", "context_tokens", "bin", NULL};
    json_t *a = dsa_json_pick_stream(text, size, head);
    json_t *b = json_loadb(text, size, JSON_REJECT_DUPLICATES, NULL);
    bool b_obj = b && json_is_object(b);
    if (a && !b_obj)
        abort();
    for (const char *const *n = head; a && *n; n++) {
        json_t *x = json_object_get(a, *n), *y = json_object_get(b, *n);
        if (!x != !y || (x && !json_equal(x, y)))
            abort();
    }
    if (!a && b_obj && !memchr(text, '\0', size) && !strstr(text, "u0000") && !strstr(text, "\\u"))
        abort();
    json_decref(a);
    json_decref(b);
    /* the tree builder of pass 2 builds jansson's tree or declines */
    json_t *t = dsa_json_load_fast(text, size), *u = json_loadb(text, size, 0, NULL);
    if (t && (!u || !json_equal(t, u)))
        abort();
    json_decref(t);
    json_decref(u);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a copy with a NUL terminator: the parser must not rely on it, but must not read past */
    char *text = fuzz_cstr(data, size);
    if (!text)
        return 0;
    check_pick(text, size);
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
