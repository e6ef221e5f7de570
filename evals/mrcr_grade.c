/*
 * The official MRCR grader: the prefix rule (docs/mrcr.md "Grading") and a port of CPython's
 * difflib.SequenceMatcher(None, a, b).ratio() (docs/mrcr.md "Grading") that returns the same
 * double, bit for bit.
 *
 * Data structures, chosen for tens of thousands of 2–4k code point pairs:
 *  - b2j: b's positions grouped by code point (a counting sort over dense ids, so positions
 *    stay ascending within a group, as in CPython's lists); popular code points (autojunk)
 *    get no group. A small open-addressing table maps a code point to its dense id, and each
 *    a[i] is looked up once per ratio() call, not once per find_longest_match() call.
 *  - j2len: two arrays of {stamp, len} used alternately by consecutive rows i. An entry is
 *    valid only if its stamp is the previous row's generation, so "j2len = newj2len" and
 *    "j2len = {}" cost nothing; each find_longest_match() call skips one generation first
 *    so that no value leaks from the previous call (CPython starts every call with {}).
 * Memory is O(la + lb); time is that of CPython's algorithm (same loops, same order).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "evals/mrcr_grade.h"

#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/utf8.h"

struct j2len_slot {
    uint32_t stamp;
    uint32_t len;
};

struct matcher {
    const uint32_t *a, *b;
    uint32_t la, lb;
    int32_t *akey;             /* a[i] -> group id, or -1 if absent from b or popular */
    uint32_t *anext;           /* anext[i]: the first i2 >= i with akey[i2] >= 0, else la */
    uint32_t *pos;             /* positions of b, grouped by id, ascending within a group */
    uint32_t *start;           /* group g is pos[start[g] .. start[g+1]) */
    struct j2len_slot *row[2]; /* slot j+1 holds j2len[j]; slot 0 stands for j = -1 */
    uint32_t gen;
};

/* Open-addressing map code point -> dense id, sized to a power of two >= 2n. */
struct cpmap {
    uint32_t *keys;
    int32_t *ids;
    uint32_t mask;
};

static inline uint32_t cp_hash(uint32_t cp)
{
    /* multiplicative hashing (Knuth): code points are small and clustered */
    return cp * 2654435761u;
}

static void cpmap_init(struct cpmap *m, uint32_t n)
{
    uint32_t cap = 16;
    while (cap < 2 * (uint64_t)n)
        cap <<= 1;
    m->keys = dsa_xmalloc(cap * sizeof *m->keys);
    m->ids = dsa_xmalloc(cap * sizeof *m->ids);
    for (uint32_t i = 0; i < cap; i++)
        m->ids[i] = -1;
    m->mask = cap - 1;
}

/* Returns the slot of cp: either holding cp or empty (ids[slot] == -1). */
static inline uint32_t cpmap_slot(const struct cpmap *m, uint32_t cp)
{
    uint32_t s = cp_hash(cp) & m->mask;
    while (m->ids[s] >= 0 && m->keys[s] != cp)
        s = (s + 1) & m->mask;
    return s;
}

static void cpmap_free(struct cpmap *m)
{
    free(m->keys);
    free(m->ids);
}

/* CPython's __chain_b with isjunk=None and autojunk=True, then the lookup of every a[i]. */
static void matcher_init(struct matcher *m, const uint32_t *a, uint32_t la, const uint32_t *b,
                         uint32_t lb)
{
    memset(m, 0, sizeof *m);
    m->a = a;
    m->b = b;
    m->la = la;
    m->lb = lb;

    /* dense group ids: a table for ASCII (most of every MRCR string), a hash map for the rest,
       sized by the number of non-ASCII elements */
    int32_t ascii[128];
    for (int c = 0; c < 128; c++)
        ascii[c] = -1;
    uint32_t nonascii = 0;
    for (uint32_t j = 0; j < lb; j++)
        nonascii += b[j] >= 128;
    struct cpmap map;
    cpmap_init(&map, nonascii);
    uint32_t *bid = dsa_xmalloc((lb ? lb : 1) * sizeof *bid);
    uint32_t *count = dsa_xcalloc((size_t)lb + 1, sizeof *count);
    uint32_t ngroups = 0;
    for (uint32_t j = 0; j < lb; j++) {
        int32_t *id;
        if (b[j] < 128) {
            id = &ascii[b[j]];
        } else {
            uint32_t s = cpmap_slot(&map, b[j]);
            map.keys[s] = b[j];
            id = &map.ids[s];
        }
        if (*id < 0)
            *id = (int32_t)ngroups++;
        bid[j] = (uint32_t)*id;
        count[bid[j]]++;
    }
    /* autojunk: with len(b) >= 200, a code point seen more than len(b)//100 + 1 times is
       "popular" and loses its b2j entry (it can still be matched by the extension loops).
       Popular groups keep their positions in pos[] but are never looked up. */
    uint32_t ntest = lb / 100 + 1;
    bool autojunk = lb >= 200;
    bool *popular = dsa_xmalloc((size_t)ngroups + 1);
    m->start = dsa_xmalloc(((size_t)ngroups + 1) * sizeof *m->start);
    uint32_t total = 0;
    for (uint32_t g = 0; g < ngroups; g++) {
        popular[g] = autojunk && count[g] > ntest;
        m->start[g] = total;
        total += count[g];
        count[g] = m->start[g]; /* from here on: the fill cursor of group g */
    }
    m->start[ngroups] = total;
    /* stable counting sort: positions ascending within a group, as CPython's lists are */
    m->pos = dsa_xmalloc((lb ? lb : 1) * sizeof *m->pos);
    for (uint32_t j = 0; j < lb; j++)
        m->pos[count[bid[j]]++] = j;
    for (int c = 0; c < 128; c++)
        if (ascii[c] >= 0 && popular[ascii[c]])
            ascii[c] = -1;
    /* a[i] -> group, and anext, in one backward pass */
    m->akey = dsa_xmalloc((la ? la : 1) * sizeof *m->akey);
    m->anext = dsa_xmalloc(((size_t)la + 1) * sizeof *m->anext);
    m->anext[la] = la;
    for (uint32_t i = la; i-- > 0;) {
        int32_t g;
        if (a[i] < 128) {
            g = ascii[a[i]];
        } else {
            g = map.ids[cpmap_slot(&map, a[i])];
            if (g >= 0 && popular[g])
                g = -1;
        }
        m->akey[i] = g;
        m->anext[i] = g >= 0 ? i : m->anext[i + 1];
    }
    free(popular);
    free(bid);
    free(count);
    cpmap_free(&map);

    m->row[0] = dsa_xcalloc((size_t)lb + 1, sizeof *m->row[0]);
    m->row[1] = dsa_xcalloc((size_t)lb + 1, sizeof *m->row[1]);
    m->gen = 1;
}

static void matcher_release(struct matcher *m)
{
    free(m->akey);
    free(m->anext);
    free(m->pos);
    free(m->start);
    free(m->row[0]);
    free(m->row[1]);
}

/* First index in p[lo..hi) whose value is >= v (p ascending). */
static inline uint32_t lower_bound(const uint32_t *p, uint32_t lo, uint32_t hi, uint32_t v)
{
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (p[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* CPython's find_longest_match(alo, ahi, blo, bhi) with isjunk=None: the longest run of
   non-popular equal elements, the first one (smallest i, then smallest j) on ties because
   only a strictly longer run replaces the best; then extended on both sides over equal
   elements, popular ones included. */
static void find_longest_match(struct matcher *m, uint32_t alo, uint32_t ahi, uint32_t blo,
                               uint32_t bhi, uint32_t *oi, uint32_t *oj, uint32_t *ok)
{
    const uint32_t *a = m->a, *b = m->b;
    uint32_t besti = alo, bestj = blo, bestsize = 0;

    /* Row i of this call has generation base + (i - alo), and row i reads the entries its
       predecessor i-1 wrote, stamped base + (i - alo) - 1. Rows whose a[i] has no b2j entry
       are skipped (anext) and write nothing, which empties j2len as CPython's loop does.
       base - 1 is never written: the "{}" every call starts with. Renumber before the
       counter could wrap. */
    if (m->gen > UINT32_MAX - (ahi - alo) - 4) {
        memset(m->row[0], 0, ((size_t)m->lb + 1) * sizeof *m->row[0]);
        memset(m->row[1], 0, ((size_t)m->lb + 1) * sizeof *m->row[1]);
        m->gen = 1;
    }
    uint32_t base = m->gen + 2 - alo; /* row i: base + i (unsigned arithmetic wraps back) */
    m->gen += 2 + (ahi - alo);
    for (uint32_t i = m->anext[alo]; i < ahi; i = m->anext[i + 1]) {
        uint32_t gen = base + i;
        int32_t g = m->akey[i];
        const struct j2len_slot *prev = m->row[(gen - 1) & 1];
        struct j2len_slot *cur = m->row[gen & 1];
        const uint32_t *p = m->pos;
        uint32_t end = m->start[g + 1];
        uint32_t q = m->start[g];
        if (p[q] < blo) /* the first call of get_matching_blocks has blo = 0 */
            q = lower_bound(p, q + 1, end, blo);
        for (; q < end; q++) {
            uint32_t j = p[q];
            if (j >= bhi)
                break;
            uint32_t k = (prev[j].stamp == gen - 1 ? prev[j].len : 0) + 1;
            cur[j + 1].stamp = gen;
            cur[j + 1].len = k;
            if (k > bestsize) {
                besti = i - k + 1;
                bestj = j - k + 1;
                bestsize = k;
            }
        }
    }

    while (besti > alo && bestj > blo && a[besti - 1] == b[bestj - 1]) {
        besti--;
        bestj--;
        bestsize++;
    }
    while (besti + bestsize < ahi && bestj + bestsize < bhi &&
           a[besti + bestsize] == b[bestj + bestsize])
        bestsize++;
    *oi = besti;
    *oj = bestj;
    *ok = bestsize;
}

/* Σ sizes of get_matching_blocks(): the recursion is an explicit stack. The order in which
   subproblems run does not change the blocks found (each call starts afresh), and merging
   adjacent blocks does not change the sum, so ratio() needs neither the sort nor the merge. */
static uint64_t matched_total(struct matcher *m)
{
    struct range {
        uint32_t alo, ahi, blo, bhi;
    };
    size_t cap = 64, n = 0;
    struct range *stack = dsa_xmalloc(cap * sizeof *stack);
    stack[n++] = (struct range){0, m->la, 0, m->lb};
    uint64_t total = 0;
    while (n) {
        struct range r = stack[--n];
        uint32_t i, j, k;
        find_longest_match(m, r.alo, r.ahi, r.blo, r.bhi, &i, &j, &k);
        if (!k)
            continue;
        total += k;
        if (n + 2 > cap) {
            cap *= 2;
            stack = dsa_xrealloc(stack, cap * sizeof *stack);
        }
        if (r.alo < i && r.blo < j)
            stack[n++] = (struct range){r.alo, i, r.blo, j};
        if (i + k < r.ahi && j + k < r.bhi)
            stack[n++] = (struct range){i + k, r.ahi, j + k, r.bhi};
    }
    free(stack);
    return total;
}

double dsa_difflib_ratio(const uint32_t *a, size_t la, const uint32_t *b, size_t lb)
{
    /* positions are uint32_t; the generation scheme needs a little headroom */
    if (la >= UINT32_MAX / 2 || lb >= UINT32_MAX / 2)
        abort();
    size_t t = la + lb;
    if (!t)
        return 1.0;
    if (!la || !lb)
        return 0.0;
    struct matcher m;
    matcher_init(&m, a, (uint32_t)la, b, (uint32_t)lb);
    uint64_t matches = matched_total(&m);
    matcher_release(&m);
    /* CPython: 2.0 * matches / length, with ints converted exactly (both < 2^53) */
    return 2.0 * (double)matches / (double)t;
}

int dsa_mrcr_grade_cp(const uint32_t *response, size_t response_len, const uint32_t *answer,
                      size_t answer_len, const uint32_t *prefix, size_t prefix_len,
                      struct dsa_mrcr_grade *out)
{
    out->prefix_hit =
        response_len >= prefix_len && !memcmp(response, prefix, prefix_len * sizeof *prefix);
    if (!out->prefix_hit) {
        out->score = 0.0;
        out->exact = false;
        return 0;
    }
    /* removeprefix on both: the answer loses the prefix only if it starts with it */
    if (answer_len >= prefix_len && !memcmp(answer, prefix, prefix_len * sizeof *prefix)) {
        answer += prefix_len;
        answer_len -= prefix_len;
    }
    out->score =
        dsa_difflib_ratio(response + prefix_len, response_len - prefix_len, answer, answer_len);
    out->exact = out->score == 1.0;
    return 0;
}

int dsa_mrcr_grade(const char *response, size_t response_len, const char *answer, size_t answer_len,
                   const char *prefix, size_t prefix_len, struct dsa_mrcr_grade *out)
{
    int ret = -1;
    size_t nr, na, np;
    uint32_t *r = dsa_utf8_decode_alloc(response, response_len, &nr, NULL);
    uint32_t *a = dsa_utf8_decode_alloc(answer, answer_len, &na, NULL);
    uint32_t *p = dsa_utf8_decode_alloc(prefix, prefix_len, &np, NULL);
    if (!r || !a || !p)
        goto cleanup;
    ret = dsa_mrcr_grade_cp(r, nr, a, na, p, np, out);
cleanup:
    free(r);
    free(a);
    free(p);
    return ret;
}
