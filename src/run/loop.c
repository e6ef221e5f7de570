/* The run loop; see loop.h.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "run/loop.h"

#include "util/exitcode.h"

static bool interrupted(volatile int *flag)
{
    return flag && *flag;
}

/* submits while the backend takes more; returns 0 or the submit error (negative exit) */
static int fill(dsa_backend *b, const struct dsa_loop_feed *h, void *ud, volatile int *o,
                bool *more)
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

int dsa_loop_drive(dsa_backend *b, const struct dsa_loop_feed *h, void *ud, volatile int *o)
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
        int pending = dsa_backend_poll(b, h->poll_ms);
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
