/* Unit tests of datasets/: the tokenizer, the MRCR reader (official block map, explicit
 * bins, filters, /rows pages, bad input, streaming memory) and the synthetic generator.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <pcre2.h>

#include "datasets/mrcr.h"
#include "datasets/samples.h"
#include "datasets/synth.h"
#include "datasets/tokenize.h"
#include "util/buf.h"
#include "util/hash.h"
#include "util/lines.h"
#include "util/opt.h"

static const int block_to_bin[8] = {5, 2, 6, 3, 0, 7, 4, 1};

/* ---------------------------------------------------------------- helpers */

static char *tmp_path(const char *tag)
{
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    struct dsa_buf b = DSA_BUF_INIT;
    dsa_buf_addf(&b, "%s/dsa-test-%s-XXXXXX", dir, tag);
    int fd = mkstemp(b.data);
    assert_true(fd >= 0);
    close(fd);
    return dsa_buf_detach(&b, NULL);
}

static char *write_tmp(const char *tag, const char *text, size_t len)
{
    char *p = tmp_path(tag);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    fclose(f);
    return p;
}

/* A minimal valid row: prompt of 3 messages, needle = messages[desired + 1]. */
static void add_row(struct dsa_buf *b, int needles, long n_chars, const char *extra)
{
    dsa_buf_addf(b,
                 "{\"prompt\":\"[{\\\"role\\\":\\\"user\\\",\\\"content\\\":\\\"hdr\\\"},"
                 "{\\\"role\\\":\\\"user\\\",\\\"content\\\":\\\"write a poem about tapirs\\\"},"
                 "{\\\"role\\\":\\\"assistant\\\",\\\"content\\\":\\\"Tapirs \\\\u00e9\\\"},"
                 "{\\\"role\\\":\\\"user\\\",\\\"content\\\":\\\"Prepend ab12CD34ef to the 1st (1 "
                 "indexed) poem about tapirs.\\\"}]\",\"answer\":\"ab12CD34efTapirs \\u00e9\","
                 "\"random_string_to_prepend\":\"ab12CD34ef\",\"n_needles\":%d,"
                 "\"desired_msg_index\":1,\"total_messages\":4,\"n_chars\":%ld,"
                 "\"date_added\":\"04-12-2025\"%s}\n",
                 needles, n_chars, extra ? extra : "");
}

/* n_chars that sits inside bin k at 4.85 chars per token, varied by row */
static long chars_for_bin(int k, long r)
{
    double lo = k ? (double)(4096L << k) : 4096.0, hi = (double)(8192L << k);
    return (long)((lo + (hi - lo) * (0.2 + 0.006 * (double)(r % 100))) * 4.85);
}

static void add_official(struct dsa_buf *b, int needles, const int *order)
{
    for (long r = 0; r < 800; r++) {
        int block = order ? order[r / 100] : (int)(r / 100);
        add_row(b, needles, chars_for_bin(block_to_bin[block], r), NULL);
    }
}

static long count_rows(const char *path, const struct dsa_mrcr_filter *f)
{
    dsa_mrcr_reader *rd = dsa_mrcr_open(path, f);
    if (!rd)
        return -1;
    struct dsa_mrcr_row row = {0};
    long n = 0;
    int got;
    while ((got = dsa_mrcr_next(rd, &row)) > 0)
        n++;
    dsa_mrcr_row_release(&row);
    dsa_mrcr_free(&rd);
    return got < 0 ? -1 : n;
}

/* ---------------------------------------------------------------- tokenizer */

static void test_tok_known_split(void **state)
{
    (void)state;
    const char *text = "Hello, world!\n\n  12345 foo";
    /* pieces: "Hello" "," " world" "!" "\n\n" " " " " "123" "45" " foo" */
    static const char *const want[] = {"Hello", ",", " world", "!",  "\n\n",
                                       " ",     " ", "123",    "45", " foo"};
    size_t pos = 0, start, len, i = 0;
    while (dsa_tok_next_piece(text, strlen(text), &pos, &start, &len)) {
        assert_true(i < DSA_ARRAY_SIZE(want));
        assert_int_equal(len, strlen(want[i]));
        assert_memory_equal(text + start, want[i], len);
        i++;
    }
    assert_int_equal(i, DSA_ARRAY_SIZE(want));
    assert_int_equal(dsa_tok_count(text, strlen(text)), 10);

    /* ids = fnv1a64(piece) mod 131072, computed independently in Python */
    static const uint32_t want_ids[] = {3947,  100427, 111517, 98252,  17749,
                                        98687, 98687,  50395,  105122, 61897};
    uint32_t ids[16];
    assert_int_equal(dsa_tok_encode(text, strlen(text), ids, 16), 10);
    assert_memory_equal(ids, want_ids, sizeof want_ids);
    /* snprintf-like: a short array gets the first ids, the return is the full count */
    uint32_t few[3] = {0, 0, 7};
    assert_int_equal(dsa_tok_encode(text, strlen(text), few, 2), 10);
    assert_int_equal(few[0], 3947);
    assert_int_equal(few[1], 100427);
    assert_int_equal(few[2], 7);
    assert_int_equal(dsa_tok_encode(text, strlen(text), NULL, 0), 10);
}

static void test_tok_unicode_and_invalid(void **state)
{
    (void)state;
    struct {
        const char *text;
        size_t n;
    } cases[] = {
        {"na\xc3\xafve caf\xc3\xa9", 2},             /* "naïve" " café": letters include ï é */
        {"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e", 1}, /* 日本語: one letter run */
        {"a\xff"
         "b",
         3},            /* invalid byte: its own piece */
        {"1234567", 3}, /* 123 456 7 */
        {"x  \n", 3},   /* "x" "  " "\n": checked below */
        {"", 0},
        {" ...", 1}, /* punctuation with its leading space */
        {"a\tb", 3}, /* "a" "\t" "b" */
    };
    for (size_t i = 0; i < DSA_ARRAY_SIZE(cases); i++)
        assert_int_equal(dsa_tok_count(cases[i].text, strlen(cases[i].text)), cases[i].n);
    /* "x  \n": "x", then whitespace before a newline is one run, then the newline */
    const char *t = "x  \n";
    size_t pos = 0, s, l;
    assert_true(dsa_tok_next_piece(t, 4, &pos, &s, &l));
    assert_true(dsa_tok_next_piece(t, 4, &pos, &s, &l));
    assert_int_equal(l, 2);
    assert_true(dsa_tok_next_piece(t, 4, &pos, &s, &l));
    assert_memory_equal(t + s, "\n", 1);
}

static void test_tok_pieces_cover_input(void **state)
{
    (void)state;
    /* pseudo-random bytes, valid and invalid UTF-8: pieces tile the input exactly */
    char text[4096];
    uint64_t x = 12345;
    for (size_t i = 0; i < sizeof text; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        static const char alphabet[] = "ab Z9,.\n\t\xc3\xa9\xe2\x89\xa4\xff";
        text[i] = alphabet[(x >> 33) % (sizeof alphabet - 1)];
    }
    size_t pos = 0, s, l, next = 0, n = 0;
    while (dsa_tok_next_piece(text, sizeof text, &pos, &s, &l)) {
        assert_int_equal(s, next);
        assert_true(l > 0);
        next = s + l;
        n++;
    }
    assert_int_equal(next, sizeof text);
    assert_int_equal(dsa_tok_count(text, sizeof text), n);
}

/* ---------------------------------------------------------------- reader */

static void test_bins_parse(void **state)
{
    (void)state;
    unsigned m;
    assert_int_equal(dsa_mrcr_parse_bins("8k,16k,32k", &m), 0);
    assert_int_equal(m, 0x7u);
    assert_int_equal(dsa_mrcr_parse_bins("\xe2\x89\xa4"
                                         "256K, 1m,<=64K",
                                         &m),
                     0);
    assert_int_equal(m, (1u << 5) | (1u << 7) | (1u << 3));
    assert_int_equal(dsa_mrcr_parse_bins("131072", &m), 0);
    assert_int_equal(m, 1u << 4);
    assert_int_equal(dsa_mrcr_parse_bins("12k", &m), -1);
    assert_int_equal(dsa_mrcr_parse_bins("", &m), -1);
    assert_int_equal(dsa_mrcr_parse_max_bin("256k", &m), 0);
    assert_int_equal(m, 0x3fu);
    assert_int_equal(dsa_mrcr_parse_needles("2,4,8", &m), 0);
    assert_int_equal(m, (1u << 2) | (1u << 4) | (1u << 8));
    assert_int_equal(dsa_mrcr_parse_needles("0", &m), -1);
    assert_int_equal(dsa_mrcr_parse_needles("8x", &m), -1);
    assert_string_equal(dsa_mrcr_bin_label(0), "\xe2\x89\xa4"
                                               "8K");
    assert_string_equal(dsa_mrcr_bin_label(7), "\xe2\x89\xa4"
                                               "1M");
    assert_int_equal(dsa_mrcr_bin_of_tokens(100), 0);
    assert_int_equal(dsa_mrcr_bin_of_tokens(8192), 0);
    assert_int_equal(dsa_mrcr_bin_of_tokens(8193), 1);
    assert_int_equal(dsa_mrcr_bin_of_tokens(1048576), 7);
    assert_int_equal(dsa_mrcr_bin_of_tokens(1048577), -1);
    assert_int_equal(dsa_mrcr_bin_of_tokens(0), -1);
}

static void test_official_block_map(void **state)
{
    (void)state;
    struct dsa_buf b = DSA_BUF_INIT;
    add_official(&b, 2, NULL);
    add_official(&b, 8, NULL);
    char *path = write_tmp("official", b.data, b.len);
    dsa_mrcr_reader *rd = dsa_mrcr_open(path, NULL);
    assert_non_null(rd);
    assert_int_equal(dsa_mrcr_bins_source(rd), DSA_MRCR_BINS_OFFICIAL);
    assert_null(dsa_mrcr_revision(rd));
    assert_int_equal(strlen(dsa_mrcr_sha256(rd)), 64);
    for (int k = 0; k < 8; k++) {
        assert_int_equal(dsa_mrcr_nrows(rd, 2, k), 100);
        assert_int_equal(dsa_mrcr_nrows(rd, 8, k), 100);
        assert_int_equal(dsa_mrcr_nrows(rd, 4, k), 0);
    }
    struct dsa_mrcr_row row = {0};
    long i = 0;
    while (dsa_mrcr_next(rd, &row) > 0) {
        int n = i < 800 ? 2 : 8;
        long r = i % 800;
        char id[32];
        snprintf(id, sizeof id, "n%d/r%04ld", n, r);
        assert_string_equal(row.id, id);
        assert_int_equal(row.n_needles, n);
        assert_int_equal(row.r, r);
        assert_int_equal(row.bin, block_to_bin[r / 100]);
        assert_int_equal(row.bin_tokens, 8192L << row.bin);
        assert_false(row.bin_explicit);
        assert_int_equal(row.context_tokens, -1);
        assert_string_equal(row.prefix, "ab12CD34ef");
        assert_int_equal(json_array_size(row.messages), 4);
        /* content byte-exact, \u00e9 decoded to UTF-8 */
        json_t *needle = json_array_get(row.messages, (size_t)row.desired_msg_index + 1);
        assert_string_equal(json_string_value(json_object_get(needle, "content")),
                            "Tapirs \xc3\xa9");
        assert_string_equal(row.answer, "ab12CD34efTapirs \xc3\xa9");
        i++;
    }
    assert_int_equal(i, 1600);
    dsa_mrcr_row_release(&row);
    dsa_mrcr_free(&rd);
    assert_null(rd);

    /* a bin filter on the block map: ≤8K is block 4 (rows 400-499) of each needle count;
       skipped rows keep their numbers */
    struct dsa_mrcr_filter f0 = {0, 1u << 0, 0};
    rd = dsa_mrcr_open(path, &f0);
    assert_int_equal(dsa_mrcr_nselected(rd), 200);
    i = 0;
    while (dsa_mrcr_next(rd, &row) > 0) {
        assert_int_equal(row.r, 400 + i % 100);
        assert_int_equal(row.n_needles, i < 100 ? 2 : 8);
        assert_int_equal(row.bin, 0);
        i++;
    }
    assert_int_equal(i, 200);
    dsa_mrcr_row_release(&row);
    dsa_mrcr_free(&rd);
    struct dsa_mrcr_filter f8 = {1u << 8, 0x3fu, 10}; /* --needles 8 --max-bin 256k, 10/bin */
    rd = dsa_mrcr_open(path, &f8);
    assert_int_equal(dsa_mrcr_nselected(rd), 60);
    i = 0;
    while (dsa_mrcr_next(rd, &row) > 0) {
        assert_true(row.bin <= 5 && row.n_needles == 8 && row.r % 100 < 10);
        i++;
    }
    assert_int_equal(i, 60);
    dsa_mrcr_row_release(&row);
    dsa_mrcr_free(&rd);

    /* sha256 is the file's */
    char hex[65];
    dsa_sha256_hex(b.data, b.len, hex);
    rd = dsa_mrcr_open(path, NULL);
    assert_string_equal(dsa_mrcr_sha256(rd), hex);
    dsa_mrcr_free(&rd);

    /* the first 300 rows alone (three whole blocks) still pass the check */
    unlink(path);
    free(path);
    dsa_buf_reset(&b);
    add_official(&b, 8, NULL);
    size_t cut = 0;
    for (int l = 0; l < 300; l++)
        cut = (size_t)(strchr(b.data + cut, '\n') - b.data) + 1;
    path = write_tmp("official300", b.data, cut);
    assert_int_equal(count_rows(path, NULL), 300);
    unlink(path);
    free(path);
    dsa_buf_release(&b);
}

static void test_official_layout_rejected(void **state)
{
    (void)state;
    /* blocks 0 and 4 swapped: bins 5 and 0 exchange their n_chars */
    static const int swapped[8] = {4, 1, 2, 3, 0, 5, 6, 7};
    struct dsa_buf b = DSA_BUF_INIT;
    add_official(&b, 8, swapped);
    char *path = write_tmp("shuffled", b.data, b.len);
    assert_null(dsa_mrcr_open(path, NULL));
    unlink(path);
    free(path);

    /* blocks 1 and 7 swapped (bins 2 and 1, neighbours): the absolute test may pass, the
       rising-median test must not */
    static const int neighbours[8] = {0, 7, 2, 3, 4, 5, 6, 1};
    dsa_buf_reset(&b);
    add_official(&b, 8, neighbours);
    path = write_tmp("shuffled2", b.data, b.len);
    assert_null(dsa_mrcr_open(path, NULL));
    unlink(path);
    free(path);

    /* 150 rows: not whole blocks */
    dsa_buf_reset(&b);
    for (long r = 0; r < 150; r++)
        add_row(&b, 8, chars_for_bin(block_to_bin[r / 100], r), NULL);
    path = write_tmp("partial", b.data, b.len);
    assert_null(dsa_mrcr_open(path, NULL));
    unlink(path);
    free(path);
    dsa_buf_release(&b);
}

static void test_explicit_bins_and_filters(void **state)
{
    (void)state;
    struct dsa_buf b = DSA_BUF_INIT;
    /* 4-needle rows with explicit bins in every accepted spelling */
    static const char *const extra[] = {
        ",\"bin\":\"8k\"",
        (",\"bin\":\"\xe2\x89\xa4"
         "16K\""),
        ",\"bin\":32768",
        ",\"context_tokens\":5000",
        ",\"context_tokens\":20000,\"bin\":\"32k\"",
        ",\"bin\":\"<=1M\"",
    };
    static const int want_bin[] = {0, 1, 2, 0, 2, 7};
    for (size_t i = 0; i < DSA_ARRAY_SIZE(extra); i++)
        add_row(&b, 4, 1000, extra[i]);
    char *path = write_tmp("explicit", b.data, b.len);
    dsa_mrcr_reader *rd = dsa_mrcr_open(path, NULL);
    assert_non_null(rd);
    assert_int_equal(dsa_mrcr_bins_source(rd), DSA_MRCR_BINS_EXPLICIT);
    assert_int_equal(dsa_mrcr_nrows(rd, 4, 0), 2);
    assert_int_equal(dsa_mrcr_nrows(rd, 4, 2), 2);
    struct dsa_mrcr_row row = {0};
    for (size_t i = 0; i < DSA_ARRAY_SIZE(extra); i++) {
        assert_int_equal(dsa_mrcr_next(rd, &row), 1);
        assert_int_equal(row.bin, want_bin[i]);
        assert_true(row.bin_explicit);
        assert_int_equal(row.r, (long)i);
    }
    assert_int_equal(row.context_tokens, -1);
    assert_int_equal(dsa_mrcr_next(rd, &row), 0);
    dsa_mrcr_free(&rd);

    /* filters: bins 8k and 32k, at most 1 row per (needles, bin) */
    struct dsa_mrcr_filter f = {0, (1u << 0) | (1u << 2), 1};
    rd = dsa_mrcr_open(path, &f);
    assert_int_equal(dsa_mrcr_nselected(rd), 2);
    assert_int_equal(dsa_mrcr_next(rd, &row), 1);
    assert_string_equal(row.id, "n4/r0000");
    assert_int_equal(dsa_mrcr_next(rd, &row), 1);
    assert_string_equal(row.id, "n4/r0002"); /* ids keep the file index */
    assert_int_equal(dsa_mrcr_next(rd, &row), 0);
    dsa_mrcr_row_release(&row);
    dsa_mrcr_free(&rd);
    struct dsa_mrcr_filter f8 = {1u << 8, 0, 0};
    assert_int_equal(count_rows(path, &f8), 0);
    struct dsa_mrcr_filter f4 = {1u << 4, 0, 0};
    assert_int_equal(count_rows(path, &f4), 6);
    unlink(path);
    free(path);

    /* mixed within one needle count is refused; mixed across needle counts is fine */
    dsa_buf_reset(&b);
    add_row(&b, 4, 1000, ",\"bin\":\"8k\"");
    add_row(&b, 4, 1000, NULL);
    path = write_tmp("mixed", b.data, b.len);
    assert_null(dsa_mrcr_open(path, NULL));
    unlink(path);
    free(path);
    dsa_buf_reset(&b);
    add_official(&b, 8, NULL);
    add_row(&b, 2, 1000, ",\"bin\":\"8k\"");
    path = write_tmp("mixed2", b.data, b.len);
    rd = dsa_mrcr_open(path, NULL);
    assert_non_null(rd);
    assert_int_equal(dsa_mrcr_bins_source(rd), DSA_MRCR_BINS_MIXED);
    dsa_mrcr_free(&rd);
    unlink(path);
    free(path);
    dsa_buf_release(&b);
}

static void test_rows_pages(void **state)
{
    (void)state;
    /* the official 8-needle rows as /rows pages of 4 rows, one page per line */
    struct dsa_buf rows = DSA_BUF_INIT, b = DSA_BUF_INIT;
    add_official(&rows, 8, NULL);
    char *line = rows.data;
    for (long r = 0; r < 800; r += 4) {
        dsa_buf_adds(&b, "{\"features\":[],\"rows\":[");
        for (long i = r; i < r + 4; i++) {
            char *nl = strchr(line, '\n');
            dsa_buf_addf(&b, "%s{\"row_idx\":%ld,\"row\":", i > r ? "," : "", 1600 + i);
            dsa_buf_add(&b, line, (size_t)(nl - line));
            dsa_buf_adds(&b, ",\"truncated_cells\":[]}");
            line = nl + 1;
        }
        dsa_buf_adds(&b,
                     "],\"num_rows_total\":2400,\"num_rows_per_page\":100,\"partial\":false}\n");
    }
    char *path = write_tmp("pages", b.data, b.len);
    dsa_mrcr_reader *rd = dsa_mrcr_open(path, NULL);
    assert_non_null(rd);
    assert_int_equal(dsa_mrcr_bins_source(rd), DSA_MRCR_BINS_OFFICIAL);
    struct dsa_mrcr_row row = {0};
    long n = 0;
    while (dsa_mrcr_next(rd, &row) > 0) {
        assert_int_equal(row.r, n);
        assert_int_equal(row.bin, block_to_bin[n / 100]);
        n++;
    }
    assert_int_equal(n, 800);
    dsa_mrcr_row_release(&row);
    dsa_mrcr_free(&rd);
    unlink(path);
    free(path);

    /* one pretty-printed page in a whole file, explicit bins */
    dsa_buf_reset(&b);
    dsa_buf_adds(&b, "{\n  \"rows\": [\n");
    struct dsa_buf one = DSA_BUF_INIT;
    add_row(&one, 2, 100, ",\"bin\":\"64k\"");
    one.data[--one.len] = '\0';
    dsa_buf_addf(&b, "    {\"row_idx\": 0, \"row\": %s},\n", one.data);
    dsa_buf_addf(&b, "    {\"row_idx\": 1, \"row\": %s}\n  ]\n}\n", one.data);
    path = write_tmp("page", b.data, b.len);
    assert_int_equal(count_rows(path, NULL), 2);
    unlink(path);
    free(path);

    /* a gap in row_idx would shift ids: refused */
    dsa_buf_reset(&b);
    dsa_buf_addf(&b, "{\"rows\":[{\"row_idx\":0,\"row\":%s},{\"row_idx\":2,\"row\":%s}]}\n",
                 one.data, one.data);
    path = write_tmp("gap", b.data, b.len);
    assert_null(dsa_mrcr_open(path, NULL));
    unlink(path);
    free(path);

    /* truncated cells: refused */
    dsa_buf_reset(&b);
    dsa_buf_addf(&b, "{\"rows\":[{\"row_idx\":0,\"row\":%s,\"truncated_cells\":[\"prompt\"]}]}\n",
                 one.data);
    path = write_tmp("trunc", b.data, b.len);
    assert_null(dsa_mrcr_open(path, NULL));
    unlink(path);
    free(path);
    dsa_buf_release(&one);
    dsa_buf_release(&rows);
    dsa_buf_release(&b);
}

static void test_bad_input(void **state)
{
    (void)state;
    struct dsa_buf good = DSA_BUF_INIT;
    add_row(&good, 8, 100, ",\"bin\":\"8k\"");
    good.data[--good.len] = '\0';
    /* each: rejected at open (pass 1) or at next (pass 2: the prompt) */
    struct {
        const char *text;
        bool at_open;
    } cases[] = {
        {"", true},
        {"\n\n", true},
        {"{\"prompt\":", true},                                       /* truncated */
        {"[1,2]", true},                                              /* not an object */
        {"{\"n_needles\":\"8\",\"n_chars\":1,\"bin\":\"8k\"}", true}, /* wrong type */
        {"{\"n_needles\":8,\"bin\":\"8k\"}", true},                   /* missing n_chars */
        {"{\"n_needles\":8,\"n_chars\":1,\"bin\":\"9k\"}", true},     /* not a bin */
        {"{\"n_needles\":8,\"n_chars\":1,\"bin\":[8]}", true},        /* bin type */
        {"{\"n_needles\":99,\"n_chars\":1,\"bin\":\"8k\"}", true},    /* needles range */
        {"{\"n_needles\":8,\"n_chars\":1,\"context_tokens\":9000,\"bin\":\"8k\"}", true},
        {"{\"n_needles\":8,\"n_chars\":1,\"context_tokens\":2000000}", true},
        {"{\"n_needles\":8,\"n_chars\":1,\"context_tokens\":-1}", true},
        {"{\"n_needles\":8,\"n_chars\":1,\"context_tokens\":\"5k\"}", true},
        {"{\"n_needles\":8,\"n_chars\":1,\"bin\":\"8k\",\"x\":\"\xff\"}", true}, /* UTF-8 */
        {"{\"n_needles\":8,\"n_chars\":1,\"bin\":\"8k\"}", false},               /* no prompt */
        {"{\"n_needles\":8,\"n_chars\":1,\"bin\":\"8k\",\"prompt\":\"[]\",\"answer\":\"x\","
         "\"random_string_to_prepend\":\"x\",\"desired_msg_index\":1,\"total_messages\":1}",
         false}, /* empty message list */
        {"{\"n_needles\":8,\"n_chars\":1,\"bin\":\"8k\",\"prompt\":\"hello\",\"answer\":\"x\","
         "\"random_string_to_prepend\":\"x\",\"desired_msg_index\":1,\"total_messages\":1}",
         false}, /* prompt not JSON */
        {"{\"n_needles\":8,\"n_chars\":1,\"bin\":\"8k\",\"prompt\":\"[{\\\"role\\\":1}]\","
         "\"answer\":\"x\",\"random_string_to_prepend\":\"x\",\"desired_msg_index\":1,"
         "\"total_messages\":1}",
         false}, /* message without string role/content */
        {"{\"n_needles\":8,\"n_chars\":1,\"bin\":\"8k\",\"prompt\":\"[{\\\"role\\\":\\\"user\\\","
         "\\\"content\\\":\\\"x\\\"}]\",\"answer\":\"x\",\"random_string_to_prepend\":\"\","
         "\"desired_msg_index\":1,\"total_messages\":1}",
         false}, /* empty prefix */
    };
    for (size_t i = 0; i < DSA_ARRAY_SIZE(cases); i++) {
        struct dsa_buf b = DSA_BUF_INIT;
        dsa_buf_adds(&b, good.data);
        dsa_buf_addch(&b, '\n');
        dsa_buf_adds(&b, cases[i].text);
        dsa_buf_addch(&b, '\n');
        /* the empty cases stand alone */
        const char *text = i < 2 ? cases[i].text : b.data;
        char *path = write_tmp("bad", text, strlen(text));
        dsa_mrcr_reader *rd = dsa_mrcr_open(path, NULL);
        if (cases[i].at_open) {
            assert_null(rd);
        } else {
            assert_non_null(rd);
            struct dsa_mrcr_row row = {0};
            assert_int_equal(dsa_mrcr_next(rd, &row), 1);
            assert_int_equal(dsa_mrcr_next(rd, &row), -1);
            dsa_mrcr_row_release(&row);
            dsa_mrcr_free(&rd);
        }
        unlink(path);
        free(path);
        dsa_buf_release(&b);
    }
    assert_null(dsa_mrcr_open("/nonexistent/x.jsonl", NULL));
    assert_null(dsa_mrcr_open("-", NULL));
    dsa_buf_release(&good);
}

/* ---------------------------------------------------------------- synth */

static char *synth_file(unsigned needles, unsigned bins, int per_bin, unsigned long seed)
{
    char *path = tmp_path("synth");
    FILE *f = fopen(path, "wb");
    struct dsa_synth_mrcr_opts o = {needles, bins, per_bin, seed, NULL};
    assert_int_equal(dsa_synth_mrcr_write(f, &o, path), 0);
    fclose(f);
    return path;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    struct dsa_buf b = DSA_BUF_INIT;
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        dsa_buf_add(&b, chunk, n);
    fclose(f);
    return dsa_buf_detach(&b, len);
}

static void test_synth_determinism(void **state)
{
    (void)state;
    unsigned n = (1u << 2) | (1u << 8), k = 0x3;
    char *a = synth_file(n, k, 2, 1), *b = synth_file(n, k, 2, 1), *c = synth_file(n, k, 2, 2);
    size_t la, lb, lc;
    char *da = slurp(a, &la), *db = slurp(b, &lb), *dc = slurp(c, &lc);
    assert_int_equal(la, lb);
    assert_memory_equal(da, db, la);
    assert_false(la == lc && !memcmp(da, dc, la));
    /* a row does not depend on which other bins are generated: bin 8k alone of needles 8
       equals the 8-needle 8k rows of the bigger file */
    char *d = synth_file(1u << 8, 0x1, 2, 1);
    size_t ld;
    char *dd = slurp(d, &ld);
    assert_non_null(strstr(da, dd));
    free(da), free(db), free(dc), free(dd);
    unlink(a), unlink(b), unlink(c), unlink(d);
    free(a), free(b), free(c), free(d);
}

static size_t utf8_chars(const char *s)
{
    size_t c = 0;
    for (; *s; s++)
        c += ((unsigned char)*s & 0xC0) != 0x80;
    return c;
}

/* --limit stops reading: once every selected row was returned, the rest of the file is not
   read. A row appended after the open would make a reader that goes on say the file changed
   while being read; this one ends cleanly after the last selected row. */
static void test_limit_stops_reading(void **state)
{
    (void)state;
    char *path = synth_file(1u << 8, 0x3, 3, 11); /* n8: 3 rows of <=8K, then 3 of <=16K */
    struct dsa_mrcr_filter flt = {0, 0, 1};
    dsa_mrcr_reader *rd = dsa_mrcr_open(path, &flt);
    assert_non_null(rd);
    assert_int_equal(dsa_mrcr_nselected(rd), 2);
    size_t len;
    char *all = slurp(path, &len);
    FILE *f = fopen(path, "ab");
    assert_non_null(f);
    fwrite(all, 1, (size_t)(strchr(all, '\n') + 1 - all), f); /* the first row once more */
    fclose(f);
    struct dsa_mrcr_row row = {0};
    assert_int_equal(dsa_mrcr_next(rd, &row), 1);
    assert_string_equal(row.id, "n8/r0000");
    assert_int_equal(dsa_mrcr_next(rd, &row), 1);
    assert_string_equal(row.id, "n8/r0003");
    assert_int_equal(dsa_mrcr_next(rd, &row), 0);
    dsa_mrcr_row_release(&row);
    dsa_mrcr_free(&rd);
    free(all);
    unlink(path);
    free(path);
}

/* dsa_mrcr_rewind: the same rows again, in the same order, with the limit counted afresh and
   without a second check pass; a row changed since the open is refused as in the first pass. */
static void test_rewind(void **state)
{
    (void)state;
    char *path = synth_file(1u << 8, 0x3, 3, 11); /* n8: 3 rows of <=8K, then 3 of <=16K */
    struct dsa_mrcr_filter flt = {0, 0, 2};
    dsa_mrcr_reader *rd = dsa_mrcr_open(path, &flt);
    assert_non_null(rd);
    static const char *const want[] = {"n8/r0000", "n8/r0001", "n8/r0003", "n8/r0004"};
    struct dsa_mrcr_row row = {0};
    for (int pass = 0; pass < 2; pass++) {
        if (pass)
            assert_int_equal(dsa_mrcr_rewind(rd), 0);
        for (size_t i = 0; i < DSA_ARRAY_SIZE(want); i++) {
            assert_int_equal(dsa_mrcr_next(rd, &row), 1);
            assert_string_equal(row.id, want[i]);
            assert_int_equal(row.bin, (int)(i / 2));
        }
        assert_int_equal(dsa_mrcr_next(rd, &row), 0);
    }
    /* the file rewritten with its 8-needle rows as 2-needle ones: pass 2 sees another file */
    size_t len;
    char *all = slurp(path, &len);
    int changed = 0;
    for (char *p = all; (p = strstr(p, "\"n_needles\":8")); p++, changed++)
        p[strlen("\"n_needles\":")] = '2';
    assert_int_equal(changed, 6);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fwrite(all, 1, len, f);
    fclose(f);
    assert_int_equal(dsa_mrcr_rewind(rd), 0);
    assert_int_equal(dsa_mrcr_next(rd, &row), -1);
    dsa_mrcr_row_release(&row);
    dsa_mrcr_free(&rd);
    free(all);
    unlink(path);
    free(path);
}

/* dsa_mrcr_set_messages_json: each row's messages_json is the compact dump of the tree the
   default reader builds of the same row, on rows written from the tape (synthetic rows, the
   hand-made ones with an escape) and on a row whose list holds a real (built, then dumped). */
static void test_messages_json(void **state)
{
    (void)state;
    char *synth = synth_file((1u << 2) | (1u << 8), 0x3, 2, 5);
    struct dsa_buf b = DSA_BUF_INIT;
    for (int r = 0; r < 3; r++)
        add_row(&b, 2, 100, ",\"bin\":\"8k\"");
    dsa_buf_adds(&b, "{\"prompt\":\"[{\\\"role\\\":\\\"user\\\",\\\"content\\\":\\\"x\\\","
                     "\\\"w\\\":0.25}]\",\"answer\":\"ab\",\"random_string_to_prepend\":\"ab\","
                     "\"n_needles\":2,\"desired_msg_index\":0,\"total_messages\":1,"
                     "\"n_chars\":1,\"bin\":\"8k\"}\n");
    char *hand = write_tmp("msgjson", b.data, b.len);
    const char *paths[] = {synth, hand};
    for (size_t p = 0; p < 2; p++) {
        dsa_mrcr_reader *tree = dsa_mrcr_open(paths[p], NULL),
                        *bytes = dsa_mrcr_open(paths[p], NULL);
        assert_non_null(tree);
        assert_non_null(bytes);
        dsa_mrcr_set_messages_json(bytes);
        struct dsa_mrcr_row rt = {0}, rb = {0};
        long n = 0;
        int got;
        while ((got = dsa_mrcr_next(tree, &rt)) > 0) {
            assert_int_equal(dsa_mrcr_next(bytes, &rb), 1);
            assert_string_equal(rt.id, rb.id);
            assert_null(rt.messages_json);
            assert_null(rb.messages);
            char *want = json_dumps(rt.messages, JSON_COMPACT);
            assert_non_null(rb.messages_json);
            assert_int_equal(rb.messages_json_len, strlen(want));
            assert_memory_equal(rb.messages_json, want, rb.messages_json_len);
            assert_string_equal(rt.answer, rb.answer);
            free(want);
            n++;
        }
        assert_int_equal(got, 0);
        assert_int_equal(dsa_mrcr_next(bytes, &rb), 0);
        assert_int_equal(n, p ? 4 : 8);
        dsa_mrcr_row_release(&rt);
        dsa_mrcr_row_release(&rb);
        dsa_mrcr_free(&tree);
        dsa_mrcr_free(&bytes);
    }
    dsa_buf_release(&b);
    unlink(synth);
    unlink(hand);
    free(synth);
    free(hand);
}

static void test_synth_rows_parse_back(void **state)
{
    (void)state;
    char *path = synth_file((1u << 2) | (1u << 8), 0x7, 2, 7);
    dsa_mrcr_reader *rd = dsa_mrcr_open(path, NULL);
    assert_non_null(rd);
    assert_int_equal(dsa_mrcr_bins_source(rd), DSA_MRCR_BINS_EXPLICIT);
    struct dsa_mrcr_row row = {0};
    long i = 0;
    while (dsa_mrcr_next(rd, &row) > 0) {
        int n = i < 6 ? 2 : 8;
        long r = i % 6;
        char id[32];
        snprintf(id, sizeof id, "n%d/r%04ld", n, r);
        assert_string_equal(row.id, id);
        assert_int_equal(row.bin, (int)(r / 2));
        assert_true(row.bin_explicit);
        long lo = row.bin ? 4096L << row.bin : 4096L;
        assert_true(row.context_tokens > lo && row.context_tokens <= row.bin_tokens);
        /* the invariants of docs/mrcr.md "The dataset" */
        size_t nm = json_array_size(row.messages);
        assert_int_equal((long)nm, row.total_messages);
        assert_int_equal(row.desired_msg_index % 2, 1);
        json_t *needle = json_array_get(row.messages, (size_t)row.desired_msg_index + 1);
        assert_string_equal(json_string_value(json_object_get(needle, "role")), "assistant");
        size_t pl = strlen(row.prefix);
        assert_int_equal(pl, 10);
        assert_memory_equal(row.answer, row.prefix, pl);
        assert_string_equal(row.answer + pl, json_string_value(json_object_get(needle, "content")));
        const char *req = json_string_value(json_object_get(
            json_array_get(row.messages, (size_t)row.desired_msg_index), "content"));
        const char *q =
            json_string_value(json_object_get(json_array_get(row.messages, nm - 1), "content"));
        assert_memory_equal(q, "Prepend ", 8);
        assert_memory_equal(q + 8, row.prefix, pl);
        /* the question names the needle's format and topic: "... poem about tapirs." */
        assert_non_null(strstr(q, req + strlen("write a ")));
        /* the needles: n_needles requests equal to the needle's, the kth is the answer */
        size_t same = 0, k = 0;
        for (size_t m = 1; m + 1 < nm; m += 2) {
            const char *u =
                json_string_value(json_object_get(json_array_get(row.messages, m), "content"));
            if (!strcmp(u, req)) {
                same++;
                if ((long)m == row.desired_msg_index)
                    k = same;
            }
        }
        assert_int_equal(same, (size_t)n);
        char ord[32];
        snprintf(ord, sizeof ord, " the %zu", k);
        assert_non_null(strstr(q, ord));
        /* n_chars and context_tokens recomputed */
        size_t chars = 0, tokens = dsa_tok_count(row.answer, row.answer_len);
        for (size_t m = 0; m < nm; m++) {
            const char *c =
                json_string_value(json_object_get(json_array_get(row.messages, m), "content"));
            chars += utf8_chars(c);
            tokens += dsa_tok_count(c, strlen(c));
        }
        assert_int_equal((long)chars, row.n_chars);
        assert_int_equal((long)tokens, row.context_tokens);
        i++;
    }
    assert_int_equal(i, 12);
    dsa_mrcr_row_release(&row);
    dsa_mrcr_free(&rd);
    unlink(path);
    free(path);
}

/* ---------------------------------------------------------------- streaming */

/* ASan quarantines freed memory (256 MB by default), so peak RSS grows with the work done, not
   with what is live: the measurement means nothing there, and the sanitizer build leaves this
   test out of its list (the plain build, which CI runs too, has it) */
#if !defined(__SANITIZE_ADDRESS__)
#define DSA_TEST_RSS 1

/* Peak RSS (KiB) of a child that reads every row of path through the reader. */
static long child_read_peak_kib(const char *path)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        long n = count_rows(path, NULL);
        _exit(n > 0 ? 0 : 1);
    }
    int status;
    struct rusage ru;
    assert_int_equal(wait4(pid, &status, 0, &ru), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return ru.ru_maxrss;
}

static char *child_synth(unsigned bins, int per_bin)
{
    char *path = tmp_path("big");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        FILE *f = fopen(path, "wb");
        struct dsa_synth_mrcr_opts o = {1u << 8, bins, per_bin, 3, NULL};
        int bad = !f || dsa_synth_mrcr_write(f, &o, path) || fclose(f);
        _exit(bad);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return path;
}

static void test_streaming_memory(void **state)
{
    (void)state;
    /* the same rows, 6 vs 30 of them (~0.5 MB each): if memory grew with the file, the
       bigger file's peak would be ~12 MB higher */
    char *small = child_synth(1u << 4, 6), *big = child_synth(1u << 4, 30);
    struct stat ss, sb;
    assert_int_equal(stat(small, &ss), 0);
    assert_int_equal(stat(big, &sb), 0);
    long peak_small = child_read_peak_kib(small), peak_big = child_read_peak_kib(big);
    print_message("streaming: %lld B file -> peak %ld KiB; %lld B file -> peak %ld KiB\n",
                  (long long)ss.st_size, peak_small, (long long)sb.st_size, peak_big);
    assert_true(sb.st_size > 10 * 1024 * 1024);
    assert_true(peak_big - peak_small < (long)((sb.st_size - ss.st_size) / 1024 / 4));
    unlink(small), unlink(big);
    free(small), free(big);
}
#endif

/* ---------------------------------------------------------------- real data */

/* The real MRCR question form (docs/mrcr.md "The dataset"), as a PCRE2 pattern: prefix, k, format,
   topic. */
#define QUESTION_RE                                                                                \
    "^Prepend ([A-Za-z0-9]{10}) to the ([0-9]+)(?:st|nd|rd|th) \\(1 indexed\\) (.+?) about "       \
    "(.+)\\. Do not include any other text in your response\\.$"

static pcre2_code *question_re(void)
{
    int err;
    PCRE2_SIZE off;
    pcre2_code *re =
        pcre2_compile((PCRE2_SPTR)QUESTION_RE, PCRE2_ZERO_TERMINATED, PCRE2_UTF, &err, &off, NULL);
    assert_non_null(re);
    return re;
}

/* the format named by a question, or NULL if it does not have the real form */
static char *question_format(pcre2_code *re, const char *q)
{
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    char *fmt = NULL;
    if (pcre2_match(re, (PCRE2_SPTR)q, strlen(q), 0, 0, md, NULL) > 0) {
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        fmt = dsa_xstrndup(q + ov[6], ov[7] - ov[6]);
    }
    pcre2_match_data_free(md);
    return fmt;
}

/* Subsets of Gemini grading logs of real openai/mrcr rows (tests/data/mrcr, README there):
   dataset_index is r, token_count is Σ o200k(content). The block map must put every row in
   the bin of its token count or the one below (the generation-time count was a few percent
   larger, docs/mrcr.md "Bins"), and the real questions must have the form synth writes. The
   subsets keep every row of the full logs whose count falls in the bin below (40 of 1,326). */
static void test_real_logs(void **state)
{
    (void)state;
    const char *data = getenv("DSA_DATA");
    if (!data || !*data)
        fail_msg("DSA_DATA is not set (run the tests through ctest)");
    static const char *const logs[] = {"evaluation_log_gemini_3_flash_8needle.jsonl",
                                       "evaluation_log_gemini_3_flash_2needle.jsonl"};
    pcre2_code *re = question_re();
    struct dsa_strlist real_formats = {0};
    long rows = 0, same = 0, below = 0;
    for (size_t f = 0; f < DSA_ARRAY_SIZE(logs); f++) {
        struct dsa_buf p = DSA_BUF_INIT;
        dsa_buf_addf(&p, "%s/mrcr/%s", data, logs[f]);
        dsa_lines *l = dsa_lines_open(p.data);
        assert_non_null(l);
        const char *line;
        size_t len;
        while (dsa_lines_next(l, &line, &len) > 0) {
            json_t *o = json_loadb(line, len, 0, NULL);
            assert_non_null(o);
            json_t *tc = json_object_get(o, "token_count");
            const char *q =
                json_string_value(json_object_get(json_object_get(o, "input"), "content"));
            if (json_is_integer(tc) && q) {
                long r = (long)json_integer_value(json_object_get(o, "dataset_index"));
                int official = dsa_mrcr_official_bin(r);
                int counted = dsa_mrcr_bin_of_tokens((long)json_integer_value(tc));
                assert_true(official >= 0);
                assert_true(counted == official || counted == official - 1);
                same += counted == official;
                below += counted == official - 1;
                rows++;
                char *fmt = question_format(re, q);
                assert_non_null(fmt);
                size_t i = 0;
                while (i < real_formats.n && strcmp(real_formats.v[i], fmt))
                    i++;
                if (i == real_formats.n)
                    dsa_strlist_push(&real_formats, fmt);
                else
                    free(fmt);
            }
            json_decref(o);
        }
        dsa_lines_free(&l);
        dsa_buf_release(&p);
    }
    print_message("real logs: %ld rows, block-map bin = token-count bin on %ld, one below on %ld\n",
                  rows, same, below);
    /* computed independently with CPython over the same files (block map, 8K-doubling edges) */
    assert_int_equal(rows, 184);
    assert_int_equal(same, 144);
    assert_int_equal(below, 40);
    assert_int_equal(real_formats.n, 10);

    /* synthetic questions: the same form, and only formats the real data uses */
    char *path = synth_file(1u << 8, 0x1, 30, 5);
    dsa_mrcr_reader *rd = dsa_mrcr_open(path, NULL);
    struct dsa_mrcr_row row = {0};
    while (dsa_mrcr_next(rd, &row) > 0) {
        size_t nm = json_array_size(row.messages);
        const char *q =
            json_string_value(json_object_get(json_array_get(row.messages, nm - 1), "content"));
        char *fmt = question_format(re, q);
        assert_non_null(fmt);
        bool known = false;
        for (size_t i = 0; i < real_formats.n; i++)
            known |= !strcmp(real_formats.v[i], fmt);
        assert_true(known);
        free(fmt);
    }
    dsa_mrcr_row_release(&row);
    dsa_mrcr_free(&rd);
    unlink(path);
    free(path);
    dsa_strlist_free_items(&real_formats);
    pcre2_code_free(re);
}

/* ---------------------------------------------------------------- samples */

static void test_embedded_samples(void **state)
{
    (void)state;
    const char *src = getenv("DSA_SRC");
    if (!src)
        fail_msg("DSA_SRC is not set (run the tests through ctest)");
    static const char *const names[] = {"mrcr-synth-8needle.jsonl",
                                        "mrcr-synth-2needle-tiny.jsonl"};
    char *cache = tmp_path("cache");
    unlink(cache);
    setenv("DSA_EVAL_CACHE", cache, 1);
    for (size_t i = 0; i < DSA_ARRAY_SIZE(names); i++) {
        struct dsa_buf p = DSA_BUF_INIT;
        dsa_buf_addf(&p, "%s/datasets/samples/%s", src, names[i]);
        size_t len;
        char *want = slurp(p.data, &len);
        const struct dsa_sample *s = dsa_sample_find(names[i]);
        assert_non_null(s);
        assert_ptr_equal(dsa_sample_find(strchr(DSA_SAMPLE_MRCR_DEFAULT, ':') + 1),
                         dsa_sample_find(DSA_SAMPLE_MRCR_DEFAULT));
        /* the embedded bytes are the shipped file (a rebuild after a regeneration) */
        assert_int_equal(s->len, len);
        assert_memory_equal(s->data, want, len);
        char hex[65];
        dsa_sha256_hex(want, len, hex);
        assert_string_equal(s->sha256, hex);
        /* materialised once, verified on reuse, rewritten when damaged */
        char *path = dsa_sample_path(names[i]);
        assert_non_null(path);
        assert_int_equal(dsa_sha256_file(path, hex), 0);
        assert_string_equal(hex, s->sha256);
        FILE *f = fopen(path, "ab");
        fputs("x", f);
        fclose(f);
        char *again = dsa_sample_path(names[i]);
        assert_string_equal(again, path);
        assert_int_equal(dsa_sha256_file(path, hex), 0);
        assert_string_equal(hex, s->sha256);
        /* and the reader opens it by name */
        struct dsa_buf sname = DSA_BUF_INIT;
        dsa_buf_addf(&sname, "sample:%s", names[i]);
        assert_true(count_rows(sname.data, NULL) > 0);
        unlink(path);
        free(path);
        free(again);
        free(want);
        dsa_buf_release(&p);
        dsa_buf_release(&sname);
    }
    assert_null(dsa_sample_find("nope.jsonl"));
    assert_null(dsa_sample_path("sample:nope.jsonl"));
    unsetenv("DSA_EVAL_CACHE");
    free(cache);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tok_known_split),
        cmocka_unit_test(test_tok_unicode_and_invalid),
        cmocka_unit_test(test_tok_pieces_cover_input),
        cmocka_unit_test(test_bins_parse),
        cmocka_unit_test(test_official_block_map),
        cmocka_unit_test(test_official_layout_rejected),
        cmocka_unit_test(test_explicit_bins_and_filters),
        cmocka_unit_test(test_rows_pages),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_synth_determinism),
        cmocka_unit_test(test_synth_rows_parse_back),
        cmocka_unit_test(test_limit_stops_reading),
        cmocka_unit_test(test_rewind),
        cmocka_unit_test(test_messages_json),
#ifdef DSA_TEST_RSS
        cmocka_unit_test(test_streaming_memory),
#endif
        cmocka_unit_test(test_real_logs),
        cmocka_unit_test(test_embedded_samples),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
