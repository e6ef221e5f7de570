/* Unit tests of the RULER eval's library (evals/ruler.h): list parsing, every task at 4k,
 * the templates word for word, checked-in golden samples (tests/data/ruler/), determinism,
 * the length fitting up to 1m, needle token positions, the haystack from files, and the
 * scoring (fixed vectors and parity with CPython's str.lower/in on Unicode input).
 * Regenerate the golden file after an intended change with DSA_RULER_REGEN=1.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "datasets/tokenize.h"
#include "evals/ruler.h"
#include "util/buf.h"
#include "util/hash.h"
#include "util/lines.h"

static dsa_ruler_haystack *hay;

static int setup(void **state)
{
    (void)state;
    int err = 0;
    hay = dsa_ruler_haystack_new(NULL, &err);
    return hay ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    dsa_ruler_haystack_free(&hay);
    return hay ? -1 : 0;
}

static char *data_path(const char *name)
{
    const char *data = getenv("DSA_DATA");
    if (!data)
        fail_msg("DSA_DATA is not set (ctest sets it)");
    struct dsa_buf b = DSA_BUF_INIT;
    dsa_buf_addf(&b, "%s/ruler/%s", data, name);
    return dsa_buf_detach(&b, NULL);
}

/* ---------------------------------------------------------------- lists and table */

static void test_parse_lists(void **state)
{
    (void)state;
    unsigned m = 0;
    const char *bad = NULL;
    assert_int_equal(dsa_ruler_parse_lengths("4k,8k,1m", &m, &bad), 0);
    assert_int_equal(m, (1u << 0) | (1u << 1) | (1u << 8));
    assert_int_equal(dsa_ruler_parse_lengths("all", &m, &bad), 0);
    assert_int_equal(m, 0x1ffu);
    const char *list = "4k,9k,1m";
    assert_int_equal(dsa_ruler_parse_lengths(list, &m, &bad), DSA_RULER_EINVAL);
    assert_ptr_equal(bad, list + 3);
    assert_int_equal(dsa_ruler_parse_lengths("", &m, &bad), DSA_RULER_EINVAL);
    assert_int_equal(dsa_ruler_parse_lengths("4k,", &m, &bad), DSA_RULER_EINVAL);
    assert_int_equal(dsa_ruler_parse_tasks("vt,cwe,niah_single_1", &m, &bad), 0);
    assert_int_equal(m, (1u << DSA_RULER_VT) | (1u << DSA_RULER_CWE) | 1u);
    assert_int_equal(dsa_ruler_parse_tasks("all", &m, &bad), 0);
    assert_int_equal(m, 0x3ffu);
    assert_int_equal(dsa_ruler_parse_tasks("niah_single", &m, &bad), DSA_RULER_EINVAL);
    assert_int_equal(dsa_ruler_parse_tasks("niah_single_10", &m, NULL), DSA_RULER_EINVAL);

    static const char *const names[] = {"niah_single_1",
                                        "niah_single_2",
                                        "niah_single_3",
                                        "niah_multikey_1",
                                        "niah_multikey_2",
                                        "niah_multikey_3",
                                        "niah_multivalue",
                                        "niah_multiquery",
                                        "vt",
                                        "cwe"};
    for (int t = 0; t < DSA_RULER_NTASKS; t++) {
        assert_string_equal(dsa_ruler_task_name((enum dsa_ruler_task)t), names[t]);
        assert_int_equal(dsa_ruler_task_metric((enum dsa_ruler_task)t), DSA_RULER_MATCH_ALL);
        assert_int_equal(dsa_ruler_tokens_to_generate((enum dsa_ruler_task)t),
                         t == DSA_RULER_VT    ? 30
                         : t == DSA_RULER_CWE ? 120
                                              : 128);
    }
    enum dsa_ruler_task task;
    int k, idx;
    assert_int_equal(dsa_ruler_parse_id("niah_multikey_2/128k/0042", &task, &k, &idx), 0);
    assert_int_equal(task, DSA_RULER_NIAH_MULTIKEY_2);
    assert_int_equal(k, 5);
    assert_int_equal(idx, 42);
    assert_int_equal(dsa_ruler_parse_id("cwe/1m/12345", &task, &k, &idx), 0);
    assert_int_equal(idx, 12345);
    static const char *const bad_ids[] = {
        "cwe/1m/", "cwe/2m/0001", "cwe/1m/00x1", "cwe/1m", "cwex/1m/1", "cwe/1m/-1", "", "/4k/0"};
    for (size_t i = 0; i < sizeof bad_ids / sizeof bad_ids[0]; i++)
        assert_int_equal(dsa_ruler_parse_id(bad_ids[i], &task, &k, &idx), DSA_RULER_EINVAL);
    assert_string_equal(dsa_ruler_length_name(0), "4k");
    assert_string_equal(dsa_ruler_length_name(5), "128k");
    assert_string_equal(dsa_ruler_length_name(8), "1m");
    assert_int_equal(dsa_ruler_length_tokens(8), 1048576);
}

/* ---------------------------------------------------------------- samples */

static void check_sample(const struct dsa_ruler_sample *s, long slack)
{
    long budget = s->max_length - s->tokens_to_generate;
    assert_int_equal(s->tokens, dsa_tok_count(s->input, s->input_len));
    assert_int_equal(strlen(s->input), s->input_len);
    if ((long)s->tokens > budget || (long)s->tokens < budget - slack)
        fail_msg("%s: %zu tokens for a budget of %ld", s->id, s->tokens, budget);
    assert_true(s->noutputs > 0);
    for (size_t i = 0; i < s->noutputs; i++) /* RULER asserts the same */
        assert_non_null(strstr(s->input, s->outputs[i]));
    assert_true(s->answer_prefix < s->input_len);
    /* the question follows the context: after every needle, before the answer prefix */
    assert_true(s->question > 0 && s->question < s->answer_prefix);
    assert_true(s->input[s->question] == '\n');
    for (size_t i = 0; i < s->nspans; i++) {
        assert_true(s->spans[i].lo < s->spans[i].hi);
        assert_true(s->spans[i].hi <= s->question);
        if (i)
            assert_true(s->spans[i - 1].hi <= s->spans[i].lo);
    }
}

static void test_every_task_4k(void **state)
{
    (void)state;
    for (int t = 0; t < DSA_RULER_NTASKS; t++) {
        struct dsa_ruler_sample s;
        assert_int_equal(dsa_ruler_sample_make(hay, 1, (enum dsa_ruler_task)t, 0, 3, &s), 0);
        char id[64];
        snprintf(id, sizeof id, "%s/4k/0003", dsa_ruler_task_name((enum dsa_ruler_task)t));
        assert_string_equal(s.id, id);
        assert_int_equal(s.max_length, 4096);
        /* within one haystack unit of the budget (a distractor needle of two uuids is the
           largest, about 60 tokens) */
        check_sample(&s, 100);
        size_t answers = 0, distractors = 0;
        for (size_t i = 0; i < s.nspans; i++)
            *(s.spans[i].kind == DSA_RULER_SPAN_ANSWER ? &answers : &distractors) += 1;
        switch (t) {
        case DSA_RULER_NIAH_MULTIKEY_1:
            assert_int_equal(answers, 1);
            assert_int_equal(distractors, 3);
            break;
        case DSA_RULER_NIAH_MULTIVALUE:
        case DSA_RULER_NIAH_MULTIQUERY:
            assert_int_equal(answers, 4);
            assert_int_equal(s.noutputs, 4);
            break;
        case DSA_RULER_VT:
            assert_int_equal(answers, 5);
            assert_int_equal(s.noutputs, 5);
            break;
        case DSA_RULER_CWE:
            assert_int_equal(answers, 300); /* 10 words x 30 */
            assert_int_equal(s.noutputs, 10);
            break;
        default:
            assert_int_equal(answers, 1);
            assert_int_equal(distractors, 0);
            assert_int_equal(s.noutputs, 1);
        }
        dsa_ruler_sample_release(&s);
    }
}

static const char *needle_key(const struct dsa_ruler_sample *s, size_t span, char *out, size_t cap)
{
    const char *p = s->input + s->spans[span].lo + strlen("One of the special magic ");
    p = strstr(p, " for ") + 5;
    size_t n = (size_t)(strstr(p, " is: ") - p);
    assert_true(n < cap);
    memcpy(out, p, n);
    out[n] = '\0';
    return out;
}

static bool ends_with(const char *s, size_t n, const char *suffix)
{
    size_t k = strlen(suffix);
    return n >= k && !memcmp(s + n - k, suffix, k);
}

/* The templates word for word (RULER's niah template in its singular and plural forms). */
static void test_templates(void **state)
{
    (void)state;
    struct dsa_ruler_sample s;
    char key[128], want[512];
    assert_int_equal(dsa_ruler_sample_make(hay, 5, DSA_RULER_NIAH_SINGLE_1, 0, 0, &s), 0);
    const char *head = "A special magic number is hidden within the following text. Make sure to "
                       "memorize it. I will quiz you about the number afterwards.\nThe grass is "
                       "green. The sky is blue. The sun is yellow. Here we go. There and back "
                       "again.\nThe grass";
    assert_memory_equal(s.input, head, strlen(head));
    needle_key(&s, 0, key, sizeof key);
    snprintf(want, sizeof want,
             "\nWhat is the special magic number for %s mentioned in the provided text? The "
             "special magic number for %s mentioned in the provided text is",
             key, key);
    assert_true(ends_with(s.input, s.input_len, want));
    assert_string_equal(s.input + s.answer_prefix, strstr(want, " The special"));
    char needle[256];
    snprintf(needle, sizeof needle, "One of the special magic numbers for %s is: %s.", key,
             s.outputs[0]);
    assert_memory_equal(s.input + s.spans[0].lo, needle, strlen(needle));
    assert_int_equal(s.spans[0].hi - s.spans[0].lo, strlen(needle));
    assert_int_equal(strlen(s.outputs[0]), 7); /* 7-digit numbers */
    dsa_ruler_sample_release(&s);

    assert_int_equal(dsa_ruler_sample_make(hay, 5, DSA_RULER_NIAH_MULTIQUERY, 0, 0, &s), 0);
    head = "Some special magic numbers are hidden within the following text. Make sure to "
           "memorize it. I will quiz you about the numbers afterwards.\nIn the beginning God "
           "created the heaven and the earth.";
    assert_memory_equal(s.input, head, strlen(head));
    assert_non_null(strstr(s.input, "\nWhat are all the special magic numbers for "));
    assert_true(ends_with(s.input, s.input_len, " mentioned in the provided text are"));
    /* "a, b, c, and d" in the answer prefix */
    const char *q = s.input + s.answer_prefix + strlen(" The special magic numbers for ");
    assert_int_equal(strstr(q, ", and ") != NULL, 1);
    dsa_ruler_sample_release(&s);

    assert_int_equal(dsa_ruler_sample_make(hay, 5, DSA_RULER_NIAH_SINGLE_3, 0, 0, &s), 0);
    assert_int_equal(strlen(s.outputs[0]), 36); /* a uuid: 8-4-4-4-12, version 4 */
    assert_int_equal(s.outputs[0][14], '4');
    assert_non_null(strchr("89ab", s.outputs[0][19]));
    assert_true(ends_with(s.input, s.input_len, " mentioned in the provided text is"));
    assert_non_null(strstr(s.input, "A special magic uuid is hidden"));
    dsa_ruler_sample_release(&s);

    assert_int_equal(dsa_ruler_sample_make(hay, 5, DSA_RULER_VT, 0, 0, &s), 0);
    const char *val = s.input + s.spans[0].lo + strlen("VAR XXXXX = ");
    int vl = (int)(s.spans[0].hi - s.spans[0].lo - strlen("VAR XXXXX = "));
    snprintf(want, sizeof want,
             " Answer: According to the chain(s) of variable assignment in the text above, 5 "
             "variables are assgined the value %.*s, they are: ",
             vl, val);
    assert_string_equal(s.input + s.answer_prefix, want);
    /* the few-shot example comes first, then the task template */
    assert_memory_equal(s.input, "Memorize and track the chain(s) of variable assignment hidden",
                        60);
    assert_non_null(strstr(s.input + 100, "\n\n\n\nMemorize and track the chain(s)"));
    for (size_t i = 1; i < s.nspans; i++) {
        char stmt[64];
        snprintf(stmt, sizeof stmt, "VAR %s = VAR %s ", s.outputs[i], s.outputs[i - 1]);
        assert_memory_equal(s.input + s.spans[i].lo, stmt, strlen(stmt));
    }
    dsa_ruler_sample_release(&s);

    assert_int_equal(dsa_ruler_sample_make(hay, 5, DSA_RULER_CWE, 0, 0, &s), 0);
    head = "Below is a numbered list of words. In these words, some appear more often than "
           "others. Memorize the ones that appear most often.\n1. ";
    assert_memory_equal(s.input, head, strlen(head));
    assert_non_null(strstr(s.input, "\nQuestion: What are the 10 most common words in the above "
                                    "list? Answer: The top 10 words that appear most often in "
                                    "the list are:1. "));
    assert_string_equal(s.input + s.answer_prefix,
                        " Answer: The top 10 words that appear most often in the list are:");
    dsa_ruler_sample_release(&s);
}

static void test_golden(void **state)
{
    (void)state;
    char *path = data_path("golden-seed7-4k.jsonl");
    if (getenv("DSA_RULER_REGEN")) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        for (int t = 0; t < DSA_RULER_NTASKS; t++) {
            struct dsa_ruler_sample s;
            assert_int_equal(dsa_ruler_sample_make(hay, 7, (enum dsa_ruler_task)t, 0, 0, &s), 0);
            json_t *outs = json_array(), *spans = json_array();
            for (size_t i = 0; i < s.noutputs; i++)
                json_array_append_new(outs, json_string(s.outputs[i]));
            for (size_t i = 0; i < s.nspans; i++)
                json_array_append_new(spans,
                                      json_pack("[I,I,i]", (json_int_t)s.spans[i].lo,
                                                (json_int_t)s.spans[i].hi, (int)s.spans[i].kind));
            json_t *o =
                json_pack("{s:s,s:I,s:I,s:o,s:o,s:s}", "id", s.id, "tokens", (json_int_t)s.tokens,
                          "answer_prefix", (json_int_t)s.answer_prefix, "outputs", outs, "spans",
                          spans, "input", s.input);
            char *line = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
            fprintf(f, "%s\n", line);
            free(line);
            json_decref(o);
            dsa_ruler_sample_release(&s);
        }
        fclose(f);
    }
    dsa_lines *r = dsa_lines_open(path);
    assert_non_null(r);
    const char *line;
    size_t len;
    int t = 0;
    while (dsa_lines_next(r, &line, &len) == 1) {
        assert_true(t < DSA_RULER_NTASKS);
        json_t *o = json_loadb(line, len, 0, NULL);
        assert_non_null(o);
        struct dsa_ruler_sample s;
        assert_int_equal(dsa_ruler_sample_make(hay, 7, (enum dsa_ruler_task)t, 0, 0, &s), 0);
        assert_string_equal(s.id, json_string_value(json_object_get(o, "id")));
        json_t *in = json_object_get(o, "input");
        assert_int_equal(s.input_len, json_string_length(in));
        assert_memory_equal(s.input, json_string_value(in), s.input_len);
        assert_int_equal(s.tokens, json_integer_value(json_object_get(o, "tokens")));
        assert_int_equal(s.answer_prefix, json_integer_value(json_object_get(o, "answer_prefix")));
        json_t *outs = json_object_get(o, "outputs"), *spans = json_object_get(o, "spans");
        assert_int_equal(s.noutputs, json_array_size(outs));
        for (size_t i = 0; i < s.noutputs; i++)
            assert_string_equal(s.outputs[i], json_string_value(json_array_get(outs, i)));
        assert_int_equal(s.nspans, json_array_size(spans));
        for (size_t i = 0; i < s.nspans; i++) {
            json_t *sp = json_array_get(spans, i);
            assert_int_equal(s.spans[i].lo, json_integer_value(json_array_get(sp, 0)));
            assert_int_equal(s.spans[i].hi, json_integer_value(json_array_get(sp, 1)));
            assert_int_equal(s.spans[i].kind, json_integer_value(json_array_get(sp, 2)));
        }
        dsa_ruler_sample_release(&s);
        json_decref(o);
        t++;
    }
    assert_int_equal(t, DSA_RULER_NTASKS);
    dsa_lines_free(&r);
    free(path);
}

struct collect {
    int n;
    char ids[64][40];
    char sha[64][65];
};

static int collect_cb(const struct dsa_ruler_sample *s, void *ud)
{
    struct collect *c = ud;
    assert_true(c->n < 64);
    snprintf(c->ids[c->n], sizeof c->ids[0], "%s", s->id);
    dsa_sha256_hex(s->input, s->input_len, c->sha[c->n]);
    c->n++;
    return 0;
}

static int stop_cb(const struct dsa_ruler_sample *s, void *ud)
{
    (void)s;
    return ++*(int *)ud == 2;
}

/* A sample depends on (seed, task, length, index) only: not on what else is generated. */
static void test_determinism(void **state)
{
    (void)state;
    struct dsa_ruler_opts o = {(1u << DSA_RULER_NIAH_SINGLE_2) | (1u << DSA_RULER_CWE),
                               (1u << 0) | (1u << 1),
                               2,
                               11,
                               hay,
                               NULL};
    struct collect a = {0}, b = {0};
    assert_int_equal(dsa_ruler_samples(&o, collect_cb, &a), 0);
    assert_int_equal(a.n, 8);
    static const char *const order[] = {"niah_single_2/4k/0000", "niah_single_2/4k/0001",
                                        "niah_single_2/8k/0000", "niah_single_2/8k/0001",
                                        "cwe/4k/0000",           "cwe/4k/0001",
                                        "cwe/8k/0000",           "cwe/8k/0001"};
    for (int i = 0; i < 8; i++)
        assert_string_equal(a.ids[i], order[i]);
    o.tasks_mask = 1u << DSA_RULER_CWE;
    o.lengths_mask = 1u << 1;
    assert_int_equal(dsa_ruler_samples(&o, collect_cb, &b), 0);
    assert_int_equal(b.n, 2);
    assert_string_equal(b.sha[0], a.sha[6]);
    assert_string_equal(b.sha[1], a.sha[7]);
    assert_string_not_equal(a.sha[0], a.sha[1]); /* index matters */

    struct dsa_ruler_sample s1, s2;
    assert_int_equal(dsa_ruler_sample_make(hay, 11, DSA_RULER_NIAH_SINGLE_2, 0, 1, &s1), 0);
    char hex[65];
    dsa_sha256_hex(s1.input, s1.input_len, hex);
    assert_string_equal(hex, a.sha[1]);
    assert_int_equal(dsa_ruler_sample_make(hay, 12, DSA_RULER_NIAH_SINGLE_2, 0, 1, &s2), 0);
    assert_string_not_equal(s1.outputs[0], s2.outputs[0]); /* seed matters */
    dsa_ruler_sample_release(&s1);
    dsa_ruler_sample_release(&s2);

    int calls = 0;
    assert_int_equal(dsa_ruler_samples(&o, stop_cb, &calls), DSA_RULER_ESTOP);
    assert_int_equal(calls, 2);
    volatile int intr = 1;
    o.interrupted = &intr;
    assert_int_equal(dsa_ruler_samples(&o, collect_cb, &b), DSA_RULER_EINTR);
    assert_int_equal(b.n, 2);
    o.haystack = NULL;
    assert_int_equal(dsa_ruler_samples(&o, collect_cb, &b), DSA_RULER_EINVAL);
    assert_int_equal(dsa_ruler_sample_make(hay, 1, DSA_RULER_NTASKS, 0, 0, &s1), DSA_RULER_EINVAL);
    assert_int_equal(dsa_ruler_sample_make(hay, 1, DSA_RULER_VT, 9, 0, &s1), DSA_RULER_EINVAL);
}

/* Every length of a noise, an essay and a needle haystack task, and vt, up to 1m: within
   max(one unit, 1/2000 of the budget) of it, never over; 1m well under a second of CPU. */
static void test_length_fitting(void **state)
{
    (void)state;
    static const enum dsa_ruler_task tasks[] = {DSA_RULER_NIAH_SINGLE_1, DSA_RULER_NIAH_SINGLE_2,
                                                DSA_RULER_NIAH_MULTIKEY_3, DSA_RULER_VT};
    for (size_t i = 0; i < sizeof tasks / sizeof tasks[0]; i++) {
        for (int k = 0; k < DSA_RULER_NLENGTHS; k++) {
            struct dsa_ruler_sample s;
            clock_t c0 = clock();
            assert_int_equal(dsa_ruler_sample_make(hay, 3, tasks[i], k, 0, &s), 0);
            double cpu = (double)(clock() - c0) / CLOCKS_PER_SEC;
            long budget = s.max_length - s.tokens_to_generate;
            check_sample(&s, budget / 2000 > 100 ? budget / 2000 : 100);
            if (cpu > 2.0)
                fail_msg("%s: %.2f s of CPU", s.id, cpu);
            if (k == DSA_RULER_NLENGTHS - 1)
                print_message("%s: %zu tokens, %.3f s CPU\n", s.id, s.tokens, cpu);
            dsa_ruler_sample_release(&s);
        }
    }
    /* cwe stops at its vocabulary, as RULER's does: below the budget from 256k on */
    struct dsa_ruler_sample s;
    assert_int_equal(dsa_ruler_sample_make(hay, 3, DSA_RULER_CWE, 2, 0, &s), 0);
    check_sample(&s, 100);
    dsa_ruler_sample_release(&s);
    assert_int_equal(dsa_ruler_sample_make(hay, 3, DSA_RULER_CWE, 8, 0, &s), 0);
    assert_true(s.tokens < 400000);
    assert_true(s.tokens > 150000);
    dsa_ruler_sample_release(&s);
}

/* Token positions: the tokens of each span cover exactly its bytes' tokens. */
static void test_needle_tokens(void **state)
{
    (void)state;
    static const enum dsa_ruler_task tasks[] = {DSA_RULER_NIAH_MULTIKEY_1, DSA_RULER_VT,
                                                DSA_RULER_CWE, DSA_RULER_NIAH_MULTIKEY_2};
    for (size_t i = 0; i < sizeof tasks / sizeof tasks[0]; i++) {
        struct dsa_ruler_sample s;
        assert_int_equal(dsa_ruler_sample_make(hay, 2, tasks[i], 1, 0, &s), 0);
        size_t n = dsa_ruler_needle_tokens(&s, NULL, 0);
        assert_int_equal(n, s.nspans);
        struct dsa_ruler_tok_span *ts = calloc(n, sizeof *ts);
        assert_int_equal(dsa_ruler_needle_tokens(&s, ts, n), n);
        size_t ntok = dsa_tok_count(s.input, s.input_len);
        size_t *ends = calloc(ntok, sizeof *ends);
        dsa_tok_ends(s.input, s.input_len, ends, ntok);
        for (size_t j = 0; j < n; j++) {
            assert_true(ts[j].lo < ts[j].hi && ts[j].hi <= ntok);
            assert_int_equal(ts[j].kind, s.spans[j].kind);
            size_t first = ts[j].lo ? ends[ts[j].lo - 1] : 0, last = ends[ts[j].hi - 1];
            /* the tokens cover the span, and dropping either end token would not */
            assert_true(first <= s.spans[j].lo && last >= s.spans[j].hi);
            assert_true(ends[ts[j].lo] > s.spans[j].lo);
            assert_true((ts[j].hi >= 2 ? ends[ts[j].hi - 2] : 0) < s.spans[j].hi);
        }
        if (tasks[i] == DSA_RULER_NIAH_MULTIKEY_1) {
            /* " One of the special magic numbers for a-b is: 1234567." in the built-in
               tokenizer: the needle's tokens, counted on their own */
            const char *t0 = s.input + s.spans[0].lo;
            size_t want = dsa_tok_count(t0, s.spans[0].hi - s.spans[0].lo);
            assert_int_equal(ts[0].hi - ts[0].lo, want);
        }
        free(ends);
        free(ts);
        dsa_ruler_sample_release(&s);
    }
}

/* dsa_tok_ends on the example of docs/datasets.md "The built-in tokenizer" */
static void test_tok_ends(void **state)
{
    (void)state;
    const char *t = "Hello, world!\n\n  12345 foo";
    size_t ends[16], want[] = {5, 6, 12, 13, 15, 16, 17, 20, 22, 26};
    assert_int_equal(dsa_tok_ends(t, strlen(t), NULL, 0), 10);
    assert_int_equal(dsa_tok_ends(t, strlen(t), ends, 3), 10);
    assert_memory_equal(ends, want, 3 * sizeof *ends);
    assert_int_equal(dsa_tok_ends(t, strlen(t), ends, 16), 10);
    assert_memory_equal(ends, want, sizeof want);
}

/* ---------------------------------------------------------------- haystack files */

static char *write_tmp(const char *tag, const char *text)
{
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    struct dsa_buf b = DSA_BUF_INIT;
    dsa_buf_addf(&b, "%s/dsa-ruler-%s-XXXXXX", dir, tag);
    int fd = mkstemp(b.data);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return dsa_buf_detach(&b, NULL);
}

static void test_haystack_files(void **state)
{
    (void)state;
    assert_string_equal(dsa_ruler_haystack_name(hay), "kjv-genesis-2kings.txt");
    assert_string_equal(dsa_ruler_haystack_sha256(hay),
                        "77f255be4a76051f3eac1df4f86c28f3f41565ff2be710019751f16c4e4de273");
    assert_int_equal(dsa_ruler_haystack_words(hay), 290804);

    const char *json = "[{\"text\": \"How to Start. It was late.\\n\\nVery  late!\"},"
                       " {\"title\": \"x\", \"text\": \"Why? Because.\"}]";
    char *p = write_tmp("essays", json);
    int err = 0;
    dsa_ruler_haystack *h = dsa_ruler_haystack_new(p, &err);
    assert_non_null(h);
    /* How to Start. It was late. Very late! Why? Because. */
    assert_int_equal(dsa_ruler_haystack_words(h), 10);
    char hex[65];
    dsa_sha256_hex(json, strlen(json), hex);
    assert_string_equal(dsa_ruler_haystack_sha256(h), hex);
    assert_non_null(strstr(dsa_ruler_haystack_name(h), "dsa-ruler-essays-"));
    struct dsa_ruler_sample s;
    assert_int_equal(dsa_ruler_sample_make(h, 1, DSA_RULER_NIAH_SINGLE_2, 0, 0, &s), 0);
    /* the haystack repeats: its words, joined by single spaces */
    assert_non_null(strstr(s.input, "Very late! Why? Because. How to Start."));
    check_sample(&s, 100);
    dsa_ruler_sample_release(&s);
    dsa_ruler_haystack_free(&h);
    assert_null(h);
    unlink(p);
    free(p);

    p = write_tmp("object", "{\"text\": \"One two. Three.\"}");
    h = dsa_ruler_haystack_new(p, &err);
    assert_non_null(h);
    assert_int_equal(dsa_ruler_haystack_words(h), 3);
    dsa_ruler_haystack_free(&h);
    unlink(p);
    free(p);

    p = write_tmp("plain", "  \t plain   text\r\nfile \xc2\xa0 here  \n");
    h = dsa_ruler_haystack_new(p, &err);
    assert_non_null(h);
    assert_int_equal(dsa_ruler_haystack_words(h), 4); /* NBSP is whitespace to Python */
    dsa_ruler_haystack_free(&h);
    unlink(p);
    free(p);

    static const char *const bad[] = {"", "   \n", "[1, 2]", "{\"text\": 3}", "bad \xff utf8"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        p = write_tmp("bad", bad[i]);
        err = 0;
        assert_null(dsa_ruler_haystack_new(p, &err));
        assert_int_equal(err, DSA_RULER_EHAYSTACK);
        unlink(p);
        free(p);
    }
    assert_null(dsa_ruler_haystack_new("/nonexistent/dsa-ruler", &err));
    assert_int_equal(err, DSA_RULER_EIO);
    assert_string_equal(dsa_ruler_strerror(DSA_RULER_EIO), "cannot read the file");
    assert_string_equal(dsa_ruler_strerror(DSA_RULER_EHAYSTACK),
                        "no text (empty, not UTF-8, or a JSON document without \"text\" strings)");
    assert_string_equal(dsa_ruler_strerror(0), "");
    assert_string_equal(dsa_ruler_strerror(-99), "unknown error");
}

/* Samples rebuilt by CPython from their parts with RULER's string operations
   (tests/data/ruler/sample_ref.py): every task at 4k, 8k and 32k, and two essay tasks at 512k,
   where the essay repeats. */
static void test_python_samples(void **state)
{
    (void)state;
    const char *py = getenv("DSA_PYTHON"), *src = getenv("DSA_SRC");
    if (!py || !*py || !src)
        fail_msg("python3 is required: DSA_PYTHON (set by ctest; scripts/setup.sh installs it)");
    char in_path[] = "/tmp/dsa-ruler-samples-XXXXXX";
    int fd = mkstemp(in_path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    int n = 0;
    for (int t = 0; t < DSA_RULER_NTASKS; t++) {
        for (int k = 0; k < DSA_RULER_NLENGTHS; k++) {
            bool essay = t == DSA_RULER_NIAH_SINGLE_2 || t == DSA_RULER_NIAH_MULTIQUERY;
            if (!(k == 0 || k == 1 || k == 3 || (essay && k == 7))) /* 4k 8k 32k 512k */
                continue;
            struct dsa_ruler_sample s;
            assert_int_equal(dsa_ruler_sample_make(hay, 9, (enum dsa_ruler_task)t, k, 1, &s), 0);
            json_t *outs = json_array();
            for (size_t i = 0; i < s.noutputs; i++)
                json_array_append_new(outs, json_string(s.outputs[i]));
            json_t *o = json_pack("{s:s,s:s,s:o}", "id", s.id, "input", s.input, "outputs", outs);
            char *line = json_dumps(o, JSON_COMPACT);
            fprintf(f, "%s\n", line);
            free(line);
            json_decref(o);
            dsa_ruler_sample_release(&s);
            n++;
        }
    }
    assert_int_equal(fclose(f), 0);
    assert_int_equal(n, 32);
    char cmd[8192];
    snprintf(cmd, sizeof cmd,
             "'%s' '%s/tests/data/ruler/sample_ref.py' '%s/datasets/ruler/kjv-genesis-2kings.txt' "
             "< '%s'",
             py, src, src, in_path);
    assert_int_equal(system(cmd), 0);
    unlink(in_path);
}

/* ---------------------------------------------------------------- scoring */

static double score(enum dsa_ruler_metric m, const char *pred, const char *const *refs, size_t n)
{
    return dsa_ruler_score(m, pred, strlen(pred), refs, n);
}

static void test_score_vectors(void **state)
{
    (void)state;
    const char *const nums[] = {"123", "456", "789"};
    const char *p = " The special magic numbers are 123 and 456.";
    assert_true(score(DSA_RULER_MATCH_ALL, p, nums, 3) == 2.0 / 3.0);
    assert_true(score(DSA_RULER_MATCH_PART, p, nums, 3) == 1.0);
    assert_true(score(DSA_RULER_MATCH_ALL, "none", nums, 3) == 0.0);
    assert_true(score(DSA_RULER_MATCH_PART, "none", nums, 3) == 0.0);
    assert_true(score(DSA_RULER_MATCH_ALL, "x", nums, 0) == 0.0);

    const char *const key[] = {"Elderly-Friction"};
    assert_true(score(DSA_RULER_MATCH_ALL, "ELDERLY-friction!", key, 1) == 1.0);
    /* Python: "İ".lower() == "i\u0307", so "istanbul" is not in "İSTANBUL".lower() */
    const char *const ist[] = {"istanbul"}, *const ist2[] = {"stanbul"};
    assert_true(score(DSA_RULER_MATCH_ALL, "\xc4\xb0STANBUL", ist, 1) == 0.0);
    assert_true(score(DSA_RULER_MATCH_ALL, "\xc4\xb0STANBUL", ist2, 1) == 1.0);
    /* final sigma: "ΣΟΦΟΣ".lower() == "σοφος" */
    const char *const sig_final[] = {"\xcf\x83\xce\xbf\xcf\x86\xce\xbf\xcf\x82"},
                      *const sig_mid[] = {"\xcf\x83\xce\xbf\xcf\x86\xce\xbf\xcf\x83"};
    const char *sofos = "\xce\xa3\xce\x9f\xce\xa6\xce\x9f\xce\xa3";
    assert_true(score(DSA_RULER_MATCH_ALL, sofos, sig_final, 1) == 1.0);
    assert_true(score(DSA_RULER_MATCH_ALL, sofos, sig_mid, 1) == 0.0);
    /* KELVIN SIGN lowercases to ASCII k */
    const char *const k[] = {"kb"};
    assert_true(score(DSA_RULER_MATCH_ALL,
                      "\xe2\x84\xaa"
                      "B",
                      k, 1) == 1.0);
    /* the references are lowercased too */
    const char *const up[] = {"ABC"};
    assert_true(score(DSA_RULER_MATCH_ALL, "xabcx", up, 1) == 1.0);
    /* post-processing: control bytes become newlines (a tab is not a space any more) */
    const char *const tab[] = {"a b"}, *const nl[] = {"a\nb"};
    assert_true(score(DSA_RULER_MATCH_ALL, "a\tb", tab, 1) == 0.0);
    assert_true(score(DSA_RULER_MATCH_ALL, "a\tb", nl, 1) == 1.0);
    /* invalid UTF-8 reads as U+FFFD and does not stop the match */
    const char *const tail[] = {"tail"};
    assert_true(score(DSA_RULER_MATCH_ALL, "\xff\xfe tail", tail, 1) == 1.0);
    assert_true(dsa_ruler_score(DSA_RULER_MATCH_ALL, "a\0tail", 6, tail, 1) == 1.0);

    size_t n;
    const char *raw = " \x0b\t x\x01y \xe3\x80\x80\n";
    char *q = dsa_ruler_postprocess(raw, strlen(raw), &n);
    assert_string_equal(q, "x\ny");
    assert_int_equal(n, 3);
    free(q);
    raw = "\x1c\x1d abc \xc2\x85"; /* 0x1c..0x1f and NEL are Python whitespace */
    q = dsa_ruler_postprocess(raw, strlen(raw), &n);
    assert_string_equal(q, "abc");
    free(q);
    q = dsa_ruler_postprocess(NULL, 0, &n);
    assert_string_equal(q, "");
    free(q);
}

/* Random predictions and references over a pool of tricky characters, scored here and by
   CPython (tests/data/ruler/score_ref.py). */
static void test_score_python_parity(void **state)
{
    (void)state;
    const char *py = getenv("DSA_PYTHON"), *src = getenv("DSA_SRC");
    if (!py || !*py || !src)
        fail_msg("python3 is required: DSA_PYTHON (set by ctest; scripts/setup.sh installs it)");
    static const char *const pool[] = {
        "a",
        "b",
        "K",
        "k",
        "I",
        "i",
        "1",
        "2",
        "-",
        " ",
        "\t",
        "\n",
        "\x01",
        "\x1f",
        "\xc4\xb0",         /* İ */
        "\xc4\xb1",         /* ı */
        "\xce\xa3",         /* Σ */
        "\xcf\x83",         /* σ */
        "\xcf\x82",         /* ς */
        "\xe2\x84\xaa",     /* KELVIN SIGN */
        "\xe2\x84\xab",     /* ANGSTROM SIGN */
        "\xc3\x85",         /* Å */
        "\xe1\xba\x9e",     /* ẞ */
        "\xc3\x9f",         /* ß */
        "\xef\xac\x81",     /* ﬁ */
        "\xd0\x96",         /* Ж */
        "\xe1\x8e\xa0",     /* CHEROKEE LETTER A */
        "\xf0\x90\x90\x80", /* DESERET CAPITAL LONG I */
        "\xc2\xa0",         /* NBSP */
        "\xe3\x80\x80",     /* IDEOGRAPHIC SPACE */
        "\xc7\x85",         /* ǅ (titlecase) */
        "\xcc\x87",         /* COMBINING DOT ABOVE */
    };
    enum { N = 3000, POOL = sizeof pool / sizeof pool[0] };
    char in_path[] = "/tmp/dsa-ruler-in-XXXXXX", out_path[] = "/tmp/dsa-ruler-out-XXXXXX";
    int fd = mkstemp(in_path);
    assert_true(fd >= 0);
    close(fd);
    fd = mkstemp(out_path);
    assert_true(fd >= 0);
    close(fd);
    uint64_t x = 42;
    json_t **cases = calloc(N, sizeof *cases);
    FILE *f = fopen(in_path, "w");
    for (int i = 0; i < N; i++) {
        struct dsa_buf b = DSA_BUF_INIT;
        dsa_buf_init(&b); /* "" for an empty prediction */
        x = dsa_splitmix64(x);
        for (uint64_t j = 0, n = x % 12; j < n; j++) {
            x = dsa_splitmix64(x);
            dsa_buf_adds(&b, pool[x % POOL]);
        }
        json_t *refs = json_array();
        x = dsa_splitmix64(x);
        for (uint64_t r = 0, nr = 1 + x % 3; r < nr; r++) {
            struct dsa_buf rb = DSA_BUF_INIT;
            x = dsa_splitmix64(x);
            for (uint64_t j = 0, n = 1 + x % 3; j < n; j++) {
                x = dsa_splitmix64(x);
                dsa_buf_adds(&rb, pool[x % POOL]);
            }
            json_array_append_new(refs, json_string(rb.data));
            dsa_buf_release(&rb);
        }
        cases[i] = json_pack("{s:s,s:o}", "pred", b.data, "refs", refs);
        char *line = json_dumps(cases[i], JSON_COMPACT);
        fprintf(f, "%s\n", line);
        free(line);
        dsa_buf_release(&b);
    }
    fclose(f);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' '%s/tests/data/ruler/score_ref.py' < '%s' > '%s'", py, src,
             in_path, out_path);
    assert_int_equal(system(cmd), 0);
    dsa_lines *r = dsa_lines_open(out_path);
    assert_non_null(r);
    const char *line;
    size_t len;
    int i = 0, hits = 0;
    while (dsa_lines_next(r, &line, &len) == 1) {
        assert_true(i < N);
        json_t *o = json_loadb(line, len, 0, NULL);
        assert_non_null(o);
        json_t *refs = json_object_get(cases[i], "refs");
        const char *pred = json_string_value(json_object_get(cases[i], "pred"));
        const char *rv[3];
        size_t nr = json_array_size(refs);
        for (size_t j = 0; j < nr; j++)
            rv[j] = json_string_value(json_array_get(refs, j));
        size_t plen;
        char *post = dsa_ruler_postprocess(pred, strlen(pred), &plen);
        if (strcmp(post, json_string_value(json_object_get(o, "post"))))
            fail_msg("case %d: post-processed \"%s\", CPython \"%s\"", i, post,
                     json_string_value(json_object_get(o, "post")));
        free(post);
        double all = dsa_ruler_score(DSA_RULER_MATCH_ALL, pred, strlen(pred), rv, nr);
        double part = dsa_ruler_score(DSA_RULER_MATCH_PART, pred, strlen(pred), rv, nr);
        double want_all = json_real_value(json_object_get(o, "all"));
        double want_part = json_real_value(json_object_get(o, "part"));
        if (all != want_all || part != want_part)
            fail_msg("case %d: all %g part %g, CPython %g %g", i, all, part, want_all, want_part);
        hits += part > 0;
        json_decref(o);
        i++;
    }
    assert_int_equal(i, N);
    assert_true(hits > N / 20); /* the pool is small enough that matches happen */
    dsa_lines_free(&r);
    for (int k = 0; k < N; k++)
        json_decref(cases[k]);
    free(cases);
    unlink(in_path);
    unlink(out_path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_lists),    cmocka_unit_test(test_every_task_4k),
        cmocka_unit_test(test_templates),      cmocka_unit_test(test_golden),
        cmocka_unit_test(test_determinism),    cmocka_unit_test(test_length_fitting),
        cmocka_unit_test(test_needle_tokens),  cmocka_unit_test(test_tok_ends),
        cmocka_unit_test(test_haystack_files), cmocka_unit_test(test_python_samples),
        cmocka_unit_test(test_score_vectors),  cmocka_unit_test(test_score_python_parity),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
