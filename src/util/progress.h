/*
 * Progress meter on stderr for long runs (the pattern of curl's tool_progress.c).
 *
 * On a terminal one line is redrawn in place ('\r'), at most every 500 ms, then a final
 * line ends with '\n':
 *
 *   run 1/3   412/2400   17%   2.34/s  elapsed 2m51s  ETA   14m  retries     3  errors     1
 *   label   done/total   pct  rate           elapsed      ETA        retries       failed
 *
 * Every field has a fixed width (durations and counts 5 columns, rate 7, done/total the
 * width of total twice), so the line never jitters. When stderr is not a terminal (CI logs,
 * `2>log`), the same line is printed with '\n' when 10 s have passed or another 10% of the
 * samples finished since the last one, plus the final line. -q (dsa_msg_quiet) silences it.
 *
 * rate = samples finished in this process / elapsed seconds (resumed samples do not count:
 * they took no time); ETA = samples left / rate, "  ---" while the rate is unknown.
 *
 * A message (src/util/msg.h) printed while a terminal line is drawn first blanks that line
 * (dsa_msg_set_clear_hook), so it starts in column 0 on a clean line; the meter is drawn again
 * at its next update, without waiting for the 500 ms throttle. The most recent
 * dsa_progress_new() owns the hook until it is freed.
 *
 * Thread-safe: workers call dsa_progress_done()/dsa_progress_retry() from any thread; the
 * line is drawn by whichever call finds it due.
 * Ownership: dsa_progress copies the label; the FILE * given to dsa_progress_set_output()
 * is borrowed.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_UTIL_PROGRESS_H
#define DSA_UTIL_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct dsa_progress dsa_progress;

/* `total` samples, of which `already_done` finished in an earlier attempt (resume). */
dsa_progress *dsa_progress_new(const char *label, size_t total, size_t already_done);
/* one sample finished; `failed` also counts it as an error */
void dsa_progress_done(dsa_progress *p, bool failed);
/* one request is retried */
void dsa_progress_retry(dsa_progress *p);
/* redraws if due; call it from the event loop when nothing finished for a while */
void dsa_progress_poll(dsa_progress *p);
/* prints the final line (once) */
void dsa_progress_finish(dsa_progress *p);
void dsa_progress_free(dsa_progress **p);

/* Where and how to draw: stderr and isatty(2) by default. */
void dsa_progress_set_output(dsa_progress *p, FILE *out, bool tty);

/*
 * Fixed-width formatters (out needs DSA_PROGRESS_FMT_SIZE bytes). Values are truncated,
 * never rounded up, so a field never grows:
 *   duration, 5 columns: "   0s" .. "  59s", "1m00s" .. "9m59s", "  10m" .. "  59m",
 *                        "1h00m" .. "9h59m", "  10h" .. "  99h", "   4d" .. "9999d";
 *                        "  ---" for unknown (negative, NaN, infinite, or longer)
 *   count, 5 columns:    "    0" .. " 9999", "10.0k" .. "99.9k", " 100k" .. " 999k",
 *                        " 1.0M" .. " 999M", " 1.0G" ... up to "18.4E" (UINT64_MAX)
 *   rate, 7 columns:     a 5-column number then "/s": "%5.2f" below 10, "%5.1f" below
 *                        1000, "%5.0f" below 100000, " >99k" above; "  ---/s" when unknown
 */
#define DSA_PROGRESS_FMT_SIZE 24
char *dsa_progress_fmt_duration(double seconds, char *out);
char *dsa_progress_fmt_count(uint64_t n, char *out);
char *dsa_progress_fmt_rate(double per_second, char *out);

#ifdef DSA_UNITTEST_BUILD
/* the line for these numbers (no '\r' or '\n'); out needs 160 bytes */
void dsa_progress_line(const char *label, size_t done, size_t total, size_t resumed,
                       uint64_t retries, uint64_t errors, double elapsed, char *out, size_t size);
/* replaces the monotonic clock (seconds), for tests */
void dsa_progress_set_clock(dsa_progress *p, double (*now)(void));
#endif

#endif
