/* Backend dispatch through the vtable, and result helpers; see backend.h.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "backend/backend.h"

#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

json_t *dsa_backend_describe(dsa_backend *b)
{
    return b->ops->describe(b);
}

int dsa_backend_submit(dsa_backend *b, const struct dsa_request *req)
{
    return b->ops->submit(b, req);
}

int dsa_backend_poll(dsa_backend *b, int timeout_ms)
{
    return b->ops->poll(b, timeout_ms);
}

int dsa_backend_drain(dsa_backend *b, volatile int *stop)
{
    for (;;) {
        if (stop && *stop)
            return 0;
        int n = b->ops->poll(b, 100);
        if (n < 0)
            return -1;
        if (n == 0)
            return 0;
    }
}

void dsa_backend_cancel(dsa_backend *b)
{
    b->ops->cancel(b);
}

int dsa_backend_idle_slots(const dsa_backend *b)
{
    return b->ops->idle_slots(b);
}

void dsa_backend_stats(const dsa_backend *b, long *retries, long *errors)
{
    b->ops->stats(b, retries, errors);
}

int dsa_backend_metrics(dsa_backend *b, struct dsa_buf *out)
{
    return b->ops->metrics(b, out);
}

void dsa_backend_free(dsa_backend **b)
{
    if (!*b)
        return;
    (*b)->ops->free(*b);
    *b = NULL;
}

void dsa_result_copy(struct dsa_result *dst, const struct dsa_result *src)
{
    *dst = *src;
    dst->error = src->error ? dsa_xstrdup(src->error) : NULL;
    /* copies of the lengths: content may hold NUL bytes */
    dst->content = src->content ? dsa_xstrndup(src->content, src->content_len) : NULL;
    dst->reasoning = src->reasoning ? dsa_xstrndup(src->reasoning, src->reasoning_len) : NULL;
    dst->finish_reason = src->finish_reason ? dsa_xstrdup(src->finish_reason) : NULL;
    dst->stop_reason = src->stop_reason ? dsa_xstrdup(src->stop_reason) : NULL;
    dst->body = src->body ? dsa_xstrndup(src->body, src->body_len) : NULL;
    dst->usage = json_incref(src->usage);
    dst->token_ids = json_incref(src->token_ids);
    dst->raw = json_incref(src->raw);
}

void dsa_result_release(struct dsa_result *r)
{
    free((char *)r->error);
    free((char *)r->content);
    free((char *)r->reasoning);
    free((char *)r->finish_reason);
    free((char *)r->stop_reason);
    free((char *)r->body);
    json_decref(r->usage);
    json_decref(r->token_ids);
    json_decref(r->raw);
    memset(r, 0, sizeof *r);
}

struct call_state {
    struct dsa_result *out;
    bool done;
};

static void on_call_done(const struct dsa_result *res)
{
    struct call_state *cs = res->ud;
    dsa_result_copy(cs->out, res);
    cs->out->ud = NULL;
    cs->done = true;
}

int dsa_backend_call(dsa_backend *b, const struct dsa_request *req, struct dsa_result *out)
{
    memset(out, 0, sizeof *out);
    struct call_state cs = {out, false};
    struct dsa_request r = *req;
    r.done = on_call_done;
    r.ud = &cs;
    if (dsa_backend_submit(b, &r) < 0) {
        out->status = DSA_RES_FAILED;
        out->error = dsa_xstrdup("cannot submit the request");
        return out->status;
    }
    while (!cs.done)
        if (dsa_backend_poll(b, 100) < 0 && !cs.done) {
            out->status = DSA_RES_FAILED;
            out->error = dsa_xstrdup("event loop failed");
            return out->status;
        }
    return out->status;
}

const char *dsa_res_status_name(enum dsa_res_status s)
{
    switch (s) {
    case DSA_RES_OK:
        return "ok";
    case DSA_RES_FAILED:
        return "failed";
    case DSA_RES_OVER_CONTEXT:
        return "over_context";
    case DSA_RES_UNSUPPORTED:
        return "unsupported";
    case DSA_RES_CANCELLED:
        return "cancelled";
    }
    return "?";
}
