/* Unit tests of src/util/utf8: strict decoding (RFC 3629 §3–4, Unicode 15 Table 3-7).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/utf8.h"

static void test_valid(void **state)
{
    (void)state;
    /* "aé中🌍" + NUL + U+10FFFF + U+E000 + U+FFFF */
    static const char s[] = "a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x8C\x8D\0\xF4\x8F\xBF\xBF\xEE\x80\x80"
                            "\xEF\xBF\xBF";
    static const uint32_t want[] = {'a', 0xE9, 0x4E2D, 0x1F30D, 0, 0x10FFFF, 0xE000, 0xFFFF};
    uint32_t out[sizeof s];
    long n = dsa_utf8_decode(s, sizeof s - 1, out, NULL);
    assert_int_equal(n, 8);
    assert_memory_equal(out, want, sizeof want);
    assert_int_equal(dsa_utf8_length(s, sizeof s - 1), 8);
    assert_true(dsa_utf8_valid("", 0));
    assert_int_equal(dsa_utf8_decode("", 0, out, NULL), 0);
    /* boundaries of each length */
    static const struct {
        const char *s;
        uint32_t cp;
    } edges[] = {{"\x7F", 0x7F},
                 {"\xC2\x80", 0x80},
                 {"\xDF\xBF", 0x7FF},
                 {"\xE0\xA0\x80", 0x800},
                 {"\xED\x9F\xBF", 0xD7FF},
                 {"\xEE\x80\x80", 0xE000},
                 {"\xEF\xBF\xBF", 0xFFFF},
                 {"\xF0\x90\x80\x80", 0x10000},
                 {"\xF4\x8F\xBF\xBF", 0x10FFFF}};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
        assert_int_equal(dsa_utf8_decode(edges[i].s, strlen(edges[i].s), out, NULL), 1);
        assert_int_equal(out[0], edges[i].cp);
    }
}

static void test_invalid(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        size_t bad;
        const char *why;
    } cases[] = {
        {"\xC0\x80", 0, "overlong NUL"},
        {"\xC1\xBF", 0, "overlong 2-byte"},
        {"ab\xE0\x80\x80", 2, "overlong 3-byte"},
        {"\xE0\x9F\xBF", 0, "overlong U+07FF in 3 bytes"},
        {"\xF0\x80\x80\x80", 0, "overlong 4-byte"},
        {"\xF0\x8F\xBF\xBF", 0, "overlong U+FFFF in 4 bytes"},
        {"x\xED\xA0\x80", 1, "UTF-8 encoded surrogate U+D800"},
        {"\xED\xBF\xBF", 0, "UTF-8 encoded surrogate U+DFFF"},
        {"\xF4\x90\x80\x80", 0, "U+110000"},
        {"\xF5\x80\x80\x80", 0, "lead byte F5"},
        {"\xFF", 0, "byte FF"},
        {"\x80", 0, "stray continuation"},
        {"a\xBF", 1, "stray continuation after ASCII"},
        {"\xC3", 0, "truncated 2-byte"},
        {"\xE4\xB8", 0, "truncated 3-byte"},
        {"\xF0\x9F\x8C", 0, "truncated 4-byte"},
        {"\xE4"
         "a\xAD",
         0, "ASCII inside a sequence"},
        {"\xC3\xA9\xC3\x28", 2, "bad second byte"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint32_t out[8];
        size_t bad = 99;
        size_t len = strlen(cases[i].s);
        if (dsa_utf8_decode(cases[i].s, len, out, &bad) != -1)
            fail_msg("accepted: %s", cases[i].why);
        if (bad != cases[i].bad)
            fail_msg("%s: bad offset %zu, want %zu", cases[i].why, bad, cases[i].bad);
        assert_false(dsa_utf8_valid(cases[i].s, len));
        assert_int_equal(dsa_utf8_length(cases[i].s, len), -1);
        size_t n;
        assert_null(dsa_utf8_decode_alloc(cases[i].s, len, &n, NULL));
    }
}

/* Every scalar value round-trips through encode/decode; every surrogate is refused. */
static void test_roundtrip_all(void **state)
{
    (void)state;
    char buf[4];
    uint32_t out[4];
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp++) {
        int n = dsa_utf8_encode(cp, buf);
        assert_true(n >= 1 && n <= 4);
        long got = dsa_utf8_decode(buf, (size_t)n, out, NULL);
        if (cp >= 0xD800 && cp <= 0xDFFF) {
            assert_int_equal(got, -1);
            continue;
        }
        assert_int_equal(got, 1);
        assert_int_equal(out[0], cp);
    }
    assert_int_equal(dsa_utf8_encode(0x110000, buf), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_invalid),
        cmocka_unit_test(test_roundtrip_all),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
