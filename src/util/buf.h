/*
 * Growable byte buffer, always NUL-terminated (like git's strbuf).
 * Ownership: a dsa_buf owns its data; dsa_buf_detach() hands it to the caller, who must
 * free() it, and leaves the buffer empty for reuse. Allocation failure aborts: a tool that
 * cannot allocate a few KiB cannot report anything useful either.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_UTIL_BUF_H
#define DSA_UTIL_BUF_H

#include <stdarg.h>
#include <stddef.h>

#include "util/common.h"

struct dsa_buf {
    char *data; /* never NULL after any call below; "" when empty */
    size_t len;
    size_t cap;
};

#define DSA_BUF_INIT                                                                               \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }

void dsa_buf_init(struct dsa_buf *b);
void dsa_buf_release(struct dsa_buf *b);
void dsa_buf_reset(struct dsa_buf *b); /* len = 0, keeps the allocation */
void dsa_buf_grow(struct dsa_buf *b, size_t extra);
void dsa_buf_add(struct dsa_buf *b, const void *data, size_t len);
void dsa_buf_adds(struct dsa_buf *b, const char *s);
void dsa_buf_addch(struct dsa_buf *b, char c);
void dsa_buf_addf(struct dsa_buf *b, const char *fmt, ...) DSA_PRINTF(2, 3);
void dsa_buf_vaddf(struct dsa_buf *b, const char *fmt, va_list ap);
char *dsa_buf_detach(struct dsa_buf *b, size_t *len);

/* malloc/strdup that abort with a message instead of returning NULL */
void *dsa_xmalloc(size_t n);
void *dsa_xcalloc(size_t n, size_t size);
void *dsa_xrealloc(void *p, size_t n);
char *dsa_xstrdup(const char *s);
/* the n bytes at s (NUL bytes among them copied too) and a terminating NUL */
char *dsa_xstrndup(const char *s, size_t n);

#endif
