/* dsa_json_dump_compact against its reference, jansson's json_dumps(JSON_COMPACT): equal bytes
 * for every escape, number, nesting and key order, and failure exactly where jansson fails.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/buf.h"
#include "util/hash.h"
#include "util/json_dump.h"
#include "util/json_simd.h"
#include "util/utf8.h"

/* Asserts both serializers agree on v: the same bytes, or both refuse. */
static void same_as_jansson(const json_t *v)
{
    char *want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    struct dsa_buf got = DSA_BUF_INIT;
    int rc = dsa_json_dump_compact(v, &got);
    if (!want) {
        assert_int_equal(rc, -1);
    } else {
        assert_int_equal(rc, 0);
        assert_int_equal(got.len, strlen(want));
        assert_memory_equal(got.data, want, got.len);
    }
    free(want);
    dsa_buf_release(&got);
}

static void test_escapes(void **state)
{
    (void)state;
    char all[160];
    size_t n = 0;
    for (int c = 0; c < 128; c++)
        all[n++] = (char)c; /* NUL included: json_stringn keeps it */
    const char *mb = "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80/\xe2\x80\xa8";
    memcpy(all + n, mb, strlen(mb));
    n += strlen(mb);
    json_t *s = json_stringn(all, n);
    assert_non_null(s);
    same_as_jansson(s);
    json_t *o = json_object();
    json_object_set_new(o, "k\"ey\n\xc3\xa9", json_incref(s));
    json_object_setn_new(o, "nul\0key", 7, json_string(""));
    same_as_jansson(o);
    json_decref(o);
    json_decref(s);
}

/* The writer skips 8 plain bytes at a time: each byte that needs an escape (and a plain
   neighbour of each class: 0x1f/0x20, '!'/'#' around '"', '['/']' around '\\', a byte >= 0x80)
   at every offset in a word and across its edge, in strings of every length around 8 and 16. */
static void test_escapes_aligned(void **state)
{
    (void)state;
    static const char special[] = {0x01, 0x1f, ' ', '"', '!', '#', '\\', '[', ']', '\n', 0x7f};
    for (size_t k = 0; k < sizeof special; k++)
        for (size_t len = 1; len <= 18; len++)
            for (size_t at = 0; at < len; at++) {
                char text[20];
                memset(text, 'a', len);
                text[at] = special[k];
                json_t *s = json_stringn(text, len);
                same_as_jansson(s);
                json_decref(s);
                /* with a two-byte sequence in the same word */
                if (len >= 2 && at + 2 < len) {
                    memcpy(text + at + 1, "\xc3\xa9", 2);
                    s = json_stringn(text, len);
                    same_as_jansson(s);
                    json_decref(s);
                }
            }
}

/* A value recorded in one dump and copied into the next: the second body's bytes are those of
   a plain dump, and the recorded range holds exactly the value's own dump. */
static void test_splice(void **state)
{
    (void)state;
    json_t *msgs = json_pack("[{s:s,s:s},{s:s,s:s}]", "role", "user", "content", "a\"b\n\xc3\xa9",
                             "role", "assistant", "content", "c\\d");
    json_t *count = json_pack("{s:s,s:O}", "model", "m", "messages", msgs);
    json_t *chat =
        json_pack("{s:O,s:i,s:f}", "messages", msgs, "max_tokens", 256, "temperature", 0.0);
    struct dsa_buf first = DSA_BUF_INIT, second = DSA_BUF_INIT, plain = DSA_BUF_INIT;
    struct dsa_json_splice sp = {.v = msgs};
    assert_int_equal(dsa_json_dump_compact_splice(count, &first, &sp), 0);
    assert_true(sp.seen);
    char *want = json_dumps(msgs, JSON_COMPACT);
    assert_int_equal(sp.len, strlen(want));
    assert_memory_equal(first.data + sp.off, want, sp.len);
    same_as_jansson(count);
    struct dsa_json_splice copy = {.v = msgs, .bytes = first.data + sp.off, .len = sp.len};
    assert_int_equal(dsa_json_dump_compact_splice(chat, &second, &copy), 0);
    assert_true(copy.seen);
    assert_int_equal(dsa_json_dump_compact(chat, &plain), 0);
    assert_int_equal(second.len, plain.len);
    assert_memory_equal(second.data, plain.data, plain.len);
    /* a hole: the first place left empty at off, a second place of the same value copied; the
       bytes put back at off give the whole document */
    json_t *twice = json_pack("{s:O,s:i,s:O}", "messages", msgs, "n", 1, "again", msgs);
    struct dsa_buf holed = DSA_BUF_INIT, full = DSA_BUF_INIT, whole = DSA_BUF_INIT;
    struct dsa_json_splice hole = {
        .v = msgs, .bytes = first.data + sp.off, .len = sp.len, .hole = true};
    assert_int_equal(dsa_json_dump_compact_splice(twice, &holed, &hole), 0);
    assert_true(hole.seen);
    assert_int_equal(hole.off, strlen("{\"messages\":"));
    assert_int_equal(hole.len, sp.len);
    assert_int_equal(dsa_json_dump_compact(twice, &full), 0);
    dsa_buf_add(&whole, holed.data, hole.off);
    dsa_buf_add(&whole, hole.bytes, hole.len);
    dsa_buf_add(&whole, holed.data + hole.off, holed.len - hole.off);
    assert_int_equal(whole.len, full.len);
    assert_memory_equal(whole.data, full.data, full.len);
    dsa_buf_release(&holed);
    dsa_buf_release(&full);
    dsa_buf_release(&whole);
    json_decref(twice);
    free(want);
    dsa_buf_release(&first);
    dsa_buf_release(&second);
    dsa_buf_release(&plain);
    json_decref(count);
    json_decref(chat);
    json_decref(msgs);
}

static void test_scalars_and_nesting(void **state)
{
    (void)state;
    json_t *v =
        json_pack("{s:[{s:s,s:s}], s:i, s:f, s:f, s:f, s:f, s:b, s:b, s:n, s:[], s:{}, "
                  "s:I, s:I}",
                  "messages", "role", "user", "content", "hi", "max_tokens", 4096, "temperature",
                  0.7, "zero", 0.0, "neg", -0.0, "big", 1e300, "t", 1, "f", 0, "n", "ea", "eo",
                  "imin", (json_int_t)INT64_MIN, "imax", (json_int_t)INT64_MAX);
    assert_non_null(v);
    same_as_jansson(v);
    /* insertion order, not key order, as jansson writes it */
    json_object_set_new(v, "a_last", json_real(1.0 / 3.0));
    json_object_del(v, "zero");
    json_object_set_new(v, "zero", json_real(5e-324));
    same_as_jansson(v);
    json_decref(v);
}

static void test_refusals(void **state)
{
    (void)state;
    const char *bad[] = {"\xff", "ok\xc3", "\xed\xa0\x80", "\xc0\xaf", "\xf4\x90\x80\x80"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *s = json_stringn_nocheck(bad[i], strlen(bad[i]));
        same_as_jansson(s);
        json_t *a = json_pack("[s,o]", "fine", s);
        same_as_jansson(a);
        json_decref(a);
    }
}

/* Random strings over the whole code space that matters: controls, quotes, backslashes,
   ASCII, two- to four-byte sequences. */
static void test_random(void **state)
{
    (void)state;
    uint64_t r = 42;
    static const uint32_t pick[] = {0,    1,    0x1f,  '"',   '\\',   '/',    'a',     ' ',
                                    0x7f, 0x80, 0x7ff, 0x800, 0xfffd, 0xffff, 0x10000, 0x10ffff};
    for (int iter = 0; iter < 2000; iter++) {
        struct dsa_buf b = DSA_BUF_INIT;
        r = dsa_splitmix64(r);
        int len = (int)(r % 64);
        for (int k = 0; k < len; k++) {
            r = dsa_splitmix64(r);
            uint32_t cp = r & 1 ? pick[(r >> 1) % 16] : (uint32_t)((r >> 8) % 0x250);
            if (cp >= 0xd800 && cp < 0xe000)
                cp = 'x';
            char enc[4];
            int m = dsa_utf8_encode(cp, enc);
            dsa_buf_add(&b, enc, (size_t)m);
        }
        json_t *v = json_pack("{s:[{s:s,s:s%}]}", "messages", "role", "user", "content",
                              b.data ? b.data : "", b.len);
        assert_non_null(v);
        same_as_jansson(v);
        json_decref(v);
        dsa_buf_release(&b);
    }
}

/* A row {"prompt": TEXT, "n": 1} read by dsa_jsimd_load_dumped(): the prompt's compact JSON
   written from the tape must be jansson's own dump of json_loadb(TEXT) byte for byte; texts
   it declines leave the prompt a string, equal to TEXT. */
static void check_dumped(const char *text, bool want_dumped)
{
    static const char *const required[] = {"role", "content", NULL};
    json_t *row = json_pack("{s:s,s:i}", "prompt", text, "n", 1);
    char *line = json_dumps(row, JSON_COMPACT);
    struct dsa_buf got = DSA_BUF_INIT;
    bool dumped = true;
    json_t *obj =
        dsa_jsimd_load_dumped(line, strlen(line), false, "prompt", required, &got, &dumped);
    assert_non_null(obj);
    assert_int_equal(json_integer_value(json_object_get(obj, "n")), 1);
    assert_int_equal(dumped, want_dumped);
    if (want_dumped) {
        json_t *tree = json_loads(text, 0, NULL);
        assert_non_null(tree);
        char *want = json_dumps(tree, JSON_COMPACT);
        assert_int_equal(got.len, strlen(want));
        assert_memory_equal(got.data, want, got.len);
        assert_string_equal(json_string_value(json_object_get(obj, "prompt")), "");
        free(want);
        json_decref(tree);
    } else {
        assert_string_equal(json_string_value(json_object_get(obj, "prompt")), text);
    }
    json_decref(obj);
    free(line);
    json_decref(row);
    dsa_buf_release(&got);
}

static void test_dumped_from_tape(void **state)
{
    (void)state;
    check_dumped(
        "[{\"role\": \"user\", \"content\": \"caf\\u00e9 \\ud83d\\ude00 \\\"q\\\" \\\\ / \\t\\n"
        "\\u001f\\u007f\"}, {\"role\": \"assistant\", \"content\": \"\"}]",
        true);
    check_dumped(" [ {\"content\" : \"keys in text order\", \"role\": \"user\"} ] ", true);
    check_dumped("[{\"role\":\"user\",\"content\":\"x\",\"n\":-9223372036854775808,\"t\":true,"
                 "\"f\":false,\"z\":null,\"a\":[1,[],{},\"s\"]}]",
                 true);
    check_dumped("[{\"role\":\"user\",\"content\":\"\xc3\xa9\xe2\x80\xa8 raw UTF-8\"}]", true);
    /* compact already (copied as it is) and the same texts with one blank (minified): the
       length of the tokens with the escapes' second bytes must tell them apart */
    check_dumped(
        "[{\"role\":\"user\",\"content\":\"a\\\"b\\\\c\\nd\\t\",\"x\":[true,false,null,{},[]],"
        "\"y\":{\"k\\\\\":\"\"}},{\"role\":\"\",\"content\":\"\"}]",
        true);
    check_dumped(
        "[{\"role\":\"user\",\"content\":\"a\\\"b\\\\c\\nd\\t\",\"x\":[true,false,null,{},[]],"
        "\"y\":{\"k\\\\\":\"\"}},{\"role\":\"\",\"content\":\"\"}]\n",
        true);
    check_dumped("[{\"role\":\"user\",\"content\":\"x\"}, {\"role\":\"user\",\"content\":\"y\"}]",
                 true);
    check_dumped("[{\"role\":\"user\",\"content\":\" \"},{\"role\":\"user\",\"content\":\"y\"}]",
                 true);
    /* escapes jansson writes otherwise ("/", the character itself) and an integer it re-formats */
    check_dumped("[{\"role\":\"user\",\"content\":\"a\\/b \\\\u0041 \\\\\\/\"}]", true);
    check_dumped("[{\"role\":\"user\",\"content\":\"x\",\"n\":-0}]", true);
    /* declined: a real (jansson formats doubles), another shape, a duplicate key, a NUL, an
       integer beyond long long, a text that is not JSON */
    check_dumped("[{\"role\":\"user\",\"content\":\"x\",\"w\":0.5}]", false);
    check_dumped("[{\"role\":\"user\",\"content\":\"x\",\"e\":1e3}]", false);
    check_dumped("[]", false);
    check_dumped("{\"role\":\"user\",\"content\":\"x\"}", false);
    check_dumped("[{\"role\":\"user\"}]", false);
    check_dumped("[{\"role\":\"user\",\"content\":[\"parts\"]}]", false);
    check_dumped("[{\"role\":\"user\",\"content\":\"x\",\"role\":\"user\"}]", false);
    check_dumped("[{\"role\":\"user\",\"content\":\"a\\u0000b\"}]", false);
    check_dumped("[{\"role\":\"user\",\"content\":\"x\",\"n\":18446744073709551615}]", false);
    check_dumped("[{\"role\":\"user\",\"content\":\"x\"},]", false);
}

/* Random message lists over the code space (test_random's), their prompt text written with
   and without \u escapes for non-ASCII (Python's json.dumps default and ensure_ascii=False),
   with blanks between tokens or none; every fourth with only the escapes a text keeps as they
   are (the verbatim path). */
static void test_dumped_random(void **state)
{
    (void)state;
    uint64_t r = 7;
    static const uint32_t plain[] = {'a', ' ', '"', '\\', '\n', '\t', 0xe9, 0x1f600};
    static const uint32_t pick[] = {0x1,  0x1f,  '"',   '\\',   '/',    'a',     ' ',      0x7f,
                                    0x80, 0x7ff, 0x800, 0xfffd, 0xffff, 0x10000, 0x10ffff, '\n'};
    for (int iter = 0; iter < 500; iter++) {
        json_t *msgs = json_array();
        int nmsg = 1 + (int)(iter % 4);
        for (int m = 0; m < nmsg; m++) {
            struct dsa_buf b = DSA_BUF_INIT;
            r = dsa_splitmix64(r);
            int len = (int)(r % 80);
            for (int k = 0; k < len; k++) {
                r = dsa_splitmix64(r);
                uint32_t cp = r & 1 ? pick[(r >> 1) % 16] : 0x20 + (uint32_t)((r >> 8) % 0x230);
                if (iter % 4 == 2) /* no escape but the two-character ones: the text verbatim */
                    cp = plain[(r >> 1) % 8];
                if (cp >= 0xd800 && cp < 0xe000)
                    cp = 'x';
                char enc[4];
                int n = dsa_utf8_encode(cp, enc);
                dsa_buf_add(&b, enc, (size_t)n);
            }
            json_array_append_new(msgs,
                                  json_pack("{s:s,s:s%}", "role", m % 2 ? "assistant" : "user",
                                            "content", b.data ? b.data : "", b.len));
            dsa_buf_release(&b);
        }
        char *text = json_dumps(msgs, iter % 4 == 1 ? JSON_ENSURE_ASCII : JSON_INDENT(iter % 3));
        check_dumped(text, true);
        free(text);
        json_decref(msgs);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escapes),          cmocka_unit_test(test_escapes_aligned),
        cmocka_unit_test(test_splice),           cmocka_unit_test(test_scalars_and_nesting),
        cmocka_unit_test(test_refusals),         cmocka_unit_test(test_random),
        cmocka_unit_test(test_dumped_from_tape), cmocka_unit_test(test_dumped_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
