/* Unit tests of src/util: option parsing, buffers, hashing vectors, line reader, UTC stamps,
 * whole-or-nothing file writes.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/buf.h"
#include "util/fmt.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/json_pick.h"
#include "util/lines.h"
#include "util/opt.h"
#include "util/secret.h"
#include "util/url.h"
#include "util/utc.h"

static void test_sha256_vectors(void **state)
{
    (void)state;
    char hex[65];
    /* FIPS 180-2 appendix B.1 and the empty string */
    dsa_sha256_hex("abc", 3, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    dsa_sha256_hex("", 0, hex);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

static uint32_t stream_seed(uint64_t s, const char *label)
{
    uint32_t v = (uint32_t)dsa_splitmix64(s ^ dsa_fnv1a64(label, strlen(label)));
    return v ? v : 1;
}

static void test_seed_derivation_vectors(void **state)
{
    (void)state;
    /* docs/compare.md "Seeds and random streams", "Stream-seed derivation" vectors */
    assert_int_equal(stream_seed(1, "main..cand/<=8K"), 3811829139u);
    assert_int_equal(stream_seed(1, "main..cand/256K"), 2007255372u);
    assert_int_equal(stream_seed(42, "main..cand/<=8K"), 2280725362u);
}

static void test_opt_parse(void **state)
{
    (void)state;
    bool quiet = false, stream = true;
    int runs = 1;
    double t = 0.5;
    const char *out = NULL;
    struct dsa_strlist eps = {0};
    struct dsa_option opts[] = {
        DSA_OPT_BOOL('q', "quiet", &quiet, "quiet"),
        DSA_OPT_BOOL(0, "stream", &stream, "stream"),
        DSA_OPT_INT(0, "runs", &runs, "N", "runs"),
        DSA_OPT_DOUBLE(0, "temperature", &t, "T", "t"),
        DSA_OPT_STRING('o', "out", &out, "DIR", "out"),
        DSA_OPT_STRLIST(0, "endpoint", &eps, "URL", "endpoint"),
        DSA_OPT_END(),
    };
    char *argv[] = {"mrcr",        "--runs=3",
                    "pos1",        "-q",
                    "--no-stream", "--endpoint",
                    "http://a",    "--endpoint=http://b",
                    "-oDIR",       "--temperature",
                    "0.25",        "--",
                    "--pos2",      NULL};
    int argc = 13;
    int n = dsa_opt_parse(&argc, argv, opts, NULL);
    assert_int_equal(n, 2);
    assert_string_equal(argv[0], "pos1");
    assert_string_equal(argv[1], "--pos2");
    assert_true(quiet);
    assert_false(stream);
    assert_int_equal(runs, 3);
    assert_string_equal(out, "DIR");
    assert_true(t == 0.25);
    assert_int_equal(eps.n, 2);
    assert_string_equal(eps.v[1], "http://b");
    dsa_strlist_release(&eps);

    char *bad[] = {"mrcr", "--runs", "x3", NULL};
    argc = 3;
    assert_int_equal(dsa_opt_parse(&argc, bad, opts, NULL), DSA_OPT_ERR_NUMBER);
    char *unk[] = {"mrcr", "--nope", NULL};
    argc = 2;
    assert_int_equal(dsa_opt_parse(&argc, unk, opts, NULL), DSA_OPT_ERR_UNKNOWN);
    char *miss[] = {"mrcr", "--out", NULL};
    argc = 2;
    assert_int_equal(dsa_opt_parse(&argc, miss, opts, NULL), DSA_OPT_ERR_MISSING);
}

static void test_parse_tokens(void **state)
{
    (void)state;
    assert_int_equal(dsa_parse_tokens("8k"), 8192);
    assert_int_equal(dsa_parse_tokens("256K"), 262144);
    assert_int_equal(dsa_parse_tokens("1M"), 1048576);
    assert_int_equal(dsa_parse_tokens("4096"), 4096);
    assert_int_equal(dsa_parse_tokens("8kb"), -1);
    assert_int_equal(dsa_parse_tokens(""), -1);
    assert_int_equal(dsa_parse_tokens("-8k"), -1);
    struct dsa_strlist l = {0};
    dsa_split_commas(" 8k, 16k,,32k ", &l);
    assert_int_equal(l.n, 3);
    assert_string_equal(l.v[2], "32k");
    dsa_strlist_free_items(&l);
}

static void test_buf(void **state)
{
    (void)state;
    struct dsa_buf b = DSA_BUF_INIT;
    for (int i = 0; i < 1000; i++)
        dsa_buf_addf(&b, "%d,", i);
    assert_int_equal(b.len, strlen(b.data));
    assert_memory_equal(b.data, "0,1,2,", 6);
    size_t len;
    char *s = dsa_buf_detach(&b, &len);
    assert_int_equal(len, strlen(s));
    assert_int_equal(b.len, 0);
    free(s);
    dsa_buf_release(&b);
}

static void test_lines_torn_tail(void **state)
{
    (void)state;
    char path[] = "/tmp/dsa-test-lines-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char text[] = "{\"a\":1}\r\n{\"b\":2}\n{\"c\":";
    assert_int_equal(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
    close(fd);
    dsa_lines *r = dsa_lines_open(path);
    const char *line;
    size_t len;
    assert_int_equal(dsa_lines_next(r, &line, &len), 1);
    assert_string_equal(line, "{\"a\":1}");
    assert_false(dsa_lines_unterminated(r));
    assert_int_equal(dsa_lines_next(r, &line, &len), 1);
    assert_int_equal(dsa_lines_offset(r), 9);
    assert_int_equal(dsa_lines_next(r, &line, &len), 1);
    assert_true(dsa_lines_unterminated(r));
    assert_int_equal(dsa_lines_lineno(r), 3);
    assert_string_equal(line, "{\"c\":");
    assert_int_equal(dsa_lines_next(r, &line, &len), 0);
    dsa_lines_free(&r);
    assert_null(r);
    unlink(path);
}

/* Lines longer than the reader's 64 KiB reads, across their edges: each line whole, in order,
   with its offsets, NUL-terminated and followed by DSA_LINES_PADDING readable bytes (read here,
   so the sanitizer build checks the promise). */
static void test_lines_long(void **state)
{
    (void)state;
    char path[] = "/tmp/dsa-test-lines-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    static const size_t lens[] = {0, 1, 65535, 65536, 65537, 200000, 3, 0, 131072, 7};
    struct dsa_buf b = DSA_BUF_INIT;
    for (size_t i = 0; i < DSA_ARRAY_SIZE(lens); i++) {
        for (size_t k = 0; k < lens[i]; k++)
            dsa_buf_addch(&b, (char)('a' + (i + k) % 26));
        dsa_buf_adds(&b, i % 3 == 1 ? "\r\n" : "\n");
    }
    assert_int_equal(write(fd, b.data, b.len), (ssize_t)b.len);
    close(fd);
    dsa_lines *r = dsa_lines_open(path);
    const char *line;
    size_t len;
    off_t off = 0;
    for (size_t i = 0; i < DSA_ARRAY_SIZE(lens); i++) {
        assert_int_equal(dsa_lines_next(r, &line, &len), 1);
        assert_int_equal(len, lens[i]);
        assert_int_equal(dsa_lines_offset(r), off);
        off += (off_t)lens[i] + (i % 3 == 1 ? 2 : 1);
        assert_int_equal(dsa_lines_next_offset(r), off);
        for (size_t k = 0; k < len; k++)
            if (line[k] != (char)('a' + (i + k) % 26))
                fail_msg("line %zu byte %zu", i, k);
        assert_int_equal(line[len], '\0');
        unsigned sum = 0;
        for (size_t k = 1; k <= DSA_LINES_PADDING; k++)
            sum += (unsigned char)line[len + k];
        (void)sum;
        assert_false(dsa_lines_unterminated(r));
    }
    assert_int_equal(dsa_lines_next(r, &line, &len), 0);
    assert_int_equal(dsa_lines_lineno(r), (long)DSA_ARRAY_SIZE(lens));
    dsa_lines_free(&r);
    dsa_buf_release(&b);
    unlink(path);
}

static void test_utc_format(void **state)
{
    (void)state;
    /* reference values from Python's datetime.fromtimestamp(t, timezone.utc) */
    static const struct {
        time_t t;
        const char *want;
    } cases[] = {
        {0, "1970-01-01T00:00:00Z"},
        {951782400, "2000-02-29T00:00:00Z"},
        {1796040000, "2026-11-30T12:00:00Z"},
        {253402300799, "9999-12-31T23:59:59Z"},
    };
    char out[DSA_UTC_SIZE];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        assert_string_equal(dsa_utc_format(cases[i].t, out), cases[i].want);
    /* now: the same shape, and within a few seconds of time() */
    time_t before = time(NULL);
    dsa_utc_now(out);
    struct tm tm = {0};
    char tail;
    assert_int_equal(sscanf(out, "%4d-%2d-%2dT%2d:%2d:%2dZ%c", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                            &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &tail),
                     6);
    assert_int_equal(strlen(out), 20);
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    assert_in_range(timegm(&tm), before, time(NULL));
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *s = calloc(1, 256);
    fread(s, 1, 255, f);
    fclose(f);
    return s;
}

/* no "PATH.tmp-*" left in dir */
static void assert_no_tmp(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "ls '%s' | grep -q '\\.tmp-'", dir);
    assert_int_not_equal(system(cmd), 0);
}

static void test_atomic_write(void **state)
{
    (void)state;
    char dir[] = "/tmp/dsa-test-atomic-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256], sub[256];
    snprintf(path, sizeof path, "%s/out.txt", dir);
    struct dsa_atomic a;
    /* commit: the new bytes under the name, nothing beside */
    assert_int_equal(dsa_atomic_open(&a, path), 0);
    fputs("first\n", a.f);
    assert_int_equal(dsa_atomic_commit(&a), 0);
    assert_null(a.f);
    assert_null(a.tmp);
    char *s = slurp(path);
    assert_string_equal(s, "first\n");
    free(s);
    /* abort: the old file stays as it was */
    assert_int_equal(dsa_atomic_open(&a, path), 0);
    fputs("half", a.f);
    dsa_atomic_abort(&a);
    s = slurp(path);
    assert_string_equal(s, "first\n");
    free(s);
    assert_no_tmp(dir);
    /* a directory in the way: -1 at open, before any temporary exists */
    snprintf(sub, sizeof sub, "%s/d", dir);
    assert_int_equal(dsa_mkdirs(sub), 0);
    snprintf(path, sizeof path, "%s/d/x", dir);
    assert_int_equal(dsa_mkdirs(path), 0);
    assert_int_equal(dsa_atomic_open(&a, sub), -1);
    assert_null(a.tmp);
    assert_true(dsa_is_dir(sub));
    assert_no_tmp(dir);
    /* no directory for the temporary: -1 at open, nothing to release */
    snprintf(path, sizeof path, "%s/missing/out.txt", dir);
    assert_int_equal(dsa_atomic_open(&a, path), -1);
    assert_null(a.tmp);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static bool exists(const char *path)
{
    return access(path, F_OK) == 0;
}

/* temporary files of killed writers are removed by the next writer of the same file; those of
   live processes (here: this one's parent) and of other files are left alone */
static void test_stale_tmp_sweep(void **state)
{
    (void)state;
    char dir[] = "/tmp/dsa-sweep.XXXXXX";
    assert_non_null(mkdtemp(dir));
    pid_t dead = fork();
    assert_true(dead >= 0);
    if (dead == 0)
        _exit(0);
    assert_int_equal(waitpid(dead, NULL, 0), dead);
    char stale[400], live[400], other[400], path[100];
    snprintf(path, sizeof path, "%s/out.txt", dir);
    snprintf(stale, sizeof stale, "%s.tmp-%ld", path, (long)dead);
    snprintf(live, sizeof live, "%s.tmp-%ld", path, (long)getppid());
    snprintf(other, sizeof other, "%s/other.txt.tmp-%ld", dir, (long)dead);
    const char *made[] = {stale, live, other};
    for (int i = 0; i < 3; i++) {
        FILE *f = fopen(made[i], "w");
        assert_non_null(f);
        fputs("partial", f);
        fclose(f);
    }
    struct dsa_atomic a;
    assert_int_equal(dsa_atomic_open(&a, path), 0);
    assert_false(exists(stale));
    assert_true(exists(live));
    assert_true(exists(other));
    fputs("whole\n", a.f);
    assert_int_equal(dsa_atomic_commit(&a), 0);
    assert_true(exists(path));
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static void check_redact(const char *url, const char *want)
{
    char *got = dsa_url_redact(url);
    assert_string_equal(got, want);
    assert_int_equal(dsa_url_has_userinfo(url), strcmp(url, want) != 0);
    free(got);
}

static void test_url_redact(void **state)
{
    (void)state;
    check_redact("http://alice:PW@host:8000/v1", "http://alice:***@host:8000/v1");
    check_redact("https://TOKEN@host", "https://***@host");
    check_redact("http://a:p@ss@host/x@y", "http://a:***@host/x@y"); /* the last '@' ends it */
    check_redact("http://host:8000/v1?u=a@b", "http://host:8000/v1?u=a@b");
    check_redact("http://host", "http://host");
    check_redact("not a url", "not a url");
}

/* a child holds a secret: core dumps off by both means, header values checked */
static void test_secret_hold(void **state)
{
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct rlimit rl;
        int ok = dsa_secret_hold() == 0 && getrlimit(RLIMIT_CORE, &rl) == 0 && rl.rlim_cur == 0 &&
                 rl.rlim_max == 0 && prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0;
        _exit(ok ? 0 : 1);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_true(dsa_secret_header_safe("sk-abc.DEF_123", 14));
    assert_false(dsa_secret_header_safe("k\r\nX-Injected: yes", 19));
    assert_false(dsa_secret_header_safe("k\nX", 3));
    assert_false(dsa_secret_header_safe("k\0x", 3));
    assert_false(dsa_secret_header_safe("k\x7f", 2));
}

/* did you mean: an adjacent transposition is one edit; far-off words and ties get none */
static void test_did_you_mean(void **state)
{
    (void)state;
    const char *cmds[] = {"compare", "datasets", "grade", "gsm8k",  "kernels",
                          "merge",   "mrcr",     "plan",  "report", "version"};
    assert_string_equal(dsa_did_you_mean("comapre", cmds, 10), "compare");
    assert_string_equal(dsa_did_you_mean("reprot", cmds, 10), "report");
    assert_string_equal(dsa_did_you_mean("mrc", cmds, 10), "mrcr");
    assert_null(dsa_did_you_mean("frobnicate", cmds, 10));
    const char *opts[] = {"endpoint", "out", "runs", "json"};
    assert_string_equal(dsa_did_you_mean("endpiont", opts, 4), "endpoint");
    assert_string_equal(dsa_did_you_mean("rusn", opts, 4), "runs");
    assert_null(dsa_did_you_mean("zzzzzz", opts, 4));
    const char *tie[] = {"abcd", "abce"};
    assert_null(dsa_did_you_mean("abcf", tie, 2));
}

/* decimals from a quantity's own scale: two significant digits, at least min_dec */
static void test_fmt_decimals(void **state)
{
    (void)state;
    assert_int_equal(dsa_fmt_decimals(0.058, 2, 3), 3);
    assert_int_equal(dsa_fmt_decimals(0.0058, 2, 3), 4);
    assert_int_equal(dsa_fmt_decimals(4.4e-5, 2, 3), 6);
    assert_int_equal(dsa_fmt_decimals(0, 2, 3), 3);
    assert_int_equal(dsa_fmt_decimals(1e-30, 2, 3), 12);
    /* the CI width decides; a width of rounding noise is no width (every d_i equal) */
    assert_int_equal(dsa_fmt_diff_decimals(-0.063, -0.087, -0.039), 3);
    assert_int_equal(dsa_fmt_diff_decimals(1e-4, 7e-5, 1.3e-4), 6); /* width 6.0e-5 */
    assert_int_equal(dsa_fmt_diff_decimals(-0.1, -0.1 - 1e-17, -0.1 + 1e-17), 3);
    struct dsa_buf b = DSA_BUF_INIT;
    dsa_fmt_diff_ci(&b, 1e-4, true, 7e-5, 1.3e-4, 5);
    assert_string_equal(b.data, "+0.00010 [+0.00007, +0.00013]");
    dsa_buf_reset(&b);
    dsa_fmt_sig(&b, 0.0125, 4);
    dsa_buf_adds(&b, " ");
    dsa_fmt_sig(&b, 1.2e-5, 4);
    dsa_buf_adds(&b, " ");
    dsa_fmt_sig(&b, 0, 4);
    assert_string_equal(b.data, "0.0125 0.000012 0");
    dsa_buf_release(&b);
}

/* dsa_json_pick_stream() vs jansson: where the event parser takes a line, jansson reads it as
   an object with the same named members; where jansson reads an object without a NUL byte or
   a \u escape, the event parser takes it too. */
static void pick_agrees(const char *text, size_t len)
{
    static const char *const names[] = {"n_needles", "bin", "x", NULL};
    json_t *a = dsa_json_pick_stream(text, len, names);
    json_t *b = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
    bool b_obj = b && json_is_object(b);
    bool plain = !memchr(text, '\0', len) && !strstr(text, "u0000") && !strstr(text, "\\u");
    if (a) {
        if (!b_obj)
            fail_msg("picked a line jansson refuses: %.*s", (int)len, text);
        size_t named = 0;
        for (const char *const *n = names; *n; n++) {
            json_t *x = json_object_get(a, *n), *y = json_object_get(b, *n);
            if (!x != !y || (x && !json_equal(x, y)))
                fail_msg("member %s differs on: %.*s", *n, (int)len, text);
            named += x != NULL;
        }
        assert_int_equal(json_object_size(a), named);
    } else if (b_obj && plain) {
        fail_msg("declined a line jansson reads: %.*s", (int)len, text);
    }
    json_decref(a);
    json_decref(b);
    /* the tree builder: where it builds, jansson (flags 0) builds the same tree */
    json_t *t = dsa_json_load_fast(text, len), *u = json_loadb(text, len, 0, NULL);
    if (t && (!u || !json_equal(t, u)))
        fail_msg("the tree builder differs from jansson on: %.*s", (int)len, text);
    if (!t && b_obj && plain) /* a duplicate key is left to jansson, as every refusal */
        fail_msg("the tree builder declined a line jansson reads: %.*s", (int)len, text);
    /* with the prompt parsed in place: the same tree, the prompt's own tree beside it */
    json_t *inner, *t2 = dsa_json_load_fast_inner(text, len, "prompt", &inner);
    if (!t2 != !t)
        fail_msg("load_fast_inner and load_fast disagree on: %.*s", (int)len, text);
    if (inner) {
        json_t *ps = json_object_get(u, "prompt");
        json_t *pt = json_loadb(json_string_value(ps), json_string_length(ps), 0, NULL);
        if (!pt || !json_equal(pt, inner) ||
            strcmp(json_string_value(json_object_get(t2, "prompt")), ""))
            fail_msg("the prompt parsed in place differs from jansson on: %.*s", (int)len, text);
        json_object_set(t2, "prompt", ps);
        json_decref(pt);
    }
    if (t2 && !json_equal(t2, u))
        fail_msg("load_fast_inner differs from jansson on: %.*s", (int)len, text);
    json_decref(inner);
    json_decref(t2);
    json_decref(t);
    json_decref(u);
}

/* The \u scan goes 8 bytes at a time: each escape at every offset in the word, and across
   its edge. */
static void test_json_escapes_aligned(void **state)
{
    (void)state;
    static const struct {
        const char *esc;
        bool taken;
    } cases[] = {
        {"\\u0000", false},      {"\\\\u0000", true},      {"\\\\\\u0000", false},
        {"\\udf0d", false},      {"\\ud83c\\udf0d", true}, {"\\ud83c\\u0041", false},
        {"\\ud83c", false},      {"\\u00e9", true},        {"\\\"u0000", true},
        {"\\\\\\\\udc00", true},
    };
    static const char *const names[] = {"x", NULL};
    for (size_t i = 0; i < DSA_ARRAY_SIZE(cases); i++)
        for (int pad = 0; pad < 17; pad++) {
            char text[96];
            int n = snprintf(text, sizeof text, "{\"x\":\"%*s%s\"}", pad, "", cases[i].esc);
            json_t *v = dsa_json_pick_stream(text, (size_t)n, names);
            if (!v != !cases[i].taken)
                fail_msg("%s at offset %d: %s", cases[i].taken ? "declined" : "taken", pad, text);
            json_decref(v);
            pick_agrees(text, (size_t)n);
        }
}

/* number tokens of any length, as jansson reads them (fuzz_grade_mrcr's finding of
   2026-12-02: a 165-digit real was refused by the stream reader, read by jansson) */
static void test_json_number_fits_long(void **state)
{
    (void)state;
    char real[240] = "0.";
    memset(real + 2, '7', 200);
    real[202] = '\0';
    assert_true(dsa_json_number_fits(real, strlen(real)));
    char big[240];
    memset(big, '9', 200);
    big[200] = '\0';
    assert_false(dsa_json_number_fits(big, strlen(big))); /* jansson: "too big integer" */
    char huge[240] = "1";
    memset(huge + 1, '0', 200);
    memcpy(huge + 201, ".5", 3); /* 1e200: a double */
    assert_true(dsa_json_number_fits(huge, strlen(huge)));
    assert_false(dsa_json_number_fits("1e400", 5)); /* "real number overflow" */
    assert_true(dsa_json_number_fits("1e-400", 6)); /* underflow to 0 is read */
    assert_true(dsa_json_number_fits("9223372036854775807", 19));
    assert_false(dsa_json_number_fits("9223372036854775808", 19));
}

static void test_json_pick(void **state)
{
    (void)state;
    static const char *const cases[] = {
        "{\"n_needles\":8,\"prompt\":\"[{\\\"role\\\":\\\"user\\\"}]\",\"bin\":\"8k\"}",
        " {\"bin\" : [1, {\"a\": null}] , \"x\":{\"y\":[true,false]}, \"n_needles\":-0.5e3 }\t",
        "{\"nested\":{\"bin\":1},\"x\":\"\\u00e9\\ud83c\\udf0d\"}",
        "{\"a\":{\"a\":1},\"b\":{\"a\":2}}", "{}", "{\"bin\":1,\"bin\":2}",
        "{\"q\":{\"k\":1,\"k\":2}}", "{\"n_needles\":99999999999999999999}",
        "{\"n_needles\":1e400}", "{\"n_needles\":1e-400}", "{\"x\":\"a\\u0000b\"}",
        "{\"x\":\"a\\\\u0000b\"}", "{\"x\":\"\\udf0d\"}", "{\"x\":\"\\ud83c\"}",
        "{\"x\":\"\\ud83c\\u0041\"}", "{\"x\":\"\\\\ud83c\\udf0d\"}",
        "{\"x\":\"\\ud83c\\\\udf0d\"}", "{\"x\":\"\\u12\"}", "{\"x\":\"\xc0\xaf\"}",
        "{\"x\":\"\xed\xa0\x80\"}", "{\"x\":\"\xe2\x82\xac\"}", "{\"a\":1} x", "{\"a\":2\v}",
        "{\"a\":2\f}", "{\"a\":\t2\r\n}", "{}\"da", "{\"a\":1", "{\"a\":01}", "{\"a\":\"\t\"}",
        "[1]", "[{\"role\":\"user\",\"content\":\"a\\\"b\\n\"},{\"k\":[1.5,-2,1e3,true,null]}]",
        ("{\"prompt\":\"[{\\\"role\\\":\\\"user\\\",\\\"content\\\":\\\"a\\\\n\\\\u00e9\\\"}]\","
         "\"n\":1}"),
        "{\"prompt\":\"not json\",\"n\":1}", "{\"prompt\":\"[1,\\\"\\\\u0000\\\"]\"}",
        "{\"prompt\":[1,2]}", "{\"a\":{\"prompt\":\"[1]\"}}", "5", "",
        /* the rules simdjson's parse leaves to the walk over its tape (util/json_simd.cc) */
        "{\"bin\":-0,\"x\":-0.0}", "{\"bin\":9223372036854775807,\"x\":-9223372036854775808}",
        "{\"bin\":9223372036854775808}", "{\"bin\":-9223372036854775809}",
        "{\"bin\":18446744073709551616}", "{\"bin\":4.9e-324,\"x\":1.7976931348623157e308}",
        "{\"a\\u0000\":1}", "{\"x\":{\"a\\u0000b\":1,\"a\\u0000c\":1}}",
        "{\"x\":[\"user\",\"user\",\"assistant\",\"user\"],\"bin\":\"user\"}",
        ("{\"x\":{\"k1\":1,\"k2\":2,\"k3\":3,\"k4\":4,\"k5\":5,\"k6\":6,\"k7\":7,\"k8\":8,"
         "\"k9\":9,\"k10\":10,\"k11\":11,\"k12\":12,\"k13\":13,\"k14\":14,\"k15\":15,"
         "\"k16\":16,\"k17\":17,\"k3\":18}}"),
        ("{\"x\":{\"k1\":1,\"k2\":2,\"k3\":3,\"k4\":4,\"k5\":5,\"k6\":6,\"k7\":7,\"k8\":8,"
         "\"k9\":9,\"k10\":10,\"k11\":11,\"k12\":12,\"k13\":13,\"k14\":14,\"k15\":15,"
         "\"k16\":16,\"k17\":17,\"k18\":18}}"),
        "{\"prompt\":\"[{\\\"a\\\":1,\\\"a\\\":2}]\",\"n\":1}",
        "{\"prompt\":\"[18446744073709551616]\",\"n\":1}",
        "\xef\xbb\xbf{\"bin\":1}", /* a byte-order mark: jansson refuses it, so must the rest */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        pick_agrees(cases[i], strlen(cases[i]));
    /* nesting: jansson reads 2048 levels (counting the object) and refuses 2049; so does the
       simdjson path */
    for (int depth = 2046; depth <= 2049; depth++) {
        struct dsa_buf b = DSA_BUF_INIT;
        dsa_buf_adds(&b, "{\"x\":");
        for (int d = 1; d < depth; d++)
            dsa_buf_adds(&b, "[");
        for (int d = 1; d < depth; d++)
            dsa_buf_adds(&b, "]");
        dsa_buf_adds(&b, "}");
        pick_agrees(b.data, b.len);
        json_t *t = dsa_json_load_fast(b.data, b.len);
        if (!t != (depth > 2048))
            fail_msg("depth %d: %s", depth, t ? "taken" : "declined");
        json_decref(t);
        dsa_buf_release(&b);
    }
    static const char nul[] = "{\"bin\":null\0,\"x\":1}";
    pick_agrees(nul, sizeof nul - 1);
    /* escapes jansson reads are taken (a valid pair, an escaped backslash before "u") */
    static const char *const names[] = {"x", NULL};
    static const char *const taken[] = {"{\"x\":\"\\u00e9\\ud83c\\udf0d\"}",
                                        "{\"x\":\"\\\\udf0d\\\\u0000\"}"};
    for (size_t i = 0; i < 2; i++) {
        json_t *v = dsa_json_pick_stream(taken[i], strlen(taken[i]), names);
        assert_non_null(v);
        json_decref(v);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha256_vectors),
        cmocka_unit_test(test_seed_derivation_vectors),
        cmocka_unit_test(test_opt_parse),
        cmocka_unit_test(test_did_you_mean),
        cmocka_unit_test(test_fmt_decimals),
        cmocka_unit_test(test_parse_tokens),
        cmocka_unit_test(test_buf),
        cmocka_unit_test(test_lines_torn_tail),
        cmocka_unit_test(test_lines_long),
        cmocka_unit_test(test_utc_format),
        cmocka_unit_test(test_atomic_write),
        cmocka_unit_test(test_stale_tmp_sweep),
        cmocka_unit_test(test_url_redact),
        cmocka_unit_test(test_secret_hold),
        cmocka_unit_test(test_json_pick),
        cmocka_unit_test(test_json_number_fits_long),
        cmocka_unit_test(test_json_escapes_aligned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
