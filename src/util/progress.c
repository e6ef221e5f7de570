/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "util/progress.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/msg.h"

#define REDRAW_TTY_S   0.5 /* a terminal line at most twice a second */
#define REDRAW_PLAIN_S 10. /* a log line every 10 s ... */
#define PLAIN_STEPS    10  /* ... or every 10% of the samples */

struct dsa_progress {
    pthread_mutex_t mu;
    char *label;
    size_t total, done, resumed;
    uint64_t retries, errors;
    FILE *out;
    bool tty;
    bool drawn, finished;
    bool cleared;    /* a message blanked the terminal line: redraw at the next update */
    size_t line_len; /* columns of the terminal line on screen, to blank it */
    double start, last_draw;
    size_t last_step; /* done * PLAIN_STEPS / total at the last plain line */
    double (*now)(void);
};

static double monotonic_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

char *dsa_progress_fmt_duration(double seconds, char *out)
{
    if (!(seconds >= 0) || seconds >= 10000.0 * 86400)
        snprintf(out, DSA_PROGRESS_FMT_SIZE, "  ---");
    else {
        uint64_t s = (uint64_t)seconds;
        if (s < 60)
            snprintf(out, DSA_PROGRESS_FMT_SIZE, "%4" PRIu64 "s", s);
        else if (s < 600)
            snprintf(out, DSA_PROGRESS_FMT_SIZE, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
        else if (s < 3600)
            snprintf(out, DSA_PROGRESS_FMT_SIZE, "%4" PRIu64 "m", s / 60);
        else if (s < 36000)
            snprintf(out, DSA_PROGRESS_FMT_SIZE, "%" PRIu64 "h%02" PRIu64 "m", s / 3600,
                     s % 3600 / 60);
        else if (s < 360000)
            snprintf(out, DSA_PROGRESS_FMT_SIZE, "%4" PRIu64 "h", s / 3600);
        else
            snprintf(out, DSA_PROGRESS_FMT_SIZE, "%4" PRIu64 "d", s / 86400);
    }
    return out;
}

char *dsa_progress_fmt_count(uint64_t n, char *out)
{
    static const char units[] = "kMGTPE";
    if (n < 10000) {
        snprintf(out, DSA_PROGRESS_FMT_SIZE, "%5" PRIu64, n);
        return out;
    }
    uint64_t div = 1000;
    for (const char *u = units; *u; u++, div *= 1000) {
        uint64_t whole = n / div;
        if (whole < 100) {
            /* tenths without overflow: n / (div / 10) */
            snprintf(out, DSA_PROGRESS_FMT_SIZE, "%2" PRIu64 ".%" PRIu64 "%c", whole,
                     n / (div / 10) % 10, *u);
            return out;
        }
        if (whole < 1000 || u[1] == '\0') {
            snprintf(out, DSA_PROGRESS_FMT_SIZE, "%4" PRIu64 "%c", whole, *u);
            return out;
        }
    }
    return out; /* not reached: UINT64_MAX is 18.4E */
}

char *dsa_progress_fmt_rate(double r, char *out)
{
    /* thresholds just below the next decade so that rounding never widens the field */
    if (!(r >= 0) || isinf(r))
        snprintf(out, DSA_PROGRESS_FMT_SIZE, "  ---/s");
    else if (r < 9.995)
        snprintf(out, DSA_PROGRESS_FMT_SIZE, "%5.2f/s", r);
    else if (r < 999.95)
        snprintf(out, DSA_PROGRESS_FMT_SIZE, "%5.1f/s", r);
    else if (r < 99999.5)
        snprintf(out, DSA_PROGRESS_FMT_SIZE, "%5.0f/s", r);
    else
        snprintf(out, DSA_PROGRESS_FMT_SIZE, " >99k/s");
    return out;
}

static int digits(size_t n)
{
    int d = 1;
    while (n >= 10) {
        n /= 10;
        d++;
    }
    return d;
}

DSA_UNITTEST void dsa_progress_line(const char *label, size_t done, size_t total, size_t resumed,
                                    uint64_t retries, uint64_t errors, double elapsed, char *out,
                                    size_t size)
{
    char rate_s[DSA_PROGRESS_FMT_SIZE], el_s[DSA_PROGRESS_FMT_SIZE], eta_s[DSA_PROGRESS_FMT_SIZE],
        re_s[DSA_PROGRESS_FMT_SIZE], er_s[DSA_PROGRESS_FMT_SIZE];
    size_t fresh = done > resumed ? done - resumed : 0;
    double rate = elapsed > 0 && fresh > 0 ? (double)fresh / elapsed : NAN;
    size_t left = total > done ? total - done : 0;
    double eta = left == 0 ? 0 : (double)left / rate; /* NaN while the rate is unknown */
    unsigned pct = total ? (unsigned)((done > total ? total : done) * 100 / total) : 100;
    snprintf(out, size, "%s  %*zu/%zu  %3u%%  %s  elapsed %s  ETA %s  retries %s  errors %s", label,
             digits(total), done, total, pct, dsa_progress_fmt_rate(rate, rate_s),
             dsa_progress_fmt_duration(elapsed, el_s), dsa_progress_fmt_duration(eta, eta_s),
             dsa_progress_fmt_count(retries, re_s), dsa_progress_fmt_count(errors, er_s));
}

/* The msg.c hook: called under msg.c's lock before a message is written to stderr. */
static void clear_line(void *ud)
{
    dsa_progress *p = ud;
    pthread_mutex_lock(&p->mu);
    /* spaces, not an ANSI erase: any terminal, and a log of the tty stays readable */
    if (p->tty && p->drawn && !p->finished && !p->cleared && p->line_len) {
        fprintf(p->out, "\r%*s\r", (int)p->line_len, "");
        fflush(p->out);
        p->cleared = true;
    }
    pthread_mutex_unlock(&p->mu);
}

dsa_progress *dsa_progress_new(const char *label, size_t total, size_t already_done)
{
    dsa_progress *p = dsa_xcalloc(1, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
    p->label = dsa_xstrdup(label);
    p->total = total;
    p->done = p->resumed = already_done;
    p->out = stderr;
    p->tty = isatty(STDERR_FILENO);
    p->now = monotonic_now;
    p->start = p->now();
    p->last_draw = p->start;
    p->last_step = total ? already_done * PLAIN_STEPS / total : 0;
    dsa_msg_set_clear_hook(clear_line, p);
    return p;
}

void dsa_progress_set_output(dsa_progress *p, FILE *out, bool tty)
{
    pthread_mutex_lock(&p->mu);
    p->out = out;
    p->tty = tty;
    pthread_mutex_unlock(&p->mu);
}

#ifdef DSA_UNITTEST_BUILD
void dsa_progress_set_clock(dsa_progress *p, double (*now)(void))
{
    p->now = now;
    p->start = p->last_draw = now();
}
#endif

/* Caller holds p->mu. */
static void draw(dsa_progress *p, double now, bool final)
{
    char line[256];
    dsa_progress_line(p->label, p->done, p->total, p->resumed, p->retries, p->errors,
                      now - p->start, line, sizeof line);
    if (p->tty) {
        /* the line never gets shorter (fixed widths), so no blanking of leftovers */
        fprintf(p->out, "\r%s%s", line, final ? "\n" : "");
        p->line_len = strlen(line);
    } else {
        fprintf(p->out, "%s\n", line);
    }
    fflush(p->out);
    p->drawn = true;
    p->cleared = false;
    p->last_draw = now;
    p->last_step = p->total ? p->done * PLAIN_STEPS / p->total : 0;
}

/* Caller holds p->mu. */
static void maybe_draw(dsa_progress *p)
{
    if (dsa_msg_quiet || p->finished)
        return;
    double now = p->now();
    bool due;
    if (p->tty)
        due = !p->drawn || p->cleared || now - p->last_draw >= REDRAW_TTY_S;
    else
        due = now - p->last_draw >= REDRAW_PLAIN_S ||
              (p->total && p->done * PLAIN_STEPS / p->total > p->last_step);
    if (due)
        draw(p, now, false);
}

void dsa_progress_done(dsa_progress *p, bool failed)
{
    pthread_mutex_lock(&p->mu);
    p->done++;
    if (failed)
        p->errors++;
    maybe_draw(p);
    pthread_mutex_unlock(&p->mu);
}

void dsa_progress_retry(dsa_progress *p)
{
    pthread_mutex_lock(&p->mu);
    p->retries++;
    maybe_draw(p);
    pthread_mutex_unlock(&p->mu);
}

void dsa_progress_poll(dsa_progress *p)
{
    pthread_mutex_lock(&p->mu);
    maybe_draw(p);
    pthread_mutex_unlock(&p->mu);
}

void dsa_progress_finish(dsa_progress *p)
{
    pthread_mutex_lock(&p->mu);
    if (!p->finished && !dsa_msg_quiet)
        draw(p, p->now(), true);
    p->finished = true;
    pthread_mutex_unlock(&p->mu);
}

void dsa_progress_free(dsa_progress **pp)
{
    dsa_progress *p = *pp;
    if (!p)
        return;
    dsa_msg_unset_clear_hook(p);
    pthread_mutex_destroy(&p->mu);
    free(p->label);
    free(p);
    *pp = NULL;
}
