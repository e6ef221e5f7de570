/* The run loop; see loop.h.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "run/loop.h"

#include <stdio.h>
#include <string.h>

#include "util/exitcode.h"
#include "util/hash.h"
#include "util/msg.h"

int dsa_shard_parse(const char *s, struct dsa_shard *out)
{
    out->i = out->n = 0;
    if (!s)
        return 0;
    int i, n;
    char tail;
    if (sscanf(s, "%d/%d%c", &i, &n, &tail) != 2 || n < 1 || n > 65536 || i < 1 || i > n ||
        strchr(s, ' ') || s[0] == '+') {
        dsa_errorf("--shard '%s' is not i/n with 1 <= i <= n (e.g. 1/4)", s);
        return -1;
    }
    out->i = i;
    out->n = n;
    return 0;
}

bool dsa_shard_keep(const struct dsa_shard *s, const char *id)
{
    if (!s || s->n <= 1)
        return true;
    /* splitmix64 after FNV-1a: FNV alone puts ids that differ in the last digit ("q0001",
       "q0002") into neighbouring residues, which for small n would alternate shards by index */
    uint64_t h = dsa_splitmix64(dsa_fnv1a64(id, strlen(id)));
    return (int)(h % (uint64_t)s->n) == s->i - 1;
}

void dsa_shard_match(const struct dsa_shard *s, json_t *match)
{
    if (!s || s->n == 0)
        return;
    char label[32];
    snprintf(label, sizeof label, "%d/%d", s->i, s->n);
    json_object_set_new(match, "shard", json_string(label));
}

int dsa_loop_store_exit(int store_code)
{
    switch (store_code) {
    case 0:
        return DSA_EXIT_OK;
    case -2:
        return DSA_EXIT_MISMATCH;
    case -3:
        return DSA_EXIT_DATA;
    default:
        return DSA_EXIT_IO;
    }
}

int dsa_loop_open(dsa_run **run, const char *path, json_t *header, unsigned flags)
{
    return dsa_loop_store_exit(dsa_run_open(run, path, header, flags));
}

void dsa_loop_note_resume(size_t resumed, size_t total, const char *path)
{
    /* a rerun says what it found (README: "Run it again and it resumes") */
    size_t done = resumed < total ? resumed : total;
    if (resumed)
        dsa_notef("resuming: %zu of %zu samples already done in '%s'%s", done, total, path,
                  done == total ? ": nothing left to do" : "");
}

static bool interrupted(const struct dsa_loop_opts *o)
{
    return o->interrupted && *o->interrupted;
}

/* submits while the backend takes more; returns 0 or the submit error (negative exit) */
static int fill(dsa_backend *b, const struct dsa_loop_hooks *h, void *ud,
                const struct dsa_loop_opts *o, bool *more)
{
    while (*more && !interrupted(o) && !(h->must_stop && h->must_stop(ud)) &&
           dsa_backend_idle_slots(b) > 0) {
        int rc = h->submit_next(ud, b);
        if (rc <= 0) {
            *more = false;
            return rc;
        }
    }
    return 0;
}

int dsa_loop_drive(dsa_backend *b, const struct dsa_loop_hooks *h, void *ud,
                   const struct dsa_loop_opts *o)
{
    bool more = true;
    for (;;) {
        int rc = fill(b, h, ud, o, &more);
        if (rc < 0 || interrupted(o) || (h->must_stop && h->must_stop(ud))) {
            /* stop issuing; abort what is in flight (a rerun resends it) */
            dsa_backend_cancel(b);
            if (rc < 0)
                return -rc;
            return interrupted(o) ? DSA_EXIT_INTERRUPTED : DSA_EXIT_OK;
        }
        int pending = dsa_backend_poll(b, o->poll_ms);
        if (h->tick)
            h->tick(ud, b);
        if (pending < 0) {
            dsa_backend_cancel(b);
            return DSA_EXIT_BACKEND;
        }
        if (pending == 0 && !more)
            return DSA_EXIT_OK;
    }
}
