/* Unit tests of the llama-server dialect (issue #7): the bodies a real llama-server sends
 * (chat, completion, stream chunks with usage and timings in the last one, the
 * exceed_context_size_error and authentication_error bodies, /tokenize, /apply-template,
 * /v1/models, /props), the requests built for token counting, and the llamacpp: counters
 * read by the MTP code with the timings cross-check sums.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/dialect.h"
#include "backend/llamacpp.h"
#include "backend/response.h"
#include "evals/mtp.h"
#include "evals/prometheus.h"

/* Bodies as llama-server writes them (nlohmann::ordered_json: insertion order). */
static const char chat_body[] =
    "{\"choices\":[{\"finish_reason\":\"stop\",\"index\":0,\"message\":{\"role\":\"assistant\","
    "\"content\":\"Hello there\"}}],\"created\":1764500000,\"model\":\"qwen3-8b\","
    "\"system_fingerprint\":\"b6940-1a2b3c4d\",\"object\":\"chat.completion\",\"usage\":{"
    "\"completion_tokens\":3,\"prompt_tokens\":17,\"total_tokens\":20},\"id\":"
    "\"chatcmpl-abc\",\"timings\":{\"cache_n\":0,\"prompt_n\":17,\"prompt_ms\":12.25,"
    "\"prompt_per_token_ms\":0.726,\"prompt_per_second\":1377.0,\"predicted_n\":3,"
    "\"predicted_ms\":30.5,\"predicted_per_token_ms\":10.1667,\"predicted_per_second\":98.36,"
    "\"draft_n\":4,\"draft_n_accepted\":2}}";

static const char ctx_body[] =
    "{\"error\":{\"code\":400,\"message\":\"request (1202 tokens) exceeds the available context "
    "size (512 tokens), try increasing it\",\"type\":\"exceed_context_size_error\","
    "\"n_prompt_tokens\":1202,\"n_ctx\":512}}";

static const char auth_body[] =
    "{\"error\":{\"message\":\"Invalid API Key\",\"type\":\"authentication_error\",\"code\":401}}";

static void test_chat_and_timings(void **state)
{
    (void)state;
    struct dsa_resp r;
    dsa_resp_init(&r);
    assert_int_equal(dsa_resp_parse_body(&r, DSA_API_CHAT, chat_body, strlen(chat_body)),
                     DSA_RESP_OK);
    assert_string_equal(r.content.data, "Hello there");
    assert_string_equal(r.finish_reason, "stop");
    assert_null(r.stop_reason);
    assert_int_equal(r.prompt_tokens, 17);
    assert_int_equal(r.completion_tokens, 3);
    json_t *t = dsa_llamacpp_timings(r.raw);
    char *s = json_dumps(t, JSON_COMPACT);
    /* the latency split and the draft counts, in the server's order; per-second figures and
       per-token averages are derived, so not kept */
    assert_string_equal(s, "{\"cache_n\":0,\"prompt_n\":17,\"prompt_ms\":12.25,\"predicted_n\":3,"
                           "\"predicted_ms\":30.5,\"draft_n\":4,\"draft_n_accepted\":2}");
    free(s);
    struct dsa_mtp_perreq acc;
    memset(&acc, 0, sizeof acc);
    dsa_mtp_perreq_add_timings(&acc, t);
    /* no draft fields: llama-server omits them when nothing was drafted; they count 0 */
    json_t *t2 = json_pack("{s:i,s:f}", "predicted_n", 1, "predicted_ms", 9.0);
    dsa_mtp_perreq_add_timings(&acc, t2);
    dsa_mtp_perreq_add_timings(&acc, NULL);
    assert_int_equal(acc.n_timings, 2);
    assert_true(acc.timings_draft_n == 4.0 && acc.timings_draft_accepted == 2.0);
    json_decref(t2);
    json_decref(t);
    dsa_resp_release(&r);
    /* no timings, or timings without a single number: NULL */
    json_t *v = json_pack("{s:{s:s}}", "timings", "prompt_n", "x");
    assert_null(dsa_llamacpp_timings(v));
    assert_null(dsa_llamacpp_timings(NULL));
    json_decref(v);
}

static void test_completion_body(void **state)
{
    (void)state;
    static const char body[] =
        "{\"choices\":[{\"text\":\" 18\\n\",\"index\":0,\"logprobs\":null,\"finish_reason\":"
        "\"length\"}],\"created\":1764500000,\"model\":\"m\",\"system_fingerprint\":\"b1\","
        "\"object\":\"text_completion\",\"usage\":{\"completion_tokens\":2,\"prompt_tokens\":"
        "700,\"total_tokens\":702},\"id\":\"chatcmpl-x\",\"timings\":{\"prompt_n\":700,"
        "\"prompt_ms\":175.0,\"predicted_n\":2,\"predicted_ms\":25.0}}";
    struct dsa_resp r;
    dsa_resp_init(&r);
    assert_int_equal(dsa_resp_parse_body(&r, DSA_API_COMPLETION, body, strlen(body)), DSA_RESP_OK);
    assert_string_equal(r.content.data, " 18\n");
    assert_string_equal(r.finish_reason, "length");
    assert_int_equal(r.prompt_tokens, 700);
    json_t *t = dsa_llamacpp_timings(r.raw);
    assert_int_equal(json_object_size(t), 4);
    assert_null(json_object_get(t, "draft_n"));
    json_decref(t);
    dsa_resp_release(&r);
}

/* The stream as llama-server sends it: a role delta with null content, content deltas, a
   finish chunk with an empty delta that carries usage and timings unasked, [DONE]. */
static void test_stream(void **state)
{
    (void)state;
    static const char *const chunks[] = {
        "{\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"role\":\"assistant\","
        "\"content\":null}}],\"created\":1,\"id\":\"chatcmpl-s\",\"model\":\"m\","
        "\"system_fingerprint\":\"b1\",\"object\":\"chat.completion.chunk\"}",
        "{\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"content\":\"Hel\"}}],"
        "\"created\":1,\"id\":\"chatcmpl-s\",\"model\":\"m\",\"system_fingerprint\":\"b1\","
        "\"object\":\"chat.completion.chunk\"}",
        "{\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"content\":\"lo\"}}],"
        "\"created\":1,\"id\":\"chatcmpl-s\",\"model\":\"m\",\"system_fingerprint\":\"b1\","
        "\"object\":\"chat.completion.chunk\"}",
        "{\"choices\":[{\"finish_reason\":\"stop\",\"index\":0,\"delta\":{}}],\"created\":1,"
        "\"id\":\"chatcmpl-s\",\"model\":\"m\",\"system_fingerprint\":\"b1\",\"object\":"
        "\"chat.completion.chunk\",\"usage\":{\"completion_tokens\":3,\"prompt_tokens\":9,"
        "\"total_tokens\":12},\"timings\":{\"prompt_n\":9,\"prompt_ms\":2.25,\"predicted_n\":3,"
        "\"predicted_ms\":37.5,\"draft_n\":3,\"draft_n_accepted\":1}}",
        "[DONE]",
    };
    struct dsa_resp r;
    dsa_resp_init(&r);
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(dsa_resp_parse_chunk(&r, DSA_API_CHAT, chunks[i], strlen(chunks[i])),
                         DSA_RESP_OK);
    assert_int_equal(dsa_resp_parse_chunk(&r, DSA_API_CHAT, chunks[4], 6), DSA_RESP_DONE);
    assert_true(r.done);
    assert_string_equal(r.content.data, "Hello");
    assert_string_equal(r.finish_reason, "stop");
    assert_int_equal(r.prompt_tokens, 9);
    assert_int_equal(r.completion_tokens, 3);
    json_t *t = dsa_llamacpp_timings(r.raw); /* raw is the chunk that carried usage */
    assert_non_null(t);
    assert_int_equal(json_integer_value(json_object_get(t, "draft_n")), 3);
    assert_true(json_real_value(json_object_get(t, "predicted_ms")) == 37.5);
    json_decref(t);
    dsa_resp_release(&r);
}

static void test_errors(void **state)
{
    (void)state;
    json_t *v = json_loads(ctx_body, 0, NULL);
    const char *msg;
    long code, pt, ml;
    assert_true(dsa_resp_error_of(v, &msg, &code));
    assert_int_equal(code, 400);
    assert_true(dsa_resp_context_error(msg, &pt, &ml));
    assert_int_equal(pt, 1202);
    assert_int_equal(ml, 512);
    json_decref(v);
    /* the whole body through the response parser: an error, with its message and code */
    struct dsa_resp r;
    dsa_resp_init(&r);
    assert_int_equal(dsa_resp_parse_body(&r, DSA_API_CHAT, ctx_body, strlen(ctx_body)),
                     DSA_RESP_ERROR);
    assert_int_equal(r.error_code, 400);
    dsa_resp_reset(&r);
    assert_int_equal(dsa_resp_parse_body(&r, DSA_API_CHAT, auth_body, strlen(auth_body)),
                     DSA_RESP_ERROR);
    assert_string_equal(r.error, "Invalid API Key");
    assert_int_equal(r.error_code, 401);
    assert_false(dsa_resp_context_error(r.error, &pt, &ml));
    dsa_resp_release(&r);
}

static void test_tokenize(void **state)
{
    (void)state;
    struct dsa_resp r;
    dsa_resp_init(&r);
    static const char body[] = "{\"tokens\":[1,15043,3186,29991]}";
    assert_int_equal(dsa_resp_parse_body(&r, DSA_API_TOKENIZE, body, strlen(body)), DSA_RESP_OK);
    assert_int_equal(r.prompt_tokens, 4);
    assert_int_equal(r.max_model_len, -1);
    dsa_resp_release(&r);

    const struct dsa_dialect *d = dsa_dialect_find("llamacpp");
    assert_non_null(d);
    assert_string_equal(d->tokenize_path, "/tokenize");
    assert_string_equal(d->template_path, "/apply-template");
    assert_string_equal(d->version_path, "/props");
    assert_true(d->no_stream_options);
    /* chat: the first step renders the template (no model: llama-server serves one) */
    json_t *in = json_pack("{s:[{s:s,s:s}],s:{s:b}}", "messages", "role", "user", "content",
                           "hi \"x\"", "chat_template_kwargs", "enable_thinking", 0);
    json_t *b = d->tokenize_body("m", in);
    char *s = json_dumps(b, JSON_COMPACT);
    assert_string_equal(s, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi \\\"x\\\"\"}],"
                           "\"chat_template_kwargs\":{\"enable_thinking\":false}}");
    free(s);
    json_decref(b);
    json_decref(in);
    /* the second step, and a completion prompt: the text with BOS and special tokens on */
    in = json_pack("{s:s}", "prompt", "Question: 1+1?\nAnswer:");
    b = d->tokenize_body("m", in);
    s = json_dumps(b, JSON_COMPACT);
    assert_string_equal(s, "{\"content\":\"Question: 1+1?\\nAnswer:\",\"add_special\":true,"
                           "\"parse_special\":true}");
    free(s);
    json_decref(b);
    json_decref(in);
    /* /apply-template's answer */
    json_t *t = json_loads("{\"prompt\":\"<|im_start|>user\\nhi<|im_end|>\\n\"}", 0, NULL);
    size_t len = 0;
    const char *p = dsa_llamacpp_template_prompt(t, &len);
    assert_non_null(p);
    assert_int_equal(len, 30);
    json_decref(t);
    t = json_loads("{\"error\":{\"code\":500,\"message\":\"x\",\"type\":\"server_error\"}}", 0,
                   NULL);
    assert_null(dsa_llamacpp_template_prompt(t, &len));
    json_decref(t);
}

static void test_models_and_props(void **state)
{
    (void)state;
    json_t *models = json_loads(
        "{\"models\":[{\"name\":\"m\"}],\"object\":\"list\",\"data\":[{\"id\":\"m\",\"object\":"
        "\"model\",\"created\":1,\"owned_by\":\"llamacpp\",\"meta\":{\"vocab_type\":2,"
        "\"n_vocab\":151936,\"n_ctx_train\":40960,\"n_ctx\":4096,\"n_embd\":4096}}]}",
        0, NULL);
    json_t *card = json_array_get(json_object_get(models, "data"), 0);
    assert_string_equal(
        dsa_dialect_detect(json_string_value(json_object_get(card, "owned_by")))->name, "llamacpp");
    assert_int_equal(dsa_llamacpp_card_context(card), 4096);
    /* older builds: meta without n_ctx; n_ctx_train is never taken for the slot's context */
    json_object_del(json_object_get(card, "meta"), "n_ctx");
    assert_int_equal(dsa_llamacpp_card_context(card), -1);
    assert_int_equal(dsa_llamacpp_card_context(NULL), -1);
    json_decref(models);

    json_t *props = json_loads("{\"default_generation_settings\":{\"id\":0,\"n_ctx\":2048},"
                               "\"total_slots\":2,\"build_info\":\"b6940-1a2b3c4d\"}",
                               0, NULL);
    char *ver = NULL;
    long ctx = 0;
    dsa_llamacpp_server_info(props, &ver, &ctx);
    assert_string_equal(ver, "b6940-1a2b3c4d");
    assert_int_equal(ctx, 2048);
    free(ver);
    json_decref(props);
    props = json_loads("{\"n_ctx\":1024}", 0, NULL);
    dsa_llamacpp_server_info(props, &ver, &ctx);
    assert_null(ver);
    assert_int_equal(ctx, 1024);
    json_decref(props);
    dsa_llamacpp_server_info(NULL, &ver, &ctx);
    assert_null(ver);
    assert_int_equal(ctx, -1);
}

/* llama-server's /metrics: the vLLM names under "llamacpp:", no labels on the totals, values
   through std::ostream (6 significant digits). */
static void test_metrics(void **state)
{
    (void)state;
    static const char text[] =
        "# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.\n"
        "# TYPE llamacpp:prompt_tokens_total counter\n"
        "llamacpp:prompt_tokens_total 1.23457e+06\n"
        "# HELP llamacpp:spec_decode_num_drafts_total Number of spec decoding drafts.\n"
        "# TYPE llamacpp:spec_decode_num_drafts_total counter\n"
        "llamacpp:spec_decode_num_drafts_total 292\n"
        "# TYPE llamacpp:spec_decode_num_draft_tokens_total counter\n"
        "llamacpp:spec_decode_num_draft_tokens_total 876\n"
        "# TYPE llamacpp:spec_decode_num_accepted_tokens_total counter\n"
        "llamacpp:spec_decode_num_accepted_tokens_total 584\n"
        "# TYPE llamacpp:spec_decode_num_accepted_tokens_per_pos_total counter\n"
        "llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position=\"0\"} 292\n"
        "llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position=\"1\"} 292\n"
        "llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position=\"2\"} 0\n"
        "llamacpp:spec_decode_num_drafts_created 5\n"
        "llamacpp:requests_processing 0\n";
    dsa_prom *p = NULL;
    char err[256];
    assert_int_equal(dsa_prom_parse(text, strlen(text), &p, err, sizeof err), 0);
    double sum;
    assert_int_equal(dsa_prom_sum(p, "llamacpp:prompt_tokens_total", &sum), 1);
    assert_true(sum == 1234570.0);
    struct dsa_mtp_counters before, after;
    memset(&before, 0, sizeof before);
    before.present = true;
    assert_int_equal(dsa_mtp_counters_from_prom(p, &after, err, sizeof err), 0);
    assert_true(after.present);
    assert_true(after.drafts == 292 && after.draft_tokens == 876 && after.accepted == 584);
    assert_int_equal(after.n_pos, 3);
    assert_true(after.pos[0] == 292 && after.pos[1] == 292 && after.pos[2] == 0);
    struct dsa_mtp_result r;
    assert_int_equal(dsa_mtp_delta(&before, &after, &r, err, sizeof err), 0);
    assert_true(r.measured);
    assert_true(r.al == 3.0);
    assert_true(r.pos_rate[1] == 1.0 && r.pos_rate[2] == 0.0);
    dsa_prom_free(&p);
    /* a prefix that merely resembles is not taken */
    static const char other[] = "llama:spec_decode_num_drafts_total 3\n"
                                "xllamacpp:spec_decode_num_drafts_total 3\n";
    assert_int_equal(dsa_prom_parse(other, strlen(other), &p, err, sizeof err), 0);
    assert_int_equal(dsa_mtp_counters_from_prom(p, &after, err, sizeof err), 0);
    assert_false(after.present);
    dsa_prom_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chat_and_timings), cmocka_unit_test(test_completion_body),
        cmocka_unit_test(test_stream),           cmocka_unit_test(test_errors),
        cmocka_unit_test(test_tokenize),         cmocka_unit_test(test_models_and_props),
        cmocka_unit_test(test_metrics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
