/* Unit tests of the test server's pure parts (tests/server): the MRCR question parser and
 * request matcher, the decision function, probability tables, the tokenizer, Python float
 * formatting (floatToGoString), the synthetic spec-decode schedule and fault rules. Vectors come
 * from tests/cli/srvref.py, the independent Python reference (regenerate with it if a
 * documented rule changes on purpose).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "answer.h"
#include "faults.h"
#include "llamacpp.h"
#include "metrics.h"
#include "mrcr.h"
#include "server.h"
#include "tok.h"
#include "util/buf.h"
#include "util/lines.h"

static void parse_ok(const char *s, const char *prefix, long k, const char *format,
                     const char *topic)
{
    struct srv_mrcr_question q;
    assert_int_equal(srv_mrcr_parse_question(s, strlen(s), &q), 0);
    assert_string_equal(q.prefix, prefix);
    assert_int_equal(q.k, k);
    assert_string_equal(q.format, format);
    assert_string_equal(q.topic, topic);
    srv_mrcr_question_release(&q);
}

static void test_question_parser(void **state)
{
    (void)state;
    parse_ok("Prepend XXXXXXXXXX to the 3rd (1 indexed) poem about tapirs. Do not include any "
             "other text in your response.",
             "XXXXXXXXXX", 3, "poem", "tapirs");
    parse_ok("Prepend l4d2BA2kq8 to the 6th (1 indexed) short essay about distance. Do not "
             "include any other text in your response.",
             "l4d2BA2kq8", 6, "short essay", "distance");
    parse_ok("Prepend IjvGhYvHon to the 21st (1 indexed) short scene in a play about the lord "
             "of the rings. Do not include any other text in your response.",
             "IjvGhYvHon", 21, "short scene in a play", "the lord of the rings");
    /* the closing sentence is optional; a trailing period is not part of the topic */
    parse_ok("Prepend abc to the 1st (1 indexed) email about faculty.", "abc", 1, "email",
             "faculty");
    parse_ok("Prepend abc to the 2nd (1 indexed) riddle about ice cream", "abc", 2, "riddle",
             "ice cream");

    const char *bad[] = {
        "",
        "write a poem about tapirs",
        "Prepend X to the 0th (1 indexed) poem about tapirs.",
        "Prepend X to the third (1 indexed) poem about tapirs.",
        "Prepend X to the 3rd poem about tapirs.",
        "Prepend X to the 3rd (1 indexed) poem on tapirs.",
        "Prepend X to the 99999999999th (1 indexed) poem about tapirs.",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct srv_mrcr_question q;
        assert_int_equal(srv_mrcr_parse_question(bad[i], strlen(bad[i]), &q), -1);
        assert_null(q.prefix);
    }
    /* invalid UTF-8 and NUL bytes do not crash it */
    const char weird[] = "Prepend \xff\xfe to the 1st (1 indexed) poem about \0x.";
    struct srv_mrcr_question q;
    if (srv_mrcr_parse_question(weird, sizeof weird - 1, &q) == 0)
        srv_mrcr_question_release(&q);
}

/* Every question of the real MRCR log subsets (tests/data/mrcr) parses, with a 10-character
   prefix and an ordinal that agrees with its suffix. */
static void test_question_parser_real_logs(void **state)
{
    (void)state;
    const char *data = getenv("DSA_DATA");
    if (!data || !*data)
        fail_msg("DSA_DATA is not set (run the tests through ctest)");
    const char *files[] = {"evaluation_log_gemini_3_pro_8needle.jsonl",
                           "evaluation_log_gemini_3_flash_2needle.jsonl"};
    long parsed = 0;
    for (size_t f = 0; f < 2; f++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/mrcr/%s", data, files[f]);
        FILE *fp = fopen(path, "r");
        if (!fp)
            fail_msg("cannot open '%s'", path);
        char *line = NULL;
        size_t cap = 0;
        ssize_t n;
        while ((n = getline(&line, &cap, fp)) > 0) {
            json_t *row = json_loadb(line, (size_t)n, 0, NULL);
            json_t *input = json_object_get(row, "input");
            json_t *content = json_object_get(input, "content");
            if (json_is_string(content)) {
                struct srv_mrcr_question q;
                const char *s = json_string_value(content);
                assert_int_equal(srv_mrcr_parse_question(s, json_string_length(content), &q), 0);
                assert_int_equal(strlen(q.prefix), 10);
                assert_true(q.k >= 1 && q.k <= 8);
                assert_non_null(strstr(s, q.format));
                char ask[512];
                snprintf(ask, sizeof ask, "write a %s about %s", q.format, q.topic);
                assert_true(srv_mrcr_is_request(ask, strlen(ask), q.format, q.topic));
                srv_mrcr_question_release(&q);
                parsed++;
            }
            json_decref(row);
        }
        free(line);
        fclose(fp);
    }
    assert_int_equal(parsed, 80 - 7 + 71 - 2); /* every line but the request errors */
}

static void test_request_matcher(void **state)
{
    (void)state;
    struct {
        const char *s;
        bool match;
    } cases[] = {
        {"write a poem about tapirs", true},      {"Write a poem about tapirs.", true},
        {"  write a poem about tapirs!\n", true}, {"write an email about tapirs", false},
        {"write a POEM about Tapirs", true},      {"write a poem about tapirs and cats", false},
        {"write a song about tapirs", false},     {"please write a poem about tapirs", false},
        {"write a poem about tapir", false},      {"", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_int_equal(srv_mrcr_is_request(cases[i].s, strlen(cases[i].s), "poem", "tapirs"),
                         cases[i].match);
    assert_true(srv_mrcr_is_request("write an email about tapirs", 27, "email", "tapirs"));
    assert_true(srv_mrcr_is_request("write a short scene in a play about the who", 43,
                                    "short scene in a play", "the who"));
}

static void test_decision_vectors(void **state)
{
    (void)state;
    /* srvref.decide_bits / decide_u */
    assert_true(srv_decide_bits(0, 0, "wrong") == 0x2bd9ec9b2d610571ULL);
    assert_true(srv_decide_bits(7, 0x0123456789abcdefULL, "garble") == 0x192e52b269a79e9aULL);
    assert_true(srv_decide_bits(42, UINT64_MAX, "build:pr1") == 0xe9ec5cb8a2482185ULL);
    assert_true(srv_decide_u(0, 0, "wrong") == 0.17129401005275113);
    assert_true(srv_decide_u(7, 0x0123456789abcdefULL, "garble") == 0.09836308341769351);
    assert_true(srv_decide_u(42, UINT64_MAX, "build:pr1") == 0.9137628508345021);
    /* content hash: sha256("user\0a\0assistant\0\xc3\xbc\0")[:8] */
    json_t *m = json_pack("[{s:s,s:s},{s:s,s:s}]", "role", "user", "content", "a", "role",
                          "assistant", "content", "\xc3\xbc");
    assert_true(srv_mrcr_content_hash(m) == 0xcac279768223b423ULL);
    json_decref(m);
}

static void test_mrcr_answer(void **state)
{
    (void)state;
    json_t *msgs = json_pack(
        "[{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s}]", "role",
        "user", "content", "Here are some examples: write a poem about tapirs", "role", "user",
        "content", "write a poem about tapirs", "role", "assistant", "content", "first tapir poem",
        "role", "user", "content", "write a song about tapirs", "role", "assistant", "content",
        "a song", "role", "user", "content", "Write a poem about tapirs.", "role", "assistant",
        "content", "second tapir poem", "role", "user", "content",
        "Prepend PFX to the 2nd (1 indexed) poem about tapirs. Do not include any other text "
        "in your response.");
    struct srv_answer_cfg cfg = {.seed = 0, .build = ""};
    struct srv_answer_in in = {"chat", msgs, NULL, 0, srv_tok_chat(msgs)};
    struct dsa_buf out = DSA_BUF_INIT;
    struct srv_answer_info info;
    srv_answer(&in, &cfg, &out, &info);
    assert_string_equal(info.answerer, "mrcr");
    assert_string_equal(out.data, "PFXsecond tapir poem");

    /* garble always: the first half of the needle's code points */
    char err[128];
    assert_int_equal(srv_ptable_parse("1", &cfg.garble, err, sizeof err), 0);
    srv_answer(&in, &cfg, &out, &info);
    assert_true(info.garbled && !info.wrong);
    assert_string_equal(out.data, "PFXsecond t"); /* 8 of 17 code points */
    /* wrong always: the other tapir poem (two matches, so the pick is forced) */
    assert_int_equal(srv_ptable_parse("1", &cfg.wrong, err, sizeof err), 0);
    srv_answer(&in, &cfg, &out, &info);
    assert_true(info.wrong && !info.garbled);
    assert_string_equal(out.data, "PFXfirst tapir poem");
    /* a build that changes everything keeps 3/4 of the body */
    cfg.build = "b";
    cfg.build_fraction = 1.0;
    srv_answer(&in, &cfg, &out, &info);
    assert_true(info.build_changed);
    assert_string_equal(out.data, "PFXfirst tapir "); /* 12 of 16 */

    /* not a question: the hash answerer, deterministic */
    json_array_remove(msgs, json_array_size(msgs) - 1);
    in.prompt_tokens = srv_tok_chat(msgs);
    srv_answer(&in, &cfg, &out, &info);
    assert_string_equal(info.answerer, "hash");
    char *first = dsa_xstrdup(out.data);
    srv_answer(&in, &cfg, &out, &info);
    assert_string_equal(out.data, first);
    free(first);
    dsa_buf_release(&out);
    json_decref(msgs);
}

static void test_ptable(void **state)
{
    (void)state;
    struct srv_ptable t;
    char err[128];
    assert_int_equal(srv_ptable_parse("8k:0,32k:0.05,inf:0.5", &t, err, sizeof err), 0);
    assert_true(srv_ptable_get(&t, 100) == 0.0);
    assert_true(srv_ptable_get(&t, 8192) == 0.0);
    assert_true(srv_ptable_get(&t, 8193) == 0.05);
    assert_true(srv_ptable_get(&t, 1L << 30) == 0.5);
    assert_int_equal(srv_ptable_parse("0.25", &t, err, sizeof err), 0);
    assert_true(srv_ptable_get(&t, 5) == 0.25);
    assert_int_equal(srv_ptable_parse("8k:0", &t, err, sizeof err), 0);
    assert_true(srv_ptable_get(&t, 9000) == 0.0);
    const char *bad[] = {"", "1.5", "-0.1", "x", "8k:0,4k:0.1", "0.1,0.2", "8k:", ":0.1", "8q:0.1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(srv_ptable_parse(bad[i], &t, err, sizeof err), -1);
}

static void test_tokenizer(void **state)
{
    (void)state;
    /* srvref.count */
    assert_int_equal(srv_tok_count("Hello world, this is tokenization!", 34), 11);
    assert_int_equal(srv_tok_count("", 0), 0);
    assert_int_equal(srv_tok_count("   ", 3), 1);
    const char *u = "\xc3\xbcn\xc3\xaf"
                    "code w\xc3\xb6"
                    "rds ab12cd34 ... x\n\ny ";
    assert_int_equal(srv_tok_count(u, strlen(u)), 12);
    assert_int_equal(srv_tok_count("supercalifragilisticexpialidocious", 34), 9);
    size_t n;
    long *ids = srv_tok_ids("Hello world, this is tokenization!", 34, &n);
    assert_int_equal(n, 11);
    assert_int_equal(ids[0], 92166);
    assert_int_equal(ids[1], 58302);
    assert_int_equal(ids[2], 11275);
    free(ids);
    /* prefixes end on piece boundaries and never split a UTF-8 character */
    assert_int_equal(srv_tok_prefix("Hello world", 11, 1), 4);
    assert_int_equal(srv_tok_prefix("Hello world", 11, 2), 5);
    assert_int_equal(srv_tok_prefix("\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc", 10, 1), 8);
    json_t *m = json_pack("[{s:s,s:s},{s:s,s:n}]", "role", "user", "content", "Hello world", "role",
                          "assistant", "content");
    assert_int_equal(srv_tok_chat(m), 2 + (4 + 4) + 4); /* Hell|o| worl|d */
    json_decref(m);
    m = json_pack("[{s:s,s:i}]", "role", "user", "content", 3);
    assert_int_equal(srv_tok_chat(m), -1);
    json_decref(m);
}

static void test_float_to_go(void **state)
{
    (void)state;
    /* prometheus_client floatToGoString, via srvref.float_to_go */
    struct {
        double d;
        const char *want;
    } v[] = {
        {0.0, "0.0"},
        {1.0, "1.0"},
        {1234.0, "1234.0"},
        {123456.0, "123456.0"},
        {1234567.0, "1.234567e+06"},
        {12345678.9, "1.23456789e+07"},
        {1e16, "1e+16"},
        {1.5e-05, "1.5e-05"},
        {0.1, "0.1"},
        {1796041313.342024, "1.796041313342024e+09"},
        {1e22, "1e+22"},
        {100000000000.0, "1e+011"},
        {2.5, "2.5"},
        {1e-4, "0.0001"},
        {123456789012.0, "1.23456789012e+011"},
        {-3.0, "-3.0"},
        {1.0 / 0.0, "+Inf"},
        {-1.0 / 0.0, "-Inf"},
    };
    char buf[64];
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        srv_float_to_go(v[i].d, buf, sizeof buf);
        assert_string_equal(buf, v[i].want);
    }
    srv_float_to_go(0.0 / 0.0, buf, sizeof buf);
    assert_string_equal(buf, "NaN");
}

static void test_spec_schedule(void **state)
{
    (void)state;
    struct srv_spec_cfg c = {.k = 3};
    assert_int_equal(srv_spec_rates_from_length(&c, 3.0), 0);
    assert_true(c.rates[0] == 1.0 && c.rates[1] == 1.0 && c.rates[2] == 0.0);
    struct srv_spec_result r;
    srv_spec_simulate(&c, 100, &r);
    /* srvref.spec_counts([1,1,0], 100): 33 drafts, 66 accepted → AL 3 exactly */
    assert_int_equal(r.steps, 33);
    assert_int_equal(r.draft_tokens, 99);
    assert_int_equal(r.accepted, 66);
    assert_int_equal(r.per_pos[0], 33);
    assert_int_equal(r.per_pos[2], 0);
    assert_int_equal(r.hist[2], 33);
    assert_int_equal(srv_spec_rates_from_length(&c, 2.5), 0);
    srv_spec_simulate(&c, 100, &r);
    assert_int_equal(r.steps, 40);
    assert_int_equal(r.accepted, 60);
    assert_int_equal(r.per_pos[1], 20);
    assert_int_equal(srv_spec_rates_parse(&c, "0.9,0.6,0.3"), 0);
    srv_spec_simulate(&c, 57, &r);
    assert_int_equal(r.steps, 20);
    assert_int_equal(r.accepted, 39);
    assert_int_equal(r.per_pos[0], 19);
    assert_int_equal(r.per_pos[1], 13);
    assert_int_equal(r.per_pos[2], 7);
    srv_spec_simulate(&c, 0, &r);
    assert_int_equal(r.steps, 0);
    assert_int_equal(srv_spec_rates_from_length(&c, 4.5), -1);
    assert_int_equal(srv_spec_rates_from_length(&c, 0.5), -1);
    assert_int_equal(srv_spec_rates_parse(&c, "0.5,0.9,0.1"), -1); /* increasing */
    assert_int_equal(srv_spec_rates_parse(&c, "1,1"), -1);         /* K is 3 */
}

static void test_fault_rules(void **state)
{
    (void)state;
    struct srv_fault_rule r;
    char err[128];
    assert_int_equal(srv_fault_rule_parse("503", &r, err, sizeof err), 0);
    assert_int_equal(r.fault.kind, SRV_FAULT_STATUS);
    assert_int_equal(r.fault.status, 503);
    assert_true(r.rate == 1.0);
    assert_int_equal(srv_fault_rule_parse("reset:0.25", &r, err, sizeof err), 0);
    assert_int_equal(r.fault.kind, SRV_FAULT_RESET);
    assert_true(r.rate == 0.25);
    assert_int_equal(srv_fault_rule_parse("stall:first", &r, err, sizeof err), 0);
    assert_true(r.first_only);
    assert_int_equal(srv_fault_rule_parse("truncate:nth=3", &r, err, sizeof err), 0);
    assert_int_equal(r.nth, 3);
    const char *bad[] = {"", "frob", "200", "600", "reset:2", "reset:x", "reset:nth=0", ":0.5"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(srv_fault_rule_parse(bad[i], &r, err, sizeof err), -1);

    struct srv_fault_rule rules[2];
    assert_int_equal(srv_fault_rule_parse("500:first", &rules[0], err, sizeof err), 0);
    assert_int_equal(srv_fault_rule_parse("reset:nth=5", &rules[1], err, sizeof err), 0);
    assert_int_equal(srv_fault_choose(rules, 2, 0, "", 0, 1, 0, 1).kind, SRV_FAULT_STATUS);
    assert_int_equal(srv_fault_choose(rules, 2, 0, "", 0, 1, 1, 2).kind, SRV_FAULT_NONE);
    assert_int_equal(srv_fault_choose(rules, 2, 0, "", 0, 1, 1, 5).kind, SRV_FAULT_RESET);
    struct srv_fault_rule m;
    assert_int_equal(srv_fault_rule_parse("429:match=n8/r0003", &m, err, sizeof err), 0);
    assert_int_equal(srv_fault_choose(&m, 1, 0, "{\"id\":\"n8/r0003\"}", 17, 1, 4, 9).status, 429);
    assert_int_equal(srv_fault_choose(&m, 1, 0, "{\"id\":\"n8/r0004\"}", 17, 1, 0, 1).kind,
                     SRV_FAULT_NONE);
    assert_int_equal(srv_fault_rule_parse("429:match=", &m, err, sizeof err), -1);
    /* attempts per body hash */
    assert_int_equal(srv_fault_attempt(0xabc), 0);
    assert_int_equal(srv_fault_attempt(0xabc), 1);
    assert_int_equal(srv_fault_attempt(0xabd), 0);
    for (uint64_t h = 1; h < 5000; h++) /* grows past the first table */
        srv_fault_attempt(h << 20);
    assert_int_equal(srv_fault_attempt(0xabc), 2);
}

static void test_generation_seam(void **state)
{
    (void)state;
    struct srv_config cfg = {.model = "m", .max_model_len = 100, .answer = {.build = ""}};
    const char *ok = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                     "\"max_tokens\":5,\"stream\":true,\"stream_options\":{}}";
    assert_int_equal(srv_http_fuzz_generate(&cfg, "chat", ok, strlen(ok)), 200);
    const char *big = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":99}";
    assert_int_equal(srv_http_fuzz_generate(&cfg, "chat", big, strlen(big)), 400);
    const char *model = "{\"model\":\"x\",\"prompt\":\"hi\"}";
    assert_int_equal(srv_http_fuzz_generate(&cfg, "completions", model, strlen(model)), 404);
    char err[256];
    json_t *t = srv_http_tokenize("{\"prompt\":\"a b\"}", 16, err, sizeof err);
    assert_int_equal(json_integer_value(json_object_get(t, "count")), 2);
    json_decref(t);
    assert_null(srv_http_tokenize("{}", 2, err, sizeof err));
    assert_non_null(strstr(err, "prompt"));
}

static void test_parse_error_utf8(void **state)
{
    (void)state;
    /* found by libFuzzer: jansson's parse error quotes the bad token up to the first byte of a
       UTF-8 sequence; the error body could not be built from it (NULL, then a crash) */
    struct srv_config cfg = {.model = "m", .max_model_len = 100, .llamacpp = true};
    srv_cfg = &cfg;
    const char *bad = "{\"prompt\":\"\\\xdf\x88\"}";
    struct dsa_buf out = DSA_BUF_INIT;
    dsa_buf_init(&out);
    assert_int_equal(srv_llamacpp_generate("chat", bad, strlen(bad), &out), 400);
    assert_non_null(strstr(out.data, "parse error: invalid escape near '\\\"\\\\?'"));
    dsa_buf_release(&out);
    srv_cfg = NULL;
    char msg[] = "ok \xc3\xa9 \xdf";
    srv_scrub_utf8(msg);
    assert_string_equal(msg, "ok ?? ?");
    char fine[] = "ok \xc3\xa9";
    srv_scrub_utf8(fine);
    assert_string_equal(fine, "ok \xc3\xa9");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_question_parser), cmocka_unit_test(test_question_parser_real_logs),
        cmocka_unit_test(test_request_matcher), cmocka_unit_test(test_decision_vectors),
        cmocka_unit_test(test_mrcr_answer),     cmocka_unit_test(test_ptable),
        cmocka_unit_test(test_tokenizer),       cmocka_unit_test(test_float_to_go),
        cmocka_unit_test(test_spec_schedule),   cmocka_unit_test(test_fault_rules),
        cmocka_unit_test(test_generation_seam), cmocka_unit_test(test_parse_error_utf8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
