/*
 * The drive of a backend (docs/design.md "The pipeline"), under the run loop (run/run.h) for
 * every eval and both backends: submit the next sample while the backend has idle slots, poll,
 * stop on the signal flag (given by the caller, never read from a global), cancel what is in
 * flight.
 *
 * Ownership: borrows everything passed in; returns nothing the caller must free.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_RUN_LOOP_H
#define DSA_RUN_LOOP_H

#include <stdbool.h>

#include "backend/backend.h"

/* What the drive is fed (the run loop's next sample and stop, src/run/run.c); ud is the
   feeder's. */
struct dsa_loop_feed {
    /* Submits the next sample that still needs a request: 1 submitted, 0 nothing more to
       submit, or a negative enum dsa_exit (-DSA_EXIT_DATA …) that ends the run. */
    int (*submit_next)(void *ud, dsa_backend *b);
    /* true when the run must stop issuing (a write error, the server gone); NULL: never */
    bool (*must_stop)(void *ud);
    /* after each turn of the backend (progress); NULL: none */
    void (*tick)(void *ud, dsa_backend *b);
    int poll_ms; /* longest wait of one turn of the backend */
};

/*
 * Drives the backend until every sample is submitted and answered, or a stop. Returns
 * DSA_EXIT_OK (done, or stopped by must_stop: the eval says why), DSA_EXIT_INTERRUPTED
 * (*interrupted was set: in-flight requests cancelled, their callbacks ran), DSA_EXIT_BACKEND
 * (the event loop failed) or the error a submit_next returned.
 */
int dsa_loop_drive(dsa_backend *b, const struct dsa_loop_feed *feed, void *ud,
                   volatile int *interrupted);

#endif
