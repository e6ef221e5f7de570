/*
 * GSM8K run records and summaries: grading one output into its record, the summary printed
 * after a run (accuracy with its standard error, invalid-answer rate, MTP acceptance), and
 * the summary file written next to the run file (docs/gsm8k.md "Files").
 *
 * Record keys written here: "extract" {"vllm","cot-strict","gsm8k-strict","flexible"} (each
 * mode's prediction), "pred" (the scoring mode's), "correct" (bool), "score" (1 or 0).
 *
 * Ownership: records are borrowed; json_t results are new references; paths are fresh
 * strings the caller frees.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_EVALS_GSM8K_RUN_H
#define DSA_EVALS_GSM8K_RUN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "evals/gsm8k_extract.h"
#include "evals/mtp.h"

/* Grades `text` with every extraction mode into `rec`; `primary` decides pred/correct/score. */
void dsa_gsm8k_record_grade(dsa_gsm8k_extractor *x, json_t *rec,
                            enum dsa_gsm8k_extract_mode primary, const char *text, size_t len,
                            const char *gold);

struct dsa_gsm8k_summary_in {
    const char *mode;
    enum dsa_gsm8k_extract_mode extract;
    size_t n;                 /* questions in the run */
    size_t resumed, sent;     /* finished earlier / requests sent by this process */
    double completion_tokens; /* of the requests sent by this process */
    bool mtp, expect_mtp;
    bool sglang;                           /* acceptance from per-request meta_info */
    bool have_counters;                    /* both /metrics reads succeeded */
    const struct dsa_mtp_counters *before; /* vLLM counters around the requests */
    const struct dsa_mtp_counters *after;
    const struct dsa_mtp_perreq *perreq;
    double wall_s;            /* this attempt's time from the first request to the last answer */
    const json_t *stored_mtp; /* the summary file's "mtp" of an earlier attempt, or NULL */
};

/*
 * Prints the summary of records[0..n) (NULL entries: not finished) to `out` and returns it
 * as JSON in *summary. Returns DSA_EXIT_OK, DSA_EXIT_FAIL when some questions failed or are
 * missing, or DSA_EXIT_BACKEND when expect_mtp and nothing was measured.
 *
 *   gsm8k vllm5: 32 questions, 32 graded (32 sent, 0 resumed, 0 failed)
 *   accuracy            0.9375 ± 0.0435   (30/32 correct, vllm; ± CLT standard error)
 *   invalid answers     0.0000            (0/32)
 *   other extractions   cot-strict 0.0000  gsm8k-strict 0.9063  flexible 0.9375
 *   acceptance length   3.4904   (1 + 1234 accepted / 823 drafts)
 *   draft acceptance    0.7470   (1234 / 1652 draft tokens)
 *   per position        0.9120 0.6430 0.3390
 *   throughput          3.20 questions/s, 412.5 output tokens/s, wall 10.0 s (32 sent)
 *
 * When this attempt measured no acceptance (nothing left to send) and `stored_mtp` holds
 * one, the stored acceptance length is printed (and returned), marked as stored.
 */
int dsa_gsm8k_summarize(const struct dsa_gsm8k_summary_in *in, json_t *const *records, FILE *out,
                        json_t **summary);

/* "DIR/run-001.jsonl" -> "DIR/run-001.summary.json" */
char *dsa_gsm8k_summary_path(const char *run_path);
/* Writes atomically (temporary file + rename). 0, or -1 with the error printed. */
int dsa_gsm8k_summary_write(const char *path, json_t *summary);
/* The summary, or NULL when the file is absent (silently) or unreadable (printed). */
json_t *dsa_gsm8k_summary_read(const char *path);

/* CLT standard error of a proportion as lm-eval reports it: sample stddev / sqrt(n), i.e.
   sqrt(p (1 - p) / (n - 1)); NaN for n < 2. */
double dsa_gsm8k_stderr(size_t correct, size_t n);

#endif
