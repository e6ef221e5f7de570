/* Unit tests of src/util/progress: the fixed-width formatters (tables of exact cases), the
 * line, and when lines are drawn (terminal throttling, log mode, -q) under a fake clock.
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

#include <math.h>

#include "util/msg.h"
#include "util/progress.h"

static void test_fmt_duration(void **state)
{
    (void)state;
    static const struct {
        double s;
        const char *want;
    } cases[] = {
        {0, "   0s"},
        {0.999, "   0s"},
        {42, "  42s"},
        {59.9, "  59s"},
        {60, "1m00s"},
        {61, "1m01s"},
        {599, "9m59s"},
        {600, "  10m"},
        {3599, "  59m"},
        {3600, "1h00m"},
        {3720, "1h02m"},
        {35999, "9h59m"},
        {36000, "  10h"},
        {359999, "  99h"},
        {360000, "   4d"},
        {86400 * 365, " 365d"},
        {9999.0 * 86400, "9999d"},
        {10000.0 * 86400, "  ---"},
        {-1, "  ---"},
        {NAN, "  ---"},
        {INFINITY, "  ---"},
    };
    char out[DSA_PROGRESS_FMT_SIZE];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        dsa_progress_fmt_duration(cases[i].s, out);
        if (strcmp(out, cases[i].want))
            fail_msg("duration %g: got '%s', want '%s'", cases[i].s, out, cases[i].want);
        assert_int_equal(strlen(out), 5);
    }
}

static void test_fmt_count(void **state)
{
    (void)state;
    static const struct {
        uint64_t n;
        const char *want;
    } cases[] = {
        {0, "    0"},
        {7, "    7"},
        {9999, " 9999"},
        {10000, "10.0k"},
        {12345, "12.3k"},
        {99999, "99.9k"},
        {100000, " 100k"},
        {999999, " 999k"},
        {1000000, " 1.0M"},
        {1250000, " 1.2M"},
        {99999999, "99.9M"},
        {100000000, " 100M"},
        {999999999, " 999M"},
        {1000000000, " 1.0G"},
        {123456789012ull, " 123G"},
        {1000000000000ull, " 1.0T"},
        {1000000000000000ull, " 1.0P"},
        {1000000000000000000ull, " 1.0E"},
        {UINT64_MAX, "18.4E"},
    };
    char out[DSA_PROGRESS_FMT_SIZE];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        dsa_progress_fmt_count(cases[i].n, out);
        if (strcmp(out, cases[i].want))
            fail_msg("count %llu: got '%s', want '%s'", (unsigned long long)cases[i].n, out,
                     cases[i].want);
    }
}

static void test_fmt_rate(void **state)
{
    (void)state;
    static const struct {
        double r;
        const char *want;
    } cases[] = {
        {0, " 0.00/s"},        {2.414, " 2.41/s"},   {9.994, " 9.99/s"},  {9.995, " 10.0/s"},
        {24.16, " 24.2/s"},    {999.94, "999.9/s"},  {999.95, " 1000/s"}, {12345.6, "12346/s"},
        {99999.4, "99999/s"},  {99999.5, " >99k/s"}, {NAN, "  ---/s"},    {-1, "  ---/s"},
        {INFINITY, "  ---/s"},
    };
    char out[DSA_PROGRESS_FMT_SIZE];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        dsa_progress_fmt_rate(cases[i].r, out);
        if (strcmp(out, cases[i].want))
            fail_msg("rate %g: got '%s', want '%s'", cases[i].r, out, cases[i].want);
        assert_int_equal(strlen(out), 7);
    }
}

static void test_line(void **state)
{
    (void)state;
    char line[256];
    /* 412 of 2400 done, 12 of them resumed: 400 in 171 s = 2.339/s; 1988 left = 849.9 s */
    dsa_progress_line("mrcr run 1/3", 412, 2400, 12, 3, 1, 171.0, line, sizeof line);
    assert_string_equal(line, "mrcr run 1/3   412/2400   17%   2.34/s  elapsed 2m51s  "
                              "ETA   14m  retries     3  errors     1");
    /* nothing finished yet: rate and ETA unknown */
    dsa_progress_line("gsm8k", 0, 1319, 0, 0, 0, 0.4, line, sizeof line);
    assert_string_equal(line, "gsm8k     0/1319    0%    ---/s  elapsed    0s  ETA   ---  "
                              "retries     0  errors     0");
    /* finished */
    dsa_progress_line("gsm8k", 1319, 1319, 0, 0, 2, 3725.0, line, sizeof line);
    assert_string_equal(line, "gsm8k  1319/1319  100%   0.35/s  elapsed 1h02m  ETA    0s  "
                              "retries     0  errors     2");
    /* everything resumed, nothing to do */
    dsa_progress_line("x", 5, 5, 5, 0, 0, 0.0, line, sizeof line);
    assert_string_equal(line, "x  5/5  100%    ---/s  elapsed    0s  ETA    0s  retries     0  "
                              "errors     0");
}

static double fake_now;
static double fake_clock(void)
{
    return fake_now;
}

static char *capture_text(FILE *f)
{
    fflush(f);
    long n = ftell(f);
    char *s = calloc(1, (size_t)n + 1);
    rewind(f);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    fseek(f, 0, SEEK_END);
    return s;
}

static int count_char(const char *s, char c)
{
    int n = 0;
    for (; *s; s++)
        n += *s == c;
    return n;
}

static void test_tty_throttle(void **state)
{
    (void)state;
    FILE *f = tmpfile();
    fake_now = 100;
    dsa_progress *p = dsa_progress_new("t", 100, 0);
    dsa_progress_set_clock(p, fake_clock);
    dsa_progress_set_output(p, f, true);
    dsa_progress_done(p, false); /* first update draws */
    for (int i = 0; i < 9; i++) {
        fake_now += 0.1; /* 0.1 .. 0.9 s: one more redraw, at 0.5 s */
        dsa_progress_done(p, false);
    }
    dsa_progress_retry(p);
    fake_now += 0.45; /* 1.35 s: 0.85 since the last draw */
    dsa_progress_poll(p);
    dsa_progress_finish(p);
    dsa_progress_finish(p); /* once only */
    char *s = capture_text(f);
    assert_int_equal(count_char(s, '\r'), 4);
    assert_int_equal(count_char(s, '\n'), 1);
    /* the final line is the last thing, with the final numbers */
    const char *last = strrchr(s, '\r');
    assert_string_equal(last, "\rt   10/100   10%   7.41/s  elapsed    1s  ETA   12s  retries"
                              "     1  errors     0\n");
    free(s);
    dsa_progress_free(&p);
    assert_null(p);
    fclose(f);
}

static void test_plain_mode(void **state)
{
    (void)state;
    FILE *f = tmpfile();
    fake_now = 0;
    dsa_progress *p = dsa_progress_new("log", 50, 0);
    dsa_progress_set_clock(p, fake_clock);
    dsa_progress_set_output(p, f, false);
    /* 1 sample per second: a line at each 10% (every 5 samples) ... */
    for (int i = 0; i < 12; i++) {
        fake_now += 1;
        dsa_progress_done(p, i == 3);
    }
    char *s = capture_text(f);
    assert_int_equal(count_char(s, '\n'), 2); /* at 5 and 10 */
    assert_int_equal(count_char(s, '\r'), 0);
    free(s);
    /* ... or after 10 s without one */
    fake_now += 9.9;
    dsa_progress_poll(p);
    fake_now += 0.2;
    dsa_progress_poll(p);
    dsa_progress_finish(p);
    s = capture_text(f);
    assert_int_equal(count_char(s, '\n'), 4);
    /* the final line: 12 in 22.1 s = 0.543/s, 38 left = 69.98 s, truncated to 1m09s */
    char *last = s + strlen(s) - 1;
    while (last > s && last[-1] != '\n')
        last--;
    assert_string_equal(last, "log  12/50   24%   0.54/s  elapsed   22s  ETA 1m09s  "
                              "retries     0  errors     1\n");
    free(s);
    dsa_progress_free(&p);
    fclose(f);
}

static void test_quiet(void **state)
{
    (void)state;
    FILE *f = tmpfile();
    dsa_msg_quiet = true;
    dsa_progress *p = dsa_progress_new("q", 10, 3); /* resumed 3 */
    dsa_progress_set_output(p, f, false);
    for (int i = 0; i < 7; i++)
        dsa_progress_done(p, false);
    dsa_progress_finish(p);
    dsa_msg_quiet = false;
    assert_int_equal(ftell(f), 0);
    dsa_progress_free(&p);
    fclose(f);
}

/* Everything written to stderr (fd 2) while `f` stands in for it. */
static int stderr_saved = -1;
static void stderr_to(FILE *f)
{
    fflush(stderr);
    stderr_saved = dup(STDERR_FILENO);
    assert_true(dup2(fileno(f), STDERR_FILENO) >= 0);
}
static char *stderr_back(FILE *f)
{
    fflush(stderr);
    dup2(stderr_saved, STDERR_FILENO);
    close(stderr_saved);
    fseek(f, 0, SEEK_END); /* the offset moved through fd 2, not through `f` */
    return capture_text(f);
}

static void test_message_clears_line(void **state)
{
    (void)state;
    FILE *f = tmpfile();
    char l1[160], l2[160], l3[160], blank[200], want[2048];
    fake_now = 10;
    stderr_to(f);
    dsa_progress *p = dsa_progress_new("m", 10, 0);
    dsa_progress_set_clock(p, fake_clock);
    dsa_progress_set_output(p, stderr, true);
    dsa_progress_done(p, false); /* drawn at once */
    fake_now += 0.1;
    dsa_warnf("disk '%s' is slow", "x"); /* blanks the line first */
    dsa_notef("second");                 /* the line is blank already */
    fake_now += 0.1;                     /* 0.2 s: a redraw, not throttled */
    dsa_progress_poll(p);
    fake_now += 0.1; /* 0.1 s after that redraw: throttled again */
    dsa_progress_done(p, false);
    dsa_progress_finish(p);
    dsa_errorf("after the final line"); /* nothing to blank */
    dsa_progress_free(&p);
    dsa_warnf("no meter"); /* the hook is gone (ASan: no use after free) */
    char *s = stderr_back(f);

    dsa_progress_line("m", 1, 10, 0, 0, 0, 0.0, l1, sizeof l1);
    dsa_progress_line("m", 1, 10, 0, 0, 0, 0.2, l2, sizeof l2);
    dsa_progress_line("m", 2, 10, 0, 0, 0, 0.3, l3, sizeof l3);
    snprintf(blank, sizeof blank, "\r%*s\r", (int)strlen(l1), "");
    snprintf(want, sizeof want,
             "\r%s%sdsa-eval: warning: disk 'x' is slow\ndsa-eval: second\n\r%s\r%s\n"
             "dsa-eval: after the final line\ndsa-eval: warning: no meter\n",
             l1, blank, l2, l3);
    assert_string_equal(s, want);
    free(s);
    fclose(f);
}

static void test_message_plain_mode_untouched(void **state)
{
    (void)state;
    FILE *f = tmpfile();
    char l1[160], want[512];
    fake_now = 0;
    stderr_to(f);
    dsa_progress *p = dsa_progress_new("m", 10, 0);
    dsa_progress_set_clock(p, fake_clock);
    dsa_progress_set_output(p, stderr, false);
    fake_now = 1;
    dsa_progress_done(p, false); /* 10%: a log line */
    dsa_warnf("w");              /* whole lines in a log: nothing to blank */
    dsa_progress_poll(p);        /* and no extra line after it */
    dsa_progress_free(&p);
    char *s = stderr_back(f);
    dsa_progress_line("m", 1, 10, 0, 0, 0, 1.0, l1, sizeof l1);
    snprintf(want, sizeof want, "%s\ndsa-eval: warning: w\n", l1);
    assert_string_equal(s, want);
    free(s);
    fclose(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fmt_duration),
        cmocka_unit_test(test_fmt_count),
        cmocka_unit_test(test_fmt_rate),
        cmocka_unit_test(test_line),
        cmocka_unit_test(test_tty_throttle),
        cmocka_unit_test(test_plain_mode),
        cmocka_unit_test(test_quiet),
        cmocka_unit_test(test_message_clears_line),
        cmocka_unit_test(test_message_plain_mode_untouched),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
