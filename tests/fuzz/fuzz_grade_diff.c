/*
 * Fuzz target, differential: the MRCR grader (evals/mrcr_grade.c, a port of CPython's
 * difflib) against CPython itself. The input is "prefix \x1f response \x1f answer"
 * (\x1f = ASCII unit separator; missing parts are empty), and must be UTF-8. In-process the
 * target checks what needs no reference (a score in [0, 1], exact iff 1, 0 without the prefix,
 * identical strings score 1). With DSA_FUZZ_DIFF_OUT=FILE it also appends one JSON line
 * {"prefix", "response", "answer", "score"} per graded input, and tests/fuzz/grade_diff.py
 * recomputes every score with difflib.SequenceMatcher and requires bit equality: the
 * campaign's mutations become thousands of differential cases (t0911 runs it).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evals/mrcr_grade.h"
#include "fuzz.h"

static FILE *diff_out(void)
{
    static FILE *f;
    static int opened;
    if (!opened++) {
        const char *p = getenv("DSA_FUZZ_DIFF_OUT");
        f = p && *p ? fopen(p, "a") : NULL;
    }
    return f;
}

static void record(const char *p, size_t pl, const char *r, size_t rl, const char *a, size_t al,
                   double score)
{
    FILE *f = diff_out();
    if (!f)
        return;
    json_t *o = json_pack("{s:s%, s:s%, s:s%, s:f}", "prefix", p, pl, "response", r, rl, "answer",
                          a, al, "score", score);
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
    if (s) {
        fputs(s, f);
        fputc('\n', f);
        fflush(f);
    }
    free(s);
    json_decref(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_copy(data, size);
    if (!text)
        return 0;
    const char *part[3] = {text, text + size, text + size};
    size_t len[3] = {size, 0, 0};
    for (int k = 0; k < 2; k++) {
        const char *sep = memchr(part[k], 0x1f, len[k]);
        if (!sep)
            break;
        part[k + 1] = sep + 1;
        len[k + 1] = (size_t)(part[k] + len[k] - (sep + 1));
        len[k] = (size_t)(sep - part[k]);
    }
    struct dsa_mrcr_grade g;
    /* the grader's answer carries the prefix, as the dataset's does */
    if (dsa_mrcr_grade(part[1], len[1], part[2], len[2], part[0], len[0], &g) == 0) {
        if (!(g.score >= 0.0 && g.score <= 1.0) || g.exact != (g.score == 1.0) ||
            (!g.prefix_hit && g.score != 0.0))
            abort();
        if (len[1] == len[2] && !memcmp(part[1], part[2], len[1]) && g.prefix_hit && g.score != 1.0)
            abort();
        record(part[0], len[0], part[1], len[1], part[2], len[2], g.score);
    }
    free(text);
    return 0;
}
