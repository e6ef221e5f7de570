/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "stream.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server.h"

void srv_sleep_ms(long ms)
{
    /* Short naps so a stop request is noticed quickly. */
    while (ms > 0 && !atomic_load(&srv_stopping)) {
        long step = ms < 50 ? ms : 50;
        struct timespec ts = {step / 1000, (step % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        ms -= step;
    }
}

struct srv_stream *srv_stream_new(void)
{
    struct srv_stream *st = dsa_xcalloc(1, sizeof *st);
    dsa_buf_init(&st->data);
    st->cut_at = -1;
    st->stall_at = -1;
    return st;
}

void srv_stream_event(struct srv_stream *st, const char *payload)
{
    dsa_buf_addf(&st->data, "data: %s\n\n", payload);
    if (st->n == st->cap)
        st->ends =
            dsa_xrealloc(st->ends, (st->cap = st->cap ? 2 * st->cap : 64) * sizeof *st->ends);
    st->ends[st->n++] = st->data.len;
}

void srv_stream_json(struct srv_stream *st, json_t *v)
{
    char *s = json_dumps(v, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(v);
    srv_stream_event(st, s);
    free(s);
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct srv_stream *st = cls;
    if (st->next >= st->n)
        return MHD_CONTENT_READER_END_OF_STREAM;
    if (st->cut_at >= 0 && st->next >= (size_t)st->cut_at)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    if (st->stall_at >= 0 && st->next == (size_t)st->stall_at) {
        st->stall_at = -1;
        srv_sleep_ms(1000L * srv_cfg->stall_s);
    }
    if (st->off == (st->next ? st->ends[st->next - 1] : 0) && st->next > 0 &&
        srv_cfg->chunk_delay_ms > 0)
        srv_sleep_ms(srv_cfg->chunk_delay_ms);
    size_t end = st->ends[st->next];
    size_t n = end - st->off;
    if (n > max)
        n = max;
    memcpy(buf, st->data.data + st->off, n);
    st->off += n;
    if (st->off == end)
        st->next++;
    return (ssize_t)n;
}

void srv_stream_free(struct srv_stream *st)
{
    if (!st)
        return;
    dsa_buf_release(&st->data);
    free(st->ends);
    free(st);
}

static void stream_free_cb(void *cls)
{
    srv_stream_free(cls);
}

struct MHD_Response *srv_stream_response(struct srv_stream *st, uint64_t size)
{
    return MHD_create_response_from_callback(size, 64 * 1024, stream_read, st, stream_free_cb);
}
