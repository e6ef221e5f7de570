/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "util/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char empty_string[1];

static void oom(size_t n)
{
    fprintf(stderr, "dsa-eval: out of memory allocating %zu bytes\n", n);
    abort();
}

void *dsa_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom(n);
    return p;
}

void *dsa_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        oom(n * size);
    return p;
}

void *dsa_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        oom(n);
    return q;
}

char *dsa_xstrdup(const char *s)
{
    return dsa_xstrndup(s, strlen(s));
}

char *dsa_xstrndup(const char *s, size_t n)
{
    char *p = dsa_xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

void dsa_buf_init(struct dsa_buf *b)
{
    b->data = empty_string;
    b->len = 0;
    b->cap = 0;
}

void dsa_buf_release(struct dsa_buf *b)
{
    if (b->cap)
        free(b->data);
    dsa_buf_init(b);
}

void dsa_buf_reset(struct dsa_buf *b)
{
    if (!b->data)
        dsa_buf_init(b);
    b->len = 0;
    if (b->cap)
        b->data[0] = '\0';
}

void dsa_buf_grow(struct dsa_buf *b, size_t extra)
{
    if (!b->data)
        dsa_buf_init(b);
    if (extra >= (size_t)-1 / 2 - b->len)
        oom(extra);
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap *= 2;
    if (b->cap) {
        b->data = dsa_xrealloc(b->data, cap);
    } else {
        b->data = dsa_xmalloc(cap);
        b->data[0] = '\0';
    }
    b->cap = cap;
}

void dsa_buf_add(struct dsa_buf *b, const void *data, size_t len)
{
    dsa_buf_grow(b, len);
    if (len)
        memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
}

void dsa_buf_adds(struct dsa_buf *b, const char *s)
{
    dsa_buf_add(b, s, strlen(s));
}

void dsa_buf_addch(struct dsa_buf *b, char c)
{
    dsa_buf_add(b, &c, 1);
}

void dsa_buf_vaddf(struct dsa_buf *b, const char *fmt, va_list ap)
{
    va_list cp;
    va_copy(cp, ap);
    dsa_buf_grow(b, 64);
    int n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, cp);
    va_end(cp);
    if (n < 0)
        return;
    if ((size_t)n >= b->cap - b->len) {
        dsa_buf_grow(b, (size_t)n);
        vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
    }
    b->len += (size_t)n;
}

void dsa_buf_addf(struct dsa_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    dsa_buf_vaddf(b, fmt, ap);
    va_end(ap);
}

char *dsa_buf_detach(struct dsa_buf *b, size_t *len)
{
    char *p;
    if (len)
        *len = b->len;
    if (b->cap) {
        p = b->data;
    } else {
        p = dsa_xstrndup(b->data ? b->data : "", b->len);
    }
    dsa_buf_init(b);
    return p;
}
