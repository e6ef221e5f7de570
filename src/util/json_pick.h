/*
 * One pass over a JSON object text (a JSONL line) that keeps only what its caller needs, and the
 * checks every event-parser reader of the project shares (evals/mrcr_grade_fields.c): what
 * makes yajl accept exactly the texts jansson accepts.
 *
 * dsa_json_pick_object() keeps some top-level members: for lines whose bulk is a value the
 * caller does not need now (the prompt of an MRCR row while its head is counted). The picker
 * and the tree builders run on simdjson (util/json_simd.h: the text parsed once into its tape,
 * then only the values asked for made into jansson values).
 * Lines simdjson or jansson's extra rules decline (not JSON, not an object, a duplicate key,
 * invalid UTF-8, a NUL byte raw or escaped, a lone surrogate escape, an integer beyond long long,
 * a number beyond a double, nesting deeper than simdjson's 1024) are parsed whole by
 * dsa_json_parse_object(), so every refusal is jansson's message and the lines accepted are
 * exactly those it accepts. Ownership: the json_t results are new references (json_decref them);
 * a struct dsa_json_keys owns its memory until dsa_json_keys_release().
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_UTIL_JSON_PICK_H
#define DSA_UTIL_JSON_PICK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "util/buf.h"
#include "util/common.h"
#include "util/json.h"

/* The whole text as jansson's json_loadb(text, len, 0) reads it (an object or an array), built
   from one simdjson parse with one copy of each string; NULL (nothing printed) where it
   declines (as above, a duplicate key included): then call jansson, which either refuses the
   text with its message or reads it as it does. */
json_t *dsa_json_load_fast(const char *text, size_t len);

/* As dsa_json_load_fast(), and where the top-level member named inner_key is a string whose
   decoded bytes dsa_json_load_fast() takes (the JSON text of an MRCR row's messages), those bytes
   are parsed where simdjson decoded them, never copied into a jansson string: *inner gets that
   tree and the member holds "" in the object. Otherwise *inner is NULL and the member is the
   string itself, for the caller to parse or refuse as before. For the hot path of the MRCR
   reader. */
json_t *dsa_json_load_fast_inner(const char *text, size_t len, const char *inner_key,
                                 json_t **inner);

/* ---- the shared checks ---- */

/* The keys seen in one text, per object, for refusing duplicates as JSON_REJECT_DUPLICATES does.
   Start zeroed ({0}). */
struct dsa_json_keys {
    struct dsa_json_key_slot *slots; /* open addressing over (object serial, key bytes) */
    size_t n, cap;
    struct dsa_buf bytes;
};
/* Adds the key to the set of object `serial` (> 0); false if that object already has it. */
bool dsa_json_keys_add(struct dsa_json_keys *k, uint32_t serial, const unsigned char *key,
                       size_t len);
void dsa_json_keys_release(struct dsa_json_keys *k);

/* A number token jansson converts: an integer within long long, a real that does not overflow
   a double (strtoll / strtod in the C locale, as jansson). */
bool dsa_json_number_fits(const char *num, size_t len);
/* Valid UTF-8 (strictly: yajl's own check lets overlong forms through) and no control byte but
   the blanks \t \n \r (yajl skips \v and \f between tokens, jansson reads past a NUL). With
   check_escapes, also none of the \u escapes jansson refuses without JSON_ALLOW_NUL and yajl lets
   through: "\u0000" and lone surrogates. */
bool dsa_json_text_plain(const char *text, size_t len, bool check_escapes);
/* True if the object closed (end > 0) and only JSON blanks follow it up to len: yajl's
   complete_parse lets an unfinished token after the value through ("{}\"x"). */
bool dsa_json_only_blanks_after(const char *text, size_t len, size_t end);
/* The offset of the value after a key whose token ends at off: past blanks, ':' and blanks. */
size_t dsa_json_value_start(const char *text, size_t off);

#ifdef DSA_UNITTEST_BUILD
/* The simdjson path alone: the picked object, or NULL where jansson must decide. */
json_t *dsa_json_pick_stream(const char *text, size_t len, const char *const *names);
#endif

#endif
