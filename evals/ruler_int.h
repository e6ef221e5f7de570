/*
 * Internals shared by the RULER eval's files (evals/ruler_*.c): the task table, the haystack
 * object and the random draws. Not for callers outside the eval; they use evals/ruler.h.
 * Ownership: as in ruler.h; the word lists are made once per process and never freed.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_EVALS_RULER_INT_H
#define DSA_EVALS_RULER_INT_H

#include <gsl/gsl_rng.h>
#include <stdbool.h>
#include <stddef.h>

#include "evals/ruler.h"
#include "util/buf.h"

enum dsa_ruler_kind { DSA_RULER_KIND_NIAH, DSA_RULER_KIND_VT, DSA_RULER_KIND_CWE };
enum dsa_ruler_hay { DSA_RULER_HAY_REPEAT, DSA_RULER_HAY_ESSAY, DSA_RULER_HAY_NEEDLE };
enum dsa_ruler_val { DSA_RULER_VAL_WORDS, DSA_RULER_VAL_NUMBERS, DSA_RULER_VAL_UUIDS };

/* One row of RULER's task configuration. The three numbers a, b, c mean
   niah: num_needle_k, num_needle_v, num_needle_q; vt: num_chains, num_hops, -;
   cwe: freq_cw, freq_ucw, num_cw. */
struct dsa_ruler_task_cfg {
    const char *name;
    enum dsa_ruler_kind kind;
    enum dsa_ruler_hay hay;
    enum dsa_ruler_val key, value;
    int a, b, c;
    int tokens_to_generate;
};
extern const struct dsa_ruler_task_cfg dsa_ruler_tasks[DSA_RULER_NTASKS];

/* A list of words: pointers into storage the haystack owns. */
struct dsa_ruler_words {
    const char **w;
    size_t n;
};

/* The word lists for keys (adjective-noun) and for cwe (the union, sorted). */
struct dsa_ruler_lists {
    struct dsa_ruler_words nouns, adjs, verbs, cwe;
};

struct dsa_ruler_haystack {
    char *text; /* the essay haystack, whitespace runs collapsed to one space, trimmed */
    size_t len;
    struct dsa_ruler_words words; /* text split at spaces (RULER's haystack list) */
    size_t *word_off;             /* byte offset of word i in text */
    size_t tokens;                /* tokens of text */
    char name[256];
    char sha256[65];
    /* views of the process-wide word lists (struct dsa_ruler_lists), not owned */
    struct dsa_ruler_words nouns, adjs, verbs, cwe;
};

/* The RULER needle sentence, with the plural value type ("numbers"). */
#define DSA_RULER_NEEDLE "One of the special magic %s for %s is: %s."
/* The noise haystack (niah_single_1, vt): one fixed line. */
#define DSA_RULER_NOISE                                                                            \
    "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."

/* Bytes of the Python whitespace character (str.isspace()) at s[0..n), or 0
   (evals/ruler_haystack.c). */
size_t dsa_ruler_space_len(const unsigned char *s, size_t n);

/* One sample under construction: what a builder needs besides the haystack unit count. */
struct dsa_ruler_gen {
    const dsa_ruler_haystack *h;
    const struct dsa_ruler_task_cfg *c;
    enum dsa_ruler_task task;
    int length, index;
    unsigned long seed;
    char label[64];  /* "ruler/<task>/<length>/<index>": the generator's seed label */
    const char *icl; /* vt: the few-shot example, randomized per sample by the builder */
    size_t icl_len;
};

/* A builder fills s->input, input_len, answer_prefix, outputs and spans for n haystack
   units (essay words, noise lines, distractor needles, cwe words), drawing everything from
   a generator seeded afresh from g->label, so that the same n gives the same bytes. */
typedef void (*dsa_ruler_build_fn)(const struct dsa_ruler_gen *g, size_t n,
                                   struct dsa_ruler_sample *s);
void dsa_ruler_build_niah(const struct dsa_ruler_gen *g, size_t n, struct dsa_ruler_sample *s);
void dsa_ruler_build_vt(const struct dsa_ruler_gen *g, size_t n, struct dsa_ruler_sample *s);
void dsa_ruler_build_cwe(const struct dsa_ruler_gen *g, size_t n, struct dsa_ruler_sample *s);
/* vt's few-shot example (RULER: one generated at max length 500), caller frees. */
char *dsa_ruler_vt_icl(const dsa_ruler_haystack *h, unsigned long seed, size_t *len);

/* Sample parts (evals/ruler_gen.c). */
void dsa_ruler_add_span(struct dsa_ruler_sample *s, size_t lo, size_t hi,
                        enum dsa_ruler_span_kind kind);
void dsa_ruler_add_output(struct dsa_ruler_sample *s, const char *text);
void dsa_ruler_clear(struct dsa_ruler_sample *s); /* frees the built parts, keeps id etc. */
/* The largest n (up to cap) whose sample fits budget tokens (per: tokens per unit if known,
   else 0); fills s with it. */
int dsa_ruler_fit(const struct dsa_ruler_gen *g, dsa_ruler_build_fn build, long budget, size_t cap,
                  double per, struct dsa_ruler_sample *s);

/* Random draws (evals/ruler_gen.c). */
size_t dsa_ruler_uniform(gsl_rng *rng, size_t n); /* uniform in [0, n) */
void dsa_ruler_random_value(gsl_rng *rng, const dsa_ruler_haystack *h, enum dsa_ruler_val type,
                            struct dsa_buf *out);
/* k distinct indices of [0, n), in draw order (Python's random.sample shape). */
void dsa_ruler_sample_k(gsl_rng *rng, size_t n, size_t k, size_t *out);
void dsa_ruler_shuffle(gsl_rng *rng, size_t *a, size_t n);
int dsa_ruler_cmp_size(const void *a, const void *b); /* qsort of size_t, ascending */

/* The sample's generator: seeded from (seed, task, length, index) as ruler.h says. */
void dsa_ruler_seed(gsl_rng *rng, unsigned long seed, const char *label);

/* Text helpers (evals/ruler_gen.c): replace every occurrence of from in b by to. */
void dsa_ruler_replace(struct dsa_buf *b, const char *from, const char *to);

#endif
