/* Server-sent events parser; see sse.h.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "backend/sse.h"

#include <string.h>

void dsa_sse_init(struct dsa_sse *p, dsa_sse_cb cb, void *ud)
{
    memset(p, 0, sizeof *p);
    p->cb = cb;
    p->ud = ud;
    dsa_buf_init(&p->line);
    dsa_buf_init(&p->data);
    dsa_buf_init(&p->event);
}

void dsa_sse_release(struct dsa_sse *p)
{
    dsa_buf_release(&p->line);
    dsa_buf_release(&p->data);
    dsa_buf_release(&p->event);
}

static int dispatch(struct dsa_sse *p)
{
    int ret = 0;
    if (p->has_data)
        ret = p->cb(p->ud, p->event.data, p->data.data, p->data.len);
    dsa_buf_reset(&p->data);
    dsa_buf_reset(&p->event);
    p->has_data = false;
    return ret;
}

/* One complete line (without its terminator). */
static int process_line(struct dsa_sse *p, const char *s, size_t n)
{
    if (n == 0)
        return dispatch(p);
    if (s[0] == ':')
        return 0;
    const char *colon = memchr(s, ':', n);
    size_t flen = colon ? (size_t)(colon - s) : n;
    const char *v = colon ? colon + 1 : s + n;
    size_t vlen = colon ? n - flen - 1 : 0;
    if (vlen && v[0] == ' ') { /* one optional space after the colon */
        v++;
        vlen--;
    }
    if (flen == 4 && !memcmp(s, "data", 4)) {
        if (p->data.len + vlen > DSA_SSE_MAX_LINE) {
            p->failed = true;
            return -1;
        }
        if (p->has_data)
            dsa_buf_addch(&p->data, '\n');
        dsa_buf_add(&p->data, v, vlen);
        p->has_data = true;
    } else if (flen == 5 && !memcmp(s, "event", 5)) {
        dsa_buf_reset(&p->event);
        dsa_buf_add(&p->event, v, vlen);
    }
    return 0;
}

int dsa_sse_feed(struct dsa_sse *p, const char *bytes, size_t len)
{
    if (p->failed)
        return -1;
    size_t i = 0;
    if (p->after_cr && len && bytes[0] == '\n')
        i = 1; /* the "\n" of a "\r\n" split between two feeds */
    if (len)
        p->after_cr = false;
    while (i < len) {
        /* find the next line terminator from i */
        size_t j = i;
        while (j < len && bytes[j] != '\n' && bytes[j] != '\r')
            j++;
        if (j == len) {
            if (p->line.len + (len - i) > DSA_SSE_MAX_LINE) {
                p->failed = true;
                return -1;
            }
            dsa_buf_add(&p->line, bytes + i, len - i);
            break;
        }
        int ret;
        if (p->line.len) {
            if (p->line.len + (j - i) > DSA_SSE_MAX_LINE) {
                p->failed = true;
                return -1;
            }
            dsa_buf_add(&p->line, bytes + i, j - i);
            ret = process_line(p, p->line.data, p->line.len);
            dsa_buf_reset(&p->line);
        } else {
            ret = process_line(p, bytes + i, j - i);
        }
        if (bytes[j] == '\r') {
            if (j + 1 < len && bytes[j + 1] == '\n')
                j++;
            else if (j + 1 == len)
                p->after_cr = true;
        }
        i = j + 1;
        if (ret)
            return ret;
    }
    return 0;
}
