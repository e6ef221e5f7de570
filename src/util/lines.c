/*
 * The line reader (lines.h): read(2) into one buffer that holds at least the longest line, and
 * lines handed out in place. Bytes between `start` and `end` are read and not yet returned;
 * DSA_LINES_PADDING bytes past `end` are always allocated and initialized, so a line is
 * followed by at least that many readable bytes (simdjson reads past a text's end).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "util/lines.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/hash.h"
#include "util/msg.h"

/* one read(2) asks for at least this much: a 40 MB dataset is ~650 calls per pass, where stdio's
   4 KiB blocks cost 10,000 and a second copy of every byte */
#define LINES_CHUNK (64 * 1024)

struct dsa_lines {
    int fd;
    bool is_stdin, eof;
    char *path;
    char *buf;
    size_t cap; /* allocated: cap + DSA_LINES_PADDING */
    size_t start, end;
    long lineno;
    bool unterminated;
    off_t offset, next_offset;
};

dsa_lines *dsa_lines_open(const char *path)
{
    bool is_stdin = !strcmp(path, "-");
    int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        dsa_errorf("cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    dsa_lines *r = dsa_xcalloc(1, sizeof *r);
    r->fd = fd;
    r->is_stdin = is_stdin;
    r->path = dsa_xstrdup(is_stdin ? "<stdin>" : path);
    r->cap = LINES_CHUNK;
    r->buf = dsa_xcalloc(1, r->cap + DSA_LINES_PADDING);
    return r;
}

/* Makes room for LINES_CHUNK more bytes after `end`: the unreturned bytes move to the front,
   and the buffer doubles when they fill most of it (a line longer than the buffer). */
static void make_room(dsa_lines *r)
{
    size_t pending = r->end - r->start;
    if (r->start) {
        memmove(r->buf, r->buf + r->start, pending);
        r->start = 0;
        r->end = pending;
    }
    if (r->cap - r->end < LINES_CHUNK) {
        size_t cap = 2 * r->cap;
        r->buf = dsa_xrealloc(r->buf, cap + DSA_LINES_PADDING);
        r->cap = cap;
    }
    /* the padding after the data is initialized (it may hold an older line's bytes) */
    memset(r->buf + r->end, 0, DSA_LINES_PADDING);
}

/* Reads what the file has into the buffer: 1 = more bytes, 0 = end of file, -1 = error. */
static int fill(dsa_lines *r)
{
    make_room(r);
    for (;;) {
        ssize_t n = read(r->fd, r->buf + r->end, r->cap - r->end);
        if (n > 0) {
            r->end += (size_t)n;
            memset(r->buf + r->end, 0, DSA_LINES_PADDING);
            return 1;
        }
        if (n == 0) {
            r->eof = true;
            return 0;
        }
        if (errno != EINTR) {
            dsa_errorf("cannot read '%s': %s", r->path, strerror(errno));
            return -1;
        }
    }
}

int dsa_lines_next(dsa_lines *r, const char **line, size_t *len)
{
    char *nl;
    size_t scanned = 0; /* bytes after start already known to hold no '\n' */
    while (!(nl = memchr(r->buf + r->start + scanned, '\n', r->end - r->start - scanned))) {
        if (r->eof)
            break;
        scanned = r->end - r->start;
        int got = fill(r);
        if (got < 0)
            return -1;
    }
    size_t n = nl ? (size_t)(nl - (r->buf + r->start)) + 1 : r->end - r->start;
    if (!n)
        return 0;
    char *s = r->buf + r->start;
    r->start += n;
    r->lineno++;
    r->offset = r->next_offset;
    r->next_offset += (off_t)n;
    r->unterminated = !nl;
    if (nl)
        s[--n] = '\0';
    else
        s[n] = '\0'; /* within the padding */
    if (n > 0 && s[n - 1] == '\r')
        s[--n] = '\0';
    *line = s;
    *len = n;
    return 1;
}

long dsa_lines_lineno(const dsa_lines *r)
{
    return r->lineno;
}

bool dsa_lines_unterminated(const dsa_lines *r)
{
    return r->unterminated;
}

off_t dsa_lines_offset(const dsa_lines *r)
{
    return r->offset;
}

off_t dsa_lines_next_offset(const dsa_lines *r)
{
    return r->next_offset;
}

void dsa_lines_free(dsa_lines **rp)
{
    dsa_lines *r = *rp;
    if (!r)
        return;
    if (!r->is_stdin)
        close(r->fd);
    free(r->buf);
    free(r->path);
    free(r);
    *rp = NULL;
}

void dsa_lines_sha256_update(struct dsa_sha256 *h, const dsa_lines *r, const char *line, size_t len)
{
    dsa_sha256_update(h, line, len);
    /* put back the terminator the reader removed, so the hash is the file's */
    size_t term = (size_t)(dsa_lines_next_offset(r) - dsa_lines_offset(r)) - len;
    if (term == 2)
        dsa_sha256_update(h, "\r\n", 2);
    else if (term == 1)
        dsa_sha256_update(h, dsa_lines_unterminated(r) ? "\r" : "\n", 1);
}
