/*
 * Fuzz target for the comparison of outside run data beyond dsa_run_load (which has its own
 * target): record validation, pairing, binning, exclusion, the statistics, `plan`, and every
 * report writer. Input: the baseline's JSONL lines, a line holding only "%%", then the
 * candidate's lines (no separator: the same text on both sides). Lines that are not JSON
 * objects are skipped, as the store would reject them before us; a first line with
 * "dsa_eval_run" is the header. B is 100 and the work runs on one thread to keep each input
 * fast: under ASan, creating the bin workers' threads for every input cost more than the
 * comparison itself (perf), and the results never depend on the thread count (the ctest
 * tests check byte-identical output for 1, 2 and 8 threads).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evals/evals.h"
#include "reports/report.h"
#include "stats/compare.h"
#include "util/msg.h"

static int side_from_text(struct dsa_cmp_side *side, const char *name, const char *text, size_t len)
{
    json_t *header = json_object(), *records = json_array();
    size_t start = 0, lineno = 0;
    while (start < len) {
        const char *nl = memchr(text + start, '\n', len - start);
        size_t end = nl ? (size_t)(nl - text) : len;
        json_t *o = json_loadb(text + start, end - start, JSON_REJECT_DUPLICATES, NULL);
        if (json_is_object(o)) {
            if (lineno == 0 && json_object_get(o, "dsa_eval_run"))
                json_object_update(header, o);
            else
                json_array_append(records, o);
        }
        json_decref(o);
        lineno++;
        start = end + 1;
    }
    side->path = strdup(name);
    return dsa_cmp_side_add(side, name, header, records);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *null_out;
    if (!null_out) {
        null_out = fopen("/dev/null", "w");
        dsa_msg_quiet = true;
    }
    const char *text = (const char *)data;
    const char *sep = NULL;
    for (size_t k = 0; k + 4 <= size && !sep; k++)
        if (!memcmp(text + k, "\n%%\n", 4))
            sep = text + k;
    size_t lb = sep ? (size_t)(sep - text) : size;
    const char *ct = sep ? sep + 4 : text;
    size_t lc = sep ? size - (size_t)(ct - text) : size;
    struct dsa_cmp_side b = {0}, c = {0};
    /* error messages of bad inputs are expected: keep stderr quiet */
    FILE *saved = stderr;
    stderr = null_out;
    if (side_from_text(&b, "base", text, lb) == 0 && side_from_text(&c, "cand", ct, lc) == 0) {
        struct dsa_cmp_opts o = {
            DSA_BOOT_CFG_INIT,      "base", "cand", 0.01, 1, 0.05, dsa_eval_identity_for,
            dsa_eval_acceptance_for};
        o.boot.resamples = 100;
        json_t *doc = dsa_cmp_build(&b, &c, NULL, &o);
        if (doc) {
            dsa_report_md(doc, null_out);
            dsa_report_html(doc, null_out);
            dsa_report_csv(doc, null_out);
            dsa_report_json(doc, null_out);
            json_decref(doc);
        }
        json_t *plan = dsa_cmp_plan(&b, NULL, 0.02, 3, 0.95, 0.8);
        json_decref(plan);
    }
    stderr = saved;
    dsa_cmp_side_release(&b);
    dsa_cmp_side_release(&c);
    return 0;
}
