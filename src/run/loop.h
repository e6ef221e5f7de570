/*
 * The run loop (docs/design.md "The pipeline"): what every evaluation does around its samples,
 * written once for every eval and both backends —
 *
 *   --shard i/n   which samples this process runs: a sample belongs to shard
 *                 1 + splitmix64(fnv1a64(id)) mod n, so the split depends on nothing but the
 *                 ids (not on the order, the filters or the backend) and `dsa-eval merge` of
 *                 the n run files gives the records of the unsharded run;
 *   the run file  opened (or resumed) through the store, its error codes turned into exit
 *                 statuses in one place, and the "resuming: …" note;
 *   the drive     submit while the backend has idle slots, poll, stop on a signal (read
 *                 through the options, never from a global), cancel what is in flight.
 *
 * Ownership: borrows everything passed in; returns nothing the caller must free.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_RUN_LOOP_H
#define DSA_RUN_LOOP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "backend/backend.h"
#include "store/store.h"

/* --shard i/n; n == 0: unsharded (every sample runs) */
struct dsa_shard {
    int i, n;
};

/* Parses "i/n" with 1 <= i <= n <= 65536 (NULL: unsharded). Returns 0, or -1 with one line
   printed (exit DSA_EXIT_USAGE). */
int dsa_shard_parse(const char *s, struct dsa_shard *out);
/* true when the sample with this id belongs to the shard (always when unsharded) */
bool dsa_shard_keep(const struct dsa_shard *s, const char *id);
/* Sets match."shard" = "i/n" when sharded, so that a resume stays in its shard and `merge`
   knows the parts; an unsharded match is left as it is (its bytes do not change). */
void dsa_shard_match(const struct dsa_shard *s, json_t *match);

/* dsa_run_open() with its error codes as an enum dsa_exit: DSA_EXIT_OK, DSA_EXIT_IO (write
   error or locked), DSA_EXIT_MISMATCH (another command's header), DSA_EXIT_DATA (unreadable). */
int dsa_loop_open(dsa_run **run, const char *path, json_t *header, unsigned flags);
/* The store's code (dsa_run_open's return value) as an enum dsa_exit (0 -> DSA_EXIT_OK). */
int dsa_loop_store_exit(int store_code);
/* "resuming: D of N samples already done in 'P'[: nothing left to do]" when resumed > 0 */
void dsa_loop_note_resume(size_t resumed, size_t total, const char *path);

/* What the drive asks of an eval; ud is the eval's state. */
struct dsa_loop_hooks {
    /* Submits the next sample that still needs a request: 1 submitted, 0 nothing more to
       submit, or a negative enum dsa_exit (-DSA_EXIT_DATA …) that ends the run. */
    int (*submit_next)(void *ud, dsa_backend *b);
    /* true when the eval must stop issuing (a write error, the server gone); NULL: never */
    bool (*must_stop)(void *ud);
    /* after each turn of the backend (progress); NULL: none */
    void (*tick)(void *ud, dsa_backend *b);
};

struct dsa_loop_opts {
    volatile int *interrupted; /* set by SIGINT/SIGTERM, or NULL */
    int poll_ms;               /* longest wait of one turn of the backend */
};

/*
 * Drives the backend until every sample is submitted and answered, or a stop. Returns
 * DSA_EXIT_OK (done, or stopped by must_stop: the eval says why), DSA_EXIT_INTERRUPTED (the
 * signal: in-flight requests cancelled, their callbacks ran), DSA_EXIT_BACKEND (the event loop
 * failed) or the error a submit_next returned.
 */
int dsa_loop_drive(dsa_backend *b, const struct dsa_loop_hooks *h, void *ud,
                   const struct dsa_loop_opts *o);

#endif
