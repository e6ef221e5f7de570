/* Unit tests of the Prometheus exposition parser (vLLM's real format, with and without
 * labels, NaN, +Inf, escapes, exponent notation) and the MTP acceptance arithmetic.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "evals/mtp.h"
#include "evals/prometheus.h"
#include "util/buf.h"

static dsa_prom *parse_ok(const char *text)
{
    dsa_prom *p = NULL;
    char err[256];
    if (dsa_prom_parse(text, strlen(text), &p, err, sizeof err))
        fail_msg("unexpected parse error: %s", err);
    return p;
}

static void parse_fails(const char *text, size_t len, const char *want)
{
    dsa_prom *p = NULL;
    char err[256];
    assert_int_equal(dsa_prom_parse(text, len, &p, err, sizeof err), -1);
    assert_null(p);
    if (!strstr(err, want))
        fail_msg("error '%s' lacks '%s'", err, want);
}

static char *read_data(const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/data/%s", getenv("DSA_SRC"), name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    struct dsa_buf b = DSA_BUF_INIT;
    dsa_buf_init(&b);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        dsa_buf_add(&b, chunk, n);
    fclose(f);
    return dsa_buf_detach(&b, NULL);
}

static void test_vllm_exposition(void **state)
{
    (void)state;
    char *text = read_data("vllm_metrics.txt");
    dsa_prom *p = parse_ok(text);
    assert_int_equal(dsa_prom_count(p), 24);
    double sum;
    /* summed over both engines; 1.234567e+06 is prometheus_client's float formatting */
    assert_int_equal(dsa_prom_sum(p, DSA_MTP_DRAFTS, &sum), 2);
    assert_true(sum == 1234567.0 + 823.0);
    /* exact name tokens: _created and the longer/shorter names do not leak in */
    assert_int_equal(dsa_prom_sum(p, "vllm:spec_decode_num_drafts_created", &sum), 2);
    assert_int_equal(dsa_prom_sum(p, "vllm:spec_decode_num_drafts", &sum), 0);
    assert_int_equal(dsa_prom_sum(p, "vllm:spec_decode_num_draft_tokens_total", &sum), 2);
    assert_true(sum == 3703701.0 + 2469.0);
    /* NaN gauge, +Inf as a label value, labels kept unescaped */
    bool saw_nan = false, saw_inf_label = false;
    for (size_t i = 0; i < dsa_prom_count(p); i++) {
        const struct dsa_prom_sample *s = dsa_prom_sample(p, i);
        if (!strcmp(s->name, "vllm:gpu_cache_usage_perc"))
            saw_nan = isnan(s->value);
        const char *le = dsa_prom_label(s, "le");
        if (le && !strcmp(le, "+Inf"))
            saw_inf_label = s->value == 32.0;
    }
    assert_true(saw_nan);
    assert_true(saw_inf_label);

    struct dsa_mtp_counters c;
    char err[256];
    assert_int_equal(dsa_mtp_counters_from_prom(p, &c, err, sizeof err), 0);
    assert_true(c.present);
    assert_int_equal(c.n_pos, 3);
    assert_true(c.pos[0] == 1235390.0 && c.pos[1] == 1235390.0 && c.pos[2] == 0.0);
    assert_true(c.accepted == 2469134.0 + 1646.0);
    dsa_prom_free(&p);
    assert_null(p);
    free(text);
}

static void test_syntax(void **state)
{
    (void)state;
    dsa_prom *p = parse_ok("# a comment\n"
                           "\n"
                           "  plain_no_labels 5\n"
                           "with_ts{a=\"1\"} 1e3 1700000000000\r\n"
                           "esc{v=\"a\\\"b\\\\c\\nd\",w=\"x\",} +Inf\n"
                           "{\"dotted.name\",k=\"v\"} -Inf\n"
                           "spaced { a = \"1\" , b=\"2\" }\t7.5\n"
                           "nan_lower nan\n"
                           "hexf 0x1p4\n"
                           "vllm:spec_decode_num_drafts_totalx 99");
    assert_int_equal(dsa_prom_count(p), 8);
    const struct dsa_prom_sample *s = dsa_prom_sample(p, 0);
    assert_string_equal(s->name, "plain_no_labels");
    assert_int_equal(s->n_labels, 0);
    assert_true(s->value == 5.0);
    s = dsa_prom_sample(p, 1);
    assert_true(s->value == 1000.0 && s->has_timestamp && s->timestamp_ms == 1700000000000LL);
    s = dsa_prom_sample(p, 2);
    assert_string_equal(dsa_prom_label(s, "v"), "a\"b\\c\nd");
    assert_string_equal(dsa_prom_label(s, "w"), "x");
    assert_true(isinf(s->value) && s->value > 0);
    s = dsa_prom_sample(p, 3);
    assert_string_equal(s->name, "dotted.name");
    assert_string_equal(dsa_prom_label(s, "k"), "v");
    assert_true(isinf(s->value) && s->value < 0);
    s = dsa_prom_sample(p, 4);
    assert_string_equal(dsa_prom_label(s, "b"), "2");
    assert_true(s->value == 7.5);
    assert_true(isnan(dsa_prom_sample(p, 5)->value));
    assert_true(dsa_prom_sample(p, 6)->value == 16.0);
    double sum;
    assert_int_equal(dsa_prom_sum(p, DSA_MTP_DRAFTS, &sum), 0);
    assert_true(sum == 0.0);
    dsa_prom_free(&p);

    parse_fails("a{b=\"c} 1\n", 10, "line 1: unterminated");
    parse_fails("ok 1\nfoo 1 2 3\n", 15, "line 2: unexpected text");
    parse_fails("foo{a=b} 1", 10, "expected '\"'");
    parse_fails("foo bar", 7, "bad value 'bar'");
    parse_fails("foo nan(0x1)", 12, "bad value");
    parse_fails("foo{a=\"\\x\"} 1", 13, "bad escape");
    parse_fails("1foo 1", 6, "expected a metric name");
    parse_fails("foo", 3, "expected a blank");
    parse_fails("foo+1", 5, "expected a blank");
    parse_fails("foo{a=\"1\",a=\"2\"} 1", 18, "duplicate label 'a'");
    parse_fails("foo{a=\"1\" b=\"2\"} 1", 18, "expected ',' or '}'");
    parse_fails("foo 1 12x", 9, "bad timestamp");
    parse_fails("foo 1\0", 6, "NUL byte");
    parse_fails("{a=\"1\"} 1", 9, "missing metric name");
}

/* vLLM counters as text; per-position only when npos > 0 */
static void counters_text(struct dsa_buf *b, double d, double t, double a, const double *pos,
                          int npos)
{
    dsa_buf_reset(b);
    dsa_buf_addf(b, "%s{engine=\"0\",model_name=\"m\"} %.1f\n", DSA_MTP_DRAFTS, d);
    dsa_buf_addf(b, "%s{engine=\"0\",model_name=\"m\"} %.1f\n", DSA_MTP_DRAFT_TOKENS, t);
    dsa_buf_addf(b, "%s{engine=\"0\",model_name=\"m\"} %.1f\n", DSA_MTP_ACCEPTED, a);
    for (int j = 0; j < npos; j++)
        dsa_buf_addf(b, "%s{engine=\"0\",model_name=\"m\",position=\"%d\"} %.1f\n", DSA_MTP_PER_POS,
                     j, pos[j]);
}

static void counters_of(const char *text, struct dsa_mtp_counters *c)
{
    dsa_prom *p = parse_ok(text);
    char err[256];
    assert_int_equal(dsa_mtp_counters_from_prom(p, c, err, sizeof err), 0);
    dsa_prom_free(&p);
}

static void test_delta_al(void **state)
{
    (void)state;
    struct dsa_buf b = DSA_BUF_INIT;
    dsa_buf_init(&b);
    struct dsa_mtp_counters before, after;
    /* synthetic acceptance length 3.0 with 3 draft tokens = rates [1,1,0]: each draft
       accepts exactly 2 (docs/gsm8k.md "MTP acceptance (`--mtp`)" self-test) */
    counters_text(&b, 100, 300, 200, (double[]){100, 100, 0}, 3);
    counters_of(b.data, &before);
    counters_text(&b, 400, 1200, 800, (double[]){400, 400, 0}, 3);
    counters_of(b.data, &after);
    struct dsa_mtp_result r;
    char err[256];
    assert_int_equal(dsa_mtp_delta(&before, &after, &r, err, sizeof err), 0);
    assert_true(r.measured);
    assert_true(r.al == 3.0);
    assert_true(fabs(r.draft_rate - 600.0 / 900.0) < 1e-15);
    assert_int_equal(r.n_pos, 3);
    assert_true(r.pos_rate[0] == 1.0 && r.pos_rate[1] == 1.0 && r.pos_rate[2] == 0.0);
    /* 300 drafts of 3 accepted-or-bonus tokens = 900 tokens: our 32 requests explain it */
    assert_true(dsa_mtp_plausible(&r, 900 + 32, 32));
    assert_false(dsa_mtp_plausible(&r, 400, 32));

    char *out = NULL;
    size_t out_len = 0;
    FILE *f = open_memstream(&out, &out_len);
    dsa_mtp_print(f, &r);
    fclose(f);
    assert_string_equal(out, "acceptance length   3.0000   (1 + 600 accepted / 300 drafts)\n"
                             "draft acceptance    0.6667   (600 / 900 draft tokens)\n"
                             "per position        1.0000 1.0000 0.0000\n");
    free(out);

    /* a counter that went down: the server restarted */
    assert_int_equal(dsa_mtp_delta(&after, &before, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "went down"));

    /* no spec decoding configured: counters absent */
    counters_of("vllm:num_requests_running 0\n", &before);
    assert_false(before.present);
    assert_int_equal(dsa_mtp_delta(&before, &before, &r, err, sizeof err), 0);
    assert_false(r.present);
    assert_false(r.measured);
    /* present but idle: no drafts */
    counters_text(&b, 5, 15, 10, NULL, 0);
    counters_of(b.data, &before);
    assert_int_equal(dsa_mtp_delta(&before, &before, &r, err, sizeof err), 0);
    assert_true(r.present);
    assert_false(r.measured);

    /* a bad position label is an error, not a silent zero */
    dsa_prom *p = parse_ok(DSA_MTP_PER_POS "{position=\"x\"} 1\n");
    assert_int_equal(dsa_mtp_counters_from_prom(p, &before, err, sizeof err), -1);
    dsa_prom_free(&p);
    dsa_buf_release(&b);
}

/* a per-position profile [0.9, 0.6, 0.3] over 1000 drafts of 3 tokens */
static void test_profile(void **state)
{
    (void)state;
    struct dsa_buf b = DSA_BUF_INIT;
    dsa_buf_init(&b);
    struct dsa_mtp_counters before, after;
    counters_text(&b, 0, 0, 0, (double[]){0, 0, 0}, 3);
    counters_of(b.data, &before);
    counters_text(&b, 1000, 3000, 1800, (double[]){900, 600, 300}, 3);
    counters_of(b.data, &after);
    struct dsa_mtp_result r;
    char err[256];
    assert_int_equal(dsa_mtp_delta(&before, &after, &r, err, sizeof err), 0);
    assert_true(r.al == 2.8);
    assert_true(r.pos_rate[0] == 0.9 && r.pos_rate[1] == 0.6 && r.pos_rate[2] == 0.3);
    json_t *j = dsa_mtp_result_json(&r);
    assert_true(json_real_value(json_object_get(j, "acceptance_length")) == 2.8);
    assert_int_equal(json_array_size(json_object_get(j, "per_position_rate")), 3);
    json_decref(j);
    dsa_buf_release(&b);
}

struct fake {
    const char *bodies[8];
    int n, i;
};

static int fake_fetch(void *ctx, struct dsa_buf *body)
{
    struct fake *f = ctx;
    if (f->i >= f->n)
        return -1;
    dsa_buf_adds(body, f->bodies[f->i++]);
    return 0;
}

static void test_scrape_settles(void **state)
{
    (void)state;
    struct fake f = {{DSA_MTP_DRAFTS " 1\n", DSA_MTP_DRAFTS " 2\n", DSA_MTP_DRAFTS " 3\n",
                      DSA_MTP_DRAFTS " 3\n", DSA_MTP_DRAFTS " 4\n"},
                     5,
                     0};
    struct dsa_mtp_counters c;
    /* one read before the run */
    assert_int_equal(dsa_mtp_scrape(fake_fetch, &f, false, 0.001, 1.0, &c), 0);
    assert_true(c.drafts == 1.0);
    /* after the run: read until two reads agree (2, 3, 3) */
    assert_int_equal(dsa_mtp_scrape(fake_fetch, &f, true, 0.001, 1.0, &c), 0);
    assert_true(c.drafts == 3.0);
    assert_int_equal(f.i, 4);
    /* never settles within the bound: the last read and 1 */
    struct fake g = {{DSA_MTP_DRAFTS " 1\n", DSA_MTP_DRAFTS " 2\n", DSA_MTP_DRAFTS " 3\n"}, 3, 0};
    assert_int_equal(dsa_mtp_scrape(fake_fetch, &g, true, 0.01, 0.025, &c), 1);
    assert_true(c.drafts == 2.0 || c.drafts == 3.0);
    /* a body that does not parse */
    struct fake h = {{"garbage here\n"}, 1, 0};
    assert_int_equal(dsa_mtp_scrape(fake_fetch, &h, false, 0.001, 1.0, &c), -1);
}

static void test_sglang_meta(void **state)
{
    (void)state;
    struct dsa_mtp_perreq acc;
    memset(&acc, 0, sizeof acc);
    json_error_t e;
    const char *metas[] = {
        "{\"completion_tokens\": 31, \"spec_verify_ct\": 10, \"spec_num_correct_drafts\": 20,"
        " \"spec_num_proposed_drafts\": 30, \"spec_correct_drafts_histogram\": [0, 0, 10, 0]}",
        /* the older alias names */
        "{\"completion_tokens\": 16, \"spec_verify_ct\": 5, \"spec_accepted_drafts\": 10,"
        " \"spec_proposed_drafts\": 15, \"spec_accept_histogram\": [0, 0, 5, 0]}",
        /* no speculative algorithm: ignored */
        "{\"completion_tokens\": 7}",
    };
    for (size_t i = 0; i < 3; i++) {
        json_t *m = json_loads(metas[i], 0, &e);
        assert_non_null(m);
        dsa_mtp_perreq_add_sglang(&acc, m);
        json_decref(m);
    }
    assert_int_equal(acc.n_with, 2);
    struct dsa_mtp_result r;
    dsa_mtp_result_from_sglang(&acc, &r);
    assert_true(r.measured);
    assert_true(r.al == 3.0);
    assert_true(r.draft_rate == 30.0 / 45.0);
    assert_int_equal(r.n_pos, 3);
    assert_true(r.pos_rate[0] == 1.0 && r.pos_rate[1] == 1.0 && r.pos_rate[2] == 0.0);
    /* SGLang's own figure counts the prefill token: 47 / 15 */
    assert_true(acc.completion_tokens / acc.verify_ct == 47.0 / 15.0);

    struct dsa_mtp_perreq v;
    memset(&v, 0, sizeof v);
    json_t *spec = json_loads("{\"num_spec_steps\": 4, \"num_draft_tokens\": 12,"
                              " \"num_accepted_draft_tokens\": 8}",
                              0, &e);
    dsa_mtp_perreq_add_vllm(&v, spec);
    dsa_mtp_perreq_add_vllm(&v, NULL);
    json_decref(spec);
    assert_int_equal(v.n_with, 1);
    assert_true(v.num_spec_steps == 4 && v.num_accepted_draft_tokens == 8);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vllm_exposition), cmocka_unit_test(test_syntax),
        cmocka_unit_test(test_delta_al),        cmocka_unit_test(test_profile),
        cmocka_unit_test(test_scrape_settles),  cmocka_unit_test(test_sglang_meta),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
