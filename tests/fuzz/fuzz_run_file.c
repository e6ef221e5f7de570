/*
 * Fuzz target for the run-file reader: dsa_run_load() on the input as a file, then
 * dsa_run_open() on it (resume: torn-line truncation, header matching) followed by one
 * append, and the summary over the loaded records. Invariant checked: after a successful open and
 * append, the file loads again and holds exactly the run's records, each intact.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evals/summary.h"
#include "fuzz.h"
#include "store/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool quiet;
    if (!quiet) {
        quiet = true;
        /* thousands of expected error lines would drown a real report; the sanitizers
           write to fd 2 directly, so only our messages go */
        FILE *null = fopen("/dev/null", "w");
        if (null)
            stderr = null;
    }
    const char *path = fuzz_input_file(data, size, ".jsonl");
    json_t *h = NULL, *recs = NULL;
    if (dsa_run_load(path, &h, &recs) == 0) {
        if (!json_is_object(h) || !json_is_array(recs))
            abort();
        size_t i;
        json_t *r;
        json_array_foreach(recs, i, r) if (!json_is_string(json_object_get(r, "id"))) abort();
        /* the summary reads the same outside records: it must cope with whatever loads */
        json_t *runs = json_pack("[O,O]", recs, recs);
        json_t *sum = dsa_summary_new(runs);
        if (sum) {
            struct dsa_buf b = DSA_BUF_INIT;
            dsa_summary_render_text(sum, &b);
            dsa_summary_render_json(sum, &b);
            dsa_buf_release(&b);
        }
        json_decref(sum);
        json_decref(runs);
    }
    json_decref(h);
    json_decref(recs);

    /* the header seeds in the corpus carry this match, so resumes are reached */
    json_t *header = json_pack("{s:s,s:{s:s}}", "eval", "mrcr", "match", "model", "m");
    dsa_run *run = NULL;
    if (dsa_run_open(&run, path, header, DSA_RUN_NO_SYNC) == 0) {
        json_t *rec =
            json_pack("{s:s,s:s,s:f,s:n}", "id", "fuzz/new", "bin", "all", "score", 0.5, "error");
        if (!dsa_run_has(run, "fuzz/new") && dsa_run_append(run, rec) != 0)
            abort();
        json_decref(rec);
        size_t n = dsa_run_count(run);
        if (dsa_run_load(path, &h, &recs) != 0 || json_array_size(recs) != n)
            abort();
        for (size_t k = 0; k < n; k++)
            if (!json_equal(json_array_get(recs, k), dsa_run_record(run, k)))
                abort();
        json_decref(h);
        json_decref(recs);
        dsa_run_free(&run);
    }
    json_decref(header);
    unlink(path);
    return 0;
}
