/*
 * RULER's needle-in-a-haystack tasks (niah_single_*, niah_multikey_*, niah_multivalue,
 * niah_multiquery): keys and values, the needles, the three haystacks (noise lines, essay
 * sentences, distractor needles) and the template with its answer prefix
 * (docs/ruler.md "Needle in a haystack").
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdlib.h>
#include <string.h>

#include "evals/ruler_int.h"

/* RULER's niah template and answer prefix, plural form ({v}: the value type, {q}: the keys). */
static const char niah_task[] =
    "Some special magic {v} are hidden within the following text. Make sure to memorize it. I "
    "will quiz you about the {v} afterwards.\n{context}\nWhat are all the special magic {v} for "
    "{q} mentioned in the provided text?";
static const char niah_prefix[] =
    " The special magic {v} for {q} mentioned in the provided text are";

static const char *const val_plural[] = {"words", "numbers", "uuids"};
static const char *const val_single[] = {"word", "number", "uuid"};

#define MAX_NEEDLES 16

struct needles {
    char *key[MAX_NEEDLES];     /* num_k keys */
    char *text[MAX_NEEDLES];    /* num_k * num_v needle sentences, shuffled */
    size_t key_of[MAX_NEEDLES]; /* the key of each needle */
    char *value[MAX_NEEDLES];   /* values, in key-major order */
    size_t nk, nv, nneedle, query[MAX_NEEDLES], nq;
};

static bool key_taken(const struct needles *nd, size_t n, const char *k)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(nd->key[i], k))
            return true;
    return false;
}

/* RULER's generate_input_output: keys, then each key's values and needles, then a shuffle. */
static void make_needles(gsl_rng *rng, const struct dsa_ruler_gen *g, struct needles *nd)
{
    const struct dsa_ruler_task_cfg *c = g->c;
    nd->nk = (size_t)(c->a > c->c ? c->a : c->c);
    nd->nv = (size_t)c->b;
    nd->nq = (size_t)c->c;
    nd->nneedle = nd->nk * nd->nv;
    struct dsa_buf b = DSA_BUF_INIT;
    size_t order[MAX_NEEDLES];
    char *text[MAX_NEEDLES];
    for (size_t k = 0; k < nd->nk; k++) {
        do { /* distinct keys: a repeated key would make the answer ambiguous */
            dsa_buf_reset(&b);
            dsa_ruler_random_value(rng, g->h, c->key, &b);
        } while (key_taken(nd, k, b.data));
        nd->key[k] = dsa_xstrdup(b.data);
        for (size_t v = 0; v < nd->nv; v++) {
            dsa_buf_reset(&b);
            dsa_ruler_random_value(rng, g->h, c->value, &b);
            size_t i = k * nd->nv + v;
            nd->value[i] = dsa_xstrdup(b.data);
            dsa_buf_reset(&b);
            dsa_buf_addf(&b, DSA_RULER_NEEDLE, val_plural[c->value], nd->key[k], nd->value[i]);
            text[i] = dsa_xstrdup(b.data);
            order[i] = i;
        }
    }
    dsa_ruler_shuffle(rng, order, nd->nneedle);
    for (size_t i = 0; i < nd->nneedle; i++) {
        nd->text[i] = text[order[i]];
        nd->key_of[i] = order[i] / nd->nv;
    }
    dsa_buf_release(&b);
}

static void free_needles(struct needles *nd)
{
    for (size_t i = 0; i < nd->nk; i++)
        free(nd->key[i]);
    for (size_t i = 0; i < nd->nneedle; i++)
        free(nd->text[i]), free(nd->value[i]);
}

static bool queried(const struct needles *nd, size_t key)
{
    for (size_t i = 0; i < nd->nq; i++)
        if (nd->query[i] == key)
            return true;
    return false;
}

static void add_needle(struct dsa_ruler_sample *s, struct dsa_buf *out, const struct needles *nd,
                       size_t i)
{
    size_t lo = out->len;
    dsa_buf_adds(out, nd->text[i]);
    /* spans are recorded relative to the context; the template head is added later */
    dsa_ruler_add_span(s, lo, out->len,
                       queried(nd, nd->key_of[i]) ? DSA_RULER_SPAN_ANSWER
                                                  : DSA_RULER_SPAN_DISTRACTOR);
}

/* The essay text of n words: RULER's " ".join(haystack[:n]), the list repeated when n
   exceeds it (RULER stops at the end of its essays instead). */
static void essay_words(const dsa_ruler_haystack *h, size_t n, struct dsa_buf *out)
{
    size_t W = h->words.n;
    for (size_t done = 0; done < n;) {
        size_t take = n - done < W ? n - done : W;
        size_t end = take < W ? h->word_off[take] - 1 : h->len;
        if (done)
            dsa_buf_addch(out, ' ');
        dsa_buf_add(out, h->text, end);
        done += take;
    }
}

/* Sentence starts of a single-spaced text: a sentence ends at . ! or ? (and any closing
   quotes or brackets after it) followed by a space. A stand-in for NLTK's punkt. */
static size_t *sentence_starts(const char *t, size_t len, size_t *n)
{
    size_t cap = 64, k = 0;
    size_t *st = dsa_xmalloc(cap * sizeof *st);
    if (len)
        st[k++] = 0;
    for (size_t i = 0; i + 1 < len; i++) {
        if (t[i] != ' ' || i == 0)
            continue;
        size_t j = i;
        while (j > 0 && strchr("\"')]", t[j - 1]))
            j--;
        if (j > 0 && strchr(".!?", t[j - 1])) {
            if (k == cap)
                st = dsa_xrealloc(st, (cap *= 2) * sizeof *st);
            st[k++] = i + 1;
        }
    }
    *n = k;
    return st;
}

/* RULER's DEPTHS: np.round(np.linspace(0, 100, 40)) (no value is a tie at .5). */
static int depth_of(size_t i)
{
    return (int)(100.0 * (double)i / 39.0 + 0.5);
}

/* Essay context: needles at sentence boundaries at random depths, joined by spaces. */
static void essay_context(gsl_rng *rng, const struct dsa_ruler_gen *g, size_t n,
                          const struct needles *nd, struct dsa_ruler_sample *s, struct dsa_buf *out)
{
    struct dsa_buf text = DSA_BUF_INIT;
    essay_words(g->h, n, &text);
    size_t nsent, pick[MAX_NEEDLES], pos[MAX_NEEDLES + 2];
    size_t *st = sentence_starts(text.data, text.len, &nsent);
    dsa_ruler_sample_k(rng, 40, nd->nneedle, pick);
    pos[0] = 0;
    for (size_t i = 0; i < nd->nneedle; i++)
        pos[i + 1] = (size_t)((double)nsent * ((double)depth_of(pick[i]) / 100.0));
    qsort(pos + 1, nd->nneedle, sizeof *pos, dsa_ruler_cmp_size);
    pos[nd->nneedle + 1] = nsent;
    for (size_t i = 1; i <= nd->nneedle + 1; i++) {
        size_t a = pos[i - 1], b = pos[i];
        if (i > 1)
            dsa_buf_addch(out, ' ');
        if (a < b) /* sentences a..b-1, without the space after the last one */
            dsa_buf_add(out, text.data + st[a], (b < nsent ? st[b] - 1 : text.len) - st[a]);
        if (i - 1 < nd->nneedle) {
            dsa_buf_addch(out, ' ');
            add_needle(s, out, nd, i - 1);
        }
    }
    free(st);
    dsa_buf_release(&text);
}

/* Noise or distractor-needle context: n lines, the needles inserted at random lines (RULER
   inserts them in descending order of line, so the first needle lands last), "\n"-joined. */
static void line_context(gsl_rng *rng, const struct dsa_ruler_gen *g, size_t n,
                         const struct needles *nd, struct dsa_ruler_sample *s, struct dsa_buf *out)
{
    size_t k = nd->nneedle < n ? nd->nneedle : n, idx[MAX_NEEDLES];
    dsa_ruler_sample_k(rng, n, k, idx);
    qsort(idx, k, sizeof *idx, dsa_ruler_cmp_size);
    /* idx ascending; needle nneedle-1-j goes before line idx[j]; the rest (n < nneedle) last */
    size_t j = 0;
    bool first = true;
    for (size_t i = 0; i <= n; i++) {
        while (j < k && idx[j] == i) {
            if (!first)
                dsa_buf_addch(out, '\n');
            add_needle(s, out, nd, k - 1 - j);
            first = false;
            j++;
        }
        if (i == n)
            break;
        if (!first)
            dsa_buf_addch(out, '\n');
        first = false;
        if (g->c->hay == DSA_RULER_HAY_REPEAT) {
            dsa_buf_adds(out, DSA_RULER_NOISE);
            continue;
        }
        struct dsa_buf key = DSA_BUF_INIT, val = DSA_BUF_INIT;
        do {
            dsa_buf_reset(&key);
            dsa_ruler_random_value(rng, g->h, g->c->key, &key);
        } while (key_taken(nd, nd->nk, key.data));
        dsa_ruler_random_value(rng, g->h, g->c->value, &val);
        dsa_buf_addf(out, DSA_RULER_NEEDLE, val_plural[g->c->value], key.data, val.data);
        dsa_buf_release(&key);
        dsa_buf_release(&val);
    }
    for (size_t r = k; r < nd->nneedle; r++) { /* only when n < nneedle (the n = 0 probe) */
        if (!first)
            dsa_buf_addch(out, '\n');
        add_needle(s, out, nd, r);
        first = false;
    }
}

/* Python's str.format on RULER's template pieces: {v}, {q}. */
static void format(struct dsa_buf *out, const char *tmpl, const char *v, const char *q)
{
    struct dsa_buf b = DSA_BUF_INIT;
    dsa_buf_adds(&b, tmpl);
    dsa_ruler_replace(&b, "{v}", v);
    dsa_ruler_replace(&b, "{q}", q);
    dsa_buf_add(out, b.data, b.len);
    dsa_buf_release(&b);
}

/* RULER's singular form when one value is asked for: its template.replace chain. */
static void singular(struct dsa_buf *t)
{
    dsa_ruler_replace(t, "Some", "A");
    dsa_ruler_replace(t, "are all", "is");
    dsa_ruler_replace(t, "are", "is");
    dsa_ruler_replace(t, "answers", "answer");
}

static void query_text(const struct needles *nd, struct dsa_buf *q)
{
    for (size_t i = 0; i < nd->nq; i++) { /* "a", or "a, b, c, and d" */
        if (i)
            dsa_buf_adds(q, i + 1 == nd->nq ? ", and " : ", ");
        dsa_buf_adds(q, nd->key[nd->query[i]]);
    }
}

void dsa_ruler_build_niah(const struct dsa_ruler_gen *g, size_t n, struct dsa_ruler_sample *s)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_taus2);
    dsa_ruler_seed(rng, g->seed, g->label);
    struct needles nd = {0};
    make_needles(rng, g, &nd);
    /* the asked keys are drawn before the context (RULER draws them after it), so that the
       spans know their kind when they are recorded */
    dsa_ruler_sample_k(rng, nd.nk, nd.nq, nd.query);
    struct dsa_buf ctx = DSA_BUF_INIT;
    if (g->c->hay == DSA_RULER_HAY_ESSAY)
        essay_context(rng, g, n, &nd, s, &ctx);
    else
        line_context(rng, g, n, &nd, s, &ctx);
    for (size_t i = 0; i < nd.nq; i++) /* the answers: each asked key's values, in order */
        for (size_t v = 0; v < nd.nv; v++)
            dsa_ruler_add_output(s, nd.value[nd.query[i] * nd.nv + v]);
    struct dsa_buf q = DSA_BUF_INIT, task = DSA_BUF_INIT, prefix = DSA_BUF_INIT;
    query_text(&nd, &q);
    dsa_buf_adds(&task, niah_task);
    dsa_buf_adds(&prefix, niah_prefix);
    const char *v = val_plural[g->c->value];
    if (nd.nq * nd.nv == 1) {
        singular(&task);
        singular(&prefix);
        v = val_single[g->c->value];
    }
    const char *cut = strstr(task.data, "{context}");
    struct dsa_buf in = DSA_BUF_INIT, head = DSA_BUF_INIT;
    dsa_buf_add(&head, task.data, (size_t)(cut - task.data));
    format(&in, head.data, v, q.data);
    size_t base = in.len;
    dsa_buf_add(&in, ctx.data, ctx.len);
    s->question = in.len;
    format(&in, cut + strlen("{context}"), v, q.data);
    s->answer_prefix = in.len;
    format(&in, prefix.data, v, q.data);
    for (size_t i = 0; i < s->nspans; i++) {
        s->spans[i].lo += base;
        s->spans[i].hi += base;
    }
    s->input = dsa_buf_detach(&in, &s->input_len);

    dsa_buf_release(&head);
    dsa_buf_release(&q);
    dsa_buf_release(&task);
    dsa_buf_release(&prefix);
    dsa_buf_release(&ctx);
    free_needles(&nd);
    gsl_rng_free(rng);
}
