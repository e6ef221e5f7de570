/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "util/msg.h"

#include <stdarg.h>
#include <stdio.h>

bool dsa_msg_quiet = false;

static void vmsg(const char *kind, const char *fmt, va_list ap)
{
    /* one fprintf per part, but stderr is unbuffered: build the line first so that
       messages from several threads never interleave mid-line */
    char line[2048];
    int n = snprintf(line, sizeof line, "dsa-eval: %s", kind);
    if (n < 0 || (size_t)n >= sizeof line)
        n = 0;
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    fprintf(stderr, "%s\n", line);
}

int dsa_errorf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg("", fmt, ap);
    va_end(ap);
    return -1;
}

void dsa_warnf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg("warning: ", fmt, ap);
    va_end(ap);
}

void dsa_notef(const char *fmt, ...)
{
    if (dsa_msg_quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    vmsg("", fmt, ap);
    va_end(ap);
}
