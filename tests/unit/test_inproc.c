/* The in-process MRCR evaluation on the CPU reference over the shipped tiny sample: records
 * with the documented keys, fp32 weights beat or match bf16 on recall, runs are reproducible
 * (same selection hash on a rerun) and a resume skips finished ids.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "evals/inproc_mrcr.h"
#include "store/store.h"

static char dir[256];
static char dataset[512];

static json_t *load_records(const char *out)
{
    char path[600];
    snprintf(path, sizeof path, "%s/run-001.jsonl", out);
    json_t *header = NULL, *records = NULL;
    assert_int_equal(dsa_run_load(path, &header, &records), 0);
    json_decref(header);
    return records;
}

static void run(const char *out, const char *variant)
{
    struct dsa_inproc_opts o;
    dsa_inproc_opts_init(&o);
    o.device = "cpu";
    const char *files[] = {dataset};
    o.datasets = files;
    o.ndatasets = 1;
    o.out_dir = out;
    o.max_query = 4;
    if (variant)
        assert_int_equal(dsa_k_flags_set(&o.flags, variant), 0);
    assert_int_equal(dsa_inproc_mrcr_run(&o), 0);
}

static void test_mrcr_inproc(void **state)
{
    (void)state;
    char a[300], b[300], c[300];
    snprintf(a, sizeof a, "%s/fp32", dir);
    snprintf(b, sizeof b, "%s/bf16", dir);
    snprintf(c, sizeof c, "%s/fp32-again", dir);
    run(a, NULL);
    run(b, "weights=bf16");
    run(c, NULL);
    run(c, NULL); /* resume: nothing new */
    json_t *ra = load_records(a), *rb = load_records(b), *rc = load_records(c);
    assert_int_equal(json_array_size(ra), 2);
    assert_int_equal(json_array_size(rc), 2);
    for (size_t i = 0; i < json_array_size(ra); i++) {
        json_t *x = json_array_get(ra, i), *y = json_array_get(rb, i), *z = json_array_get(rc, i);
        assert_string_equal(json_string_value(json_object_get(x, "status")), "ok");
        double s = json_real_value(json_object_get(x, "score"));
        assert_true(s > 0.5 && s <= 1.0);
        assert_true(json_is_real(json_object_get(x, "needle_retention")));
        assert_true(json_integer_value(json_object_get(x, "context_tokens")) > 1000);
        assert_int_equal(json_integer_value(json_object_get(x, "query_tokens")), 4);
        /* deterministic: the same selection on a rerun */
        assert_string_equal(json_string_value(json_object_get(x, "selection_sha256")),
                            json_string_value(json_object_get(z, "selection_sha256")));
        assert_true(json_real_value(json_object_get(z, "score")) == s);
        /* bf16 weights change the selection */
        assert_string_not_equal(json_string_value(json_object_get(x, "selection_sha256")),
                                json_string_value(json_object_get(y, "selection_sha256")));
    }
    json_decref(ra);
    json_decref(rb);
    json_decref(rc);
}

int main(void)
{
    const char *src = getenv("DSA_SRC");
    snprintf(dataset, sizeof dataset, "%s/datasets/samples/mrcr-synth-2needle-tiny.jsonl",
             src ? src : ".");
    snprintf(dir, sizeof dir, "%s/dsa-inproc.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mrcr_inproc),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        return 1;
    return rc;
}
