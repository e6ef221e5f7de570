/* Unit tests of src/store: run-file creation, resume, torn lines, header matching, loading
 * plain score files, secret redaction, concurrent appends, and crash safety (a write hook
 * swept over every byte-offset class, and fork + kill -9 at random moments).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store/store.h"
#include "util/buf.h"
#include "util/hash.h"
#include "util/msg.h"

static char tmpdir[256];

static int setup(void **state)
{
    (void)state;
    /* tmpfs when there is one: a kill -9 leaves the same file on tmpfs as on a disk, and
       fdatasync on a busy shared disk would make the test slow, not stronger */
    const char *base = getenv("TMPDIR");
    if (!base)
        base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(tmpdir, sizeof tmpdir, "%s/dsa-store.XXXXXX", base);
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static char *tpath(const char *name)
{
    char *p = malloc(strlen(tmpdir) + strlen(name) + 2);
    sprintf(p, "%s/%s", tmpdir, name);
    return p;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    struct dsa_buf b = DSA_BUF_INIT;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        dsa_buf_add(&b, chunk, n);
    fclose(f);
    if (len)
        *len = b.len;
    return dsa_buf_detach(&b, NULL);
}

static void spit(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* a fixed header, so files of two runs are byte-identical */
static json_t *test_header(const char *model)
{
    return json_pack("{s:s,s:i,s:s,s:{s:s,s:s},s:[s,s],s:{s:s,s:s,s:{s:f,s:i}}}", "eval", "mrcr",
                     "run", 1, "created", "2026-11-30T12:00:00Z", "tool", "version", "0.1.0", "git",
                     "test", "command", "dsa-eval", "mrcr", "match", "dataset", "mrcr-2needle",
                     "model", model, "params", "temperature", 0.0, "max_tokens", 4096);
}

#define N_RECORDS 6

static json_t *test_record(int i)
{
    char id[32];
    snprintf(id, sizeof id, "n2/r%04d", i);
    if (i == 3) /* a failed sample */
        return json_pack("{s:s,s:s,s:i,s:s,s:n,s:s}", "id", id, "bin",
                         "\xe2\x89\xa4"
                         "8K",
                         "bin_tokens", 8192, "status", "failed", "score", "error",
                         "http 500: internal error");
    return json_pack("{s:s,s:s,s:i,s:s,s:f,s:n,s:s,s:b}", "id", id, "bin",
                     i < 4 ? "\xe2\x89\xa4"
                             "8K"
                           : "\xe2\x89\xa4"
                             "16K",
                     "bin_tokens", i < 4 ? 8192 : 16384, "status", "ok", "score", 1.0 / (i + 1),
                     "error", "output", i == 1 ? "two\nlines \"quoted\" \xc3\xa9" : "plain",
                     "prefix_hit", i % 2 == 0);
}

/* What an eval command does: open (resume), run every sample not finished, close. */
static int small_run(const char *path, int n_records)
{
    json_t *h = test_header("m1");
    dsa_run *r = NULL;
    int rc = dsa_run_open(&r, path, h, 0);
    json_decref(h);
    if (rc < 0)
        return rc;
    for (int i = 0; i < n_records; i++) {
        json_t *rec = test_record(i);
        const char *id = json_string_value(json_object_get(rec, "id"));
        if (!dsa_run_has(r, id) && dsa_run_append(r, rec) < 0)
            rc = -1;
        json_decref(rec);
    }
    dsa_run_free(&r);
    return rc;
}

static void test_file_name(void **state)
{
    (void)state;
    char *p = dsa_run_file_name("out", 1);
    assert_string_equal(p, "out/run-001.jsonl");
    free(p);
    p = dsa_run_file_name("out/", 12);
    assert_string_equal(p, "out/run-012.jsonl");
    free(p);
    p = dsa_run_file_name(NULL, 1000);
    assert_string_equal(p, "./run-1000.jsonl");
    free(p);
}

static void test_create_and_resume(void **state)
{
    (void)state;
    char *path = tpath("sub/dir/run-001.jsonl"); /* directories are created */
    json_t *h = test_header("m1");
    dsa_run *r = NULL;
    assert_int_equal(dsa_run_open(&r, path, h, 0), 0);
    assert_int_equal(dsa_run_resumed(r), 0);
    assert_int_equal(dsa_run_count(r), 0);
    assert_int_equal(json_integer_value(json_object_get(dsa_run_header(r), "dsa_eval_run")), 1);
    for (int i = 0; i < 3; i++) {
        json_t *rec = test_record(i);
        assert_int_equal(dsa_run_append(r, rec), 0);
        json_decref(rec);
    }
    /* the same id twice is refused */
    json_t *dup = test_record(1);
    assert_int_equal(dsa_run_append(r, dup), -1);
    json_decref(dup);
    /* a record without the common keys is refused */
    json_t *bad = json_pack("{s:s}", "id", "x");
    assert_int_equal(dsa_run_append(r, bad), -1);
    json_decref(bad);
    assert_true(dsa_run_has(r, "n2/r0001"));
    assert_false(dsa_run_has(r, "n2/r0005"));
    dsa_run_free(&r);
    assert_null(r);

    /* the exact bytes: sorted keys, compact, one line each */
    char *text = slurp(path, NULL);
    const char *want_line2 =
        "{\"bin\":\"\xe2\x89\xa4"
        "8K\",\"bin_tokens\":8192,\"error\":null,\"id\":\"n2/r0000\","
        "\"output\":\"plain\",\"prefix_hit\":true,\"score\":1.0,\"status\":\"ok\"}\n";
    const char *nl = strchr(text, '\n');
    assert_non_null(nl);
    assert_memory_equal(nl + 1, want_line2, strlen(want_line2));
    assert_non_null(strstr(text, "\"output\":\"two\\nlines \\\"quoted\\\" \xc3\xa9\""));
    free(text);

    /* reopening resumes: the three records are there, in order */
    assert_int_equal(dsa_run_open(&r, path, h, 0), 0);
    /* while it is open, a second writer (another process, or this one) is refused */
    dsa_run *r2 = NULL;
    assert_int_equal(dsa_run_open(&r2, path, h, 0), -1);
    assert_null(r2);
    assert_int_equal(dsa_run_resumed(r), 3);
    assert_int_equal(dsa_run_count(r), 3);
    assert_string_equal(json_string_value(json_object_get(dsa_run_record(r, 2), "id")), "n2/r0002");
    assert_true(json_real_value(json_object_get(dsa_run_get(r, "n2/r0001"), "score")) == 0.5);
    json_t *rec = test_record(3);
    assert_int_equal(dsa_run_append(r, rec), 0);
    json_decref(rec);
    assert_int_equal(dsa_run_count(r), 4);
    assert_int_equal(dsa_run_resumed(r), 3);
    json_t *snap = dsa_run_records(r);
    assert_int_equal(json_array_size(snap), 4);
    assert_ptr_equal(json_array_get(snap, 3), dsa_run_record(r, 3));
    json_decref(snap);
    dsa_run_free(&r);

    json_t *lh, *lr;
    assert_int_equal(dsa_run_load(path, &lh, &lr), 0);
    assert_int_equal(json_array_size(lr), 4);
    assert_string_equal(json_string_value(json_object_get(lh, "created")), "2026-11-30T12:00:00Z");
    assert_true(json_is_null(json_object_get(json_array_get(lr, 3), "score")));
    json_decref(lh);
    json_decref(lr);
    json_decref(h);
    free(path);
}

static void test_header_mismatch(void **state)
{
    (void)state;
    char *path = tpath("mm.jsonl");
    assert_int_equal(small_run(path, 2), 0);
    json_t *h = test_header("m2");
    dsa_run *r = NULL;
    assert_int_equal(dsa_run_open(&r, path, h, 0), -2);
    assert_null(r);
    /* nested difference */
    json_t *h3 = test_header("m1");
    json_object_set_new(json_object_get(json_object_get(h3, "match"), "params"), "max_tokens",
                        json_integer(8192));
    assert_int_equal(dsa_run_open(&r, path, h3, 0), -2);
    json_decref(h3);
    /* --force-new moves the old file aside and starts anew */
    assert_int_equal(dsa_run_open(&r, path, h, DSA_RUN_FORCE_NEW), 0);
    assert_int_equal(dsa_run_resumed(r), 0);
    dsa_run_free(&r);
    char *old = tpath("mm.jsonl.old-1");
    json_t *lh, *lr;
    assert_int_equal(dsa_run_load(old, &lh, &lr), 0);
    assert_int_equal(json_array_size(lr), 2);
    json_decref(lh);
    json_decref(lr);
    /* and again: .old-2, .old-1 is kept */
    json_decref(h);
    h = test_header("m3");
    assert_int_equal(dsa_run_open(&r, path, h, DSA_RUN_FORCE_NEW), 0);
    dsa_run_free(&r);
    char *old2 = tpath("mm.jsonl.old-2");
    struct stat st;
    assert_int_equal(stat(old2, &st), 0);
    assert_int_equal(stat(old, &st), 0);
    json_decref(h);
    free(old);
    free(old2);
    free(path);
}

static void test_torn_lines(void **state)
{
    (void)state;
    char *path = tpath("torn.jsonl");
    char *ref = tpath("torn-ref.jsonl");
    assert_int_equal(small_run(ref, N_RECORDS), 0);
    size_t reflen;
    char *want = slurp(ref, &reflen);

    /* torn without '\n' */
    assert_int_equal(small_run(path, 2), 0);
    FILE *f = fopen(path, "ab");
    fputs("{\"bin\":\"x\",\"id\":\"n2/r00", f);
    fclose(f);
    json_t *lh, *lr;
    assert_int_equal(dsa_run_load(path, &lh, &lr), 0);
    assert_int_equal(json_array_size(lr), 2);
    json_decref(lh);
    json_decref(lr);
    assert_int_equal(small_run(path, N_RECORDS), 0);
    size_t len;
    char *got = slurp(path, &len);
    assert_int_equal(len, reflen);
    assert_memory_equal(got, want, len);
    free(got);

    /* a whole record without its '\n' is torn too: it runs again */
    unlink(path);
    assert_int_equal(small_run(path, 2), 0);
    json_t *rec = test_record(2);
    char *line = json_dumps(rec, JSON_COMPACT | JSON_SORT_KEYS);
    f = fopen(path, "ab");
    fputs(line, f);
    fclose(f);
    free(line);
    json_decref(rec);
    assert_int_equal(small_run(path, N_RECORDS), 0);
    got = slurp(path, &len);
    assert_int_equal(len, reflen);
    assert_memory_equal(got, want, len);
    free(got);

    /* garbage in the middle is an error, not silently dropped */
    char *mid = tpath("mid.jsonl");
    char *hl = strchr(want, '\n');
    struct dsa_buf b = DSA_BUF_INIT;
    dsa_buf_add(&b, want, (size_t)(hl + 1 - want));
    dsa_buf_adds(&b, "{oops\n");
    dsa_buf_adds(&b, hl + 1);
    spit(mid, b.data);
    dsa_buf_release(&b);
    assert_int_equal(dsa_run_load(mid, &lh, &lr), -1);
    json_t *h = test_header("m1");
    dsa_run *r = NULL;
    assert_int_equal(dsa_run_open(&r, mid, h, 0), -3);
    /* the file is left untouched */
    char *after = slurp(mid, &len);
    assert_int_equal(len, reflen + 6);
    free(after);

    /* a non-run file is refused, not truncated */
    char *plain = tpath("plain-open.jsonl");
    spit(plain, "{\"id\":\"a\",\"bin\":\"all\",\"score\":1}\n");
    assert_int_equal(dsa_run_open(&r, plain, h, 0), -3);
    spit(plain, "hello world");
    assert_int_equal(dsa_run_open(&r, plain, h, 0), -3);
    after = slurp(plain, &len);
    assert_string_equal(after, "hello world");
    free(after);

    /* a torn header (crash while creating): the file starts anew */
    spit(plain, "{\"command\":[\"dsa-ev");
    assert_int_equal(dsa_run_open(&r, plain, h, 0), 0);
    assert_int_equal(dsa_run_resumed(r), 0);
    dsa_run_free(&r);

    json_decref(h);
    free(plain);
    free(mid);
    free(want);
    free(path);
    free(ref);
}

/* a model may say U+0000: the record keeps it (escaped), and reading and resuming give back
   the same string, byte for byte */
static void test_nul_round_trip(void **state)
{
    (void)state;
    char *path = tpath("nul.jsonl");
    json_t *h = test_header("m1");
    dsa_run *r = NULL;
    assert_int_equal(dsa_run_open(&r, path, h, 0), 0);
    static const char said[] = "a\0b\0";
    json_t *rec = json_pack("{s:s,s:s,s:f,s:n,s:s%}", "id", "n2/r0000", "bin", "all", "score", 0.5,
                            "error", "output", said, sizeof said - 1);
    assert_int_equal(dsa_run_append(r, rec), 0);
    json_decref(rec);
    dsa_run_free(&r);
    size_t len;
    char *text = slurp(path, &len);
    assert_non_null(strstr(text, "\"output\":\"a\\u0000b\\u0000\""));
    free(text);
    json_t *lh, *lr;
    assert_int_equal(dsa_run_load(path, &lh, &lr), 0);
    json_t *out = json_object_get(json_array_get(lr, 0), "output");
    assert_int_equal(json_string_length(out), sizeof said - 1);
    assert_memory_equal(json_string_value(out), said, sizeof said - 1);
    json_decref(lh);
    json_decref(lr);
    /* resumed, not redone */
    assert_int_equal(dsa_run_open(&r, path, h, 0), 0);
    assert_int_equal(dsa_run_resumed(r), 1);
    dsa_run_free(&r);
    json_decref(h);
    free(path);
}

/* a whole last line that does not parse is reported, not dropped and silently redone; a
   score no eval can produce is refused with the reason */
static void test_bad_whole_last_line(void **state)
{
    (void)state;
    char *path = tpath("badlast.jsonl");
    assert_int_equal(small_run(path, 2), 0);
    FILE *f = fopen(path, "ab");
    fputs("{\"bin\":\"x\",\"id\":\"n2/r0009\",\"output\":\"\\ud800 x\"}\n", f);
    fclose(f);
    size_t before;
    free(slurp(path, &before));
    json_t *lh, *lr;
    assert_int_equal(dsa_run_load(path, &lh, &lr), -1);
    json_t *h = test_header("m1");
    dsa_run *r = NULL;
    assert_int_equal(dsa_run_open(&r, path, h, 0), -3);
    size_t after;
    free(slurp(path, &after));
    assert_int_equal(after, before); /* left as it was */

    const char *bad[] = {"1e308", "-0.5", "1.0000001"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char line[128];
        snprintf(line, sizeof line, "{\"id\":\"a\",\"bin\":\"all\",\"score\":%s}\n", bad[i]);
        spit(path, line);
        assert_int_equal(dsa_run_load(path, &lh, &lr), -1);
    }
    spit(path, "{\"id\":\"a\\u0000b\",\"bin\":\"all\",\"score\":1}\n");
    assert_int_equal(dsa_run_load(path, &lh, &lr), -1);
    json_decref(h);
    free(path);
}

static void test_load_plain_scores(void **state)
{
    (void)state;
    char *path = tpath("scores.jsonl");
    json_t *h, *r;
    spit(path, "{\"id\":\"q0\",\"bin\":\"all\",\"score\":1}\n\n"
               "{\"id\":\"q1\",\"bin\":\"all\",\"score\":0}\n"
               "{\"id\":\"q2\",\"bin\":\"all\",\"score\":null}");
    assert_int_equal(dsa_run_load(path, &h, &r), 0);
    assert_int_equal(json_object_size(h), 0);
    assert_int_equal(json_array_size(r), 3); /* the unterminated last line parses: kept */
    json_decref(h);
    json_decref(r);

    spit(path, "{\"id\":\"q0\",\"bin\":\"all\",\"score\":1}\n{\"id\":\"q0\",\"score\":0}\n");
    assert_int_equal(dsa_run_load(path, &h, &r), -1); /* duplicate id */
    assert_null(r);
    spit(path, "{\"id\":\"q0\",\"bin\":\"all\",\"score\":\"high\"}\n");
    assert_int_equal(dsa_run_load(path, &h, &r), -1);
    spit(path, "{\"bin\":\"all\",\"score\":1}\n");
    assert_int_equal(dsa_run_load(path, &h, &r), -1);
    spit(path, "[1,2]\n");
    assert_int_equal(dsa_run_load(path, &h, &r), -1);
    spit(path, "{\"dsa_eval_run\":2,\"match\":{}}\n");
    assert_int_equal(dsa_run_load(path, &h, &r), -1); /* a newer format */
    char *missing = tpath("nope.jsonl");
    assert_int_equal(dsa_run_load(missing, &h, &r), -1);
    free(missing);
    free(path);
}

/* records read through simdjson are the trees jansson reads (types included: 1 is an integer,
   1.0 a real), and the lines it declines are jansson's to read (U+0000) or to refuse with its
   own message (a duplicate key) */
static void test_load_trees_as_jansson(void **state)
{
    (void)state;
    static const char *const lines[] = {
        "{\"dsa_eval_run\":1,\"match\":{\"a\":1},\"eval\":\"mrcr\"}",
        "{\"id\":\"n8/r1\",\"bin\":\"\\u22648K\",\"bin_tokens\":8192,\"status\":\"ok\",\"score\":1,"
        "\"error\":null}",
        "{\"id\":\"n8/r2\",\"bin\":\"b0\",\"status\":\"ok\",\"score\":1.0,\"usage\":{\"n\":[1,2.5,"
        "true,false,null,\"x\"]},\"output\":\"caf\\u00e9 \\ud83d\\ude00 \\\"q\\\" \\\\\"}",
        "{\"id\":\"n8/r3\",\"bin\":\"b0\",\"status\":\"failed\",\"score\":null,\"error\":\"e\","
        "\"big\":9223372036854775807,\"neg\":-9223372036854775808,\"tiny\":5e-324}",
        "{\"id\":\"n8/r4\",\"bin\":\"b0\",\"score\":0.25,\"output\":\"a\\u0000b\"}",
        " {\"id\":\"n8/r5\",\"bin\":\"b0\",\"score\":0.5}\t\r",
    };
    size_t n = sizeof lines / sizeof *lines;
    struct dsa_buf text = DSA_BUF_INIT;
    for (size_t i = 0; i < n; i++)
        dsa_buf_addf(&text, "%s\n", lines[i]);
    char *path = tpath("trees.jsonl");
    spit(path, text.data);
    json_t *h, *r;
    assert_int_equal(dsa_run_load(path, &h, &r), 0);
    assert_int_equal(json_array_size(r), n - 1);
    for (size_t i = 0; i < n; i++) {
        json_error_t err;
        json_t *want =
            json_loadb(lines[i], strlen(lines[i]), JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &err);
        assert_non_null(want);
        json_t *got = i ? json_array_get(r, i - 1) : h;
        assert_true(json_equal(got, want));
        json_t *score = json_object_get(got, "score");
        assert_int_equal(json_typeof(score ? score : json_null()),
                         json_typeof(json_object_get(want, "score") ? json_object_get(want, "score")
                                                                    : json_null()));
        json_decref(want);
    }
    assert_int_equal(json_string_length(json_object_get(json_array_get(r, 3), "output")), 3);
    json_decref(h);
    json_decref(r);

    /* a duplicate key: refused with jansson's words, as before */
    spit(path,
         "{\"id\":\"a\",\"bin\":\"all\",\"score\":1}\n{\"id\":\"b\",\"score\":1,\"score\":0}\n");
    struct dsa_buf msg = DSA_BUF_INIT;
    dsa_msg_capture(&msg);
    int rc = dsa_run_load(path, &h, &r);
    dsa_msg_capture(NULL);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(msg.data, "cannot parse line 2 of '"));
    assert_non_null(strstr(msg.data, "duplicate object key"));
    dsa_buf_release(&msg);
    dsa_buf_release(&text);
    free(path);
}

static void check_command(int argc, const char **argv, const char *want)
{
    json_t *a = dsa_run_command_json(argc, (char **)argv);
    char *s = json_dumps(a, JSON_COMPACT);
    assert_string_equal(s, want);
    free(s);
    json_decref(a);
}

static void test_command_redaction(void **state)
{
    (void)state;
    const char *a1[] = {"dsa-eval", "mrcr", "--api-key-file", "/home/u/.key", "--model", "m"};
    check_command(6, a1,
                  "[\"dsa-eval\",\"mrcr\",\"--api-key-file\",\"<redacted>\",\"--model\",\"m\"]");
    const char *a2[] = {"dsa-eval", "--api-key=sk-123", "--token", "t", "--password=pw"};
    check_command(5, a2,
                  "[\"dsa-eval\",\"--api-key=<redacted>\",\"--token\",\"<redacted>\","
                  "\"--password=<redacted>\"]");
    const char *a3[] = {"x",        "-H",         "Authorization: Bearer sk-1",
                        "--header", "X-Trace: 1", "--header=x-api-key: k"};
    check_command(6, a3,
                  "[\"x\",\"-H\",\"Authorization: <redacted>\",\"--header\",\"X-Trace: 1\","
                  "\"--header=x-api-key: <redacted>\"]");
    const char *a4[] = {"x", "--endpoint", "http://user:pw@host:8000/v1",
                        "--endpoint=https://h/a@b"};
    check_command(4, a4,
                  "[\"x\",\"--endpoint\",\"http://user:***@host:8000/v1\","
                  "\"--endpoint=https://h/a@b\"]");
    /* --api-key-filex is another option; a trailing --api-key without value is harmless */
    const char *a5[] = {"x", "--api-key-filex", "v", "--", "--api-key"};
    check_command(5, a5, "[\"x\",\"--api-key-filex\",\"v\",\"--\",\"--api-key\"]");
}

static void test_header_new_and_diff(void **state)
{
    (void)state;
    const char *argv[] = {"dsa-eval", "gsm8k", "--api-key-file", "k"};
    json_t *h = dsa_run_header_new("gsm8k", 2, 4, (char **)argv);
    assert_int_equal(json_integer_value(json_object_get(h, "dsa_eval_run")), 1);
    assert_int_equal(json_integer_value(json_object_get(h, "run")), 2);
    assert_string_equal(json_string_value(json_object_get(h, "eval")), "gsm8k");
    assert_string_equal(json_string_value(json_array_get(json_object_get(h, "command"), 3)),
                        "<redacted>");
    assert_true(json_is_object(json_object_get(h, "match")));
    const char *created = json_string_value(json_object_get(h, "created"));
    assert_int_equal(strlen(created), 20);
    assert_int_equal(created[19], 'Z');
    json_decref(h);

    json_t *a = json_pack("{s:s,s:{s:i,s:s}}", "model", "m", "p", "k", 1, "z", "x");
    json_t *b = json_pack("{s:s,s:{s:i,s:s}}", "model", "m", "p", "k", 2, "z", "y");
    assert_null(dsa_run_match_diff(a, a));
    char *d = dsa_run_match_diff(a, b);
    assert_string_equal(d, "p.k: 1 vs 2");
    free(d);
    json_object_del(b, "model");
    d = dsa_run_match_diff(a, b);
    assert_string_equal(d, "model: \"m\" vs (absent)");
    free(d);
    json_decref(a);
    json_decref(b);
}

static void test_retry_failed(void **state)
{
    (void)state;
    char *path = tpath("retry.jsonl");
    assert_int_equal(small_run(path, N_RECORDS), 0); /* record 3 failed */
    json_t *h = test_header("m1");
    dsa_run *r = NULL;
    /* without the flag a failed sample counts as finished */
    assert_int_equal(dsa_run_open(&r, path, h, 0), 0);
    assert_true(dsa_run_has(r, "n2/r0003"));
    dsa_run_free(&r);
    /* a torn line at the end is dropped as well */
    FILE *f = fopen(path, "ab");
    fputs("{\"bin\":", f);
    fclose(f);
    assert_int_equal(dsa_run_open(&r, path, h, DSA_RUN_RETRY_FAILED), 0);
    assert_int_equal(dsa_run_resumed(r), N_RECORDS - 1);
    assert_false(dsa_run_has(r, "n2/r0003"));
    assert_true(dsa_run_has(r, "n2/r0004"));
    json_t *rec = json_pack("{s:s,s:s,s:f,s:s}", "id", "n2/r0003", "bin", "x", "score", 0.125,
                            "status", "ok");
    assert_int_equal(dsa_run_append(r, rec), 0);
    json_decref(rec);
    dsa_run_free(&r);
    json_t *lh, *lr;
    assert_int_equal(dsa_run_load(path, &lh, &lr), 0);
    assert_int_equal(json_array_size(lr), N_RECORDS);
    json_t *last = json_array_get(lr, N_RECORDS - 1);
    assert_string_equal(json_string_value(json_object_get(last, "id")), "n2/r0003");
    assert_true(json_real_value(json_object_get(last, "score")) == 0.125);
    /* the kept records are byte-identical to what was written first */
    char *ref = tpath("retry-ref.jsonl");
    assert_int_equal(small_run(ref, 3), 0);
    size_t n1, n2;
    char *a = slurp(ref, &n1), *b = slurp(path, &n2);
    assert_true(n2 > n1);
    assert_memory_equal(a, b, n1);
    free(a);
    free(b);
    free(ref);
    json_decref(lh);
    json_decref(lr);
    json_decref(h);
    free(path);
}

/* ---- concurrency ---- */

#define N_THREADS  4
#define PER_THREAD 60

struct worker {
    dsa_run *r;
    int t;
};

static void *append_worker(void *arg)
{
    struct worker *w = arg;
    for (int i = 0; i < PER_THREAD; i++) {
        char id[32];
        snprintf(id, sizeof id, "t%d/%03d", w->t, i);
        /* long outputs make a torn or interleaved line likely if appends were not atomic */
        char out[3000];
        memset(out, 'a' + w->t, sizeof out - 1);
        out[sizeof out - 1] = '\0';
        json_t *rec = json_pack("{s:s,s:s,s:f,s:n,s:s}", "id", id, "bin", "all", "score", i / 100.0,
                                "error", "output", out);
        if (dsa_run_append(w->r, rec) < 0)
            return (void *)1;
        json_decref(rec);
    }
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    char *path = tpath("threads.jsonl");
    json_t *h = test_header("m1");
    dsa_run *r = NULL;
    assert_int_equal(dsa_run_open(&r, path, h, 0), 0);
    pthread_t th[N_THREADS];
    struct worker w[N_THREADS];
    for (int t = 0; t < N_THREADS; t++) {
        w[t] = (struct worker){r, t};
        assert_int_equal(pthread_create(&th[t], NULL, append_worker, &w[t]), 0);
    }
    for (int t = 0; t < N_THREADS; t++) {
        void *res;
        pthread_join(th[t], &res);
        assert_null(res);
    }
    assert_int_equal(dsa_run_count(r), N_THREADS * PER_THREAD);
    dsa_run_free(&r);
    json_t *lh, *lr;
    assert_int_equal(dsa_run_load(path, &lh, &lr), 0); /* every line parses, ids unique */
    assert_int_equal(json_array_size(lr), N_THREADS * PER_THREAD);
    /* each thread's records appear in its own order, each output intact */
    int next[N_THREADS] = {0};
    size_t i;
    json_t *rec;
    json_array_foreach(lr, i, rec)
    {
        int t, k;
        assert_int_equal(sscanf(json_string_value(json_object_get(rec, "id")), "t%d/%d", &t, &k),
                         2);
        assert_int_equal(k, next[t]++);
        const char *o = json_string_value(json_object_get(rec, "output"));
        assert_int_equal(strspn(o, (char[]){(char)('a' + t), 0}), 2999);
    }
    json_decref(lh);
    json_decref(lr);
    json_decref(h);
    free(path);
}

/* ---- crash safety ---- */

/* Runs small_run in a child that dies by SIGKILL after `budget` bytes (the hook), then
   resumes in this process; the result must be byte-identical to an uninterrupted run. */
static void crash_and_resume(const char *path, long long budget, long long budget2,
                             const char *want, size_t wantlen)
{
    unlink(path);
    for (int round = 0; round < 2; round++) {
        long long b = round == 0 ? budget : budget2;
        if (b < 0)
            continue;
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            char s[32];
            snprintf(s, sizeof s, "%lld", b);
            setenv("DSA_STORE_CRASH_AFTER_BYTES", s, 1);
            _exit(small_run(path, N_RECORDS) == 0 ? 0 : 1);
        }
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        /* either it was killed by the hook or it finished (budget past the end) */
        assert_true((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) ||
                    (WIFEXITED(status) && WEXITSTATUS(status) == 0));
    }
    assert_int_equal(small_run(path, N_RECORDS), 0);
    size_t len;
    char *got = slurp(path, &len);
    if (len != wantlen || memcmp(got, want, len)) {
        fprintf(stderr, "crash after %lld then %lld bytes: file differs\n--- got\n%s--- want\n%s",
                budget, budget2, got, want);
        fail();
    }
    free(got);
}

static void test_crash_hook_sweep(void **state)
{
    (void)state;
    char *ref = tpath("crash-ref.jsonl");
    char *path = tpath("crash.jsonl");
    assert_int_equal(small_run(ref, N_RECORDS), 0);
    size_t wantlen;
    char *want = slurp(ref, &wantlen);
    /* line boundaries: the header and every record */
    long long starts[N_RECORDS + 2];
    int nlines = 0;
    starts[nlines++] = 0;
    for (size_t i = 0; i < wantlen; i++)
        if (want[i] == '\n')
            starts[nlines++] = (long long)i + 1;
    assert_int_equal(nlines, N_RECORDS + 2);
    int cases = 0;
    /* every offset class of every line: at its start (a boundary), one byte in, the middle,
       one byte before its '\n', and just its '\n' missing; then past the end */
    for (int l = 0; l + 1 < nlines; l++) {
        long long s = starts[l], e = starts[l + 1];
        long long pts[] = {s, s + 1, (s + e) / 2, e - 2, e - 1};
        for (size_t p = 0; p < sizeof pts / sizeof *pts; p++) {
            crash_and_resume(path, pts[p], -1, want, wantlen);
            cases++;
        }
    }
    crash_and_resume(path, (long long)wantlen + 10, -1, want, wantlen);
    /* two crashes in a row: mid-record, then mid-record again while resuming (the second
       budget counts only the resumed process's bytes) */
    for (int l = 1; l + 2 < nlines; l++) {
        long long s = starts[l], e = starts[l + 1];
        crash_and_resume(path, (s + e) / 2, (e - s) / 3, want, wantlen);
        crash_and_resume(path, s, 1, want, wantlen);
        cases += 2;
    }
    print_message("crash hook: %d crash points, all resumed byte-identical\n", cases);
    free(want);
    free(ref);
    free(path);
}

/* A long run in a child killed with SIGKILL at random moments. */
#define LONG_RECORDS 200

/* grouped: the records appended unsynced, one dsa_run_sync() per 7 (the run loop's group
   commit) */
static int long_run(const char *path, bool grouped)
{
    json_t *h = test_header("m1");
    dsa_run *r = NULL;
    int rc = dsa_run_open(&r, path, h, 0);
    json_decref(h);
    if (rc < 0)
        return rc;
    for (int i = 0; i < LONG_RECORDS && rc == 0; i++) {
        char id[32];
        snprintf(id, sizeof id, "n4/r%04d", i);
        if (dsa_run_has(r, id))
            continue;
        char out[600];
        memset(out, 'x', sizeof out - 1);
        out[sizeof out - 1] = '\0';
        json_t *rec = json_pack("{s:s,s:s,s:i,s:f,s:n,s:s}", "id", id, "bin", "all", "row", i,
                                "score", i / (double)LONG_RECORDS, "error", "output", out);
        rc = grouped ? dsa_run_append_unsynced(r, rec) : dsa_run_append(r, rec);
        if (rc == 0 && grouped && i % 7 == 6)
            rc = dsa_run_sync(r);
        json_decref(rec);
    }
    dsa_run_free(&r);
    return rc;
}

/* dsa_run_append_unsynced: the line is in the file at once (a kill loses nothing), the sync
   then succeeds, and a resume reads every record */
static void test_append_unsynced(void **state)
{
    (void)state;
    char *path = tpath("unsynced.jsonl");
    json_t *h = test_header("m1");
    dsa_run *r = NULL;
    assert_int_equal(dsa_run_open(&r, path, h, 0), 0);
    assert_int_equal(dsa_run_sync(r), 0); /* nothing to sync */
    for (int i = 0; i < 3; i++) {
        json_t *rec = test_record(i);
        assert_int_equal(dsa_run_append_unsynced(r, rec), 0);
        json_decref(rec);
        size_t len;
        char *got = slurp(path, &len);
        int lines = 0;
        for (size_t k = 0; k < len; k++)
            lines += got[k] == '\n';
        assert_int_equal(lines, 2 + i);
        assert_int_equal(got[len - 1], '\n');
        free(got);
    }
    assert_int_equal(dsa_run_sync(r), 0);
    assert_int_equal(dsa_run_count(r), 3);
    dsa_run_free(&r);
    assert_int_equal(dsa_run_open(&r, path, h, 0), 0);
    assert_int_equal(dsa_run_count(r), 3);
    assert_true(dsa_run_has(r, "n2/r0002"));
    dsa_run_free(&r);
    json_decref(h);
    unlink(path);
    free(path);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void test_fork_kill9(void **state)
{
    (void)state;
    char *ref = tpath("kill-ref.jsonl");
    char *path = tpath("kill.jsonl");
    double t0 = now_s();
    assert_int_equal(long_run(ref, false), 0);
    double full = now_s() - t0; /* scales the random delays, asserts nothing */
    size_t wantlen;
    char *want = slurp(ref, &wantlen);
    uint64_t seed = 20261130;
    int killed = 0, partial = 0, torn = 0;
    for (int trial = 0; trial < 12; trial++) {
        unlink(path);
        /* up to three kills per trial, each at a random moment of the remaining run */
        for (int k = 0; k < 3; k++) {
            pid_t pid = fork();
            assert_true(pid >= 0);
            if (pid == 0) /* every other trial with the group commit */
                _exit(long_run(path, trial % 2) == 0 ? 0 : 1);
            seed = dsa_splitmix64(seed);
            useconds_t us = (useconds_t)((double)(seed % 1000) / 1000.0 * full * 1e6);
            usleep(us);
            kill(pid, SIGKILL);
            int status;
            assert_int_equal(waitpid(pid, &status, 0), pid);
            if (WIFSIGNALED(status)) {
                killed++;
                /* what the kill left, to show the test reaches mid-run states */
                size_t len;
                char *got = slurp(path, &len);
                if (got && len > 0 && len < wantlen)
                    partial++;
                if (got && len > 0 && got[len - 1] != '\n')
                    torn++;
                free(got);
            } else
                assert_int_equal(WEXITSTATUS(status), 0);
        }
        assert_int_equal(long_run(path, trial % 2), 0);
        size_t len;
        char *got = slurp(path, &len);
        assert_int_equal(len, wantlen);
        assert_memory_equal(got, want, len);
        free(got);
    }
    print_message("fork+kill -9: %d processes killed (%d mid-run, %d mid-line), every file "
                  "resumed byte-identical\n",
                  killed, partial, torn);
    free(want);
    free(ref);
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file_name),         cmocka_unit_test(test_create_and_resume),
        cmocka_unit_test(test_header_mismatch),   cmocka_unit_test(test_torn_lines),
        cmocka_unit_test(test_load_plain_scores), cmocka_unit_test(test_load_trees_as_jansson),
        cmocka_unit_test(test_nul_round_trip),    cmocka_unit_test(test_bad_whole_last_line),
        cmocka_unit_test(test_command_redaction), cmocka_unit_test(test_threads),
        cmocka_unit_test(test_crash_hook_sweep),  cmocka_unit_test(test_append_unsynced),
        cmocka_unit_test(test_fork_kill9),        cmocka_unit_test(test_header_new_and_diff),
        cmocka_unit_test(test_retry_failed),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
