/*
 * Fault injection for the test server. A fault is chosen per generation request (chat,
 * completions, /generate), before the request is validated:
 *   - forced by the request header "X-DSA-Fault: KIND", or
 *   - by the rules given with --fault KIND[:WHEN], tried in order, the first that fires wins.
 *     WHEN is a rate in [0,1] (default 1); "first": only a body's first arrival, so a
 *     retry succeeds; or "nth=N": only the N-th generation request the server receives
 *     (1-based, arrival order: deterministic only for sequential clients); or "match=TEXT":
 *     every request whose body contains TEXT (e.g. one sample's prefix), on every attempt. A rate
 * rule fires when srv_decide_u(fault_seed, fnv1a64(body) ^ splitmix64(attempt), "fault:KIND") <
 * rate where attempt counts earlier arrivals of the same body bytes: decisions do not depend on
 *     arrival order or concurrency, and a retried body gets a fresh draw.
 * KIND: an HTTP status 400..599 (error body in the dialect's shape; 429 and 503 carry
 * Retry-After), reset, stall, truncate, malformed, content-type, error-nested, error-flat,
 * stream-error, stall-stream, nul, endless-stream, gzip-bomb, bad-utf8-400. docs/test-server.md
 * describes what each one sends. Ownership: rule arrays belong to the caller; the attempt table is
 * process-wide. SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_SRV_FAULTS_H
#define DSA_SRV_FAULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum srv_fault_kind {
    SRV_FAULT_NONE = 0,
    SRV_FAULT_STATUS, /* status in srv_fault.status */
    SRV_FAULT_RESET,
    SRV_FAULT_STALL,
    SRV_FAULT_TRUNCATE,
    SRV_FAULT_MALFORMED,
    SRV_FAULT_CONTENT_TYPE,
    SRV_FAULT_ERROR_NESTED,
    SRV_FAULT_ERROR_FLAT,
    SRV_FAULT_STREAM_ERROR,
    SRV_FAULT_STALL_STREAM,
    SRV_FAULT_NUL,            /* the answer holds U+0000 */
    SRV_FAULT_ENDLESS_STREAM, /* content forever, never [DONE] (or a body without end) */
    SRV_FAULT_GZIP_BOMB,      /* the endless answer, gzip-encoded: ~1000 times smaller */
    SRV_FAULT_BAD_UTF8_400,   /* 400 whose body is not UTF-8 */
};

struct srv_fault {
    enum srv_fault_kind kind;
    int status; /* SRV_FAULT_STATUS only */
};

struct srv_fault_rule {
    struct srv_fault fault;
    char name[16];
    double rate;
    bool first_only;
    unsigned long nth; /* > 0: fires on exactly the nth generation request to arrive */
    const char *match; /* non-NULL: fires on every body containing these bytes */
};

/* "503", "reset:0.25", "stall:first", "truncate:nth=3", "500:match=AbCdEfGhIj". `match`
   points into s, which must outlive the rule. Returns 0, or -1 with the reason in err. */
int srv_fault_rule_parse(const char *s, struct srv_fault_rule *r, char *err, size_t errlen);
/* A bare KIND (the header form). Returns 0 or -1. */
int srv_fault_parse_kind(const char *s, struct srv_fault *f);
/* How many times this body hash arrived before (and counts this arrival). Thread-safe. */
unsigned long srv_fault_attempt(uint64_t body_hash);
/* Applies the rules for a body with this hash on this attempt; `arrival` is the 1-based
   arrival number of the request among all generation requests. */
struct srv_fault srv_fault_choose(const struct srv_fault_rule *rules, size_t n, uint64_t seed,
                                  const char *body, size_t body_len, uint64_t body_hash,
                                  unsigned long attempt, unsigned long arrival);

#endif
