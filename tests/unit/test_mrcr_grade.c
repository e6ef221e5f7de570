/*
 * Unit tests of the official MRCR grader (evals/mrcr_grade.h, docs/mrcr.md "Grading"):
 *  - the vectors of docs/mrcr.md "Vectors for unit tests";
 *  - subsets of real Gemini logs in tests/data/mrcr: the pro logs reproduce the logged
 *    score bit for bit on all 98 graded rows; the flash logs were graded after
 *    response.strip(), so they differ from the official grade exactly where strip() changes
 *    the response (36 rows) and equal the grade of the stripped response everywhere;
 *  - parity with CPython's difflib run by this test ($DSA_PYTHON) on >= 5,000 generated
 *    pairs, compared bit for bit, plus JSON lines (lone surrogates, escapes) through
 *    dsa_mrcr_grade_line() against json.loads + the official grade().
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "evals/mrcr_grade.h"
#include "evals/mrcr_grade_fields.h"
#include "util/buf.h"
#include "util/hash.h"
#include "util/lines.h"
#include "util/utf8.h"

static uint64_t bits(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

#define assert_same_double(got, want)                                                              \
    do {                                                                                           \
        double g_ = (got), w_ = (want);                                                            \
        if (bits(g_) != bits(w_))                                                                  \
            fail_msg("got %.17g, want %.17g", g_, w_);                                             \
    } while (0)

static double ratio_str(const char *a, const char *b)
{
    size_t na, nb;
    uint32_t *ca = dsa_utf8_decode_alloc(a, strlen(a), &na, NULL);
    uint32_t *cb = dsa_utf8_decode_alloc(b, strlen(b), &nb, NULL);
    assert_non_null(ca);
    assert_non_null(cb);
    double r = dsa_difflib_ratio(ca, na, cb, nb);
    free(ca);
    free(cb);
    return r;
}

static char *repeat(const char *s, int n)
{
    struct dsa_buf b = DSA_BUF_INIT;
    for (int i = 0; i < n; i++)
        dsa_buf_adds(&b, s);
    return dsa_buf_detach(&b, NULL);
}

/* docs/mrcr.md "Grading" "Vectors for unit tests" (Python 3.11) */
static void test_spec_vectors(void **state)
{
    (void)state;
    assert_same_double(ratio_str("abcd", "bcde"), 0.75);
    assert_same_double(ratio_str("tide", "diet"), 0.25);
    assert_same_double(ratio_str("diet", "tide"), 0.5);
    assert_same_double(ratio_str("", ""), 1.0);
    assert_same_double(ratio_str("", "x"), 0.0);
    /* not in the docs: CPython 3.11 values of pairs where a j2len leaking from one
       find_longest_match call into the next would give 1.0 */
    assert_same_double(ratio_str("ab", "acbb"), 0.6666666666666666);
    assert_same_double(ratio_str("abc", "acb"), 0.6666666666666666);
    char *b = repeat("ab", 150);
    struct dsa_buf xa = DSA_BUF_INIT;
    dsa_buf_adds(&xa, "x");
    dsa_buf_adds(&xa, b);
    /* autojunk: 'a' and 'b' are popular in b (150 > 300//100+1), and a[0] = 'x' blocks the
       extension from (0, 0); CPython gives 0.0 (0.9983361064891847 without autojunk) */
    assert_same_double(ratio_str(xa.data, b), 0.0);
    assert_same_double(ratio_str(b, b), 1.0); /* the whole match comes from extension */
    dsa_buf_release(&xa);
    free(b);
}

/* The grader's prefix rule (docs/mrcr.md "Grading"): exact, case-sensitive, no strip; the prefix
 * leaves both. */
static void test_prefix_rule(void **state)
{
    (void)state;
    struct dsa_mrcr_grade g;
    assert_int_equal(dsa_mrcr_grade("PFXabcd", 7, "PFXbcde", 7, "PFX", 3, &g), 0);
    assert_true(g.prefix_hit);
    assert_same_double(g.score, 0.75);
    assert_false(g.exact);
    assert_int_equal(dsa_mrcr_grade(" PFXabcd", 8, "PFXabcd", 7, "PFX", 3, &g), 0);
    assert_false(g.prefix_hit);
    assert_same_double(g.score, 0.0);
    assert_int_equal(dsa_mrcr_grade("pfxabcd", 7, "PFXabcd", 7, "PFX", 3, &g), 0);
    assert_false(g.prefix_hit);
    /* a response of just the prefix: ratio("", body) = 0.0 */
    assert_int_equal(dsa_mrcr_grade("PFX", 3, "PFXabcd", 7, "PFX", 3, &g), 0);
    assert_true(g.prefix_hit);
    assert_same_double(g.score, 0.0);
    assert_int_equal(dsa_mrcr_grade("PFXabcd", 7, "PFXabcd", 7, "PFX", 3, &g), 0);
    assert_true(g.exact);
    assert_same_double(g.score, 1.0);
    /* an answer without the prefix is compared whole (removeprefix is a no-op) */
    assert_int_equal(dsa_mrcr_grade("PFXabcd", 7, "abcd", 4, "PFX", 3, &g), 0);
    assert_true(g.exact);
    /* code points, not bytes: "é" is one element */
    assert_int_equal(dsa_mrcr_grade("P\xC3\xA9x", 4, "P\xC3\xA9y", 4, "P", 1, &g), 0);
    assert_same_double(g.score, 0.5);
    assert_int_equal(dsa_mrcr_grade("P\xC3", 2, "Pa", 2, "P", 1, &g), -1);
    assert_int_equal(dsa_mrcr_grade("Pa", 2, "P\xED\xA0\x80", 4, "P", 1, &g), -1);
}

static double line_score(const char *text)
{
    struct dsa_mrcr_line ln;
    if (dsa_mrcr_grade_line(text, strlen(text), &ln) != DSA_MRCR_LINE_GRADED)
        fail_msg("not graded (%s): %s", ln.why, text);
    json_decref(ln.ids);
    return ln.grade.score;
}

/* Lone surrogates as json.loads reads them (docs/grade.md), and the borrowed private-use
   window never colliding with real code points */
static void test_line_surrogates(void **state)
{
    (void)state;
    assert_same_double(
        line_score("{\"response\":\"P\\ud800\",\"answer\":\"P\\uD800\",\"prefix\":\"P\"}"), 1.0);
    assert_same_double(
        line_score("{\"response\":\"P\\ud800\",\"answer\":\"P\\udc00\",\"prefix\":\"P\"}"), 0.0);
    /* an escaped valid pair is the code point itself, as raw UTF-8 */
    assert_same_double(
        line_score(
            "{\"response\":\"P\\ud800\\udc00\",\"answer\":\"P\xF0\x90\x80\x80\",\"prefix\":\"P\"}"),
        1.0);
    /* an escaped backslash: "\\ud800" is six ASCII characters */
    assert_same_double(
        line_score("{\"response\":\"P\\\\ud800\",\"answer\":\"P\\\\ud800\",\"prefix\":\"P\"}"),
        1.0);
    assert_same_double(
        line_score("{\"response\":\"P\\\\ud800\",\"answer\":\"P\\ud800\",\"prefix\":\"P\"}"), 0.0);
    /* a = [U+D800, U+10F800], b = [U+10F800, U+D800]: 0.5 only if the two stay distinct,
       whether U+10F800 comes raw or escaped */
    assert_same_double(line_score("{\"response\":\"P\\ud800\xF4\x8F\xA0\x80\",\"answer\":"
                                  "\"P\xF4\x8F\xA0\x80\\ud800\",\"prefix\":\"P\"}"),
                       0.5);
    assert_same_double(line_score("{\"response\":\"P\\ud800\\udbfe\\udc00\",\"answer\":"
                                  "\"P\\udbfe\\udc00\\ud800\",\"prefix\":\"P\"}"),
                       0.5);
    /* an identifying string cannot carry a lone surrogate out in UTF-8: U+FFFD */
    {
        static const char l[] = "{\"response\":\"Pa\",\"answer\":\"Pa\",\"prefix\":\"P\","
                                "\"id\":\"x\\ud800y\\ud800\\udc00\"}";
        struct dsa_mrcr_line ln;
        assert_int_equal(dsa_mrcr_grade_line(l, strlen(l), &ln), DSA_MRCR_LINE_GRADED);
        assert_string_equal(json_string_value(json_object_get(ln.ids, "id")),
                            "x\xEF\xBF\xBDy\xF0\x90\x80\x80");
        json_decref(ln.ids);
    }
    /* a lone surrogate in the prefix is part of the prefix */
    assert_same_double(
        line_score("{\"response\":\"\\udfffab\",\"answer\":\"\\udfffab\",\"prefix\":\"\\udfff\"}"),
        1.0);

    /* every window of U+F0000..U+10FFFF used, plus a lone surrogate: refused, clearly */
    struct dsa_buf b = DSA_BUF_INIT;
    dsa_buf_adds(&b, "{\"response\":\"P\\ud800\",\"answer\":\"P");
    for (uint32_t w = 0; w < 64; w++) {
        char u8[4];
        dsa_buf_add(&b, u8, (size_t)dsa_utf8_encode(0xF0000 + w * 2048 + 5, u8));
    }
    dsa_buf_adds(&b, "\",\"prefix\":\"P\"}");
    struct dsa_mrcr_line ln;
    assert_int_equal(dsa_mrcr_grade_line(b.data, b.len, &ln), DSA_MRCR_LINE_BAD);
    assert_non_null(strstr(ln.why, "lone UTF-16 surrogates"));
    assert_null(ln.ids);
    /* one window free: graded */
    b.len -= strlen("\",\"prefix\":\"P\"}") + 4;
    dsa_buf_adds(&b, "\",\"prefix\":\"P\"}");
    assert_int_equal(dsa_mrcr_grade_line(b.data, b.len, &ln), DSA_MRCR_LINE_GRADED);
    json_decref(ln.ids);
    dsa_buf_release(&b);
}

/* tests/data (env DSA_DATA, set by ctest): its mrcr/ holds subsets of real grading logs */
static const char *data_dir(void)
{
    const char *s = getenv("DSA_DATA");
    if (!s || !*s)
        fail_msg("DSA_DATA is not set (run the tests through ctest)");
    return s;
}

static json_t *load_line(const char *line, size_t len)
{
    json_error_t err;
    json_t *v = json_loadb(line, len, 0, &err);
    if (!v)
        fail_msg("cannot parse a log line: %s", err.text);
    return v;
}

/* docs/mrcr.md "Vectors for unit tests": a real 2,170-code-point answer. The first row of the pro
   8-needle log has a ground_truth of 2,180 code points, i.e. 2,170 after its 10-character prefix;
   it gives all three documented vectors, so it is the answer they were computed on (or one with the
   same statistics). */
static void test_spec_vectors_real_answer(void **state)
{
    (void)state;
    char path[4096];
    snprintf(path, sizeof path, "%s/mrcr/evaluation_log_gemini_3_pro_8needle.jsonl", data_dir());
    dsa_lines *in = dsa_lines_open(path);
    assert_non_null(in);
    const char *line;
    size_t len;
    assert_int_equal(dsa_lines_next(in, &line, &len), 1);
    json_t *row = load_line(line, len);
    json_t *gt = json_object_get(row, "ground_truth");
    size_t n;
    uint32_t *ans = dsa_utf8_decode_alloc(json_string_value(gt), json_string_length(gt), &n, NULL);
    assert_non_null(ans);
    assert_int_equal(n, 2180);
    const uint32_t *body = ans + 10;
    size_t nb = n - 10;
    assert_int_equal(nb, 2170);

    uint32_t *tmp = dsa_xmalloc((nb + 1) * sizeof *tmp);
    tmp[0] = ' ';
    memcpy(tmp + 1, body, nb * sizeof *tmp);
    assert_same_double(dsa_difflib_ratio(tmp, nb + 1, body, nb), 0.9997696383321816);
    assert_same_double(dsa_difflib_ratio(body, nb - 1, body, nb), 0.999769532150265);
    /* str.upper(): the body is ASCII (checked), so upper-casing is per character */
    for (size_t i = 0; i < nb; i++) {
        assert_true(body[i] < 0x80);
        tmp[i] = (body[i] >= 'a' && body[i] <= 'z') ? body[i] - 32 : body[i];
    }
    assert_same_double(dsa_difflib_ratio(tmp, nb, body, nb), 0.06682027649769585);
    free(tmp);
    free(ans);
    json_decref(row);
    dsa_lines_free(&in);
}

/* Python's str.isspace() (Unicode White_Space, plus U+001C..U+001F) */
static int py_isspace(uint32_t c)
{
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

struct log_stats {
    long graded, skipped, same, differ, strip_changed, stripped_same;
};

/* Grades every line of a log through dsa_mrcr_grade_line() and through the byte API, and
   (for the flash logs) grades the stripped response too. */
static void run_log(const char *name, bool strip, struct log_stats *st)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/mrcr/%s", data_dir(), name);
    dsa_lines *in = dsa_lines_open(path);
    assert_non_null(in);
    const char *line;
    size_t len;
    while (dsa_lines_next(in, &line, &len) > 0) {
        struct dsa_mrcr_line ln;
        enum dsa_mrcr_line_status s = dsa_mrcr_grade_line(line, len, &ln);
        json_t *row = load_line(line, len);
        if (s == DSA_MRCR_LINE_SKIPPED) {
            assert_non_null(json_object_get(row, "error"));
            assert_null(json_object_get(row, "model_response"));
            st->skipped++;
            json_decref(ln.ids);
            json_decref(row);
            continue;
        }
        if (s != DSA_MRCR_LINE_GRADED)
            fail_msg("%s line %ld: %s", name, dsa_lines_lineno(in), ln.why);
        assert_true(json_equal(json_object_get(ln.ids, "dataset_index"),
                               json_object_get(row, "dataset_index")));
        json_decref(ln.ids);
        st->graded++;
        double logged = json_number_value(json_object_get(row, "score"));

        /* the byte API with a prefix taken independently of the line parser */
        const char *q =
            json_string_value(json_object_get(json_object_get(row, "input"), "content"));
        assert_int_equal(strncmp(q, "Prepend ", 8), 0);
        const char *resp = json_string_value(json_object_get(row, "model_response"));
        const char *ans = json_string_value(json_object_get(row, "ground_truth"));
        struct dsa_mrcr_grade g;
        assert_int_equal(dsa_mrcr_grade(resp, strlen(resp), ans, strlen(ans), q + 8, 10, &g), 0);
        assert_same_double(g.score, ln.grade.score);
        assert_int_equal(g.prefix_hit, ln.grade.prefix_hit);
        assert_int_equal(g.exact, ln.grade.exact);

        if (bits(ln.grade.score) == bits(logged))
            st->same++;
        else
            st->differ++;
        if (strip) {
            size_t nr, na, np;
            uint32_t *r = dsa_utf8_decode_alloc(resp, strlen(resp), &nr, NULL);
            uint32_t *a = dsa_utf8_decode_alloc(ans, strlen(ans), &na, NULL);
            uint32_t *p = dsa_utf8_decode_alloc(q + 8, 10, &np, NULL);
            size_t lo = 0, hi = nr;
            while (lo < hi && py_isspace(r[lo]))
                lo++;
            while (hi > lo && py_isspace(r[hi - 1]))
                hi--;
            bool changed = lo != 0 || hi != nr;
            struct dsa_mrcr_grade gs;
            dsa_mrcr_grade_cp(r + lo, hi - lo, a, na, p, np, &gs);
            st->strip_changed += changed;
            if (bits(gs.score) == bits(logged))
                st->stripped_same++;
            else
                fail_msg("%s line %ld: grade(strip(response)) %.17g != logged %.17g", name,
                         dsa_lines_lineno(in), gs.score, logged);
            /* official != logged only where strip() changes the response (where it does,
               both can still agree, e.g. 0 when the prefix is missing either way) */
            bool official_differs = bits(ln.grade.score) != bits(logged);
            if (official_differs && !changed)
                fail_msg("%s line %ld: official %.17g != logged %.17g, strip changes nothing", name,
                         dsa_lines_lineno(in), ln.grade.score, logged);
            if (changed && !official_differs && bits(g.score) != bits(gs.score))
                fail_msg("%s line %ld: inconsistent", name, dsa_lines_lineno(in));
            free(r);
            free(a);
            free(p);
        }
        json_decref(row);
    }
    dsa_lines_free(&in);
}

static void test_pro_logs_exact(void **state)
{
    (void)state;
    struct log_stats st = {0};
    run_log("evaluation_log_gemini_3_pro_8needle.jsonl", false, &st);
    assert_int_equal(st.graded, 73);
    assert_int_equal(st.skipped, 7);
    run_log("evaluation_log_gemini_3_pro_2needle.jsonl", false, &st);
    assert_int_equal(st.graded, 98);
    assert_int_equal(st.same, 98);
    assert_int_equal(st.differ, 0);
}

static void test_flash_logs_no_strip(void **state)
{
    (void)state;
    struct log_stats st = {0};
    /* the subsets keep every row of the full logs where strip() changes the response, so the
       counts of those rows are the full logs' (tests/data/mrcr/README.md) */
    run_log("evaluation_log_gemini_3_flash_8needle.jsonl", true, &st);
    assert_int_equal(st.graded, 115);
    assert_int_equal(st.differ, 32);
    run_log("evaluation_log_gemini_3_flash_2needle.jsonl", true, &st);
    assert_int_equal(st.graded, 115 + 69);
    assert_int_equal(st.skipped, 2);
    assert_int_equal(st.differ, 36);
    /* strip() changes 48 responses; 12 of them score the same either way (measured) */
    assert_int_equal(st.strip_changed, 48);
    assert_int_equal(st.stripped_same, 115 + 69);
}

/* ---- parity with CPython, computed here ---- */

static uint64_t rng = 20260511; /* fixed seed: the same pairs on every run */

static uint32_t rnd(uint32_t n)
{
    return (uint32_t)(dsa_splitmix64(rng++) % n);
}

struct cps {
    uint32_t *v;
    size_t n, cap;
};

static void push(struct cps *s, uint32_t c)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->v = dsa_xrealloc(s->v, s->cap * sizeof *s->v);
    }
    /* json.loads would join a high surrogate escape and a following low one: keep
       surrogates lone so that both sides see the same code points */
    if (c >= 0xDC00 && c <= 0xDFFF && s->n && s->v[s->n - 1] >= 0xD800 && s->v[s->n - 1] <= 0xDBFF)
        c = 'z';
    s->v[s->n++] = c;
}

static const uint32_t small_ascii[] = {'a', 'b', 'c', 'd', ' '};
static const uint32_t multi[] = {'a',    'b',     ' ',     0xE9,     0xDF, 0x4E2D,
                                 0x6587, 0x1F30D, 0x1F600, 0x10FFFF, 0x0,  '\n'};
static const uint32_t sur[] = {0xD800, 0xDBFF, 0xDC00, 0xDFFF, 'a', 'b', 0xE9, 0x1F30D};
/* a skewed alphabet for strings around the autojunk threshold: 3 frequent code points
   (popular once len(b) >= 200) and 40 others whose counts straddle len(b)//100 + 1 */
static uint32_t edge_char(void)
{
    static const uint32_t freq[] = {' ', 'e', 0x1F30D};
    if (rnd(10) < 3)
        return freq[rnd(3)];
    uint32_t k = rnd(40);
    return k < 26 ? 'a' + k : (k < 36 ? 0x4E00 + k : 0xE0 + k);
}

static void random_from(struct cps *s, const uint32_t *alpha, size_t na, size_t len)
{
    for (size_t i = 0; i < len; i++)
        push(s, alpha[rnd((uint32_t)na)]);
}

/* a = b with a few edits (replace, delete a span, insert a span, duplicate a span) */
static void mutate(struct cps *a, const struct cps *b, int edits, uint32_t (*gen)(void))
{
    a->n = 0;
    for (size_t i = 0; i < b->n; i++)
        push(a, b->v[i]);
    for (int e = 0; e < edits; e++) {
        size_t at = a->n ? rnd((uint32_t)a->n) : 0;
        size_t span = 1 + rnd(12);
        switch (rnd(4)) {
        case 0:
            if (a->n)
                a->v[at] = gen();
            break;
        case 1:
            if (!a->n)
                break;
            if (at + span > a->n)
                span = a->n - at;
            memmove(a->v + at, a->v + at + span, (a->n - at - span) * sizeof *a->v);
            a->n -= span;
            break;
        default: {
            struct cps ins = {0};
            for (size_t k = 0; k < span; k++)
                push(&ins, rnd(2) && a->n ? a->v[rnd((uint32_t)a->n)] : gen());
            for (size_t k = 0; k < ins.n; k++)
                push(a, 0);
            memmove(a->v + at + ins.n, a->v + at, (a->n - ins.n - at) * sizeof *a->v);
            memcpy(a->v + at, ins.v, ins.n * sizeof *a->v);
            free(ins.v);
        }
        }
    }
}

static uint32_t gen_ascii(void)
{
    return 32 + rnd(95);
}

/* Fills pair k: the categories the brief asks for, in fixed proportions. */
static void make_pair(size_t k, struct cps *a, struct cps *b)
{
    a->n = b->n = 0;
    size_t cat = k % 20;
    if (cat < 3) { /* ASCII, small alphabet: many ties */
        random_from(a, small_ascii, 5, rnd(40));
        random_from(b, small_ascii, 5, rnd(40));
    } else if (cat < 4) { /* ASCII, wide alphabet, long, mutated */
        for (size_t n = 150 + rnd(300), i = 0; i < n; i++)
            push(b, gen_ascii());
        mutate(a, b, (int)rnd(30), gen_ascii);
    } else if (cat < 7) { /* multi-byte UTF-8, 4-byte emoji, NUL */
        random_from(a, multi, DSA_ARRAY_SIZE(multi), rnd(60));
        if (rnd(2))
            random_from(b, multi, DSA_ARRAY_SIZE(multi), rnd(60));
        else
            mutate(b, a, (int)rnd(6), edge_char);
    } else if (cat < 15) { /* around the autojunk edge: len(b) in 195..205, 295..305, 395..405 */
        static const size_t base[] = {200, 300, 400};
        size_t lb = base[rnd(3)] - 5 + rnd(11);
        for (size_t i = 0; i < lb; i++)
            push(b, edge_char());
        if (rnd(4))
            mutate(a, b, (int)rnd(25), edge_char);
        else
            for (size_t n = rnd(450), i = 0; i < n; i++)
                push(a, edge_char());
    } else if (cat < 17) { /* repeated runs */
        static const char *const units[] = {"ab", "a", "abc", "\xF0\x9F\x8C\x8D", "xy "};
        const char *u = units[rnd(5)];
        size_t nu;
        uint32_t *cu = dsa_utf8_decode_alloc(u, strlen(u), &nu, NULL);
        size_t reps = (90 + rnd(130)) / nu;
        for (size_t r = 0; r < reps; r++)
            for (size_t i = 0; i < nu; i++)
                push(b, cu[i]);
        free(cu);
        switch (rnd(4)) {
        case 0:
            push(a, 'x');
            for (size_t i = 0; i < b->n; i++)
                push(a, b->v[i]);
            break;
        case 1:
            for (size_t i = 1; i < b->n; i++)
                push(a, b->v[i]);
            break;
        case 2:
            for (size_t i = 0; i < b->n; i++)
                push(a, b->v[i]);
            break;
        default:
            mutate(a, b, 1 + (int)rnd(5), edge_char);
        }
    } else if (cat < 18) { /* empty strings */
        size_t which = rnd(3);
        if (which != 0)
            random_from(a, multi, DSA_ARRAY_SIZE(multi), rnd(250));
        if (which != 1)
            random_from(b, multi, DSA_ARRAY_SIZE(multi), rnd(250));
    } else { /* lone surrogates */
        random_from(a, sur, DSA_ARRAY_SIZE(sur), rnd(80));
        if (rnd(2))
            random_from(b, sur, DSA_ARRAY_SIZE(sur), rnd(240));
        else
            mutate(b, a, (int)rnd(6), edge_char);
    }
    if (rnd(8) == 0) { /* both orders matter: ratio(a, b) != ratio(b, a) */
        struct cps t = *a;
        *a = *b;
        *b = t;
    }
}

static void write_cps(FILE *f, const struct cps *s)
{
    fputc('[', f);
    for (size_t i = 0; i < s->n; i++)
        fprintf(f, i ? ",%u" : "%u", s->v[i]);
    fputc(']', f);
}

static const char py_ratio[] =
    "import sys, json\n"
    "from difflib import SequenceMatcher\n"
    "with open(sys.argv[1]) as f, open(sys.argv[2], 'w') as out:\n"
    "    for line in f:\n"
    "        a, b = json.loads(line)\n"
    "        a = ''.join(map(chr, a)); b = ''.join(map(chr, b))\n"
    "        out.write(SequenceMatcher(None, a, b).ratio().hex() + '\\n')\n";

/* the official grade() of docs/mrcr.md "Grading" over JSON lines read by json.loads */
static const char py_grade[] =
    "import sys, json\n"
    "from difflib import SequenceMatcher\n"
    "def grade(response, answer, p):\n"
    "    if not response.startswith(p):\n"
    "        return 0\n"
    "    response = response.removeprefix(p)\n"
    "    answer = answer.removeprefix(p)\n"
    "    return float(SequenceMatcher(None, response, answer).ratio())\n"
    "with open(sys.argv[1], encoding='utf-8') as f, open(sys.argv[2], 'w') as out:\n"
    "    for line in f:\n"
    "        d = json.loads(line)\n"
    "        out.write(float(grade(d['response'], d['answer'], d['prefix'])).hex() + '\\n')\n";

/* Runs $DSA_PYTHON on a script with (input, output) paths and returns the output lines;
   removes `dir` (which holds the input) before any assertion can end the test. */
static char **run_python(const char *dir, const char *script, const char *in, size_t nlines)
{
    const char *py = getenv("DSA_PYTHON");
    char spath[4200], opath[4200], cmd[9000];
    snprintf(spath, sizeof spath, "%s/ref.py", dir);
    snprintf(opath, sizeof opath, "%s/out.txt", dir);
    char **out = dsa_xcalloc(nlines + 1, sizeof *out);
    size_t n = 0;
    FILE *f = fopen(spath, "w");
    if (f) {
        fputs(script, f);
        fclose(f);
        snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' '%s'", py, spath, in, opath);
        dsa_lines *rd = system(cmd) == 0 ? dsa_lines_open(opath) : NULL;
        const char *line;
        size_t len;
        while (rd && n <= nlines && dsa_lines_next(rd, &line, &len) > 0)
            out[n++] = dsa_xstrndup(line, len);
        dsa_lines_free(&rd);
    }
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fail_msg("cannot remove '%s'", dir);
    if (n != nlines)
        fail_msg("%s: %zu result lines, want %zu", py, n, nlines);
    return out;
}

static double parse_hex(const char *s)
{
    char *end;
    double d = strtod(s, &end);
    assert_true(*end == '\0' && end != s);
    return d;
}

#define N_PAIRS 6000

static void test_python_parity_ratio(void **state)
{
    (void)state;
    const char *py = getenv("DSA_PYTHON");
    if (!py || !*py)
        fail_msg("python3 is required: DSA_PYTHON (set by ctest; scripts/setup.sh installs it)");
    char dir[] = "/tmp/dsa-mrcr-parity.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char in[4200];
    snprintf(in, sizeof in, "%s/pairs.txt", dir);
    FILE *f = fopen(in, "w");
    assert_non_null(f);
    struct cps *as = dsa_xcalloc(N_PAIRS, sizeof *as), *bs = dsa_xcalloc(N_PAIRS, sizeof *bs);
    size_t long_edge = 0;
    for (size_t k = 0; k < N_PAIRS; k++) {
        make_pair(k, &as[k], &bs[k]);
        long_edge += bs[k].n >= 195 && bs[k].n <= 205;
        fputc('[', f);
        write_cps(f, &as[k]);
        fputc(',', f);
        write_cps(f, &bs[k]);
        fputs("]\n", f);
    }
    fclose(f);
    assert_true(long_edge >= 300); /* the 199/200/201 edge is well covered */
    char **want = run_python(dir, py_ratio, in, N_PAIRS);
    size_t zero = 0, one = 0;
    for (size_t k = 0; k < N_PAIRS; k++) {
        double got = dsa_difflib_ratio(as[k].v, as[k].n, bs[k].v, bs[k].n);
        double w = parse_hex(want[k]);
        if (bits(got) != bits(w))
            fail_msg("pair %zu (la %zu, lb %zu): got %.17g, CPython %.17g", k, as[k].n, bs[k].n,
                     got, w);
        zero += got == 0.0;
        one += got == 1.0;
        free(want[k]);
        free(as[k].v);
        free(bs[k].v);
    }
    /* the test means something: most pairs are partial matches */
    assert_true(zero + one < N_PAIRS / 4);
    free(want);
    free(as);
    free(bs);
}

static void json_escape_cps(struct dsa_buf *b, const uint32_t *v, size_t n)
{
    dsa_buf_addch(b, '"');
    for (size_t i = 0; i < n; i++) {
        uint32_t c = v[i];
        if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
            dsa_buf_addch(b, (char)c);
        } else if (c == '"' || c == '\\') {
            dsa_buf_addch(b, '\\');
            dsa_buf_addch(b, (char)c);
        } else if (c < 0x10000 && (c < 0x80 || (c >= 0xD800 && c <= 0xDFFF) || rnd(2))) {
            if (rnd(2))
                dsa_buf_addf(b, "\\u%04x", c);
            else
                dsa_buf_addf(b, "\\u%04X", c);
        } else if (c >= 0x10000 && rnd(2)) { /* an escaped valid pair: one code point */
            uint32_t u = c - 0x10000;
            dsa_buf_addf(b, "\\u%04x\\u%04x", 0xD800 + (u >> 10), 0xDC00 + (u & 0x3FF));
        } else {
            char u8[4];
            dsa_buf_add(b, u8, (size_t)dsa_utf8_encode(c, u8));
        }
    }
    dsa_buf_addch(b, '"');
}

#define N_LINES 1500

/* JSON lines through dsa_mrcr_grade_line() vs json.loads + the official grade() */
static void test_python_parity_lines(void **state)
{
    (void)state;
    const char *py = getenv("DSA_PYTHON");
    if (!py || !*py)
        fail_msg("python3 is required: DSA_PYTHON (set by ctest; scripts/setup.sh installs it)");
    char dir[] = "/tmp/dsa-mrcr-lines.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char in[4200];
    snprintf(in, sizeof in, "%s/lines.jsonl", dir);
    FILE *f = fopen(in, "w");
    assert_non_null(f);
    char **lines = dsa_xcalloc(N_LINES, sizeof *lines);
    size_t lone = 0;
    for (size_t k = 0; k < N_LINES; k++) {
        struct cps a = {0}, b = {0}, p = {0}, r = {0}, ans = {0};
        make_pair(k * 7 + 3, &a, &b);
        /* a prefix of 10 code points, mostly alphanumeric, sometimes a surrogate */
        for (int i = 0; i < 10; i++)
            push(&p, rnd(20) ? (uint32_t) "aZ09xQ"[rnd(6)] : sur[rnd(DSA_ARRAY_SIZE(sur))]);
        size_t mode = rnd(6); /* the response: prefix + a, a alone, a space first, ... */
        if (mode == 1)
            push(&r, ' ');
        if (mode != 2)
            for (size_t i = 0; i < p.n; i++)
                push(&r, p.v[i]);
        for (size_t i = 0; i < a.n; i++)
            push(&r, a.v[i]);
        if (rnd(8))
            for (size_t i = 0; i < p.n; i++)
                push(&ans, p.v[i]);
        for (size_t i = 0; i < b.n; i++)
            push(&ans, b.v[i]);
        for (size_t i = 0; i < r.n; i++)
            lone += r.v[i] >= 0xD800 && r.v[i] <= 0xDFFF;
        struct dsa_buf line = DSA_BUF_INIT;
        dsa_buf_adds(&line, "{\"response\":");
        json_escape_cps(&line, r.v, r.n);
        dsa_buf_adds(&line, ",\"answer\":");
        json_escape_cps(&line, ans.v, ans.n);
        dsa_buf_adds(&line, ",\"prefix\":");
        json_escape_cps(&line, p.v, p.n);
        dsa_buf_addf(&line, ",\"id\":%zu}", k);
        fprintf(f, "%s\n", line.data);
        lines[k] = dsa_buf_detach(&line, NULL);
        free(a.v);
        free(b.v);
        free(p.v);
        free(r.v);
        free(ans.v);
    }
    fclose(f);
    assert_true(lone >= 100);
    char **want = run_python(dir, py_grade, in, N_LINES);
    for (size_t k = 0; k < N_LINES; k++) {
        struct dsa_mrcr_line ln;
        if (dsa_mrcr_grade_line(lines[k], strlen(lines[k]), &ln) != DSA_MRCR_LINE_GRADED)
            fail_msg("line %zu: %s", k + 1, ln.why);
        double w = parse_hex(want[k]);
        if (bits(ln.grade.score) != bits(w))
            fail_msg("line %zu: got %.17g, CPython %.17g: %s", k + 1, ln.grade.score, w, lines[k]);
        json_decref(ln.ids);
        free(lines[k]);
        free(want[k]);
    }
    free(lines);
    free(want);
}

/* The two readers of a line (evals/mrcr_grade_fields.h) on one line: the stream reader
   takes exactly the lines the tree reader (jansson) reads as an object, with the same
   fields, but for those with a raw NUL byte; every other line it declines. Returns the tree
   reader's code. */
static int readers_agree(const char *text, size_t len)
{
    struct dsa_mrcr_fields a, b;
    dsa_mrcr_fields_init(&a);
    dsa_mrcr_fields_init(&b);
    int sa = dsa_mrcr_fields_stream(text, len, &a), tb = dsa_mrcr_fields_tree(text, len, &b);
    /* the stream reader hands lines with a raw NUL byte to jansson, which may read them */
    if ((sa == 0) != (tb == 0) && !(sa && memchr(text, '\0', len)))
        fail_msg("stream %d, tree %d (%s) on: %.*s", sa, tb, b.error, (int)len, text);
    for (int k = 0; sa == 0 && k < DSA_MF_COUNT; k++) {
        const struct dsa_mrcr_fvalue *x = &a.f[k], *y = &b.f[k];
        if (x->type != y->type)
            fail_msg("%s: type %d vs %d on: %.*s", dsa_mrcr_field_names[k], x->type, y->type,
                     (int)len, text);
        bool kept = y->type == DSA_MT_STRING && k < DSA_MF_ERROR;
        if (kept && (x->len != y->len ||
                     memcmp(dsa_mrcr_fields_str(&a, x), dsa_mrcr_fields_str(&b, y), x->len)))
            fail_msg("%s differs on: %.*s", dsa_mrcr_field_names[k], (int)len, text);
        if (!x->value != !y->value || (x->value && !json_equal(x->value, y->value)))
            fail_msg("%s value differs on: %.*s", dsa_mrcr_field_names[k], (int)len, text);
    }
    if (sa == 0) {
        assert_int_equal(a.question.type, b.question.type);
        if (a.question.type == DSA_MT_STRING) {
            assert_int_equal(a.question.len, b.question.len);
            assert_memory_equal(dsa_mrcr_fields_str(&a, &a.question),
                                dsa_mrcr_fields_str(&b, &b.question), a.question.len);
        }
    }
    dsa_mrcr_fields_release(&a);
    dsa_mrcr_fields_release(&b);
    return tb;
}

static void test_readers_agree(void **state)
{
    (void)state;
    /* every line of the four logs */
    static const char *const logs[] = {"evaluation_log_gemini_3_pro_8needle.jsonl",
                                       "evaluation_log_gemini_3_pro_2needle.jsonl",
                                       "evaluation_log_gemini_3_flash_8needle.jsonl",
                                       "evaluation_log_gemini_3_flash_2needle.jsonl"};
    long n = 0;
    for (size_t i = 0; i < sizeof logs / sizeof *logs; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/mrcr/%s", data_dir(), logs[i]);
        dsa_lines *in = dsa_lines_open(path);
        assert_non_null(in);
        const char *line;
        size_t len;
        while (dsa_lines_next(in, &line, &len) > 0) {
            assert_int_equal(readers_agree(line, len), 0);
            n++;
        }
        dsa_lines_free(&in);
    }
    assert_int_equal(n, 291);

    /* the corners: which member is read, nesting, escapes, and each refusal of jansson's */
    static const struct {
        const char *text;
        int tree; /* what the tree reader returns */
    } cases[] = {
        {"{\"response\":\"a\",\"answer\":\"b\",\"prefix\":\"\"}", 0},
        {" \t{\"response\":null,\"answer\":\"\\u00e9\\ud83c\\udf0d\\n\\\"\",\"prefix\":\"x\"} ", 0},
        {"{\"response\":1,\"answer\":[\"a\"],\"prefix\":{\"a\":1},\"error\":null}", 0},
        {"{\"model_response\":\"a\",\"ground_truth\":\"b\",\"random_string_to_prepend\":\"c\"}", 0},
        {"{\"id\":[1,{\"a\":[2,\"x\"]}],\"dataset_index\":\"7\",\"needle_count\":8.5e1,"
         "\"n_needles\":{\"k\":null},\"response\":\"r\"}",
         0},
        {"{\"id\" : -0 , \"error\":{\"code\":500}}", 0},
        {"{\"input\":\"Prepend AB to the 1st\"}", 0},
        {"{\"input\":{\"role\":\"user\",\"content\":\"Prepend AB to the 1st\"}}", 0},
        {"{\"input\":{\"content\":[\"Prepend AB to the 1st\"]}}", 0},
        {"{\"input\":[{\"content\":\"q1\"},{\"content\":\"q2\",\"x\":{\"content\":\"no\"}}]}", 0},
        {"{\"input\":[{\"content\":\"q1\"},\"q2\"]}", 0},
        {"{\"input\":[{\"content\":\"q1\"},[\"q2\"]]}", 0},
        {"{\"input\":[{\"content\":\"q1\"},{\"role\":\"x\"}]}", 0},
        {"{\"input\":[]}", 0},
        {"{\"input\":[{\"content\":\"q1\"},{\"content\":null}]}", 0},
        {"{\"x\":{\"response\":\"deep\"},\"response\":\"top\",\"answer\":\"\\u0000a\"}", 0},
        {"{\"a\":{\"a\":1},\"b\":{\"a\":2}}", 0}, /* the same key in two objects */
        {"{}", 0},
        {"{\"response\":\"a\",\"response\":\"b\"}", -1},
        {"{\"x\":{\"k\":1,\"k\":2}}", -1},
        {"{\"id\":99999999999999999999}", -1},
        {"{\"id\":-99999999999999999999}", -1},
        {"{\"id\":1e400}", -1},
        {"{\"id\":1e-400}", 0},
        {"{\"a\\u0000b\":1}", -1},
        {"{\"response\":\"\xc0\xaf\"}", -1},     /* overlong */
        {"{\"response\":\"\xed\xa0\x80\"}", -1}, /* an encoded surrogate */
        {"{\"skipped\":\"\xff\"}", -1},
        {"{\"a\":1} x", -1},
        {"{}\"da", -1},
        {"{\"a\":2\v}", -1},
        {"{\"a\":2\f}", -1},
        {"{\"a\":\t2\r\n}", 0},
        {"{} \n\t\r", 0},
        {"{\"a\":1", -1},
        {"{\"a\":01}", -1},
        {"{\"a\":'x'}", -1},
        {"{\"a\":\"\t\"}", -1},
        {"{\"a\":1,}", -1},
        {"{\"a\":\"\\x\"}", -1},
        {"[1,2]", -2},
        {"\"str\"", -1},
        {"", -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        if (readers_agree(cases[i].text, strlen(cases[i].text)) != cases[i].tree)
            fail_msg("case %zu: the tree reader did not return %d", i, cases[i].tree);
    /* a raw NUL byte between tokens, which jansson reads past */
    static const char nul[] = "{\"response\":null\0,\"answer\":\"XYabc\"}";
    readers_agree(nul, sizeof nul - 1);

    /* nesting: jansson's limit is 2048 */
    for (int depth = 2046; depth <= 2050; depth++) {
        struct dsa_buf b = DSA_BUF_INIT;
        dsa_buf_adds(&b, "{\"a\":");
        for (int d = 1; d < depth; d++)
            dsa_buf_addch(&b, '[');
        for (int d = 1; d < depth; d++)
            dsa_buf_addch(&b, ']');
        dsa_buf_addch(&b, '}');
        readers_agree(b.data, b.len);
        dsa_buf_release(&b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec_vectors),        cmocka_unit_test(test_prefix_rule),
        cmocka_unit_test(test_line_surrogates),     cmocka_unit_test(test_spec_vectors_real_answer),
        cmocka_unit_test(test_pro_logs_exact),      cmocka_unit_test(test_flash_logs_no_strip),
        cmocka_unit_test(test_python_parity_ratio), cmocka_unit_test(test_python_parity_lines),
        cmocka_unit_test(test_readers_agree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
