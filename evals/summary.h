/*
 * The per-bin summary printed at the end of an eval run (mrcr, gsm8k) and by `--json`:
 * counts, mean score, prefix-hit and exact rates per bin, for each run and pooled over runs,
 * the macro mean over bins, and the failed and excluded ids. It reads only the common record
 * keys of run files (store/store.h): "id", "bin", "bin_tokens", "status", "score", "error",
 * plus the optional booleans "prefix_hit" and "exact" and the optional integer "needles".
 *
 * Definitions (docs/runfiles.md "Summary"):
 *   scored    records with status "ok" (or no status) and a numeric score
 *   excluded  status "excluded" (over context, or failed after retries and excluded by the
 *             caller); never scored
 *   failed    every other record (status "failed", or no numeric score)
 *   mean      sum of the scored records' scores in file order / scored (pooled: runs in
 *             order, each in file order)
 *   prefix_hit_rate, exact_rate   share of true among scored records carrying the key;
 *             null when none carries it
 *   macro_mean (rows "all")       mean over the row's bins of their means (bins with at
 *             least one scored record); macro_bins says how many bins that is
 * Rows: bins in ascending "bin_tokens" (bins without it after, by label), then "all". When
 * the records carry two or more distinct "needles" values (MRCR with several needle counts),
 * rows are per (needles, bin), each needle count ends with its own "all" row, and a final
 * "all" row pools everything. A run with a single bin labelled "all" (GSM8K) has one row.
 *
 * Ownership: dsa_summary_new() borrows `runs` and returns a new reference; the renderers
 * borrow the summary and append to a caller-owned dsa_buf.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_EVALS_SUMMARY_H
#define DSA_EVALS_SUMMARY_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "util/buf.h"

/* `runs`: a JSON array with one element per run, each the records array dsa_run_load()
   returns. Returns the summary document (schema in docs/runfiles.md), or NULL with an error
   printed when a record lacks a string "id" or "bin". */
json_t *dsa_summary_new(json_t *runs);

/* Aligned text table (UTF-8; widths count code points), lists of failed and excluded ids
   (at most DSA_SUMMARY_TEXT_LIST_MAX lines each; the JSON lists all). */
#define DSA_SUMMARY_TEXT_LIST_MAX 50
void dsa_summary_render_text(json_t *summary, struct dsa_buf *out);
/* The document as indented JSON with sorted keys, ending with '\n' (for --json). */
void dsa_summary_render_json(json_t *summary, struct dsa_buf *out);

/* Convenience for the end of a run: dsa_summary_new() then the text or (as_json) the JSON
   rendering written to `out`. Returns 0, or -1 when the records are unusable (printed). */
int dsa_summary_print(json_t *runs, bool as_json, FILE *out);

/* The records with status "failed" in runs (an array of arrays of records). */
long dsa_summary_failed(json_t *runs);
/* --json after an in-process run: the summary document of the run files' records on stdout
   when `ret` is a finished run (OK, FAIL, INTERRUPTED). Returns ret, or DSA_EXIT_DATA when the
   document could not be printed. */
int dsa_summary_print_json_if(json_t *runs, int ret);

#endif
