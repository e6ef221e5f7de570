/* Unit tests of the GSM8K loader, prompt modes (spec sha256 vectors) and answer extraction
 * (tests/data/gsm8k_extract.test triplets, plus parity with CPython `re` when $DSA_PYTHON is
 * set).
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

#include "datasets/gsm8k.h"
#include "evals/gsm8k_extract.h"
#include "evals/gsm8k_prompt.h"
#include "util/buf.h"
#include "util/exitcode.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/lines.h"

static dsa_gsm8k *test_split, *train_split;

/* tests/data/gsm8k (env DSA_DATA): the whole test split and the first 5 rows of train, the only
   rows a prompt mode takes from it (README.md there) */
static char *data_path(const char *name)
{
    const char *data = getenv("DSA_DATA");
    if (!data || !*data)
        return NULL;
    size_t n = strlen(data) + strlen(name) + 32;
    char *p = malloc(n);
    snprintf(p, n, "%s/gsm8k/%s", data, name);
    return p;
}

static int load_splits(void **state)
{
    (void)state;
    char *t = data_path("test.jsonl"), *r = data_path("train.jsonl");
    int bad = !t || !r || dsa_gsm8k_load(t, &test_split) || dsa_gsm8k_load(r, &train_split);
    if (bad)
        print_error("cannot load the GSM8K test data under DSA_DATA (run through ctest)\n");
    free(t);
    free(r);
    return bad ? -1 : 0;
}

static int free_splits(void **state)
{
    (void)state;
    dsa_gsm8k_free(&test_split);
    dsa_gsm8k_free(&train_split);
    return 0;
}

static void test_loader(void **state)
{
    (void)state;
    assert_int_equal(dsa_gsm8k_count(test_split), 1319);
    assert_int_equal(dsa_gsm8k_count(train_split), 5);
    /* docs/gsm8k.md "Prompt test vectors": file hashes and the first 32 gold answers */
    assert_string_equal(dsa_gsm8k_sha256(test_split),
                        "3730d312f6e3440559ace48831e51066acaca737f6eabec99bccb9e4b3c39d14");
    /* the first 5 lines of upstream train.jsonl (17f347dc… for all 7,473 rows) */
    assert_string_equal(dsa_gsm8k_sha256(train_split),
                        "5cf05b0ccca50349f5f5185a439502ec50117d1021ec7dfce2f09dd2083f9a25");
    static const char *const gold[32] = {"18",  "3",     "70000", "540", "20", "64",  "260", "160",
                                         "45",  "460",   "366",   "694", "13", "18",  "60",  "125",
                                         "230", "57500", "7",     "6",   "15", "14",  "7",   "8",
                                         "26",  "2",     "243",   "16",  "25", "104", "109", "80"};
    for (size_t i = 0; i < 32; i++)
        assert_string_equal(dsa_gsm8k_row(test_split, i)->gold, gold[i]);
    /* \u2019 decodes to UTF-8 */
    const struct dsa_gsm8k_row *r0 = dsa_gsm8k_row(test_split, 0);
    assert_memory_equal(r0->question, "Janet\xe2\x80\x99s ducks", 15);
    /* commas removed, sign kept: every gold is an optionally negative integer */
    size_t negatives = 0;
    for (size_t i = 0; i < dsa_gsm8k_count(test_split); i++) {
        const char *g = dsa_gsm8k_row(test_split, i)->gold;
        if (*g == '-')
            negatives++, g++;
        assert_true(*g);
        for (; *g; g++)
            assert_true(*g >= '0' && *g <= '9');
    }
    assert_true(negatives >= 2);
}

static void test_gold_rule(void **state)
{
    (void)state;
    char *g = dsa_gsm8k_gold_of("a #### 1\nb\n#### 2,125 \n", 23);
    assert_string_equal(g, "2125");
    free(g);
    assert_null(dsa_gsm8k_gold_of("no mark ####5", 13));
}

static void test_loader_errors(void **state)
{
    (void)state;
    char path[] = "/tmp/dsa-gsm8k-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *bad = "{\"question\": \"q\", \"answer\": \"#### 1\"}\n{\"question\": 3}\n";
    assert_int_equal(write(fd, bad, strlen(bad)), (ssize_t)strlen(bad));
    close(fd);
    dsa_gsm8k *d = NULL;
    assert_int_equal(dsa_gsm8k_load(path, &d), DSA_EXIT_DATA);
    assert_null(d);
    FILE *f = fopen(path, "w");
    fputs("{\"question\": \"q\", \"answer\": \"no final\"}\n", f);
    fclose(f);
    assert_int_equal(dsa_gsm8k_load(path, &d), DSA_EXIT_DATA);
    f = fopen(path, "w");
    fputs("{\"question\": \"q\\u00e9\", \"answer\": \"x\\n#### -1,000\"}\n\n", f);
    fclose(f);
    assert_int_equal(dsa_gsm8k_load(path, &d), 0);
    assert_int_equal(dsa_gsm8k_count(d), 1);
    assert_string_equal(dsa_gsm8k_row(d, 0)->question, "q\xc3\xa9");
    assert_string_equal(dsa_gsm8k_row(d, 0)->gold, "-1000");
    /* the sha256 is taken while reading: the file's bytes, terminators and blank lines too */
    char want[65];
    assert_int_equal(dsa_sha256_file(path, want), 0);
    assert_string_equal(dsa_gsm8k_sha256(d), want);
    dsa_gsm8k_free(&d);
    assert_null(d);
    f = fopen(path, "w");
    fputs("\r\n{\"question\": \"q\", \"answer\": \"#### 1\"}\r\n\n{\"question\": \"r\", "
          "\"answer\": \"#### 2\"}",
          f);
    fclose(f);
    assert_int_equal(dsa_gsm8k_load(path, &d), 0);
    assert_int_equal(dsa_gsm8k_count(d), 2);
    assert_int_equal(dsa_sha256_file(path, want), 0);
    assert_string_equal(dsa_gsm8k_sha256(d), want);
    dsa_gsm8k_free(&d);
    unlink(path);
    assert_int_equal(dsa_gsm8k_load("/nonexistent/test.jsonl", &d), DSA_EXIT_IO);
}

static void prompt_hash(const char *mode, size_t from, size_t n, bool nul, char hex[65])
{
    const struct dsa_gsm8k_mode *m = dsa_gsm8k_mode_find(mode);
    assert_non_null(m);
    struct dsa_buf b = DSA_BUF_INIT;
    dsa_buf_init(&b);
    for (size_t i = from; i < from + n; i++) {
        const struct dsa_gsm8k_row *r = dsa_gsm8k_row(test_split, i);
        assert_int_equal(
            dsa_gsm8k_prompt(m, train_split, test_split, r->question, r->question_len, &b), 0);
        if (nul)
            dsa_buf_add(&b, "", 1);
    }
    dsa_sha256_hex(b.data, b.len, hex);
    dsa_buf_release(&b);
}

static void test_prompt_vectors(void **state)
{
    (void)state;
    char hex[65];
    /* docs/gsm8k.md "Prompt test vectors" */
    prompt_hash("vllm5", 0, 1, false, hex);
    assert_string_equal(hex, "ea821015b5b035b5699391cb903e1dc2ba0bfff20e99caa72f169af47609249e");
    prompt_hash("cot8", 0, 1, false, hex);
    assert_string_equal(hex, "901fead9abd2535b6d0610c3c90125f38cad81678c4b2b98ec8fb818e3948bde");
    prompt_hash("sglang5", 0, 1, false, hex);
    assert_string_equal(hex, "239293754edb5e2d547ccb32b43fbd975ae92f8fccd62c05014dd101d39278bd");
    prompt_hash("vllm5", 0, 32, true, hex);
    assert_string_equal(hex, "5469eda54a031a728e0bb7f47e458dfe8609a12e9e4fa22a92180e2b719a7d17");
    prompt_hash("cot8", 0, 32, true, hex);
    assert_string_equal(hex, "cec5f6bde7691f6aa0ada15ac07df43e700f39a75757dc77f911da6c9251e3c3");
    /* computed with CPython from SGLang's bench_sglang.py prompt code (f-strings over test) */
    prompt_hash("sglang5", 0, 32, true, hex);
    assert_string_equal(hex, "c9c6fb65da332690a9a22453cb3f324aa94dfefd3244a4dc515de0c4f1898034");
    /* lm-eval gsm8k with train[0..4] as shots has the vllm5 bytes */
    prompt_hash("gsm8k", 0, 32, true, hex);
    assert_string_equal(hex, "5469eda54a031a728e0bb7f47e458dfe8609a12e9e4fa22a92180e2b719a7d17");
    /* chat: zero-shot "Question: Q\nAnswer:" */
    prompt_hash("chat", 0, 32, true, hex);
    assert_string_equal(hex, "f127089a597c51d4fc1b3398f611d9a8bdc7d31e4545718e8f7d48ab76211eb8");
}

static void test_prompt_modes(void **state)
{
    (void)state;
    const struct dsa_gsm8k_mode *m = dsa_gsm8k_mode_find("vllm5");
    assert_ptr_equal(m, &dsa_gsm8k_modes[0]); /* the default is the first row */
    assert_int_equal(m->max_tokens, 256);
    assert_int_equal(m->n_stop, 3);
    assert_string_equal(m->stop[0], "Question");
    assert_int_equal(dsa_gsm8k_mode_find("sglang5")->max_tokens, 512);
    assert_string_equal(dsa_gsm8k_mode_find("cot8")->stop[0], "Q:");
    assert_true(dsa_gsm8k_mode_find("chat")->chat);
    assert_null(dsa_gsm8k_mode_find("posix"));
    /* a shot source that is too short is a clear error, not a short prompt */
    struct dsa_buf b = DSA_BUF_INIT;
    dsa_buf_init(&b);
    assert_int_equal(dsa_gsm8k_prompt(m, NULL, NULL, "q", 1, &b), -1);
    assert_int_equal(dsa_gsm8k_prompt(dsa_gsm8k_mode_find("cot8"), NULL, NULL, "Why?", 4, &b), 0);
    assert_true(b.len > 4 && !memcmp(b.data + b.len - 10, "Q: Why?\nA:", 10));
    dsa_buf_release(&b);
}

/* Reads one value line of the triplet file: a JSON string if it starts with '"'. */
static char *triplet_value(const char *line, size_t len)
{
    if (len && line[0] == '"') {
        json_error_t err;
        json_t *v = json_loadb(line, len, JSON_DECODE_ANY, &err);
        assert_non_null(v);
        assert_true(json_is_string(v));
        char *s = strdup(json_string_value(v));
        json_decref(v);
        return s;
    }
    return strndup(line, len);
}

static void test_extract_triplets(void **state)
{
    (void)state;
    const char *src = getenv("DSA_SRC");
    assert_non_null(src);
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/data/gsm8k_extract.test", src);
    dsa_lines *r = dsa_lines_open(path);
    assert_non_null(r);
    dsa_gsm8k_extractor *x = dsa_gsm8k_extractor_new();
    const char *line;
    size_t len;
    char *group[3];
    int n = 0, groups = 0, fails = 0;
    bool expect_fail = false;
    for (;;) {
        int rc = dsa_lines_next(r, &line, &len);
        assert_true(rc >= 0);
        if (rc == 1 && len && line[0] == '#')
            continue;
        if (rc == 1 && len == 6 && !memcmp(line, "%%FAIL", 6)) {
            expect_fail = true;
            continue;
        }
        if (rc == 1 && len) {
            assert_true(n < 3);
            group[n] = n == 0 ? strndup(line, len) : triplet_value(line, len);
            n++;
            continue;
        }
        if (n) {
            assert_int_equal(n, 3);
            enum dsa_gsm8k_extract_mode m;
            bool is_norm = !strcmp(group[0], "normalize");
            int prc = is_norm ? 0 : dsa_gsm8k_extract_parse(group[0], &m);
            if (expect_fail) {
                assert_int_equal(prc, -1);
                fails++;
            } else {
                assert_int_equal(prc, 0);
                char *got = is_norm ? dsa_gsm8k_normalize(x, group[1], strlen(group[1]))
                                    : dsa_gsm8k_extract(x, m, group[1], strlen(group[1]));
                if (strcmp(got, group[2]))
                    fail_msg("line %ld: %s on \"%s\": got \"%s\", want \"%s\"", dsa_lines_lineno(r),
                             group[0], group[1], got, group[2]);
                free(got);
            }
            for (int i = 0; i < n; i++)
                free(group[i]);
            n = 0;
            expect_fail = false;
            groups++;
        }
        if (rc == 0)
            break;
    }
    assert_true(groups >= 40);
    assert_int_equal(fails, 1);
    dsa_lines_free(&r);
    dsa_gsm8k_extractor_free(&x);
}

static void test_scoring(void **state)
{
    (void)state;
    dsa_gsm8k_extractor *x = dsa_gsm8k_extractor_new();
    const char *sol = "She makes 9 * 2 = $<<9*2=18>>18 every day.\n#### 18";
    /* lm-eval: "$18." and the solution's "#### 18" both normalise to "18" */
    assert_true(dsa_gsm8k_is_correct(x, DSA_GSM8K_EXTRACT_FLEXIBLE, "$18.", sol, strlen(sol)));
    assert_true(dsa_gsm8k_is_correct(x, DSA_GSM8K_EXTRACT_COT_STRICT, "18", "18", 2));
    assert_true(
        dsa_gsm8k_is_correct(x, DSA_GSM8K_EXTRACT_FLEXIBLE, "1,250.50", "#### 1250.50", 12));
    assert_false(dsa_gsm8k_is_correct(x, DSA_GSM8K_EXTRACT_COT_STRICT, "17", "18", 2));
    assert_false(
        dsa_gsm8k_is_correct(x, DSA_GSM8K_EXTRACT_GSM8K_STRICT, "[invalid]", "[invalid]", 9));
    /* vLLM: the numeric rule on both sides, so the sign is ignored */
    assert_true(dsa_gsm8k_is_correct(x, DSA_GSM8K_EXTRACT_VLLM, "3", "-3", 2));
    assert_true(dsa_gsm8k_is_correct(x, DSA_GSM8K_EXTRACT_VLLM, "18", sol, strlen(sol)));
    assert_false(dsa_gsm8k_is_correct(x, DSA_GSM8K_EXTRACT_VLLM, "[invalid]", "x", 1));
    dsa_gsm8k_extractor_free(&x);
    assert_null(x);
}

/* ---- parity with CPython re on generated outputs ---- */

static uint64_t rng = 12345;
static uint64_t next(void)
{
    return rng = dsa_splitmix64(rng);
}

static void gen_output(struct dsa_buf *b)
{
    /* pieces chosen to hit every branch: both strict sentences, '$' and ',' and '.', signs,
       newlines next to the final '.', leading zeros, non-ASCII digits and letters */
    static const char *const pieces[] = {"The answer is ",
                                         "The answer is ",
                                         "#### ",
                                         "#### ",
                                         "$",
                                         ".",
                                         ".",
                                         ",",
                                         ",",
                                         "-",
                                         "\n",
                                         "\n\n",
                                         " ",
                                         " ",
                                         "\r",
                                         "0",
                                         "00",
                                         "007",
                                         "\xd9\xa1\xd9\xa2",
                                         "\xef\xbc\x93",
                                         "\xc3\xa9",
                                         "Q: ",
                                         "dollars",
                                         "x",
                                         "So ",
                                         "= ",
                                         "<<3*4=12>>",
                                         "Answer:",
                                         "\t",
                                         "The"};
    dsa_buf_reset(b);
    int n = 1 + (int)(next() % 14);
    for (int i = 0; i < n; i++) {
        if (next() % 3 == 0) {
            int digits = 1 + (int)(next() % 7);
            for (int d = 0; d < digits; d++)
                dsa_buf_addch(b, (char)('0' + next() % 10));
        } else {
            dsa_buf_adds(b, pieces[next() % (sizeof pieces / sizeof pieces[0])]);
        }
    }
}

static void test_python_parity(void **state)
{
    (void)state;
    const char *py = getenv("DSA_PYTHON"), *src = getenv("DSA_SRC");
    if (!py || !*py || !src)
        fail_msg("python3 is required: DSA_PYTHON (set by ctest; scripts/setup.sh installs it)");
    enum { N = 3000 };
    char in_path[] = "/tmp/dsa-gsm8k-in-XXXXXX", out_path[] = "/tmp/dsa-gsm8k-out-XXXXXX";
    int fd = mkstemp(in_path);
    assert_true(fd >= 0);
    close(fd);
    fd = mkstemp(out_path);
    assert_true(fd >= 0);
    close(fd);
    char **texts = calloc(N, sizeof *texts);
    struct dsa_buf b = DSA_BUF_INIT;
    dsa_buf_init(&b);
    FILE *f = fopen(in_path, "w");
    for (int i = 0; i < N; i++) {
        gen_output(&b);
        texts[i] = strdup(b.data);
        json_t *o = json_pack("{s:s}", "text", texts[i]);
        char *line = dsa_json_dumps_line(o);
        fprintf(f, "%s\n", line);
        free(line);
        json_decref(o);
    }
    fclose(f);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' '%s/tests/data/gsm8k_extract_ref.py' < '%s' > '%s'", py, src,
             in_path, out_path);
    assert_int_equal(system(cmd), 0);

    dsa_gsm8k_extractor *x = dsa_gsm8k_extractor_new();
    dsa_lines *r = dsa_lines_open(out_path);
    assert_non_null(r);
    const char *line;
    size_t len;
    int i = 0, compared = 0;
    while (dsa_lines_next(r, &line, &len) == 1) {
        assert_true(i < N);
        json_t *o = json_loadb(line, len, 0, NULL);
        assert_non_null(o);
        for (int m = 0; m < DSA_GSM8K_EXTRACT_N; m++) {
            const char *want = json_string_value(json_object_get(o, dsa_gsm8k_extract_name(m)));
            char *got = dsa_gsm8k_extract(x, m, texts[i], strlen(texts[i]));
            if (strcmp(got, want))
                fail_msg("output %d, %s: got \"%s\", CPython \"%s\"", i, dsa_gsm8k_extract_name(m),
                         got, want);
            free(got);
            compared++;
        }
        const char *want = json_string_value(json_object_get(o, "normalize"));
        char *got = dsa_gsm8k_normalize(x, texts[i], strlen(texts[i]));
        if (strcmp(got, want))
            fail_msg("output %d, normalize: got \"%s\", CPython \"%s\"", i, got, want);
        free(got);
        json_decref(o);
        i++;
    }
    assert_int_equal(i, N);
    assert_int_equal(compared, N * DSA_GSM8K_EXTRACT_N);
    dsa_lines_free(&r);
    dsa_gsm8k_extractor_free(&x);
    for (int k = 0; k < N; k++)
        free(texts[k]);
    free(texts);
    dsa_buf_release(&b);
    unlink(in_path);
    unlink(out_path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loader),        cmocka_unit_test(test_gold_rule),
        cmocka_unit_test(test_loader_errors), cmocka_unit_test(test_prompt_vectors),
        cmocka_unit_test(test_prompt_modes),  cmocka_unit_test(test_extract_triplets),
        cmocka_unit_test(test_scoring),       cmocka_unit_test(test_python_parity),
    };
    return cmocka_run_group_tests(tests, load_splits, free_splits);
}
