/*
 * Fuzz target: the input line of `dsa-eval grade mrcr` (JSON, lone-surrogate rewriting,
 * key fallbacks, prefix parsing from the question) and the grader behind it; also the byte
 * API on the raw input cut in three. Invariants are checked, and abort() makes a violation a
 * crash: a score in [0, 1], exact == (score == 1), no score without the prefix, printable
 * one-line messages, and the two readers of a line (evals/mrcr_grade_fields.h) taking the
 * same lines with the same fields.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "evals/mrcr_grade.h"
#include "evals/mrcr_grade_fields.h"
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

static bool same_value(const struct dsa_mrcr_fields *a, const struct dsa_mrcr_fvalue *x,
                       const struct dsa_mrcr_fields *b, const struct dsa_mrcr_fvalue *y)
{
    if (x->type != y->type || !x->value != !y->value)
        return false;
    if (x->value && !json_equal(x->value, y->value))
        return false;
    return x->len == y->len &&
           !memcmp(dsa_mrcr_fields_str(a, x), dsa_mrcr_fields_str(b, y), x->len);
}

/* The stream reader takes a line exactly when jansson reads it as an object (lines with a raw
   NUL byte it leaves to jansson), on the lines
   it is given: those without lone surrogate escapes (dsa_mrcr_grade_line rewrites them
   first; jansson refuses them as "invalid Unicode"). */
static void check_readers(const char *text, size_t size)
{
    struct dsa_mrcr_fields a, b;
    dsa_mrcr_fields_init(&a);
    dsa_mrcr_fields_init(&b);
    int sa = dsa_mrcr_fields_stream(text, size, &a), tb = dsa_mrcr_fields_tree(text, size, &b);
    bool lone = tb == -1 && strstr(b.error, "invalid Unicode");
    if (!lone && (sa == 0) != (tb == 0) && !(sa && memchr(text, '\0', size)))
        abort();
    for (int k = 0; sa == 0 && tb == 0 && k < DSA_MF_COUNT; k++)
        if (!same_value(&a, &a.f[k], &b, &b.f[k]))
            abort();
    if (sa == 0 && tb == 0 && !same_value(&a, &a.question, &b, &b.question))
        abort();
    dsa_mrcr_fields_release(&a);
    dsa_mrcr_fields_release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a copy with a NUL terminator, so an overread past `size` is caught by ASan */
    char *text = fuzz_cstr(data, size);
    if (!text)
        return 0;

    check_readers(text, size);
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
