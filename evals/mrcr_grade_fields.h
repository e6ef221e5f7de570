/*
 * The members of one `grade mrcr` input line that grading needs (docs/grade.md "Input keys"),
 * read by one of two readers that fill the same struct:
 *  - dsa_mrcr_fields_stream(): one pass of yajl's event parser over the line, building no
 *    tree; strings that grading does not use (the long "input" context, unknown keys) are
 *    lexed and dropped. This is the path every well-formed line takes.
 *  - dsa_mrcr_fields_tree(): jansson's json_loadb, then lookups. Used only when the stream
 *    reader declines a line (not valid JSON, not an object, a duplicate key, a number jansson
 *    cannot hold, invalid UTF-8, nesting too deep), so that such a line is refused with
 *    jansson's message, the documented one, or read as jansson reads it.
 * Both readers accept exactly the same lines and produce the same fields (the unit tests and
 * the fuzz target compare them). Internal to evals/mrcr_grade_line.c and its tests.
 * Ownership: a dsa_mrcr_fields owns its arena and its id values; release it with
 * dsa_mrcr_fields_release().
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_EVALS_MRCR_GRADE_FIELDS_H
#define DSA_EVALS_MRCR_GRADE_FIELDS_H

#include <stddef.h>

#include <jansson.h>

#include "util/buf.h"

/* The top-level keys read, in docs/grade.md's order of preference within each row. */
enum dsa_mrcr_field {
    DSA_MF_RESPONSE,
    DSA_MF_MODEL_RESPONSE,
    DSA_MF_ANSWER,
    DSA_MF_GROUND_TRUTH,
    DSA_MF_PREFIX,
    DSA_MF_RANDOM_STRING,
    DSA_MF_ERROR,
    DSA_MF_INPUT,
    DSA_MF_ID, /* the identity keys, copied to the output: DSA_MF_ID .. DSA_MF_N_NEEDLES */
    DSA_MF_DATASET_INDEX,
    DSA_MF_NEEDLE_COUNT,
    DSA_MF_N_NEEDLES,
    DSA_MF_COUNT
};

extern const char *const dsa_mrcr_field_names[DSA_MF_COUNT];

enum dsa_mrcr_ftype { DSA_MT_ABSENT = 0, DSA_MT_STRING, DSA_MT_NULL, DSA_MT_OTHER };

struct dsa_mrcr_fvalue {
    enum dsa_mrcr_ftype type;
    size_t off, len; /* DSA_MT_STRING of a text field or the question: bytes in the arena */
    json_t *value;   /* identity fields only: the value as jansson holds it (owned) */
};

struct dsa_mrcr_fields {
    struct dsa_mrcr_fvalue f[DSA_MF_COUNT];
    /* the question inside "input": the string itself, its "content", or the "content" (or
       the string) of its last element; DSA_MT_STRING or DSA_MT_ABSENT */
    struct dsa_mrcr_fvalue question;
    struct dsa_buf arena; /* decoded UTF-8 of the strings above, back to back */
    char error[200];      /* the tree reader's refusal (jansson's text), else "" */
};

void dsa_mrcr_fields_init(struct dsa_mrcr_fields *mf);
void dsa_mrcr_fields_release(struct dsa_mrcr_fields *mf);

/* The bytes of a DSA_MT_STRING value (NUL-terminated; may hold NULs). */
static inline const char *dsa_mrcr_fields_str(const struct dsa_mrcr_fields *mf,
                                              const struct dsa_mrcr_fvalue *v)
{
    return mf->arena.data + v->off;
}

/* Returns 0 with *mf filled, or -1: the line needs the tree reader (nothing is printed).
   The line must hold no lone surrogate escape (dsa_mrcr_grade_line() rewrites them first):
   yajl would decode one as '?'. */
int dsa_mrcr_fields_stream(const char *text, size_t len, struct dsa_mrcr_fields *mf);

/* Returns 0 with *mf filled, -1 when the line is not valid JSON (mf->error says why, as
   jansson words it), -2 when it is JSON but not an object. */
int dsa_mrcr_fields_tree(const char *text, size_t len, struct dsa_mrcr_fields *mf);

#endif
