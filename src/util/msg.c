/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "util/msg.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

#include "util/buf.h"

bool dsa_msg_quiet = false;

/* guards the hook and orders "clear the meter, write the message" against other threads */
static pthread_mutex_t msg_mu = PTHREAD_MUTEX_INITIALIZER;
static void (*clear_hook)(void *ud);
static void *clear_ud;
/* where this thread's messages go instead of stderr (dsa_msg_capture), or NULL */
static _Thread_local struct dsa_buf *capture;

void dsa_msg_capture(struct dsa_buf *to)
{
    capture = to;
}

void dsa_msg_replay(const char *lines, size_t len)
{
    if (!len)
        return;
    pthread_mutex_lock(&msg_mu);
    if (clear_hook)
        clear_hook(clear_ud);
    fwrite(lines, 1, len, stderr);
    pthread_mutex_unlock(&msg_mu);
}

void dsa_msg_set_clear_hook(void (*clear)(void *ud), void *ud)
{
    pthread_mutex_lock(&msg_mu);
    clear_hook = clear;
    clear_ud = ud;
    pthread_mutex_unlock(&msg_mu);
}

void dsa_msg_unset_clear_hook(void *ud)
{
    pthread_mutex_lock(&msg_mu);
    if (clear_ud == ud) {
        clear_hook = NULL;
        clear_ud = NULL;
    }
    pthread_mutex_unlock(&msg_mu);
}

static void vmsg(const char *kind, const char *fmt, va_list ap)
{
    /* one fprintf per part, but stderr is unbuffered: build the line first so that
       messages from several threads never interleave mid-line */
    char line[2048];
    int n = snprintf(line, sizeof line, "dsa-eval: %s", kind);
    if (n < 0 || (size_t)n >= sizeof line)
        n = 0;
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    if (capture) {
        dsa_buf_adds(capture, line);
        dsa_buf_addch(capture, '\n');
        return;
    }
    pthread_mutex_lock(&msg_mu);
    if (clear_hook)
        clear_hook(clear_ud);
    fprintf(stderr, "%s\n", line);
    pthread_mutex_unlock(&msg_mu);
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
