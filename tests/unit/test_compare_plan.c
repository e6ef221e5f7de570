/* Unit test: the run planner (stats/compare.c, dsa_cmp_plan) on scores that make the number of
 * runs needed astronomically large (found by libFuzzer, fuzz_compare: a score of 5e107 made it
 * 1e219, and its conversion to an integer was undefined behaviour).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "stats/compare.h"

static void test_plan_huge_runs_needed(void **state)
{
    (void)state;
    struct dsa_cmp_side s = {0};
    s.path = strdup("base"); /* the side's display path: released with the side */
    json_t *records = json_array();
    const double score[] = {0.5, 5e107, 0.25, 0.75};
    for (int i = 0; i < 4; i++) {
        char id[8];
        snprintf(id, sizeof id, "s%03d", i);
        json_array_append_new(
            records, json_pack("{s:s,s:s,s:f}", "bin", "all", "id", id, "score", score[i]));
    }
    assert_int_equal(dsa_cmp_side_add(&s, "base", json_object(), records), 0);
    json_t *plan = dsa_cmp_plan(&s, NULL, 0.02, 3, 0.95, 0.8);
    assert_non_null(plan);
    json_t *bin = json_array_get(json_object_get(plan, "bins"), 0);
    assert_non_null(bin);
    /* one run plans by samples; unreachable: no integer count, but the exact real is kept */
    assert_string_equal(json_string_value(json_object_get(bin, "mode")), "samples");
    assert_true(json_is_null(json_object_get(bin, "samples_needed")));
    double exact = json_real_value(json_object_get(bin, "samples_needed_exact"));
    assert_true(exact > 1e200);
    json_decref(plan);
    dsa_cmp_side_release(&s);
}

/* three runs of the same scores (greedy): planned by samples, never "MDE 0.000" */
static json_t *plan_runs(const double *score, size_t n, size_t R, struct dsa_cmp_side *s)
{
    memset(s, 0, sizeof *s);
    s->path = strdup("base");
    for (size_t r = 0; r < R; r++) {
        json_t *records = json_array();
        for (size_t i = 0; i < n; i++) {
            char id[8];
            snprintf(id, sizeof id, "s%03zu", i);
            json_array_append_new(records, json_pack("{s:s,s:s,s:f}", "bin", "all", "id", id,
                                                     "score", score[r * n + i]));
        }
        assert_int_equal(dsa_cmp_side_add(s, "base", json_object(), records), 0);
    }
    return dsa_cmp_plan(s, NULL, 0.02, 3, 0.95, 0.8);
}

static void test_plan_identical_runs(void **state)
{
    (void)state;
    const double score[] = {1, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1};
    struct dsa_cmp_side s;
    json_t *plan = plan_runs(score, 4, 3, &s);
    json_t *bin = json_array_get(json_object_get(plan, "bins"), 0);
    assert_true(json_is_true(json_object_get(bin, "identical_runs")));
    assert_string_equal(json_string_value(json_object_get(bin, "why")), "identical runs");
    assert_null(json_object_get(bin, "runs_needed"));
    /* var of {1, 0, 1, 1} = 0.25 */
    assert_float_equal(json_real_value(json_object_get(bin, "mde_n")),
                       2.8015852181 * sqrt(2 * 0.25 / 4), 1e-12);
    json_decref(plan);
    dsa_cmp_side_release(&s);
}

static void test_plan_runs_that_differ(void **state)
{
    (void)state;
    const double score[] = {1, 0, 1, 1, 1, 0, 0, 1, 0, 0, 1, 1};
    struct dsa_cmp_side s;
    json_t *plan = plan_runs(score, 4, 3, &s);
    json_t *bin = json_array_get(json_object_get(plan, "bins"), 0);
    assert_string_equal(json_string_value(json_object_get(bin, "mode")), "runs");
    assert_true(json_is_integer(json_object_get(bin, "runs_needed")));
    json_decref(plan);
    dsa_cmp_side_release(&s);
}

static void test_plan_ordinary(void **state)
{
    (void)state;
    struct dsa_cmp_side s = {0};
    s.path = strdup("base"); /* the side's display path: released with the side */
    json_t *records = json_array();
    const double score[] = {0.5, 0.7, 0.25, 0.75};
    for (int i = 0; i < 4; i++) {
        char id[8];
        snprintf(id, sizeof id, "s%03d", i);
        json_array_append_new(
            records, json_pack("{s:s,s:s,s:f}", "bin", "all", "id", id, "score", score[i]));
    }
    assert_int_equal(dsa_cmp_side_add(&s, "base", json_object(), records), 0);
    json_t *plan = dsa_cmp_plan(&s, NULL, 0.02, 3, 0.95, 0.8);
    json_t *bin = json_array_get(json_object_get(plan, "bins"), 0);
    json_t *need = json_object_get(bin, "samples_needed");
    assert_true(json_is_integer(need));
    /* the integer is the exact real rounded up */
    assert_int_equal(json_integer_value(need), (json_int_t)ceil(json_real_value(
                                                   json_object_get(bin, "samples_needed_exact"))));
    /* z80² · 2 · var / delta², var of {0.5, 0.7, 0.25, 0.75} = 0.0516666… (statistics.variance) */
    double var = 0.0516666666666666667, z = 2.8015852181;
    assert_float_equal(json_real_value(json_object_get(bin, "samples_needed_exact")),
                       z * z * 2 * var / (0.02 * 0.02), 1e-6);
    assert_float_equal(json_real_value(json_object_get(bin, "mde_n")), z * sqrt(2 * var / 4),
                       1e-12);
    json_decref(plan);
    dsa_cmp_side_release(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_huge_runs_needed),
        cmocka_unit_test(test_plan_ordinary),
        cmocka_unit_test(test_plan_identical_runs),
        cmocka_unit_test(test_plan_runs_that_differ),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
