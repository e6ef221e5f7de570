/*
 * Fuzz target: the input line of `dsa-eval grade mrcr` (JSON, lone-surrogate rewriting,
 * key fallbacks, prefix parsing from the question) and the grader behind it; also the byte
 * API on the raw input cut in three. Invariants are checked, and abort() makes a violation a
 * crash: a score in [0, 1], exact == (score == 1), no score without the prefix, printable
 * one-line messages.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "evals/mrcr_grade.h"
#include "fuzz.h"

static void check_grade(const struct dsa_mrcr_grade *g)
{
    if (!(g->score >= 0.0 && g->score <= 1.0))
        abort();
    if (g->exact != (g->score == 1.0))
        abort();
    if (!g->prefix_hit && g->score != 0.0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a copy with a NUL terminator, so an overread past `size` is caught by ASan */
    char *text = fuzz_cstr(data, size);
    if (!text)
        return 0;

    struct dsa_mrcr_line ln;
    enum dsa_mrcr_line_status st = dsa_mrcr_grade_line(text, size, &ln);
    switch (st) {
    case DSA_MRCR_LINE_GRADED:
        check_grade(&ln.grade);
        /* fall through */
    case DSA_MRCR_LINE_SKIPPED:
        if (!ln.ids)
            abort();
        json_decref(ln.ids);
        break;
    case DSA_MRCR_LINE_BAD:
        if (ln.ids || !ln.why[0])
            abort();
        for (const char *p = ln.why; *p; p++)
            if (*p < 0x20 || *p > 0x7E)
                abort();
        break;
    default:
        abort();
    }

    struct dsa_mrcr_grade g;
    size_t third = size / 3;
    if (dsa_mrcr_grade(text, third, text + third, third, text + 2 * third, size - 2 * third, &g) ==
        0)
        check_grade(&g);
    free(text);
    return 0;
}
