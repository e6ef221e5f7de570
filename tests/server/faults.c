/* SPDX-License-Identifier: GPL-3.0-or-later */
#define _GNU_SOURCE /* memmem */
#include "faults.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "answer.h"
#include "util/buf.h"
#include "util/hash.h"

static const struct {
    const char *name;
    enum srv_fault_kind kind;
} kinds[] = {
    {"reset", SRV_FAULT_RESET},
    {"stall", SRV_FAULT_STALL},
    {"truncate", SRV_FAULT_TRUNCATE},
    {"malformed", SRV_FAULT_MALFORMED},
    {"content-type", SRV_FAULT_CONTENT_TYPE},
    {"error-nested", SRV_FAULT_ERROR_NESTED},
    {"error-flat", SRV_FAULT_ERROR_FLAT},
    {"stream-error", SRV_FAULT_STREAM_ERROR},
    {"stall-stream", SRV_FAULT_STALL_STREAM},
    {"nul", SRV_FAULT_NUL},
    {"endless-stream", SRV_FAULT_ENDLESS_STREAM},
    {"gzip-bomb", SRV_FAULT_GZIP_BOMB},
    {"bad-utf8-400", SRV_FAULT_BAD_UTF8_400},
};

int srv_fault_parse_kind(const char *s, struct srv_fault *f)
{
    memset(f, 0, sizeof *f);
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        if (strcmp(s, kinds[i].name) == 0) {
            f->kind = kinds[i].kind;
            return 0;
        }
    }
    char *end;
    long st = strtol(s, &end, 10);
    if (end != s && !*end && st >= 400 && st <= 599) {
        f->kind = SRV_FAULT_STATUS;
        f->status = (int)st;
        return 0;
    }
    return -1;
}

int srv_fault_rule_parse(const char *s, struct srv_fault_rule *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    const char *colon = strchr(s, ':');
    size_t n = colon ? (size_t)(colon - s) : strlen(s);
    if (n == 0 || n >= sizeof r->name) {
        snprintf(err, errlen, "bad fault kind in '%s'", s);
        return -1;
    }
    memcpy(r->name, s, n);
    r->name[n] = '\0';
    if (srv_fault_parse_kind(r->name, &r->fault) != 0) {
        snprintf(err, errlen, "unknown fault kind '%s'", r->name);
        return -1;
    }
    r->rate = 1.0;
    if (colon) {
        if (strcmp(colon + 1, "first") == 0) {
            r->first_only = true;
        } else if (strncmp(colon + 1, "match=", 6) == 0) {
            if (!colon[7]) {
                snprintf(err, errlen, "empty 'match=' in '%s'", s);
                return -1;
            }
            r->match = colon + 7;
        } else if (strncmp(colon + 1, "nth=", 4) == 0) {
            char *end;
            long nth = strtol(colon + 5, &end, 10);
            if (end == colon + 5 || *end || nth < 1) {
                snprintf(err, errlen, "bad 'nth=N' in '%s' (want N >= 1)", s);
                return -1;
            }
            r->nth = (unsigned long)nth;
        } else {
            char *end;
            r->rate = strtod(colon + 1, &end);
            if (end == colon + 1 || *end || !(r->rate >= 0.0 && r->rate <= 1.0)) {
                snprintf(err, errlen,
                         "bad fault rate '%s' (want 0..1, 'first', 'nth=N' or 'match=TEXT')",
                         colon + 1);
                return -1;
            }
        }
    }
    return 0;
}

/* Open-addressing table body hash -> arrivals; grows at half load. Key 0 marks an empty slot,
   so a hash of 0 is stored as 1 (a collision we accept). */
static struct {
    pthread_mutex_t lock;
    uint64_t *keys;
    unsigned long *counts;
    size_t cap, used;
} T = {.lock = PTHREAD_MUTEX_INITIALIZER};

static size_t slot(uint64_t *keys, size_t cap, uint64_t key)
{
    size_t i = (size_t)(dsa_splitmix64(key) & (cap - 1));
    while (keys[i] && keys[i] != key)
        i = (i + 1) & (cap - 1);
    return i;
}

unsigned long srv_fault_attempt(uint64_t h)
{
    uint64_t key = h ? h : 1;
    pthread_mutex_lock(&T.lock);
    if (2 * (T.used + 1) > T.cap) {
        size_t ncap = T.cap ? 2 * T.cap : 1024;
        uint64_t *nk = dsa_xcalloc(ncap, sizeof *nk);
        unsigned long *nc = dsa_xcalloc(ncap, sizeof *nc);
        for (size_t i = 0; i < T.cap; i++) {
            if (T.keys[i]) {
                size_t j = slot(nk, ncap, T.keys[i]);
                nk[j] = T.keys[i];
                nc[j] = T.counts[i];
            }
        }
        free(T.keys);
        free(T.counts);
        T.keys = nk;
        T.counts = nc;
        T.cap = ncap;
    }
    size_t i = slot(T.keys, T.cap, key);
    if (!T.keys[i]) {
        T.keys[i] = key;
        T.used++;
    }
    unsigned long before = T.counts[i]++;
    pthread_mutex_unlock(&T.lock);
    return before;
}

struct srv_fault srv_fault_choose(const struct srv_fault_rule *rules, size_t n, uint64_t seed,
                                  const char *body, size_t body_len, uint64_t body_hash,
                                  unsigned long attempt, unsigned long arrival)
{
    struct srv_fault none = {SRV_FAULT_NONE, 0};
    for (size_t i = 0; i < n; i++) {
        const struct srv_fault_rule *r = &rules[i];
        if (r->match) {
            if (memmem(body, body_len, r->match, strlen(r->match)))
                return r->fault;
            continue;
        }
        if (r->nth) {
            if (arrival == r->nth)
                return r->fault;
            continue;
        }
        if (r->first_only) {
            if (attempt == 0)
                return r->fault;
            continue;
        }
        char tag[32];
        snprintf(tag, sizeof tag, "fault:%s", r->name);
        if (srv_decide_u(seed, body_hash ^ dsa_splitmix64(attempt), tag) < r->rate)
            return r->fault;
    }
    return none;
}
