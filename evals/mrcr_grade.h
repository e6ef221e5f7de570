/*
 * The official MRCR grader (specs/mrcr.md §2–3): the prefix rule, then a bit-exact C port of
 * CPython's difflib.SequenceMatcher(None, a, b).ratio() over Unicode code points.
 * Inputs are borrowed UTF-8 byte strings; nothing is retained after a call.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_EVALS_MRCR_GRADE_H
#define DSA_EVALS_MRCR_GRADE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dsa_mrcr_grade {
    double score;    /* official score: 0.0 without the prefix, else the ratio */
    bool prefix_hit; /* response starts with the exact prefix bytes */
    bool exact;      /* score == 1.0 */
};

/* Grades one response. Returns 0, or -1 if a string is not valid UTF-8 (nothing printed). */
int dsa_mrcr_grade(const char *response, size_t response_len, const char *answer, size_t answer_len,
                   const char *prefix, size_t prefix_len, struct dsa_mrcr_grade *out);

/* SequenceMatcher(None, a, b).ratio() on code point arrays, autojunk on. */
double dsa_difflib_ratio(const uint32_t *a, size_t la, const uint32_t *b, size_t lb);

#endif
