/*
 * GSM8K loader (openai/grade-school-math JSONL: one {"question","answer"} object per line).
 *
 * JSON string escapes, \uXXXX included, are decoded to UTF-8 by jansson, so the question and
 * answer bytes are exactly what Python's json.loads() followed by .encode() gives; prompts
 * built from them hash to the documented vectors (docs/gsm8k.md "Prompt test vectors").
 * The gold answer is the text after the LAST "#### " of `answer`, trimmed of ASCII white
 * space, with every ',' removed ("2,125" -> "2125"; "-10" stays "-10").
 *
 * Ownership: a dsa_gsm8k owns all its rows; rows returned by dsa_gsm8k_row() are borrowed
 * and live until dsa_gsm8k_free(), which NULLs the caller's pointer.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_DATASETS_GSM8K_H
#define DSA_DATASETS_GSM8K_H

#include <stdbool.h>
#include <stddef.h>

#include "util/json.h"

typedef struct dsa_gsm8k dsa_gsm8k;

struct dsa_gsm8k_row {
    char *question; /* UTF-8, NUL-terminated (GSM8K has no NUL bytes; jansson rejects \u0000) */
    size_t question_len;
    char *answer; /* full solution text, calculator annotations and "#### N" included */
    size_t answer_len;
    char *gold; /* final answer: after the last "#### ", trimmed, commas removed */
};

/* Reads every row of `path` ("-" = stdin). Returns 0, or a dsa_exit code with one line
   printed: DSA_EXIT_DATA for a bad line ("cannot parse line 17 of 'test.jsonl': ..." or
   "line 17 of 'test.jsonl': no \"#### \" in \"answer\""), DSA_EXIT_IO when unreadable. */
int dsa_gsm8k_load(const char *path, dsa_gsm8k **out);
size_t dsa_gsm8k_count(const dsa_gsm8k *d);
const struct dsa_gsm8k_row *dsa_gsm8k_row(const dsa_gsm8k *d, size_t i);
/* sha256 (hex) of the file bytes as read, for run headers */
const char *dsa_gsm8k_sha256(const dsa_gsm8k *d);
const char *dsa_gsm8k_path(const dsa_gsm8k *d);
void dsa_gsm8k_free(dsa_gsm8k **d);

/* Parses one JSONL line into `row` (fields freshly allocated; release with
   dsa_gsm8k_row_release). Returns 0, or -1 with one line printed naming `w`. */
int dsa_gsm8k_parse_line(const char *text, size_t len, const struct dsa_json_where *w,
                         struct dsa_gsm8k_row *row);
void dsa_gsm8k_row_release(struct dsa_gsm8k_row *row);

/* The gold rule on any answer text: a fresh string, or NULL when there is no "#### ". */
char *dsa_gsm8k_gold_of(const char *answer, size_t len);

#endif
