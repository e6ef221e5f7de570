/* Unit tests of the endpoint backend's parsers: server-sent events (split at every byte,
 * all line endings), response bodies and stream chunks of vLLM and SGLang, both error
 * shapes, over-context messages.
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
#include "backend/response.h"
#include "backend/sse.h"
#include "util/buf.h"

#include "../token_cut_ref.h"

struct events {
    struct dsa_buf log; /* "event|data\n" per event */
    int n;
};

static int collect(void *ud, const char *event, const char *data, size_t len)
{
    struct events *e = ud;
    dsa_buf_adds(&e->log, event);
    dsa_buf_addch(&e->log, '|');
    dsa_buf_add(&e->log, data, len);
    dsa_buf_addch(&e->log, '\n');
    e->n++;
    return 0;
}

/* Feeds `in` cut into pieces of `step` bytes (0: all at once) and returns the event log. */
static char *run_sse(const char *in, size_t step, int *n)
{
    struct events e = {DSA_BUF_INIT, 0};
    dsa_buf_init(&e.log);
    struct dsa_sse p;
    dsa_sse_init(&p, collect, &e);
    size_t len = strlen(in);
    if (!step)
        step = len ? len : 1;
    for (size_t i = 0; i < len; i += step)
        assert_int_equal(dsa_sse_feed(&p, in + i, i + step > len ? len - i : step), 0);
    dsa_sse_release(&p);
    *n = e.n;
    return dsa_buf_detach(&e.log, NULL);
}

static void test_sse_vllm_stream(void **state)
{
    (void)state;
    const char *in = "data: {\"a\":1}\n\n"
                     ": keep-alive comment\n\n"
                     "data: {\"b\":2}\r\n\r\n"
                     "event: error\r"
                     "data: x\r"
                     "data:y\r\r"
                     "id: 7\nretry: 100\n\n" /* no data: not dispatched */
                     "data: [DONE]\n\n"
                     "data: unterminated"; /* discarded at end of input */
    const char *want = "|{\"a\":1}\n|{\"b\":2}\nerror|x\ny\n|[DONE]\n";
    /* every split position gives the same events, including "\r" | "\n" splits */
    for (size_t step = 0; step <= 17; step++) {
        int n;
        char *got = run_sse(in, step, &n);
        assert_string_equal(got, want);
        assert_int_equal(n, 4);
        free(got);
    }
}

static void test_sse_field_rules(void **state)
{
    (void)state;
    int n;
    /* only one space after the colon is removed; a line without a colon is a field name */
    char *got = run_sse("data:  two\ndata\n\nevent:e\ndata:\n\n", 0, &n);
    assert_string_equal(got, "| two\n\ne|\n");
    assert_int_equal(n, 2);
    free(got);
}

static int stop_at_first(void *ud, const char *event, const char *data, size_t len)
{
    (void)event;
    (void)data;
    (void)len;
    (*(int *)ud)++;
    return 7;
}

static void test_sse_stop(void **state)
{
    (void)state;
    int count = 0;
    struct dsa_sse p;
    dsa_sse_init(&p, stop_at_first, &count);
    assert_int_equal(dsa_sse_feed(&p, "data: 1\n\ndata: 2\n\n", 18), 7);
    assert_int_equal(count, 1);
    dsa_sse_release(&p);
}

static void test_chat_body_vllm(void **state)
{
    (void)state;
    const char *body =
        "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"model\":\"m\",\"choices\":[{"
        "\"index\":0,"
        "\"message\":{\"role\":\"assistant\",\"content\":\"abc\\u00e9\",\"reasoning\":\"think\"},"
        "\"finish_reason\":\"stop\",\"stop_reason\":null}],"
        "\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":3,\"total_tokens\":15}}";
    struct dsa_resp r;
    dsa_resp_init(&r);
    assert_int_equal(dsa_resp_parse_body(&r, DSA_API_CHAT, body, strlen(body)), DSA_RESP_OK);
    assert_true(r.has_content);
    assert_string_equal(r.content.data, "abc\xc3\xa9");
    assert_string_equal(r.reasoning.data, "think");
    assert_string_equal(r.finish_reason, "stop");
    assert_null(r.stop_reason);
    assert_int_equal(r.prompt_tokens, 12);
    assert_int_equal(r.completion_tokens, 3);
    assert_non_null(r.raw);
    dsa_resp_release(&r);
}

static void test_chat_body_null_content(void **state)
{
    (void)state;
    /* a thinking model that spent every token thinking: content null, reasoning_content set */
    const char *body = "{\"choices\":[{\"message\":{\"content\":null,\"reasoning_content\":\"r\"},"
                       "\"finish_reason\":\"length\",\"matched_stop\":null}]}";
    struct dsa_resp r;
    dsa_resp_init(&r);
    assert_int_equal(dsa_resp_parse_body(&r, DSA_API_CHAT, body, strlen(body)), DSA_RESP_OK);
    assert_false(r.has_content);
    assert_string_equal(r.reasoning.data, "r");
    assert_string_equal(r.finish_reason, "length");
    assert_int_equal(r.prompt_tokens, -1);
    dsa_resp_release(&r);
}

static void test_usage_real_counts(void **state)
{
    (void)state;
    /* counts sent as reals: 12.0 is 12; 1e92 (found by libFuzzer: converting it to long was
       undefined behaviour), fractions and negatives are no count (-1), the body still parses */
    const char *body =
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"usage\":{\"prompt_tokens\":12.0,"
        "\"completion_tokens\":1e92}}";
    struct dsa_resp r;
    dsa_resp_init(&r);
    assert_int_equal(dsa_resp_parse_body(&r, DSA_API_CHAT, body, strlen(body)), DSA_RESP_OK);
    assert_int_equal(r.prompt_tokens, 12);
    assert_int_equal(r.completion_tokens, -1);
    dsa_resp_reset(&r);
    const char *b2 =
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"usage\":{\"prompt_tokens\":2.5,"
        "\"completion_tokens\":-3.0}}";
    assert_int_equal(dsa_resp_parse_body(&r, DSA_API_CHAT, b2, strlen(b2)), DSA_RESP_OK);
    assert_int_equal(r.prompt_tokens, -1);
    assert_int_equal(r.completion_tokens, -1);
    dsa_resp_release(&r);
}

static void test_completion_and_generate(void **state)
{
    (void)state;
    const char *c = "{\"choices\":[{\"text\":\" 42\",\"finish_reason\":\"stop\",\"stop_reason\":"
                    "\"Question\",\"token_ids\":[1,2,3]}],\"usage\":{\"prompt_tokens\":5,"
                    "\"completion_tokens\":3}}";
    struct dsa_resp r;
    dsa_resp_init(&r);
    assert_int_equal(dsa_resp_parse_body(&r, DSA_API_COMPLETION, c, strlen(c)), DSA_RESP_OK);
    assert_string_equal(r.content.data, " 42");
    assert_string_equal(r.stop_reason, "\"Question\"");
    assert_int_equal(json_array_size(r.token_ids), 3);
    dsa_resp_reset(&r);
    const char *g = "{\"text\":\"hi\",\"meta_info\":{\"prompt_tokens\":9,\"completion_tokens\":2,"
                    "\"finish_reason\":{\"type\":\"stop\",\"matched\":151643},"
                    "\"spec_verify_ct\":1}}";
    assert_int_equal(dsa_resp_parse_body(&r, DSA_API_GENERATE, g, strlen(g)), DSA_RESP_OK);
    assert_string_equal(r.content.data, "hi");
    assert_string_equal(r.finish_reason, "stop");
    assert_string_equal(r.stop_reason, "151643");
    assert_int_equal(r.prompt_tokens, 9);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(r.raw, "meta_info"), "spec_verify_ct")),
        1);
    dsa_resp_reset(&r);
    const char *t = "{\"count\":4711,\"max_model_len\":8192,\"tokens\":[1]}";
    assert_int_equal(dsa_resp_parse_body(&r, DSA_API_TOKENIZE, t, strlen(t)), DSA_RESP_OK);
    assert_int_equal(r.prompt_tokens, 4711);
    assert_int_equal(r.max_model_len, 8192);
    dsa_resp_reset(&r);
    /* the token list is skipped, not parsed, when "count" is there; else it is the count */
    const char *t2 = "{\"tokens\": [5, 6,\n 7],\"count\":3,\"token_strs\":null}";
    assert_int_equal(dsa_resp_parse_body(&r, DSA_API_TOKENIZE, t2, strlen(t2)), DSA_RESP_OK);
    assert_int_equal(r.prompt_tokens, 3);
    dsa_resp_reset(&r);
    const char *t3 = "{\"tokens\":[5,6,7,8]}";
    assert_int_equal(dsa_resp_parse_body(&r, DSA_API_TOKENIZE, t3, strlen(t3)), DSA_RESP_OK);
    assert_int_equal(r.prompt_tokens, 4);
    dsa_resp_reset(&r);
    const char *t4 = "{\"tokens\":[5,\"x]\"],\"count\":2}"; /* not integers: parsed whole */
    assert_int_equal(dsa_resp_parse_body(&r, DSA_API_TOKENIZE, t4, strlen(t4)), DSA_RESP_OK);
    assert_int_equal(r.prompt_tokens, 2);
    dsa_resp_reset(&r);
    /* the list is checked 8 bytes at a time: a byte that no integer list holds, at every
       offset, sends the body to the parser whole (which refuses it); none, and it is skipped */
    static const char bad[] = {'x', '+', ':', '.', '\x01', '\x80'};
    char body[160];
    for (size_t k = 0; k <= sizeof bad; k++)
        for (size_t at = 0; at < 64; at++) {
            int n = snprintf(body, sizeof body,
                             "{\"count\":9,\"tokens\":[1234567,-890123,4567890, 12345,\n"
                             "6789012,3456789,0,12,345678,9012345,6789]}");
            size_t list = strlen("{\"count\":9,\"tokens\":[");
            if (k < sizeof bad)
                body[list + at] = bad[k];
            int rc = dsa_resp_parse_body(&r, DSA_API_TOKENIZE, body, (size_t)n);
            if (k == sizeof bad || bad[k] == '.') {
                /* '.' makes a real (valid JSON, parsed whole) or an invalid token */
                if (k == sizeof bad)
                    assert_int_equal(rc, DSA_RESP_OK);
            } else if (rc == DSA_RESP_OK) {
                fail_msg("byte 0x%02x at %zu of the list was skipped", (unsigned char)bad[k], at);
            }
            if (rc == DSA_RESP_OK)
                assert_int_equal(r.prompt_tokens, 9);
            dsa_resp_reset(&r);
        }
    dsa_resp_release(&r);
}

static void test_error_shapes(void **state)
{
    (void)state;
    struct dsa_resp r;
    dsa_resp_init(&r);
    const char *nested = "{\"error\":{\"message\":\"bad\",\"type\":\"BadRequestError\",\"param\":"
                         "null,\"code\":400}}";
    assert_int_equal(dsa_resp_parse_body(&r, DSA_API_CHAT, nested, strlen(nested)), DSA_RESP_ERROR);
    assert_string_equal(r.error, "bad");
    assert_int_equal(r.error_code, 400);
    dsa_resp_reset(&r);
    const char *flat = "{\"object\":\"error\",\"message\":\"flat\",\"type\":\"x\",\"param\":null,"
                       "\"code\":503}";
    assert_int_equal(dsa_resp_parse_body(&r, DSA_API_CHAT, flat, strlen(flat)), DSA_RESP_ERROR);
    assert_string_equal(r.error, "flat");
    assert_int_equal(r.error_code, 503);
    dsa_resp_reset(&r);
    assert_int_equal(dsa_resp_parse_body(&r, DSA_API_CHAT, "[1]", 3), DSA_RESP_MALFORMED);
    dsa_resp_reset(&r);
    assert_int_equal(dsa_resp_parse_body(&r, DSA_API_CHAT, "{\"choices\":[]}", 14),
                     DSA_RESP_MALFORMED);
    dsa_resp_reset(&r);
    assert_int_equal(dsa_resp_parse_body(&r, DSA_API_CHAT, "{\"cho", 5), DSA_RESP_MALFORMED);
    assert_non_null(strstr(r.error, "not JSON"));
    dsa_resp_release(&r);
}

static void test_stream_chunks(void **state)
{
    (void)state;
    const char *chunks[] = {
        "{\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":"
        "\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}",
        "{\"choices\":[{\"delta\":{\"reasoning\":\"hm\"}}]}",
        "{\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}",
        "{\"choices\":[{\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}",
        "{\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":2,"
        "\"total_tokens\":9}}",
        "[DONE]"};
    struct dsa_resp r;
    dsa_resp_init(&r);
    assert_int_equal(dsa_resp_parse_chunk(&r, DSA_API_CHAT, chunks[0], strlen(chunks[0])), 0);
    assert_false(r.got_token); /* the empty role chunk is not the first token */
    for (int i = 1; i < 5; i++)
        assert_int_equal(dsa_resp_parse_chunk(&r, DSA_API_CHAT, chunks[i], strlen(chunks[i])),
                         DSA_RESP_OK);
    assert_true(r.got_token);
    assert_int_equal(dsa_resp_parse_chunk(&r, DSA_API_CHAT, chunks[5], 6), DSA_RESP_DONE);
    assert_true(r.done);
    assert_string_equal(r.content.data, "Hello");
    assert_string_equal(r.reasoning.data, "hm");
    assert_string_equal(r.finish_reason, "stop");
    assert_int_equal(r.prompt_tokens, 7);
    assert_int_equal(r.completion_tokens, 2);
    dsa_resp_reset(&r);
    const char *err = "{\"error\":{\"message\":\"engine died\",\"code\":500}}";
    assert_int_equal(dsa_resp_parse_chunk(&r, DSA_API_CHAT, err, strlen(err)), DSA_RESP_ERROR);
    assert_int_equal(r.error_code, 500);
    dsa_resp_release(&r);
}

static void test_context_errors(void **state)
{
    (void)state;
    long pt, ml;
    assert_true(dsa_resp_context_error(
        "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens "
        "(4904 in the messages, 4096 in the completion). Please reduce the length of the "
        "messages or completion.",
        &pt, &ml));
    assert_int_equal(pt, 4904);
    assert_int_equal(ml, 8192);
    assert_true(dsa_resp_context_error(
        "'max_tokens' or 'max_completion_tokens' is too large: 4096. This model's maximum "
        "context length is 8192 tokens and your request has 5000 input tokens (4096 > 8192 - "
        "5000).",
        &pt, &ml));
    assert_int_equal(pt, 5000);
    assert_int_equal(ml, 8192);
    assert_true(dsa_resp_context_error(
        "Requested token count exceeds the model's maximum context length of 131072 tokens. You "
        "requested a total of 140000 tokens: 135904 tokens from the input messages and 4096 "
        "tokens for the completion.",
        &pt, &ml));
    assert_int_equal(pt, 135904);
    assert_int_equal(ml, 131072);
    assert_true(dsa_resp_context_error(
        "The input (270000 tokens) is longer than the model's context length (262144 tokens).", &pt,
        &ml));
    assert_int_equal(pt, 270000);
    assert_int_equal(ml, 262144);
    assert_true(dsa_resp_context_error("This model's maximum context length is 8192 tokens. "
                                       "However, your request has 9100 input tokens. Please "
                                       "reduce the length of the input messages.",
                                       &pt, &ml));
    assert_int_equal(pt, 9100);
    assert_int_equal(ml, 8192);
    assert_false(dsa_resp_context_error("temperature must be non-negative", &pt, &ml));
    assert_int_equal(pt, -1);
}

/* dsa_resp_list_end against ref_list_end on lists of every length up to 70 (the 16-byte
   steps, their tails and the boundaries between), with one odd byte (']', a quote, a NUL,
   '.', '/', ':', 0x80, 0xff, a digit's neighbours in ASCII) at every place or none */
static void test_token_list_end(void **state)
{
    (void)state;
    static const char odd[] = {']', '"', '\0', '.', '/', ':', '[', (char)0x80, (char)0xff, 'e'};
    char buf[80];
    uint64_t rng = 7;
    long found = 0, refused = 0;
    for (size_t len = 0; len <= 70; len++)
        for (size_t at = 0; at <= len; at++)
            for (size_t k = 0; k <= sizeof odd; k++) {
                for (size_t i = 0; i < len; i++) {
                    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
                    buf[i] = "0123456789,,,-  \n\t\r"[(rng >> 33) % 19];
                }
                if (k < sizeof odd && at < len)
                    buf[at] = odd[k];
                const char *got = dsa_resp_list_end(buf, buf + len);
                assert_ptr_equal(got, ref_list_end(buf, buf + len));
                found += got != NULL;
                refused += got == NULL;
            }
    assert_true(found > 1000 && refused > 1000);
    /* a /tokenize answer read through it: the count, the list dropped unparsed */
    const char *body = "{\"count\":3,\"max_model_len\":163840,\"tokens\":[129279,-1,  7],"
                       "\"token_strs\":null}";
    struct dsa_resp r;
    dsa_resp_init(&r);
    assert_int_equal(dsa_resp_parse_body(&r, DSA_API_TOKENIZE, body, strlen(body)), DSA_RESP_OK);
    assert_int_equal(r.prompt_tokens, 3);
    assert_int_equal(r.max_model_len, 163840);
    dsa_resp_release(&r);
}

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

/* A /tokenize-like answer: members in some order, "tokens" a plain list, a list with an odd
   byte, nested, a string "tokens", or absent; blanks and ':' where JSON has them; sometimes
   cut short. */
static void random_tokenize_body(uint64_t *rng, struct dsa_buf *b)
{
    static const char *const blanks[] = {"", " ", "\n", "\t ", "\r\n"};
    static const char *const lists[] = {"[1,2,3]", "[]",        "[ 129279 ,-1,\n7 ]",
                                        "[1.5,2]", "[1,\"a\"]", "[[1],[2]]",
                                        "[1,2",    "[1,]",      "[01]",
                                        "[1e3]",   "[-]"};
    dsa_buf_reset(b);
    dsa_buf_addch(b, '{');
    int order = (int)(lcg(rng) % 3), nmem = 0;
    for (int i = 0; i < 3; i++) {
        int m = (i + order) % 3;
        if (lcg(rng) % 5 == 0)
            continue;
        if (nmem++)
            dsa_buf_adds(b, ",");
        dsa_buf_adds(b, blanks[lcg(rng) % 5]);
        if (m == 0) {
            dsa_buf_addf(b, "\"count\":%d", (int)(lcg(rng) % 300));
        } else if (m == 1) {
            dsa_buf_adds(b, lcg(rng) % 4 ? "\"tokens\"" : "\"x\":\"tokens\",\"tokens\"");
            dsa_buf_adds(b, blanks[lcg(rng) % 5]);
            dsa_buf_adds(b, ":");
            dsa_buf_adds(b, blanks[lcg(rng) % 5]);
            if (lcg(rng) % 3) { /* a long plain list, over many 16-byte steps */
                dsa_buf_addch(b, '[');
                for (int k = (int)(lcg(rng) % 200); k >= 0; k--)
                    dsa_buf_addf(b, "%d%s", (int)(lcg(rng) % 200000), k ? "," : "");
                dsa_buf_addch(b, ']');
            } else {
                dsa_buf_adds(b, lists[lcg(rng) % (sizeof lists / sizeof lists[0])]);
            }
        } else {
            dsa_buf_addf(b, "\"max_model_len\":%d,\"token_strs\":null", (int)(lcg(rng) % 9000));
        }
    }
    dsa_buf_adds(b, blanks[lcg(rng) % 5]);
    dsa_buf_addch(b, '}');
    if (lcg(rng) % 8 == 0)
        b->data[b->len = lcg(rng) % b->len] = '\0'; /* cut */
}

/* The token list found while the body arrives in pieces is where the old two-pass cut found it
   in the whole body, and the answer reads the same: status, count, context and message, on
   random answers cut at random places into pieces */
static void test_token_list_streamed(void **state)
{
    (void)state;
    uint64_t rng = 11;
    struct dsa_buf body = DSA_BUF_INIT, sofar = DSA_BUF_INIT;
    int found = 0, none = 0, ok = 0, bad = 0;
    for (int it = 0; it < 3000; it++) {
        random_tokenize_body(&rng, &body);
        struct dsa_resp_list l;
        dsa_resp_list_init(&l);
        dsa_buf_reset(&sofar);
        for (size_t at = 0; at < body.len;) {
            size_t piece = 1 + lcg(&rng) % (lcg(&rng) % 2 ? 3 : 64);
            if (piece > body.len - at)
                piece = body.len - at;
            dsa_buf_add(&sofar, body.data + at, piece);
            dsa_resp_list_feed(&l, sofar.data, sofar.len);
            at += piece;
        }
        size_t open = 0, close = 0;
        bool want = ref_token_cut(body.data, body.len, &open, &close);
        assert_int_equal(l.state == DSA_RESP_LIST_FOUND, want);
        if (want) {
            assert_int_equal(l.open, open);
            assert_int_equal(l.close, close);
        }
        found += l.state == DSA_RESP_LIST_FOUND;
        none += l.state == DSA_RESP_LIST_NONE;
        struct dsa_resp whole, streamed;
        dsa_resp_init(&whole);
        dsa_resp_init(&streamed);
        int a = dsa_resp_parse_body(&whole, DSA_API_TOKENIZE, body.data, body.len);
        int c = dsa_resp_parse_body_list(&streamed, DSA_API_TOKENIZE, sofar.data, sofar.len, &l);
        assert_int_equal(a, c);
        assert_int_equal(whole.prompt_tokens, streamed.prompt_tokens);
        assert_int_equal(whole.max_model_len, streamed.max_model_len);
        assert_string_equal(whole.error ? whole.error : "", streamed.error ? streamed.error : "");
        ok += a == DSA_RESP_OK;
        bad += a != DSA_RESP_OK;
        dsa_resp_release(&whole);
        dsa_resp_release(&streamed);
    }
    /* every path taken: lists skipped and not, answers read and refused */
    assert_true(found > 300 && none > 100 && ok > 300 && bad > 100);
    dsa_buf_release(&body);
    dsa_buf_release(&sofar);
}

static void test_dialect_table(void **state)
{
    (void)state;
    assert_string_equal(dsa_dialect_detect("vllm")->name, "vllm");
    assert_string_equal(dsa_dialect_detect("sglang")->name, "sglang");
    assert_string_equal(dsa_dialect_detect("someone")->name, "openai");
    assert_string_equal(dsa_dialect_detect(NULL)->name, "openai");
    assert_string_equal(dsa_dialect_detect("llamacpp")->name, "llamacpp"); /* issue #7 */
    const struct dsa_dialect *v = dsa_dialect_find("vllm");
    json_t *in = json_pack("{s:[{s:s,s:s}]}", "messages", "role", "user", "content", "hi");
    json_t *b = v->tokenize_body("m", in);
    char *s = json_dumps(b, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(s, "{\"add_generation_prompt\":true,\"messages\":[{\"content\":\"hi\","
                           "\"role\":\"user\"}],\"model\":\"m\"}");
    free(s);
    json_decref(b);
    json_decref(in);
    assert_null(dsa_dialect_find("sglang")->tokenize_path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sse_vllm_stream),
        cmocka_unit_test(test_sse_field_rules),
        cmocka_unit_test(test_sse_stop),
        cmocka_unit_test(test_chat_body_vllm),
        cmocka_unit_test(test_chat_body_null_content),
        cmocka_unit_test(test_usage_real_counts),
        cmocka_unit_test(test_completion_and_generate),
        cmocka_unit_test(test_error_shapes),
        cmocka_unit_test(test_stream_chunks),
        cmocka_unit_test(test_context_errors),
        cmocka_unit_test(test_dialect_table),
        cmocka_unit_test(test_token_list_end),
        cmocka_unit_test(test_token_list_streamed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
