/*
 * The official MRCR grader (docs/mrcr.md "Grading"): the prefix rule, then a bit-exact C port of
 * CPython's difflib.SequenceMatcher(None, a, b).ratio() over Unicode code points.
 * Inputs are borrowed (UTF-8 bytes or code point arrays); nothing is retained after a call.
 * dsa_mrcr_grade_line() hands the caller one jansson reference (out->ids) to json_decref.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_EVALS_MRCR_GRADE_H
#define DSA_EVALS_MRCR_GRADE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct dsa_mrcr_grade {
    double score;    /* official score: 0.0 without the prefix, else the ratio */
    bool prefix_hit; /* response starts with the exact prefix bytes */
    bool exact;      /* score == 1.0 */
};

/* Grades one response. Returns 0, or -1 if a string is not valid UTF-8 (nothing printed). */
int dsa_mrcr_grade(const char *response, size_t response_len, const char *answer, size_t answer_len,
                   const char *prefix, size_t prefix_len, struct dsa_mrcr_grade *out);

/* The same on code points (strings that may hold lone surrogates U+D800..U+DFFF, which
   UTF-8 cannot carry but Python's str and json.loads can). Always returns 0. */
int dsa_mrcr_grade_cp(const uint32_t *response, size_t response_len, const uint32_t *answer,
                      size_t answer_len, const uint32_t *prefix, size_t prefix_len,
                      struct dsa_mrcr_grade *out);

/* SequenceMatcher(None, a, b).ratio() on code point arrays, autojunk on. Lengths must be
   below 2^31 code points (aborts otherwise). Memory O(la + lb). */
double dsa_difflib_ratio(const uint32_t *a, size_t la, const uint32_t *b, size_t lb);

/* One input line of `dsa-eval grade mrcr` (docs/grade.md): a JSON object with
     the response: "response" or "model_response" (string; null means "");
     the answer:   "answer" or "ground_truth" (string);
     the prefix:   "prefix" or "random_string_to_prepend" (string), or else parsed from the
                   question "Prepend XXXXXXXXXX to the ..." in "input" (a string, a message
                   object {"content": ...}, or a message list whose last element is used).
   A line without a response but with an "error" key is a logged request error: skipped.
   JSON strings are decoded as Python's json.loads does: a valid \uD8xx\uDCxx pair is one
   code point, a lone \uD800..\uDFFF escape stays a lone surrogate code point, \u0000 is
   kept. Duplicate keys and invalid UTF-8 are rejected. */
enum dsa_mrcr_line_status {
    DSA_MRCR_LINE_GRADED = 0,
    DSA_MRCR_LINE_SKIPPED = 1, /* request error logged instead of a response */
    DSA_MRCR_LINE_BAD = -1,    /* not JSON, wrong types, missing keys, no prefix */
};

struct dsa_mrcr_line {
    struct dsa_mrcr_grade grade; /* when GRADED */
    json_t *ids;      /* GRADED/SKIPPED: a new object with the identifying keys found on the
                         line ("id", "dataset_index", "needle_count", "n_needles"), copied
                         as they are (a lone surrogate in such a string becomes U+FFFD);
                         NULL when BAD. The caller json_decref()s it. */
    bool parse_error; /* BAD because the line is not a JSON object (vs. a bad field) */
    char why[256];    /* BAD: what is wrong, one line, printable ASCII; SKIPPED: the reason */
};

enum dsa_mrcr_line_status dsa_mrcr_grade_line(const char *text, size_t len,
                                              struct dsa_mrcr_line *out);

#endif
