/*
 * RULER sample generation: the seeding, the random draws every task shares, the length
 * fitting and the loop over (task, length, index) (ruler.h; docs/ruler.md "Length fitting").
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datasets/tokenize.h"
#include "evals/ruler_int.h"
#include "util/hash.h"

void dsa_ruler_seed(gsl_rng *rng, unsigned long seed, const char *label)
{
    uint32_t s = (uint32_t)dsa_splitmix64(seed ^ dsa_fnv1a64(label, strlen(label)));
    gsl_rng_set(rng, s ? s : 1);
}

size_t dsa_ruler_uniform(gsl_rng *rng, size_t n)
{
    if (n <= 1)
        return 0;
    if (n <= gsl_rng_max(rng)) /* taus2: [0, 2^32 - 1] */
        return (size_t)gsl_rng_uniform_int(rng, (unsigned long)n);
    return (size_t)(gsl_rng_uniform(rng) * (double)n) % n;
}

int dsa_ruler_cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

void dsa_ruler_shuffle(gsl_rng *rng, size_t *a, size_t n)
{
    for (size_t i = n; i > 1; i--) { /* Fisher-Yates */
        size_t j = dsa_ruler_uniform(rng, i), t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
    }
}

void dsa_ruler_sample_k(gsl_rng *rng, size_t n, size_t k, size_t *out)
{
    if (k > n)
        k = n;
    if (k <= 64) { /* few picks from many: redraw on a repeat */
        for (size_t i = 0; i < k; i++) {
            size_t v;
            bool dup;
            do {
                v = dsa_ruler_uniform(rng, n);
                dup = false;
                for (size_t j = 0; j < i && !dup; j++)
                    dup = out[j] == v;
            } while (dup);
            out[i] = v;
        }
        return;
    }
    size_t *pool = dsa_xmalloc(n * sizeof *pool); /* partial Fisher-Yates */
    for (size_t i = 0; i < n; i++)
        pool[i] = i;
    for (size_t i = 0; i < k; i++) {
        size_t j = i + dsa_ruler_uniform(rng, n - i), t = pool[i];
        pool[i] = pool[j];
        pool[j] = t;
        out[i] = pool[i];
    }
    free(pool);
}

/* RULER's three needle value types: an adjective-noun pair of wonderwords (here the shipped
   lists), a 7-digit number, a version-4 UUID. */
void dsa_ruler_random_value(gsl_rng *rng, const dsa_ruler_haystack *h, enum dsa_ruler_val type,
                            struct dsa_buf *out)
{
    switch (type) {
    case DSA_RULER_VAL_WORDS:
        dsa_buf_addf(out, "%s-%s", h->adjs.w[dsa_ruler_uniform(rng, h->adjs.n)],
                     h->nouns.w[dsa_ruler_uniform(rng, h->nouns.n)]);
        break;
    case DSA_RULER_VAL_NUMBERS:
        dsa_buf_addf(out, "%zu", 1000000 + dsa_ruler_uniform(rng, 9000000));
        break;
    case DSA_RULER_VAL_UUIDS: {
        unsigned char b[16];
        for (int i = 0; i < 16; i += 4) {
            unsigned long r = gsl_rng_get(rng);
            for (int j = 0; j < 4; j++)
                b[i + j] = (unsigned char)(r >> (8 * j));
        }
        b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
        b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
        for (int i = 0; i < 16; i++)
            dsa_buf_addf(out, "%s%02x", i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "", b[i]);
        break;
    }
    }
}

void dsa_ruler_replace(struct dsa_buf *b, const char *from, const char *to)
{
    size_t fl = strlen(from);
    if (!fl || !strstr(b->data, from))
        return;
    struct dsa_buf o = DSA_BUF_INIT;
    const char *p = b->data, *q;
    while ((q = strstr(p, from))) {
        dsa_buf_add(&o, p, (size_t)(q - p));
        dsa_buf_adds(&o, to);
        p = q + fl;
    }
    dsa_buf_adds(&o, p);
    dsa_buf_release(b);
    *b = o;
}

void dsa_ruler_add_span(struct dsa_ruler_sample *s, size_t lo, size_t hi,
                        enum dsa_ruler_span_kind kind)
{
    if ((s->nspans & (s->nspans - 1)) == 0) /* capacity doubles at powers of two */
        s->spans = dsa_xrealloc(s->spans, (s->nspans ? 2 * s->nspans : 1) * sizeof *s->spans);
    s->spans[s->nspans++] = (struct dsa_ruler_span){lo, hi, kind};
}

void dsa_ruler_add_output(struct dsa_ruler_sample *s, const char *text)
{
    s->outputs = dsa_xrealloc(s->outputs, (s->noutputs + 1) * sizeof *s->outputs);
    s->outputs[s->noutputs++] = dsa_xstrdup(text);
}

void dsa_ruler_clear(struct dsa_ruler_sample *s)
{
    free(s->input);
    for (size_t i = 0; i < s->noutputs; i++)
        free(s->outputs[i]);
    free(s->outputs);
    free(s->spans);
    s->input = NULL;
    s->outputs = NULL;
    s->spans = NULL;
    s->input_len = s->noutputs = s->nspans = s->answer_prefix = s->question = 0;
}

static long build_count(const struct dsa_ruler_gen *g, dsa_ruler_build_fn build, size_t n,
                        struct dsa_ruler_sample *s)
{
    dsa_ruler_clear(s);
    build(g, n, s);
    return (long)dsa_tok_count(s->input, s->input_len);
}

/* The sample parts of b go to a (whose old parts are freed); b is left empty. */
static void take(struct dsa_ruler_sample *a, struct dsa_ruler_sample *b)
{
    dsa_ruler_clear(a);
    a->input = b->input;
    a->input_len = b->input_len;
    a->answer_prefix = b->answer_prefix;
    a->question = b->question;
    a->outputs = b->outputs;
    a->noutputs = b->noutputs;
    a->spans = b->spans;
    a->nspans = b->nspans;
    memset(b, 0, sizeof *b);
}

/* The bounds of the search below: best, the largest n seen to fit (best_t its tokens, its
   sample in the caller's out), and over, the smallest n seen too long (0 for none). */
struct fit {
    size_t best, over;
    long best_t;
};

/* Builds n units into tmp: when they fit the budget they become the best (their sample moves
   to out), else n bounds the search from above. Returns their tokens. */
static long fit_try(const struct dsa_ruler_gen *g, dsa_ruler_build_fn build, long budget, size_t n,
                    struct fit *f, struct dsa_ruler_sample *tmp, struct dsa_ruler_sample *out)
{
    long t = build_count(g, build, n, tmp);
    if (t <= budget) {
        f->best = n;
        f->best_t = t;
        take(out, tmp);
    } else {
        f->over = n;
    }
    return t;
}

/*
 * The largest n <= cap with tokens(build(n)) <= budget, as far as a secant search finds it:
 * it stops when the gap left is below one unit on average or below 1/2000 of the budget
 * (512 tokens at 1m, where a build costs a tenth of a second). Tokens grow almost
 * linearly in n (the tokenizer's pieces do not cross unit boundaries), so a step from the
 * per-unit estimate lands within a unit or two; each step costs one build and one count,
 * never a count per unit (RULER re-tokenizes the whole prompt at every step of 500 words or
 * 25 lines). per: tokens per unit, 0 to measure it on a small build.
 */
int dsa_ruler_fit(const struct dsa_ruler_gen *g, dsa_ruler_build_fn build, long budget, size_t cap,
                  double per, struct dsa_ruler_sample *out)
{
    struct dsa_ruler_sample tmp = {0};
    long t0 = build_count(g, build, 0, out);
    if (t0 > budget) {
        dsa_ruler_clear(out);
        return DSA_RULER_ETOOLONG;
    }
    struct fit f = {0, 0, t0};
    if (per <= 0) {
        size_t probe = cap < 64 ? cap : 64;
        long tp = fit_try(g, build, budget, probe, &f, &tmp, out);
        per = probe && tp > t0 ? (double)(tp - t0) / (double)probe : 1.0;
    }
    for (int iter = 0; iter < 24; iter++) {
        double gap = (double)(budget - f.best_t);
        if (f.best == cap || gap < per || gap < (double)budget / 2000.0)
            break; /* the next unit would not fit (on average) */
        size_t step = gap / per < 1.0 ? 1 : (size_t)(gap / per);
        size_t n = f.best + step > cap ? cap : f.best + step;
        if (f.over && n >= f.over) {
            n = f.best + (f.over - f.best) / 2;
            if (n == f.best)
                break;
        }
        long t = fit_try(g, build, budget, n, &f, &tmp, out);
        if (t > t0)
            per = (double)(t - t0) / (double)n;
    }
    dsa_ruler_clear(&tmp);
    return 0;
}

static size_t unit_cap(const struct dsa_ruler_gen *g)
{
    if (g->c->kind == DSA_RULER_KIND_CWE) /* RULER: num_words <= len(WORDS) */
        return g->h->cwe.n;
    return (size_t)1 << 40;
}

int dsa_ruler_sample_make(const dsa_ruler_haystack *h, unsigned long seed, enum dsa_ruler_task t,
                          int length, int index, struct dsa_ruler_sample *out)
{
    memset(out, 0, sizeof *out);
    if ((unsigned)t >= DSA_RULER_NTASKS || length < 0 || length >= DSA_RULER_NLENGTHS ||
        index < 0 || !h)
        return DSA_RULER_EINVAL;
    struct dsa_ruler_gen g = {h, &dsa_ruler_tasks[t], t, length, index, seed, "", NULL, 0};
    snprintf(g.label, sizeof g.label, "ruler/%s/%s/%d", g.c->name, dsa_ruler_length_name(length),
             index);
    snprintf(out->id, sizeof out->id, "%s/%s/%04d", g.c->name, dsa_ruler_length_name(length),
             index);
    out->task = t;
    out->length = length;
    out->max_length = dsa_ruler_length_tokens(length);
    out->index = index;
    out->metric = dsa_ruler_task_metric(t);
    out->tokens_to_generate = g.c->tokens_to_generate;
    dsa_ruler_build_fn build = g.c->kind == DSA_RULER_KIND_NIAH ? dsa_ruler_build_niah
                               : g.c->kind == DSA_RULER_KIND_VT ? dsa_ruler_build_vt
                                                                : dsa_ruler_build_cwe;
    char *icl = NULL;
    if (g.c->kind == DSA_RULER_KIND_VT) {
        icl = dsa_ruler_vt_icl(h, seed, &g.icl_len);
        g.icl = icl;
    }
    /* essay words: the haystack's mean tokens per word, which the first step can trust */
    double per = g.c->kind == DSA_RULER_KIND_NIAH && g.c->hay == DSA_RULER_HAY_ESSAY
                     ? (double)h->tokens / (double)h->words.n
                     : 0.0;
    int rc =
        dsa_ruler_fit(&g, build, out->max_length - out->tokens_to_generate, unit_cap(&g), per, out);
    free(icl);
    if (rc) {
        dsa_ruler_sample_release(out);
        return rc;
    }
    out->tokens = dsa_tok_count(out->input, out->input_len);
    return 0;
}

void dsa_ruler_sample_release(struct dsa_ruler_sample *s)
{
    dsa_ruler_clear(s);
}

int dsa_ruler_samples(const struct dsa_ruler_opts *o, dsa_ruler_sample_fn cb, void *ud)
{
    if (!o || !o->haystack || o->per_length < 0)
        return DSA_RULER_EINVAL;
    for (int t = 0; t < DSA_RULER_NTASKS; t++) {
        if (!(o->tasks_mask & (1u << t)))
            continue;
        for (int k = 0; k < DSA_RULER_NLENGTHS; k++) {
            if (!(o->lengths_mask & (1u << k)))
                continue;
            for (int i = 0; i < o->per_length; i++) {
                if (o->interrupted && *o->interrupted)
                    return DSA_RULER_EINTR;
                struct dsa_ruler_sample s;
                int rc =
                    dsa_ruler_sample_make(o->haystack, o->seed, (enum dsa_ruler_task)t, k, i, &s);
                if (rc)
                    return rc;
                int stop = cb(&s, ud);
                dsa_ruler_sample_release(&s);
                if (stop)
                    return DSA_RULER_ESTOP;
            }
        }
    }
    return 0;
}

size_t dsa_ruler_needle_tokens(const struct dsa_ruler_sample *s, struct dsa_ruler_tok_span *out,
                               size_t cap)
{
    if (!cap || !s->nspans)
        return s->nspans;
    size_t ntok = dsa_tok_ends(s->input, s->input_len, NULL, 0);
    size_t *ends = dsa_xmalloc((ntok ? ntok : 1) * sizeof *ends);
    dsa_tok_ends(s->input, s->input_len, ends, ntok);
    /* spans are in input order, so one forward walk over the tokens serves them all */
    size_t t = 0;
    for (size_t i = 0; i < s->nspans && i < cap; i++) {
        const struct dsa_ruler_span *sp = &s->spans[i];
        while (t > 0 && ends[t - 1] > sp->lo)
            t--; /* spans of cwe can share a token with the previous one */
        while (t < ntok && ends[t] <= sp->lo)
            t++;
        size_t lo = t;
        while (t < ntok && (t == 0 ? 0 : ends[t - 1]) < sp->hi)
            t++;
        out[i] = (struct dsa_ruler_tok_span){lo, t, sp->kind};
    }
    free(ends);
    return s->nspans;
}
