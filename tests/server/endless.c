/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "endless.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "server.h"
#include "util/buf.h"

#define UNIT_REPEAT 64 /* units per deflate input block */

struct endless {
    bool gzip, sse, started;
    struct dsa_buf unit; /* what repeats: one SSE event, or 1 KiB of the content string */
    struct dsa_buf head; /* sent once first (the body's opening) */
    struct dsa_buf in;   /* a block of units for deflate */
    z_stream z;
    unsigned char out[64 * 1024];
    size_t out_len, out_off;
};

static void fill_plain(struct endless *e)
{
    e->out_len = e->out_off = 0;
    const struct dsa_buf *src = e->started ? &e->unit : &e->head;
    size_t n = src->len < sizeof e->out ? src->len : sizeof e->out;
    memcpy(e->out, src->data, n);
    e->out_len = n;
    e->started = true;
}

static int fill_gzip(struct endless *e)
{
    e->out_len = e->out_off = 0;
    while (e->out_len == 0) {
        if (e->z.avail_in == 0) {
            e->z.next_in = (unsigned char *)(e->started ? e->in.data : e->head.data);
            e->z.avail_in = (uInt)(e->started ? e->in.len : e->head.len);
            e->started = true;
        }
        e->z.next_out = e->out;
        e->z.avail_out = sizeof e->out;
        if (deflate(&e->z, Z_NO_FLUSH) == Z_STREAM_ERROR)
            return -1;
        e->out_len = sizeof e->out - e->z.avail_out;
    }
    return 0;
}

static ssize_t endless_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct endless *e = cls;
    if (atomic_load(&srv_stopping))
        return MHD_CONTENT_READER_END_WITH_ERROR;
    if (e->out_off == e->out_len) {
        if (e->gzip ? fill_gzip(e) < 0 : (fill_plain(e), 0))
            return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    size_t n = e->out_len - e->out_off;
    if (n > max)
        n = max;
    memcpy(buf, e->out + e->out_off, n);
    e->out_off += n;
    return (ssize_t)n;
}

static void endless_free(void *cls)
{
    struct endless *e = cls;
    if (e->gzip)
        deflateEnd(&e->z);
    dsa_buf_release(&e->unit);
    dsa_buf_release(&e->head);
    dsa_buf_release(&e->in);
    free(e);
}

int srv_endless_queue(struct MHD_Connection *c, bool sse, bool gzip)
{
    struct endless *e = dsa_xcalloc(1, sizeof *e);
    e->gzip = gzip;
    e->sse = sse;
    char text[1025];
    memset(text, 'a', sizeof text - 1);
    text[sizeof text - 1] = '\0';
    if (sse) {
        dsa_buf_addf(&e->unit,
                     "data: {\"id\":\"chatcmpl-endless\",\"object\":\"chat.completion.chunk\","
                     "\"choices\":[{\"index\":0,\"delta\":{\"content\":\"%s\"}}]}\n\n",
                     text);
        dsa_buf_add(&e->head, e->unit.data, e->unit.len);
    } else {
        dsa_buf_adds(&e->unit, text);
        dsa_buf_adds(&e->head, "{\"id\":\"chatcmpl-endless\",\"object\":\"chat.completion\","
                               "\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","
                               "\"content\":\"");
        dsa_buf_adds(&e->head, text);
    }
    for (int i = 0; i < UNIT_REPEAT; i++)
        dsa_buf_add(&e->in, e->unit.data, e->unit.len);
    /* windowBits 15 + 16: the gzip wrapper, which Content-Encoding: gzip means */
    if (gzip && deflateInit2(&e->z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) != Z_OK) {
        e->gzip = false;
        endless_free(e);
        return MHD_NO;
    }
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024,
                                                               endless_read, e, endless_free);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                            sse ? "text/event-stream; charset=utf-8" : "application/json");
    if (gzip)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
    int ret = (int)MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ret;
}
