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

#include "util/common.h"

/* "dsa-eval: <msg>". Returns -1 so callers can write `return dsa_errorf(...)`. */
int dsa_errorf(const char *fmt, ...) DSA_PRINTF(1, 2);
/* "dsa-eval: warning: <msg>" */
void dsa_warnf(const char *fmt, ...) DSA_PRINTF(1, 2);
/* "dsa-eval: <msg>", suppressed by dsa_msg_quiet */
void dsa_notef(const char *fmt, ...) DSA_PRINTF(1, 2);

/* -q: silence notes and progress, never errors or warnings */
extern bool dsa_msg_quiet;

#endif
