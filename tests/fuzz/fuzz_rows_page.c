/*
 * Fuzz target: a whole MRCR input file through the reader (datasets/mrcr.c): format
 * detection (JSONL rows, /rows pages one per line, one pretty-printed page), pass 1 (ids,
 * bins, official-layout check), pass 2 (full rows). The input is written to a temporary
 * file because the reader streams files by design.
 * Differential: a second reader of the same file hands its rows' messages over as compact
 * JSON (dsa_mrcr_set_messages_json, the endpoint's form: written from simdjson's tape, or the
 * prompt copied or minified); it must return the same rows, each list the very bytes
 * dsa_json_dump_compact() writes of the first reader's tree, or abort().
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdint.h>

#include "datasets/mrcr.h"
#include "fuzz.h"
#include "util/buf.h"
#include "util/json_dump.h"

/* the same row from both readers: the tree's compact dump is the other's bytes */
static void check_same(const struct dsa_mrcr_row *tree, const struct dsa_mrcr_row *bytes)
{
    struct dsa_buf b = DSA_BUF_INIT;
    if (!tree->messages || bytes->messages || !bytes->messages_json ||
        strcmp(tree->id, bytes->id) || dsa_json_dump_compact(tree->messages, &b) ||
        b.len != bytes->messages_json_len || memcmp(b.data, bytes->messages_json, b.len))
        abort();
    dsa_buf_release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_input_file(data, size, ".jsonl");
    struct dsa_mrcr_filter filter = {0, 0, 0};
    dsa_mrcr_reader *rd = dsa_mrcr_open(path, &filter);
    dsa_mrcr_reader *rj = rd ? dsa_mrcr_open(path, &filter) : NULL;
    if (rd && !rj)
        abort(); /* the same file, opened twice */
    if (rd) {
        dsa_mrcr_set_messages_json(rj);
        struct dsa_mrcr_row row = {0}, jrow = {0};
        int got;
        while ((got = dsa_mrcr_next(rd, &row)) > 0) {
            if (dsa_mrcr_next(rj, &jrow) != 1)
                abort();
            check_same(&row, &jrow);
        }
        if (dsa_mrcr_next(rj, &jrow) != got)
            abort();
        dsa_mrcr_row_release(&row);
        dsa_mrcr_row_release(&jrow);
        dsa_mrcr_free(&rd);
        dsa_mrcr_free(&rj);
    }
    return 0;
}
