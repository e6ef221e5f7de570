/*
 * RULER's common words extraction (cwe): a numbered list where num_cw words appear freq_cw
 * times and the others freq_ucw times, after one worked example (docs/ruler.md "Common
 * words extraction").
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdlib.h>
#include <string.h>

#include "evals/ruler_int.h"

static const char cwe_task[] =
    "Below is a numbered list of words. In these words, some appear more often than others. "
    "Memorize the ones that appear most often.\n";
static const char cwe_question[] = "\nQuestion: What are the 10 most common words in the above "
                                   "list?";
static const char cwe_prefix[] = " Answer: The top 10 words that appear most often in the list "
                                 "are:";

/* RULER's get_example: num_words distinct words, the first num_cw of them common; the list of
   common * freq_cw + uncommon * freq_ucw, shuffled, written "1. w 2. w ...". Spans (when s is
   given): each entry of a common word, in bytes of out. */
static void cwe_list(gsl_rng *rng, const dsa_ruler_haystack *h, size_t num_words, size_t freq_cw,
                     size_t freq_ucw, size_t num_cw, struct dsa_buf *out, size_t *common,
                     struct dsa_ruler_sample *s)
{
    size_t *pick = dsa_xmalloc((num_words ? num_words : 1) * sizeof *pick);
    dsa_ruler_sample_k(rng, h->cwe.n, num_words, pick);
    size_t ncw = num_cw < num_words ? num_cw : num_words;
    size_t total = ncw * freq_cw + (num_words - ncw) * freq_ucw, k = 0;
    size_t *list = dsa_xmalloc((total ? total : 1) * sizeof *list); /* index into pick */
    for (size_t r = 0; r < freq_cw; r++)
        for (size_t i = 0; i < ncw; i++)
            list[k++] = i;
    for (size_t r = 0; r < freq_ucw; r++)
        for (size_t i = ncw; i < num_words; i++)
            list[k++] = i;
    dsa_ruler_shuffle(rng, list, total);
    for (size_t i = 0; i < total; i++) {
        if (i)
            dsa_buf_addch(out, ' ');
        size_t lo = out->len;
        dsa_buf_addf(out, "%zu. %s", i + 1, h->cwe.w[pick[list[i]]]);
        if (s && list[i] < ncw)
            dsa_ruler_add_span(s, lo, out->len, DSA_RULER_SPAN_ANSWER);
    }
    for (size_t i = 0; i < ncw; i++)
        common[i] = pick[i];
    free(list);
    free(pick);
}

void dsa_ruler_build_cwe(const struct dsa_ruler_gen *g, size_t n, struct dsa_ruler_sample *s)
{
    const dsa_ruler_haystack *h = g->h;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_taus2);
    dsa_ruler_seed(rng, g->seed, g->label);
    size_t num_cw = (size_t)g->c->c, common[64], ex_common[64];
    struct dsa_buf out = DSA_BUF_INIT;
    /* the example: RULER's get_example(40, 10, 3, num_cw) for lengths >= 4096, answered with
       the answer written right after the prefix ("are:1. w ...", as RULER joins it) */
    dsa_buf_adds(&out, cwe_task);
    cwe_list(rng, h, 40, 10, 3, num_cw, &out, ex_common, NULL);
    dsa_buf_addf(&out, "%s%s", cwe_question, cwe_prefix);
    for (size_t i = 0; i < num_cw; i++)
        dsa_buf_addf(&out, "%s%zu. %s", i ? " " : "", i + 1, h->cwe.w[ex_common[i]]);
    dsa_buf_addch(&out, '\n');
    /* the task */
    dsa_buf_adds(&out, cwe_task);
    size_t nw = n < num_cw ? num_cw : n;
    cwe_list(rng, h, nw, (size_t)g->c->a, (size_t)g->c->b, num_cw, &out, common, s);
    s->question = out.len;
    dsa_buf_adds(&out, cwe_question);
    s->answer_prefix = out.len;
    dsa_buf_adds(&out, cwe_prefix);
    for (size_t i = 0; i < num_cw; i++)
        dsa_ruler_add_output(s, h->cwe.w[common[i]]);
    s->input = dsa_buf_detach(&out, &s->input_len);
    gsl_rng_free(rng);
}
