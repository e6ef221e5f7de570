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

#include <math.h>

#include "dsa_numeric.h"
#include "evals/evals.h"
#include "evals/mrcr_eval.h"
#include "run/run.h"
#include "kernels/proxy.h"
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
    struct dsa_loop_opts lo;
    dsa_loop_opts_init(&lo, 0, NULL, 8, 5, 1800, NULL, 2048);
    lo.backend = "inprocess";
    lo.out = out;
    lo.ip.device = "cpu";
    if (variant)
        dsa_strlist_push(&lo.ip.variants, variant);
    struct dsa_mrcr_eval_opts mo = {
        .dataset = dataset, .needles = "2", .max_tokens = 4096, .max_query = 4};
    assert_int_equal(dsa_loop_run(dsa_eval_find("mrcr"), &mo, &lo), 0);
    dsa_loop_opts_release(&lo);
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

/* proxy-v2's topic direction: only the non-rotary dims, zero mean, unit length; planting
   nothing is the unplanted proxy, bit for bit */
static void test_proxy_topic(void **state)
{
    (void)state;
    double u[128], sum = 0.0, norm = 0.0;
    dsa_proxy_topic(1, 0x1234, u);
    for (int d = 0; d < 128; d++) {
        if (d < 64)
            assert_true(u[d] == 0.0);
        sum += u[d];
        norm += u[d] * u[d];
    }
    assert_true(fabs(sum) < 1e-12 && fabs(norm - 1.0) < 1e-12);
    uint16_t k1[128], k2[128], k3[128], q1[64 * 128], q2[64 * 128];
    dsa_proxy_k(1, 77, 5000, k1);
    dsa_proxy_k_planted(1, 77, 5000, NULL, k2);
    assert_memory_equal(k1, k2, sizeof k1);
    dsa_proxy_q(1, 64, 77, 5000, q1);
    dsa_proxy_q_planted(1, 64, 77, 5000, NULL, q2);
    assert_memory_equal(q1, q2, sizeof q1);
    /* planted: the rotary half is untouched, the other half moves by about G_k * a(p) * u */
    dsa_proxy_k_planted(1, 77, 5000, u, k3);
    assert_memory_equal(k1, k3, 64 * 2);
    int moved = 0;
    for (int d = 64; d < 128; d++)
        moved += k1[d] != k3[d];
    assert_true(moved >= 60);
}

/* the fixture captured with transformers' DeepseekV32 (tests/data/traces): the fp64 golden
   selection of its F32 inputs is the model's own selection, row by row; interleaved RoPE is not */
static void test_trace_fixture(void **state)
{
    (void)state;
    const char *src = getenv("DSA_SRC");
    char path[512];
    snprintf(path, sizeof path, "%s/tests/data/traces/n8_r0000.safetensors", src ? src : ".");
    dsa_trace *tr = NULL;
    assert_int_equal(dsa_trace_open(path, &tr), 0);
    int layers[8];
    assert_int_equal(dsa_inproc_trace_layers(tr, layers, 8), 1);
    assert_int_equal(layers[0], 1);
    for (int rope = 0; rope < 2; rope++) {
        struct dsa_inproc_opts o;
        dsa_inproc_opts_init(&o);
        o.device = "cpu";
        if (rope)
            assert_int_equal(dsa_k_flags_set(&o.flags, "rope=interleaved"), 0);
        struct dsa_inproc_inputs in;
        assert_int_equal(dsa_inproc_trace_layer_inputs(tr, "layers.1.", 64, &in), 0);
        assert_int_equal(in.T, 2259);
        assert_int_equal(in.M, 4);
        assert_non_null(in.k_f32);
        assert_non_null(in.q_f32);
        /* the stack's bf16 copy is the round-to-nearest-even of the F32 original */
        assert_int_equal(in.k_raw[1000], dsa_f32_to_bf16(in.k_f32[1000]));
        int K = 2048;
        int32_t *idx = malloc((size_t)in.M * K * 4), *gold = malloc((size_t)in.M * K * 4),
                *model = malloc((size_t)in.M * K * 4);
        assert_int_equal(dsa_inproc_trace_model_topk(tr, "layers.1.", in.M, K, model), 2048);
        assert_int_equal(dsa_inproc_check_model_rows(path, &in, model, 2048, K), 0);
        dsa_inproc *ip = dsa_inproc_new(&o);
        assert_non_null(ip);
        assert_int_equal(dsa_inproc_select_inputs(ip, &in, idx, gold), 0);
        char hex[65];
        dsa_inproc_recall(idx, gold, in.M, K, NULL, hex); /* sorts the rows */
        for (int m = 0; m < in.M; m++) {
            double a = dsa_inproc_agreement(gold + (size_t)m * K, model + (size_t)m * K, K);
            if (rope)
                assert_true(a < 0.95);
            else
                assert_true(a == 1.0);
        }
        dsa_inproc_free(&ip);
        dsa_inproc_trace_inputs_release(&in);
        free(idx);
        free(gold);
        free(model);
    }
    dsa_trace_free(&tr);
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
        cmocka_unit_test(test_proxy_topic),
        cmocka_unit_test(test_trace_fixture),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        return 1;
    return rc;
}
