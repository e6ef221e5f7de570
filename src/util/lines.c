/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "util/lines.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/msg.h"

struct dsa_lines {
    FILE *f;
    bool is_stdin;
    char *path;
    char *buf;
    size_t cap;
    long lineno;
    bool unterminated;
    off_t offset, next_offset;
};

dsa_lines *dsa_lines_open(const char *path)
{
    bool is_stdin = !strcmp(path, "-");
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f) {
        dsa_errorf("cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    dsa_lines *r = dsa_xcalloc(1, sizeof *r);
    r->f = f;
    r->is_stdin = is_stdin;
    r->path = dsa_xstrdup(is_stdin ? "<stdin>" : path);
    return r;
}

int dsa_lines_next(dsa_lines *r, const char **line, size_t *len)
{
    errno = 0;
    ssize_t n = getline(&r->buf, &r->cap, r->f);
    if (n < 0) {
        if (ferror(r->f)) {
            dsa_errorf("cannot read '%s': %s", r->path, strerror(errno ? errno : EIO));
            return -1;
        }
        return 0;
    }
    r->lineno++;
    r->offset = r->next_offset;
    r->next_offset += n;
    r->unterminated = !(n > 0 && r->buf[n - 1] == '\n');
    if (!r->unterminated)
        r->buf[--n] = '\0';
    if (n > 0 && r->buf[n - 1] == '\r')
        r->buf[--n] = '\0';
    *line = r->buf;
    *len = (size_t)n;
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
        fclose(r->f);
    free(r->buf);
    free(r->path);
    free(r);
    *rp = NULL;
}
