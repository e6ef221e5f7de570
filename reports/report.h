/*
 * Report writers: render a comparison document (stats/compare.h, schema in docs/compare.md)
 * as Markdown (PR-ready tables), a self-contained HTML page with SVG plots, CSV, or long-form
 * JSON (one object per (bin, statistic)). They read only the document.
 *
 * Ownership: the document is borrowed.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_REPORTS_REPORT_H
#define DSA_REPORTS_REPORT_H

#include <jansson.h>
#include <stdio.h>

/* All return 0, or -1 on a write error (errno set). */
int dsa_report_md(const json_t *doc, FILE *out);
int dsa_report_html(const json_t *doc, FILE *out);
/* One document of several comparisons (a pull request's MRCR and GSM8K): a verdict line per
   comparison first, then each one's tables, notes and collapsed runs and setup. */
int dsa_report_md_many(const json_t *const *docs, size_t n, FILE *out);
int dsa_report_html_many(const json_t *const *docs, size_t n, FILE *out);
int dsa_report_csv(const json_t *doc, FILE *out);
int dsa_report_json(const json_t *doc, FILE *out);

#endif
