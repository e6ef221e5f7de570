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
    /* unreachable: no integer count, but the exact real is kept */
    assert_true(json_is_null(json_object_get(bin, "runs_needed")));
    double exact = json_real_value(json_object_get(bin, "runs_needed_exact"));
    assert_true(exact > 1e200);
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
    json_t *need = json_object_get(bin, "runs_needed");
    assert_true(json_is_integer(need));
    /* the integer is the exact real rounded up */
    assert_int_equal(json_integer_value(need),
                     (json_int_t)ceil(json_real_value(json_object_get(bin, "runs_needed_exact"))));
    json_decref(plan);
    dsa_cmp_side_release(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_huge_runs_needed),
        cmocka_unit_test(test_plan_ordinary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
