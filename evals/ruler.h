/*
 * The RULER eval's library (docs/ruler.md): NVIDIA RULER's synthetic tasks (needle in a
 * haystack in eight variants, variable tracking, common words extraction) generated
 * deterministically from a seed at lengths 4k..1m, sized by the built-in tokenizer
 * (datasets/tokenize.h), and RULER's string_match_all / string_match_part scoring. No
 * command line, no store, no printing: the run loop's hooks call these functions.
 *
 * Determinism: sample (task, length, index) draws from its own GSL taus2 generator seeded
 * with splitmix64(seed ^ fnv1a64("ruler/<task>/<length>/<index>")), so a sample does not depend
 * on which other tasks, lengths or indices are generated, nor on the order.
 *
 * Ownership: a dsa_ruler_haystack owns its text (the word lists are made once per process,
 * read-only, and shared); the opts borrow it. A sample passed to a dsa_ruler_sample_fn is
 * valid only during the call (copy what you keep); one filled by dsa_ruler_sample_make() is
 * the caller's, freed with dsa_ruler_sample_release().
 * Scoring borrows its inputs. Errors are returned as codes (enum dsa_ruler_err); nothing here
 * prints or exits.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_EVALS_RULER_H
#define DSA_EVALS_RULER_H

#include <stddef.h>
#include <stdint.h>

enum dsa_ruler_task {
    DSA_RULER_NIAH_SINGLE_1,
    DSA_RULER_NIAH_SINGLE_2,
    DSA_RULER_NIAH_SINGLE_3,
    DSA_RULER_NIAH_MULTIKEY_1,
    DSA_RULER_NIAH_MULTIKEY_2,
    DSA_RULER_NIAH_MULTIKEY_3,
    DSA_RULER_NIAH_MULTIVALUE,
    DSA_RULER_NIAH_MULTIQUERY,
    DSA_RULER_VT,
    DSA_RULER_CWE,
    DSA_RULER_NTASKS
};

enum dsa_ruler_metric {
    DSA_RULER_MATCH_ALL,  /* string_match_all: mean over references of ref in pred */
    DSA_RULER_MATCH_PART, /* string_match_part: max over references */
};

enum dsa_ruler_err {
    DSA_RULER_OK = 0,
    DSA_RULER_EINVAL = -1,    /* bad option or list (unknown task or length name) */
    DSA_RULER_EIO = -2,       /* the haystack file cannot be read (errno is kept) */
    DSA_RULER_EHAYSTACK = -3, /* the haystack file is empty or not UTF-8 text */
    DSA_RULER_ETOOLONG = -4,  /* the prompt without haystack does not fit the length */
    DSA_RULER_EINTR = 1,      /* *interrupted was set between samples */
    DSA_RULER_ESTOP = 2,      /* the callback returned nonzero */
};

/* What a code means, lowercase and without a subject, for the command's one error line
   ("dsa-eval: cannot use haystack 'F': <this>"); "" for DSA_RULER_OK. */
const char *dsa_ruler_strerror(int code);

/* The length bins: 4k 8k 16k 32k 64k 128k 256k 512k 1m = 4096 << k tokens, k = 0..8. */
#define DSA_RULER_NLENGTHS 9

const char *dsa_ruler_task_name(enum dsa_ruler_task t); /* "niah_single_1", ..., "cwe" */
const char *dsa_ruler_length_name(int k);               /* "4k", ..., "1m" */
long dsa_ruler_length_tokens(int k);                    /* 4096 << k */
enum dsa_ruler_metric dsa_ruler_task_metric(enum dsa_ruler_task t);
int dsa_ruler_tokens_to_generate(enum dsa_ruler_task t); /* niah 128, vt 30, cwe 120 */

/* Parse "niah_single_1,vt" (or "all") into a bit mask of tasks, and "4k,8k,1m" (or "all")
   into a bit mask of length bins. Return 0, or DSA_RULER_EINVAL with *bad (may be NULL)
   pointing at the first unknown item inside list. */
int dsa_ruler_parse_tasks(const char *list, unsigned *mask, const char **bad);
int dsa_ruler_parse_lengths(const char *list, unsigned *mask, const char **bad);

/* The essay haystack and the word lists (keys, cwe words). */
typedef struct dsa_ruler_haystack dsa_ruler_haystack;

/* path NULL: the shipped public-domain substitute (datasets/ruler/README.md), embedded in
   the binary. Otherwise a UTF-8 text file, or RULER's PaulGrahamEssays.json (a JSON array
   of objects with a "text" member, whose texts are joined by spaces). *err (may be NULL)
   gets the code when NULL is returned. */
dsa_ruler_haystack *dsa_ruler_haystack_new(const char *path, int *err);
void dsa_ruler_haystack_free(dsa_ruler_haystack **h);
/* For the run header: the file name ("kjv-genesis-2kings.txt" or the path's base name),
   the sha256 of its bytes (hex), and the number of haystack words. */
const char *dsa_ruler_haystack_name(const dsa_ruler_haystack *h);
const char *dsa_ruler_haystack_sha256(const dsa_ruler_haystack *h);
size_t dsa_ruler_haystack_words(const dsa_ruler_haystack *h);

struct dsa_ruler_opts {
    unsigned tasks_mask;   /* bit t = enum dsa_ruler_task t */
    unsigned lengths_mask; /* bit k = length bin k */
    int per_length;        /* samples per (task, length) */
    unsigned long seed;
    const dsa_ruler_haystack *haystack; /* borrowed; required */
    volatile int *interrupted;          /* polled between samples; may be NULL */
};

/* An answer-bearing (or distracting) span of the prompt, in bytes of input. */
enum dsa_ruler_span_kind {
    DSA_RULER_SPAN_ANSWER,     /* a needle that holds an expected output */
    DSA_RULER_SPAN_DISTRACTOR, /* a real needle of a key that is not asked for */
};
struct dsa_ruler_span {
    size_t lo, hi; /* [lo, hi) bytes of input */
    enum dsa_ruler_span_kind kind;
};

struct dsa_ruler_sample {
    char id[40]; /* "niah_single_1/8k/0003": task/length/index, stable */
    enum dsa_ruler_task task;
    int length;           /* bin k */
    long max_length;      /* 4096 << k */
    int index;            /* 0-based within (task, length) */
    char *input;          /* the whole prompt: task template + answer prefix */
    size_t input_len;     /* bytes */
    size_t answer_prefix; /* byte offset in input where the answer prefix starts */
    size_t question;      /* byte offset in input where the question after the context starts
                             (it runs to the end of input, answer prefix included) */
    char **outputs;       /* the expected outputs (references) */
    size_t noutputs;
    enum dsa_ruler_metric metric;
    size_t tokens;          /* dsa_tok_count(input); tokens + tokens_to_generate <= max_length (cwe
                               from 256k on stays below it: its vocabulary runs out, as in RULER) */
    int tokens_to_generate; /* RULER's generation budget of the task */
    struct dsa_ruler_span *spans; /* in input order */
    size_t nspans;
};

/* Called once per sample: tasks ascending, then lengths ascending, then index. A nonzero
   return stops the generation (dsa_ruler_samples returns DSA_RULER_ESTOP). */
typedef int (*dsa_ruler_sample_fn)(const struct dsa_ruler_sample *s, void *ud);

/* Generates every sample the opts select. Returns 0, an enum dsa_ruler_err code, or
   DSA_RULER_EINTR / DSA_RULER_ESTOP. */
int dsa_ruler_samples(const struct dsa_ruler_opts *o, dsa_ruler_sample_fn cb, void *ud);

/* The (task, length bin, index) of a sample id "niah_single_1/8k/0003". Returns 0 or
   DSA_RULER_EINVAL. */
int dsa_ruler_parse_id(const char *id, enum dsa_ruler_task *t, int *length, int *index);

/* One sample by (task, length bin, index), the same bytes dsa_ruler_samples gives it. */
int dsa_ruler_sample_make(const dsa_ruler_haystack *h, unsigned long seed, enum dsa_ruler_task t,
                          int length, int index, struct dsa_ruler_sample *out);
void dsa_ruler_sample_release(struct dsa_ruler_sample *s);

/* RULER's post-processing of a prediction: strip (Python's str.strip() whitespace), every
   byte 0x00..0x1f becomes '\n', strip again. Returns a malloc'd string (caller frees) and
   its length in *outlen (may be NULL). */
char *dsa_ruler_postprocess(const char *pred, size_t n, size_t *outlen);

/* The score of one prediction in [0, 1]: the prediction is post-processed, then the
   prediction and each reference are lowercased with full Unicode case mapping (as Python's
   str.lower(); ICU, root locale) and each reference counts 1 if it is a substring.
   MATCH_ALL: the mean over references; MATCH_PART: the maximum. 0 references: 0. Invalid
   UTF-8 reads as U+FFFD. */
double dsa_ruler_score(enum dsa_ruler_metric m, const char *pred, size_t n, const char *const *refs,
                       size_t nrefs);

/* The token positions of the sample's spans in the tokenized input (datasets/tokenize.h):
   writes up to cap [lo, hi) token ranges (every token that overlaps the span) to out, in
   span order, and returns the number of spans (call with cap 0 to size out). For in-process
   needle retention and recall@k. */
struct dsa_ruler_tok_span {
    size_t lo, hi;
    enum dsa_ruler_span_kind kind;
};
size_t dsa_ruler_needle_tokens(const struct dsa_ruler_sample *s, struct dsa_ruler_tok_span *out,
                               size_t cap);

#endif
