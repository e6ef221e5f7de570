/*
 * The run loop (docs/design.md "The pipeline"): the drive of a backend for an eval, written once
 * for every eval and both backends — submit the eval's next sample while the backend has idle
 * slots, poll, stop on the signal flag (given by the command, never read from a global), cancel
 * what is in flight. Commands hand it to the evals as their dsa_eval_drive_fn
 * (evals/evals.h); what else belongs to a run lives below it, where the evals reach it too:
 * --shard in util/shard.h, opening or resuming the run file with its codes as exit statuses
 * and the "resuming" note in store/store.h, the endpoint options in run/endpoint_cli.h.
 *
 * Ownership: borrows everything passed in; returns nothing the caller must free.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_RUN_LOOP_H
#define DSA_RUN_LOOP_H

#include "backend/backend.h"
#include "evals/evals.h"

/*
 * Drives the backend until every sample is submitted and answered, or a stop. Returns
 * DSA_EXIT_OK (done, or stopped by must_stop: the eval says why), DSA_EXIT_INTERRUPTED
 * (*interrupted was set: in-flight requests cancelled, their callbacks ran), DSA_EXIT_BACKEND
 * (the event loop failed) or the error a submit_next returned. A dsa_eval_drive_fn.
 */
int dsa_loop_drive(dsa_backend *b, const struct dsa_eval_feed *feed, void *ud,
                   volatile int *interrupted);

#endif
