/*
 * jansson helpers for outside data: every failure becomes one clear line naming the file,
 * the line and what is wrong, e.g.
 *     dsa-eval: cannot parse line 17 of 'x.jsonl': '[' or '{' expected near 'x'
 *     dsa-eval: line 3 of 'pairs.jsonl': "answer" must be a string
 * Ownership follows jansson: functions named *_new or returning json_t * give the caller a
 * reference (json_decref it); getters borrow.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_UTIL_JSON_H
#define DSA_UTIL_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Where a JSON value came from, for error messages. */
struct dsa_json_where {
    const char *path; /* file name as the user gave it */
    long lineno;      /* 0 if not line-based */
};

/* The first line of the file at path as jansson reads it (json_loadb, no flags), quietly: NULL
   when the file cannot be opened, is empty, or the line is no JSON text. complete: only a line
   that ends in a newline (a line still being written is none). A sniff, not a reader: it
   prints nothing. */
json_t *dsa_json_first_line(const char *path, bool complete);

/* Parses one JSON text (a JSONL line) that must be an object. On failure prints
   "cannot parse line N of 'PATH': REASON" (or "cannot parse 'PATH': ...") and returns NULL.
   Rejects invalid UTF-8 (jansson does) and NUL bytes. */
json_t *dsa_json_parse_object(const char *text, size_t len, const struct dsa_json_where *w);
/* The same for records of what a model said (outputs): strings may hold U+0000, as a model's
   output may; callers then take string lengths, never strlen. */
json_t *dsa_json_parse_record(const char *text, size_t len, const struct dsa_json_where *w);

/* Typed getters: on a missing key or wrong type they print "line N of 'PATH': \"KEY\" must
   be a string" and return false, unless `optional` and the key is absent/null. */
bool dsa_json_get_str(json_t *obj, const char *key, bool optional, const char **out, size_t *len,
                      const struct dsa_json_where *w);
bool dsa_json_get_int(json_t *obj, const char *key, bool optional, long long *out,
                      const struct dsa_json_where *w);

/* The number under key, or NaN when it is absent or not a number (readers of documents this
   tool wrote, where a missing value prints as NaN rather than failing) */
double dsa_json_num(const json_t *obj, const char *key);

/* Compact single-line dump with sorted keys and round-trippable reals (%.17g), as used in
   every JSONL file we write. Caller frees. */
char *dsa_json_dumps_line(const json_t *v);
/* Writes v indented by 2, keys in insertion order, reals round-trippable, then a newline:
   the documents that `--json` prints. */
void dsa_json_print_doc(const json_t *v, FILE *out);

#endif
