/*
 * User-facing messages on stderr, all with the "dsa-eval: " prefix. Rules (git's): lowercase,
 * no trailing period, the subject in single quotes, what is wrong first:
 *     dsa-eval: cannot parse line 17 of 'x.jsonl': unexpected end of input
 * Formats must not contain '\n': one message is one line.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_UTIL_MSG_H
#define DSA_UTIL_MSG_H

#include <stdbool.h>
#include <stddef.h>

#include "util/common.h"

/* "dsa-eval: <msg>". Returns -1 so callers can write `return dsa_errorf(...)`. */
int dsa_errorf(const char *fmt, ...) DSA_PRINTF(1, 2);
/* "dsa-eval: warning: <msg>" */
void dsa_warnf(const char *fmt, ...) DSA_PRINTF(1, 2);
/* "dsa-eval: <msg>", suppressed by dsa_msg_quiet */
void dsa_notef(const char *fmt, ...) DSA_PRINTF(1, 2);

/*
 * Work done on several threads prints its messages later, in a fixed order: between
 * dsa_msg_capture(buf) and dsa_msg_capture(NULL), this thread's messages are appended to `buf`
 * (borrowed; one "dsa-eval: ...\n" line each) instead of being written; dsa_msg_replay() writes
 * such lines to stderr as messages are written (under the lock, after the clear hook).
 */
struct dsa_buf;
void dsa_msg_capture(struct dsa_buf *to);
void dsa_msg_replay(const char *lines, size_t len);

/* -q: silence notes and progress, never errors or warnings */
extern bool dsa_msg_quiet;

/*
 * A line drawn in place on stderr (the progress meter, src/util/progress.h) would share its
 * line with a message printed meanwhile. Its owner registers `clear`, which every message
 * calls (with `ud`) right before it is written, under the lock that keeps messages whole;
 * `clear` must not print messages itself. One hook at a time: a new one replaces the old;
 * dsa_msg_unset_clear_hook(ud) removes it only if `ud` is still the registered one, and
 * returns once no message is calling it.
 */
void dsa_msg_set_clear_hook(void (*clear)(void *ud), void *ud);
void dsa_msg_unset_clear_hook(void *ud);

#endif
