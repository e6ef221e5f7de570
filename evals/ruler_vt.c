/*
 * RULER's variable tracking (vt): chains of "VAR X = VAR Y" assignments hidden in noise
 * lines, a few-shot example before the question (docs/ruler.md "Variable tracking").
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdlib.h>
#include <string.h>

#include "datasets/tokenize.h"
#include "evals/ruler_int.h"

static const char vt_task[] =
    "Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n";
static const char vt_question[] =
    "\nQuestion: Find all variables that are assigned the value %s in the text above.";
/* "assgined" is RULER's spelling */
static const char vt_prefix[] = " Answer: According to the chain(s) of variable assignment in "
                                "the text above, %d variables are assgined the value %s, they "
                                "are: ";

#define MAX_VARS 64

struct chains {
    char var[MAX_VARS][8]; /* chain c, hop j: var[c * (hops + 1) + j] */
    char stmt[MAX_VARS][32];
    char value[8];
    size_t nchains, hops;
};

static void random_upper(gsl_rng *rng, char *out, size_t k)
{
    for (size_t i = 0; i < k; i++)
        out[i] = (char)('A' + dsa_ruler_uniform(rng, 26));
    out[k] = '\0';
}

/* RULER's generate_chains: distinct names of k letters (5; 3 in the few-shot example), the
   first of each chain assigned a number in [10000, 99999). */
static void make_chains(gsl_rng *rng, size_t nchains, size_t hops, size_t k, struct chains *ch)
{
    ch->nchains = nchains;
    ch->hops = hops;
    size_t nv = nchains * (hops + 1);
    for (size_t i = 0; i < nv; i++) {
        bool dup;
        do {
            random_upper(rng, ch->var[i], k);
            dup = false;
            for (size_t j = 0; j < i && !dup; j++)
                dup = !strcmp(ch->var[i], ch->var[j]);
        } while (dup);
    }
    for (size_t c = 0; c < nchains; c++) {
        char *v = ch->var[c * (hops + 1)];
        size_t num = 10000 + dsa_ruler_uniform(rng, 89999);
        /* %.7s: a name is at most 7 letters (var[][8]); the bound also lets the compiler see
           that a statement fits stmt[][32] */
        snprintf(ch->stmt[c * (hops + 1)], sizeof ch->stmt[0], "VAR %.7s = %zu", v, num);
        if (c == 0)
            snprintf(ch->value, sizeof ch->value, "%zu", num);
        for (size_t j = 0; j < hops; j++) /* the trailing space is RULER's */
            snprintf(ch->stmt[c * (hops + 1) + j + 1], sizeof ch->stmt[0], "VAR %.7s = VAR %.7s ",
                     ch->var[c * (hops + 1) + j + 1], ch->var[c * (hops + 1) + j]);
    }
}

/* The question part: n noise lines with each chain's statements at random lines, " "-joined
   (RULER then replaces ". \n" by ".\n", which these pieces never contain), the template and
   the answer prefix. Spans: the first chain's statements, relative to out's start. */
static void vt_text(gsl_rng *rng, size_t n, const struct chains *ch, struct dsa_ruler_sample *s,
                    struct dsa_buf *out, size_t *question_at, size_t *prefix_at)
{
    size_t base = out->len, per = ch->hops + 1;
    dsa_buf_adds(out, vt_task);
    /* the lines as a list of pieces: NULL for a noise line, else a statement */
    size_t total = n + ch->nchains * per, len = n;
    const char **piece = dsa_xcalloc(total ? total : 1, sizeof *piece);
    size_t pos[MAX_VARS];
    for (size_t c = 0; c < ch->nchains; c++) {
        /* RULER: positions = sorted(random.sample(range(len(sentences)), len(chain))), then
           chain[j] inserted at positions[j] + j; with fewer lines than hops, at the end */
        size_t k = per <= len ? per : 0;
        dsa_ruler_sample_k(rng, len, k, pos);
        qsort(pos, k, sizeof *pos, dsa_ruler_cmp_size);
        for (size_t j = 0; j < per; j++) {
            size_t at = k ? pos[j] + j : len;
            memmove(piece + at + 1, piece + at, (len - at) * sizeof *piece);
            piece[at] = ch->stmt[c * per + j];
            len++;
        }
    }
    for (size_t i = 0; i < len; i++) {
        if (i)
            dsa_buf_addch(out, ' ');
        size_t lo = out->len;
        if (!piece[i]) {
            dsa_buf_adds(out, DSA_RULER_NOISE "\n");
            continue;
        }
        dsa_buf_adds(out, piece[i]);
        for (size_t j = 0; j < per && s; j++)
            if (piece[i] == ch->stmt[j])
                dsa_ruler_add_span(s, lo - base, out->len - base, DSA_RULER_SPAN_ANSWER);
    }
    free(piece);
    *question_at = out->len;
    dsa_buf_addf(out, vt_question, ch->value);
    *prefix_at = out->len;
    dsa_buf_addf(out, vt_prefix, (int)per, ch->value);
}

/* The few-shot example alone (no example before it), for the fitter. */
static void build_icl(const struct dsa_ruler_gen *g, size_t n, struct dsa_ruler_sample *s)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_taus2);
    dsa_ruler_seed(rng, g->seed, g->label);
    struct chains ch;
    make_chains(rng, 1, 4, 3, &ch); /* RULER: k = 3, hops min(10, num_hops) */
    struct dsa_buf out = DSA_BUF_INIT;
    vt_text(rng, n, &ch, NULL, &out, &s->question, &s->answer_prefix);
    for (size_t j = 0; j <= ch.hops; j++)
        dsa_ruler_add_output(s, ch.var[j]);
    s->input = dsa_buf_detach(&out, &s->input_len);
    gsl_rng_free(rng);
}

/* RULER makes one example of at most 500 tokens (30 to generate) and puts it, with its
   answer, before every sample: input + " " + " ".join(outputs) + "\n\n". */
char *dsa_ruler_vt_icl(const dsa_ruler_haystack *h, unsigned long seed, size_t *len)
{
    struct dsa_ruler_gen g = {
        h, &dsa_ruler_tasks[DSA_RULER_VT], DSA_RULER_VT, 0, 0, seed, "ruler/vt/icl", NULL, 0};
    struct dsa_ruler_sample s = {0};
    if (dsa_ruler_fit(&g, build_icl, 500 - 30, (size_t)1 << 20, 0.0, &s)) {
        dsa_ruler_clear(&s);
        *len = 0;
        return dsa_xstrdup("");
    }
    struct dsa_buf b = DSA_BUF_INIT;
    dsa_buf_add(&b, s.input, s.input_len);
    for (size_t i = 0; i < s.noutputs; i++)
        dsa_buf_addf(&b, " %s", s.outputs[i]);
    dsa_buf_adds(&b, "\n\n");
    dsa_ruler_clear(&s);
    return dsa_buf_detach(&b, len);
}

/* RULER's randomize_icl: each answer name of the example, in order, replaced everywhere in
   the example by fresh capitals of the same length (Python's str.replace). */
static void randomize_icl(gsl_rng *rng, const char *icl, struct dsa_buf *out)
{
    dsa_buf_adds(out, icl);
    const char *cut = strstr(icl, "they are: ");
    if (!cut)
        return;
    char names[MAX_VARS][8];
    size_t n = 0;
    for (const char *p = cut + strlen("they are: "); *p && n < MAX_VARS;) {
        while (*p == ' ' || *p == '\n')
            p++;
        size_t l = strcspn(p, " \n");
        if (!l || l >= sizeof names[0])
            break;
        memcpy(names[n], p, l);
        names[n++][l] = '\0';
        p += l;
    }
    for (size_t i = 0; i < n; i++) {
        char fresh[8];
        random_upper(rng, fresh, strlen(names[i]));
        dsa_ruler_replace(out, names[i], fresh);
    }
}

void dsa_ruler_build_vt(const struct dsa_ruler_gen *g, size_t n, struct dsa_ruler_sample *s)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_taus2);
    dsa_ruler_seed(rng, g->seed, g->label);
    struct chains ch;
    make_chains(rng, (size_t)g->c->a, (size_t)g->c->b, 5, &ch);
    struct dsa_buf out = DSA_BUF_INIT;
    if (g->icl) { /* the example, then "\n\n", then the task (RULER's insertion at the cut) */
        randomize_icl(rng, g->icl, &out);
        dsa_buf_adds(&out, "\n\n");
    }
    size_t base = out.len;
    vt_text(rng, n, &ch, s, &out, &s->question, &s->answer_prefix);
    for (size_t i = 0; i < s->nspans; i++) {
        s->spans[i].lo += base;
        s->spans[i].hi += base;
    }
    for (size_t j = 0; j <= ch.hops; j++)
        dsa_ruler_add_output(s, ch.var[j]);
    s->input = dsa_buf_detach(&out, &s->input_len);
    gsl_rng_free(rng);
}
