/* Unit tests of evals/summary: per-bin tables for one and several runs, GSM8K-style single
 * bin, needle-count grouping, the JSON document, and a randomized consistency check.
 * The expected tables were checked by hand (the arithmetic is in the comments).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "evals/summary.h"
#include "util/hash.h"

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, 0, &e);
    if (!v)
        fail_msg("fixture: %s", e.text);
    return v;
}

static void check_text(const char *runs_json, const char *want)
{
    json_t *runs = parse(runs_json);
    json_t *s = dsa_summary_new(runs);
    assert_non_null(s);
    struct dsa_buf b = DSA_BUF_INIT;
    dsa_summary_render_text(s, &b);
    if (strcmp(b.data, want))
        fail_msg("got:\n%s\nwant:\n%s", b.data, want);
    dsa_buf_release(&b);
    json_decref(s);
    json_decref(runs);
}

/* One run. ≤8K: 1.0 and 0.5 scored (mean 0.75, prefix 2/2, exact 1/2), one failed; ≤16K
   (first in the file, sorted after ≤8K): 0.25 scored, one excluded. all: 1.75/3 = 0.5833,
   prefix 2/3, exact 1/3; macro (0.75 + 0.25)/2 = 0.5. */
static const char one_run[] =
    "[[\n"
    "{\"id\":\"n2/"
    "r0003\",\"bin\":\"≤16K\",\"bin_tokens\":16384,\"status\":\"ok\",\"score\":0.25,"
    "\"error\":null,\"prefix_hit\":false,\"exact\":false},\n"
    "{\"id\":\"n2/"
    "r0004\",\"bin\":\"≤16K\",\"bin_tokens\":16384,\"status\":\"excluded\",\"score\":"
    "null,\"error\":\"over_context: 20000 prompt tokens + 4096 > 16384\"},\n"
    "{\"id\":\"n2/"
    "r0000\",\"bin\":\"≤8K\",\"bin_tokens\":8192,\"status\":\"ok\",\"score\":1.0,"
    "\"error\":null,\"prefix_hit\":true,\"exact\":true},\n"
    "{\"id\":\"n2/"
    "r0001\",\"bin\":\"≤8K\",\"bin_tokens\":8192,\"status\":\"ok\",\"score\":0.5,"
    "\"error\":null,\"prefix_hit\":true,\"exact\":false},\n"
    "{\"id\":\"n2/"
    "r0002\",\"bin\":\"≤8K\",\"bin_tokens\":8192,\"status\":\"failed\",\"score\":null,"
    "\"error\":\"http 500: boom\"}\n"
    "]]\n";

/* one_run as a table */
static void test_one(void **state)
{
    (void)state;
    check_text(one_run, "bin   scored  excluded  failed    mean  prefix hit   exact\n"
                        "≤8K        2         0       1  0.7500      100.0%   50.0%\n"
                        "≤16K       1         1       0  0.2500        0.0%    0.0%\n"
                        "all        3         1       1  0.5833       66.7%   33.3%\n"
                        "macro mean over 2 bins: 0.5000\n"
                        "failed: 1\n"
                        "  n2/r0002  http 500: boom\n"
                        "excluded: 1 (the ids are in --json and the run files)\n"
                        "  ≤16K  over_context  1 sample\n");
}

/* Two runs. ≤8K run 1 (1.0, 0.5) = 0.75, run 2 0.75 with one failed, pooled 2.25/3 = 0.75;
   ≤1M run 1 0.0, run 2 0.5, pooled 0.25; all: run 1 1.5/3 = 0.5, run 2 1.25/2 = 0.625,
   pooled 2.75/5 = 0.55; macro: run 1 (0.75 + 0)/2, run 2 (0.75 + 0.5)/2, pooled (0.75 +
   0.25)/2. */
static void test_two(void **state)
{
    (void)state;
    check_text("[[\n"
               "{\"id\":\"n2/"
               "r0000\",\"bin\":\"≤8K\",\"bin_tokens\":8192,\"score\":1.0,\"prefix_hit\":true,"
               "\"exact\":true},\n"
               "{\"id\":\"n2/"
               "r0001\",\"bin\":\"≤8K\",\"bin_tokens\":8192,\"score\":0.5,\"prefix_hit\":true,"
               "\"exact\":false},\n"
               "{\"id\":\"n2/"
               "r0100\",\"bin\":\"≤1M\",\"bin_tokens\":1048576,\"score\":0.0,\"prefix_hit\":false,"
               "\"exact\":false}\n"
               "],[\n"
               "{\"id\":\"n2/"
               "r0000\",\"bin\":\"≤8K\",\"bin_tokens\":8192,\"score\":0.75,\"prefix_hit\":true,"
               "\"exact\":false},\n"
               "{\"id\":\"n2/"
               "r0001\",\"bin\":\"≤8K\",\"bin_tokens\":8192,\"status\":\"failed\",\"score\":null,"
               "\"error\":\"timeout after 600 s\"},\n"
               "{\"id\":\"n2/"
               "r0100\",\"bin\":\"≤1M\",\"bin_tokens\":1048576,\"score\":0.5,\"prefix_hit\":true,"
               "\"exact\":false}\n"
               "]]\n",
               "bin  run  scored  excluded  failed    mean  prefix hit   exact\n"
               "≤8K    1       2         0       0  0.7500      100.0%   50.0%\n"
               "       2       1         0       1  0.7500      100.0%    0.0%\n"
               "     all       3         0       1  0.7500      100.0%   33.3%\n"
               "≤1M    1       1         0       0  0.0000        0.0%    0.0%\n"
               "       2       1         0       0  0.5000      100.0%    0.0%\n"
               "     all       2         0       0  0.2500       50.0%    0.0%\n"
               "all    1       3         0       0  0.5000       66.7%   33.3%\n"
               "       2       2         0       1  0.6250      100.0%    0.0%\n"
               "     all       5         0       1  0.5500       80.0%   20.0%\n"
               "macro mean over 2 bins: run 1 0.3750, run 2 0.6250, all 0.5000\n"
               "failed: 1\n"
               "  run 2  n2/r0001  timeout after 600 s\n");
}

/* issue #11: 3 over-context samples in each of 3 runs are one line, not 9 */
static void test_excluded_counts(void **state)
{
    (void)state;
    struct dsa_buf runs = DSA_BUF_INIT;
    dsa_buf_adds(&runs, "[");
    for (int r = 0; r < 3; r++) {
        dsa_buf_adds(&runs, r ? ",[" : "[");
        dsa_buf_adds(&runs, "{\"id\":\"a\",\"bin\":\"≤8K\",\"bin_tokens\":8192,\"score\":1}");
        for (int i = 0; i < 3; i++)
            dsa_buf_addf(
                &runs,
                ",{\"id\":\"x%d\",\"bin\":\"≤256K\",\"bin_tokens\":262144,\"status\":"
                "\"excluded\",\"score\":null,\"error\":\"over_context: %d prompt tokens\"}",
                i, 270000 + i);
        if (r == 0)
            dsa_buf_adds(&runs, ",{\"id\":\"y\",\"bin\":\"≤8K\",\"bin_tokens\":8192,\"status\":"
                                "\"excluded\",\"score\":null,\"error\":null}");
        dsa_buf_adds(&runs, "]");
    }
    dsa_buf_adds(&runs, "]");
    json_t *doc = json_loads(runs.data, 0, NULL);
    assert_non_null(doc);
    json_t *s = dsa_summary_new(doc);
    struct dsa_buf b = DSA_BUF_INIT;
    dsa_summary_render_text(s, &b);
    const char *tail = strstr(b.data, "excluded: ");
    assert_non_null(tail);
    assert_string_equal(tail, "excluded: 10 (the ids are in --json and the run files)\n"
                              "  ≤256K  over_context  3 samples × 3 runs\n"
                              "  ≤8K  excluded  1 sample\n");
    /* the JSON keeps every id of every run */
    assert_int_equal(json_array_size(json_object_get(s, "excluded")), 10);
    dsa_buf_release(&b);
    dsa_buf_release(&runs);
    json_decref(s);
    json_decref(doc);
}

/* an excluded record whose bin label is longer than any fixed key buffer (libFuzzer's
   fuzz_run_file found the old 192-byte key losing its tab and the printer reading past it) */
static void test_excluded_long_bin(void **state)
{
    (void)state;
    char bin[301];
    memset(bin, 'b', 300);
    bin[300] = 0;
    struct dsa_buf runs = DSA_BUF_INIT;
    dsa_buf_addf(&runs,
                 "[[{\"id\":\"a\",\"bin\":\"≤8K\",\"bin_tokens\":8192,\"score\":1},"
                 "{\"id\":\"x\",\"bin\":\"%s\",\"status\":\"excluded\",\"score\":null,"
                 "\"error\":\"over_context: 9 prompt tokens\"}]]",
                 bin);
    json_t *doc = json_loads(runs.data, 0, NULL);
    assert_non_null(doc);
    json_t *s = dsa_summary_new(doc);
    struct dsa_buf b = DSA_BUF_INIT, want = DSA_BUF_INIT;
    dsa_summary_render_text(s, &b);
    dsa_buf_addf(&want,
                 "excluded: 1 (the ids are in --json and the run files)\n  %s  over_context  1 "
                 "sample\n",
                 bin);
    const char *tail = strstr(b.data, "excluded: ");
    assert_non_null(tail);
    assert_string_equal(tail, want.data);
    dsa_buf_release(&want);
    dsa_buf_release(&b);
    dsa_buf_release(&runs);
    json_decref(s);
    json_decref(doc);
}

/* GSM8K: one bin "all", score = correct 0/1: a single row, no prefix or exact columns */
static void test_gsm(void **state)
{
    (void)state;
    check_text("[[{\"id\":\"q0000\",\"bin\":\"all\",\"score\":1},{\"id\":\"q0001\",\"bin\":\"all\","
               "\"score\":0},{\"id\":\"q0002\",\"bin\":\"all\",\"score\":1},{\"id\":\"q0003\","
               "\"bin\":\"all\",\"score\":1}]]\n",
               "bin  scored  excluded  failed    mean  prefix hit   exact\n"
               "all       4         0       0  0.7500           -       -\n");
}

/* Two needle counts: a table per count with its own "all" and macro mean, then the total:
   2 needles (1.0 + 0.5)/2, 4 needles (0.5 + 0.25)/2, all 2.25/4 = 0.5625. */
static void test_needles(void **state)
{
    (void)state;
    check_text(
        "[[\n"
        "{\"id\":\"n4/r0000\",\"needles\":4,\"bin\":\"≤8K\",\"bin_tokens\":8192,\"score\":0.5},\n"
        "{\"id\":\"n2/r0000\",\"needles\":2,\"bin\":\"≤8K\",\"bin_tokens\":8192,\"score\":1.0},\n"
        "{\"id\":\"n2/r0100\",\"needles\":2,\"bin\":\"≤16K\",\"bin_tokens\":16384,\"score\":0.5},\n"
        "{\"id\":\"n4/r0100\",\"needles\":4,\"bin\":\"≤16K\",\"bin_tokens\":16384,\"score\":0.25}\n"
        "]]\n",
        "needles  bin   scored  excluded  failed    mean  prefix hit   exact\n"
        "      2  ≤8K        1         0       0  1.0000           -       -\n"
        "      2  ≤16K       1         0       0  0.5000           -       -\n"
        "      2  all        2         0       0  0.7500           -       -\n"
        "      4  ≤8K        1         0       0  0.5000           -       -\n"
        "      4  ≤16K       1         0       0  0.2500           -       -\n"
        "      4  all        2         0       0  0.3750           -       -\n"
        "    all  all        4         0       0  0.5625           -       -\n"
        "macro mean (2 needles) over 2 bins: 0.7500\n"
        "macro mean (4 needles) over 2 bins: 0.3750\n"
        "macro mean over 4 bins: 0.5625\n");
}

static void test_json_document(void **state)
{
    (void)state;
    json_t *runs = parse(one_run);
    json_t *s = dsa_summary_new(runs);
    assert_non_null(s);
    assert_int_equal(json_integer_value(json_object_get(s, "dsa_eval_summary")), 1);
    assert_int_equal(json_integer_value(json_object_get(s, "runs")), 1);
    json_t *rows = json_object_get(s, "rows");
    assert_int_equal(json_array_size(rows), 3);
    json_t *r0 = json_array_get(rows, 0);
    assert_string_equal(json_string_value(json_object_get(r0, "bin")), "\xe2\x89\xa4"
                                                                       "8K");
    assert_int_equal(json_integer_value(json_object_get(r0, "bin_tokens")), 8192);
    assert_true(json_is_false(json_object_get(r0, "total")));
    json_t *p0 = json_object_get(r0, "pooled");
    assert_true(json_real_value(json_object_get(p0, "mean")) == 0.75);
    assert_true(json_real_value(json_object_get(p0, "exact_rate")) == 0.5);
    assert_null(json_object_get(p0, "macro_mean")); /* only on "all" rows */
    json_t *all = json_object_get(json_array_get(rows, 2), "pooled");
    assert_true(json_is_true(json_object_get(json_array_get(rows, 2), "total")));
    assert_true(json_is_null(json_object_get(json_array_get(rows, 2), "bin_tokens")));
    assert_true(json_real_value(json_object_get(all, "mean")) == 1.75 / 3);
    assert_true(json_real_value(json_object_get(all, "macro_mean")) == 0.5);
    assert_int_equal(json_integer_value(json_object_get(all, "macro_bins")), 2);
    json_t *f = json_array_get(json_object_get(s, "failed"), 0);
    assert_string_equal(json_string_value(json_object_get(f, "id")), "n2/r0002");
    assert_string_equal(json_string_value(json_object_get(f, "error")), "http 500: boom");
    assert_int_equal(json_integer_value(json_object_get(f, "run")), 1);
    json_t *x = json_array_get(json_object_get(s, "excluded"), 0);
    assert_string_equal(json_string_value(json_object_get(x, "reason")),
                        "over_context: 20000 prompt tokens + 4096 > 16384");
    /* the JSON rendering round-trips to the same document */
    struct dsa_buf b = DSA_BUF_INIT;
    dsa_summary_render_json(s, &b);
    assert_true(b.len > 0 && b.data[b.len - 1] == '\n');
    json_t *back = parse(b.data);
    assert_true(json_equal(back, s));
    json_decref(back);
    dsa_buf_release(&b);
    json_decref(s);
    json_decref(runs);
}

static void test_bad_records(void **state)
{
    (void)state;
    /* dsa_summary_print: the same text as the renderer */
    json_t *gsm = parse("[[{\"id\":\"q0\",\"bin\":\"all\",\"score\":1},"
                        "{\"id\":\"q1\",\"bin\":\"all\",\"score\":0}]]");
    FILE *f = tmpfile();
    assert_int_equal(dsa_summary_print(gsm, false, f), 0);
    rewind(f);
    char got[256] = "";
    size_t n = fread(got, 1, sizeof got - 1, f);
    got[n] = 0;
    assert_string_equal(got, "bin  scored  excluded  failed    mean  prefix hit   exact\n"
                             "all       2         0       0  0.5000           -       -\n");
    fclose(f);
    json_decref(gsm);
    json_t *runs = parse("[[{\"id\":\"a\",\"score\":1}]]");
    assert_null(dsa_summary_new(runs));
    json_decref(runs);
    runs = parse("[[{\"bin\":\"all\",\"score\":1}]]");
    assert_null(dsa_summary_new(runs));
    json_decref(runs);
    /* no runs, or empty runs: an empty table, not a crash */
    runs = parse("[]");
    json_t *s = dsa_summary_new(runs);
    assert_non_null(s);
    assert_int_equal(json_array_size(json_object_get(s, "rows")), 0);
    struct dsa_buf b = DSA_BUF_INIT;
    dsa_summary_render_text(s, &b);
    assert_string_equal(b.data, "bin  scored  excluded  failed    mean  prefix hit   exact\n");
    dsa_buf_release(&b);
    json_decref(s);
    json_decref(runs);
}

/* Randomized: 3 runs x 300 records over 4 bins with random statuses; the pooled and per-run
   means, counts and macro means must equal a direct computation here, bit for bit (same
   summation order). */
static void test_random_consistency(void **state)
{
    (void)state;
    static const char *const bins[] = {"b8", "b16", "b32", "b64"};
    uint64_t seed = 7;
    json_t *runs = json_array();
    double sum[4][4] = {{0}}; /* [run or 3 = pooled][bin] */
    long long n[4][4] = {{0}}, nx[4] = {0}, nf[4] = {0};
    double tsum[4] = {0};
    long long tn[4] = {0};
    for (int r = 0; r < 3; r++) {
        json_t *recs = json_array();
        for (int i = 0; i < 300; i++) {
            seed = dsa_splitmix64(seed);
            int b = (int)(seed % 4);
            int kind = (int)((seed >> 8) % 10); /* 0: excluded, 1: failed, else scored */
            double score = (double)(seed >> 11) / 9007199254740992.0;
            char id[16];
            snprintf(id, sizeof id, "r%04d", i);
            json_t *rec = json_pack("{s:s,s:s,s:I}", "id", id, "bin", bins[b], "bin_tokens",
                                    (json_int_t)(8192 << b));
            if (kind == 0) {
                json_object_set_new(rec, "status", json_string("excluded"));
                json_object_set_new(rec, "score", json_null());
                nx[r]++;
                nx[3]++;
            } else if (kind == 1) {
                json_object_set_new(rec, "status", json_string("failed"));
                json_object_set_new(rec, "score", json_null());
                nf[r]++;
                nf[3]++;
            } else {
                json_object_set_new(rec, "status", json_string("ok"));
                json_object_set_new(rec, "score", json_real(score));
                sum[r][b] += score;
                n[r][b]++;
                tsum[r] += score;
                tn[r]++;
            }
            json_array_append_new(recs, rec);
        }
        json_array_append_new(runs, recs);
    }
    /* pooled sums in run order, each in file order */
    for (int r = 0; r < 3; r++) {
        size_t i;
        json_t *rec;
        json_array_foreach(json_array_get(runs, (size_t)r), i, rec)
        {
            json_t *sc = json_object_get(rec, "score");
            if (!json_is_number(sc))
                continue;
            const char *bn = json_string_value(json_object_get(rec, "bin"));
            int b = 0;
            while (strcmp(bins[b], bn))
                b++;
            sum[3][b] += json_real_value(sc);
            n[3][b]++;
            tsum[3] += json_real_value(sc);
            tn[3]++;
        }
    }
    json_t *s = dsa_summary_new(runs);
    assert_non_null(s);
    json_t *rows = json_object_get(s, "rows");
    assert_int_equal(json_array_size(rows), 5);
    for (int b = 0; b < 4; b++) {
        json_t *row = json_array_get(rows, (size_t)b);
        assert_string_equal(json_string_value(json_object_get(row, "bin")), bins[b]);
        for (int r = 0; r < 4; r++) {
            json_t *st = r < 3 ? json_array_get(json_object_get(row, "runs"), (size_t)r)
                               : json_object_get(row, "pooled");
            assert_int_equal(json_integer_value(json_object_get(st, "scored")), n[r][b]);
            assert_true(json_real_value(json_object_get(st, "mean")) == sum[r][b] / n[r][b]);
        }
    }
    json_t *all = json_array_get(rows, 4);
    for (int r = 0; r < 4; r++) {
        json_t *st = r < 3 ? json_array_get(json_object_get(all, "runs"), (size_t)r)
                           : json_object_get(all, "pooled");
        assert_true(json_real_value(json_object_get(st, "mean")) == tsum[r] / tn[r]);
        assert_int_equal(json_integer_value(json_object_get(st, "excluded")), nx[r]);
        assert_int_equal(json_integer_value(json_object_get(st, "failed")), nf[r]);
        double macro = 0;
        for (int b = 0; b < 4; b++)
            macro += sum[r][b] / n[r][b];
        assert_true(json_real_value(json_object_get(st, "macro_mean")) == macro / 4);
    }
    assert_int_equal(json_array_size(json_object_get(s, "excluded")), nx[3]);
    assert_int_equal(json_array_size(json_object_get(s, "failed")), nf[3]);
    /* the text lists stop at DSA_SUMMARY_TEXT_LIST_MAX lines */
    struct dsa_buf b = DSA_BUF_INIT;
    dsa_summary_render_text(s, &b);
    char want[64];
    snprintf(want, sizeof want, "  ... and %lld more (--json lists all)\n",
             nf[3] - DSA_SUMMARY_TEXT_LIST_MAX);
    assert_non_null(strstr(b.data, want));
    dsa_buf_release(&b);
    json_decref(s);
    json_decref(runs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one),
        cmocka_unit_test(test_two),
        cmocka_unit_test(test_excluded_counts),
        cmocka_unit_test(test_excluded_long_bin),
        cmocka_unit_test(test_gsm),
        cmocka_unit_test(test_needles),
        cmocka_unit_test(test_json_document),
        cmocka_unit_test(test_bad_records),
        cmocka_unit_test(test_random_consistency),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
