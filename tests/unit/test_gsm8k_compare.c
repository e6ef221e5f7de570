/* Unit tests of the GSM8K output-identity comparison (evals/gsm8k_compare.c) on run files
 * written through the store, and of McNemar's exact p.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "evals/gsm8k_compare.h"
#include "evals/gsm8k_run.h"
#include "store/store.h"
#include "util/exitcode.h"
#include "util/fs.h"

static char dir[] = "/tmp/dsa-gsm8k-cmp-XXXXXX";

struct q {
    const char *output, *sha;
    bool correct;
};

/* Writes DIR/NAME/run-001.jsonl with these questions and a summary with this AL (<0: none). */
static char *write_run(const char *name, const struct q *qs, size_t n, double al)
{
    char *d = dsa_path_join(dir, name);
    char *path = dsa_run_file_name(d, 1);
    char *argv[] = {"gsm8k", NULL};
    json_t *h = dsa_run_header_new("gsm8k", 1, 1, argv);
    json_object_set_new(h, "match", json_pack("{s:s,s:s}", "eval", "gsm8k", "prompt", "vllm5"));
    dsa_run *r = NULL;
    assert_int_equal(dsa_run_open(&r, path, h, 0), 0);
    json_decref(h);
    for (size_t i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof id, "q%04zu", i);
        json_t *rec = json_pack("{s:s,s:s,s:i,s:s,s:b,s:s}", "id", id, "bin", "all", "score",
                                qs[i].correct ? 1 : 0, "output", qs[i].output, "correct",
                                qs[i].correct, "prompt_sha256", qs[i].sha ? qs[i].sha : "aa");
        assert_int_equal(dsa_run_append(r, rec), 0);
        json_decref(rec);
    }
    dsa_run_free(&r);
    if (al >= 0) {
        json_t *s = json_pack("{s:{s:f}}", "mtp", "acceptance_length", al);
        char *sp = dsa_gsm8k_summary_path(path);
        assert_int_equal(dsa_gsm8k_summary_write(sp, s), 0);
        free(sp);
        json_decref(s);
    }
    free(path);
    return d;
}

static int run_compare(const char *a, const char *b, char **text, json_t **doc)
{
    struct dsa_gsm8k_side sa, sb;
    assert_int_equal(dsa_gsm8k_side_load(a, &sa), 0);
    assert_int_equal(dsa_gsm8k_side_load(b, &sb), 0);
    size_t len;
    FILE *f = open_memstream(text, &len);
    int rc = dsa_gsm8k_compare(&sa, &sb, f, doc);
    fclose(f);
    dsa_gsm8k_side_release(&sa);
    dsa_gsm8k_side_release(&sb);
    return rc;
}

static void test_identical(void **state)
{
    (void)state;
    struct q qs[3] = {
        {" 18\n#### 18", NULL, true}, {" x\n#### 3", NULL, true}, {" y", NULL, false}};
    char *a = write_run("same-a", qs, 3, 3.0);
    char *b = write_run("same-b", qs, 3, 3.00001);
    char *text = NULL;
    json_t *doc = NULL;
    assert_int_equal(run_compare(a, b, &text, &doc), DSA_EXIT_OK);
    if (!strstr(text, "same outputs (3/3) and the same acceptance length (3.0000)"))
        fail_msg("report:\n%s", text);
    assert_non_null(strstr(text, "identical outputs   3/3\n"));
    assert_non_null(strstr(text, "McNemar exact p 1.0000 (0 vs 0)"));
    assert_true(json_is_true(json_object_get(doc, "identical")));
    assert_int_equal(json_integer_value(json_object_get(doc, "same")), 3);
    free(text);
    json_decref(doc);
    free(a);
    free(b);
}

static void test_one_differs(void **state)
{
    (void)state;
    struct q qa[3] = {
        {"ab", NULL, true}, {"The sum is 12.\n#### 12", NULL, true}, {"c", NULL, true}};
    struct q qb[3] = {
        {"ab", NULL, true}, {"The sum is 13.\n#### 13", NULL, false}, {"c", NULL, true}};
    char *a = write_run("diff-a", qa, 3, 2.5);
    char *b = write_run("diff-b", qb, 3, -1);
    char *text = NULL;
    json_t *doc = NULL;
    assert_int_equal(run_compare(a, b, &text, &doc), DSA_EXIT_FAIL);
    if (!strstr(text, "first difference    question q0001 at byte 12\n"))
        fail_msg("report:\n%s", text);
    assert_non_null(
        strstr(text, "  A  \"The sum is 12.\\n#### 12\"\n  B  \"The sum is 13.\\n#### 13\""));
    assert_non_null(strstr(text, "identical outputs   2/3"));
    assert_non_null(
        strstr(text, "A 1.0000 (3/3)   B 0.6667 (2/3)   McNemar exact p 1.0000 (1 vs 0)"));
    assert_non_null(strstr(text, "acceptance length   A 2.5000   B n/a\n"));
    assert_non_null(strstr(text, "outputs differ: 2/3 identical"));
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(doc, "first_diff"), "offset")), 12);
    free(text);
    json_decref(doc);
    free(a);
    free(b);
}

static void test_not_comparable(void **state)
{
    (void)state;
    struct q qa[2] = {{"a", "11", true}, {"b", "22", true}};
    struct q qb[2] = {{"a", "11", true}, {"b", "33", true}};
    char *a = write_run("cmp-a", qa, 2, -1);
    char *b = write_run("cmp-b", qb, 2, -1);
    char *c = write_run("cmp-c", qa, 1, -1);
    char *text = NULL;
    /* same question, other prompt */
    json_t *doc = NULL;
    assert_int_equal(run_compare(a, b, &text, &doc), DSA_EXIT_DATA);
    assert_true(json_is_false(json_object_get(doc, "comparable")));
    assert_true(json_is_false(json_object_get(doc, "identical")));
    json_t *fd = json_object_get(doc, "first_diff");
    assert_string_equal(json_string_value(json_object_get(fd, "id")), "q0001");
    assert_string_equal(json_string_value(json_object_get(fd, "why")), "different prompt");
    json_decref(doc);
    free(text);
    /* another question set, both ways */
    assert_int_equal(run_compare(a, c, &text, NULL), DSA_EXIT_DATA);
    free(text);
    assert_int_equal(run_compare(c, a, &text, &doc), DSA_EXIT_DATA);
    fd = json_object_get(doc, "first_diff");
    assert_string_equal(json_string_value(json_object_get(fd, "why")), "missing from the baseline");
    assert_int_equal(json_integer_value(json_object_get(doc, "n")), 2);
    json_decref(doc);
    free(text);
    free(a);
    free(b);
    free(c);
}

static void test_mcnemar(void **state)
{
    (void)state;
    /* exact two-sided: 2 * P[Binomial(b+c, 1/2) <= min(b, c)], capped at 1; GSL computes
       the cdf through the incomplete beta function, so compare to 1e-12 */
    assert_true(dsa_gsm8k_mcnemar_p(0, 0) == 1.0);
    assert_true(fabs(dsa_gsm8k_mcnemar_p(5, 0) - 0.0625) < 1e-12);
    assert_true(fabs(dsa_gsm8k_mcnemar_p(0, 5) - 0.0625) < 1e-12);
    assert_true(fabs(dsa_gsm8k_mcnemar_p(3, 7) - 352.0 / 1024.0) < 1e-12);
    assert_true(dsa_gsm8k_mcnemar_p(1, 0) == 1.0);
    /* scipy.stats.binomtest(2, 20, 0.5).pvalue = 0.000402450561523437 */
    assert_true(fabs(dsa_gsm8k_mcnemar_p(2, 18) - 0.000402450561523437) < 1e-12);
}

static void test_stderr(void **state)
{
    (void)state;
    /* lm-eval's mean_stderr: sample stddev / sqrt(n) */
    assert_true(fabs(dsa_gsm8k_stderr(30, 32) - sqrt(0.9375 * 0.0625 / 31)) < 1e-12);
    assert_true(isnan(dsa_gsm8k_stderr(1, 1)));
    assert_true(dsa_gsm8k_stderr(32, 32) == 0.0);
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_identical),      cmocka_unit_test(test_one_differs),
        cmocka_unit_test(test_not_comparable), cmocka_unit_test(test_mcnemar),
        cmocka_unit_test(test_stderr),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
