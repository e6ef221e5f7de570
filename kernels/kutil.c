/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "kernels/kutil.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void (*msg_sink)(int level, const char *msg);

void dsa_kutil_set_sink(void (*sink)(int level, const char *msg))
{
    msg_sink = sink;
}

static void vmsg(int level, const char *fmt, va_list ap)
{
    char line[2048];
    vsnprintf(line, sizeof line, fmt, ap);
    if (msg_sink) {
        msg_sink(level, line);
        return;
    }
    /* one fprintf: stderr is unbuffered, and one call keeps the line whole */
    fprintf(stderr, "dsa-eval: %s%s\n", level == DSA_KUTIL_WARNING ? "warning: " : "", line);
}

int dsa_kutil_errorf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg(DSA_KUTIL_ERROR, fmt, ap);
    va_end(ap);
    return -1;
}

void dsa_kutil_warnf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg(DSA_KUTIL_WARNING, fmt, ap);
    va_end(ap);
}

static void *oom(size_t n)
{
    dsa_kutil_errorf("out of memory allocating %zu bytes", n);
    abort();
}

void *dsa_kutil_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    return p ? p : oom(n);
}

void *dsa_kutil_calloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    return p ? p : oom(n * size);
}

char *dsa_kutil_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(dsa_kutil_malloc(n), s, n);
}
