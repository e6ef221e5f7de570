/*
 * One pass over a JSON object text (a JSONL line) that keeps only some of its top-level
 * members: for lines whose bulk is a value the caller does not need now (the prompt of an
 * MRCR row while its head is counted). The line is parsed once by yajl's event parser, which
 * builds nothing; each named member is read by jansson from its own bytes.
 * Lines the event parser declines (not JSON, not an object, a duplicate key, invalid UTF-8,
 * a NUL byte raw or escaped, a lone surrogate escape, a number beyond a 64-bit integer or a double,
 * nesting deeper than jansson's 2048) are parsed whole by dsa_json_parse_object(), so every refusal
 * is jansson's message and the lines accepted are exactly those it accepts. Ownership: returns a
 * new reference (json_decref it). SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_UTIL_JSON_PICK_H
#define DSA_UTIL_JSON_PICK_H

#include <stddef.h>

#include <jansson.h>

#include "util/common.h"
#include "util/json.h"

/* An object holding at least the members named in names[] (NULL-terminated) that the text
   has, as dsa_json_parse_object() would read them; NULL (printed, as that function prints)
   when the text is not a JSON object. */
json_t *dsa_json_pick_object(const char *text, size_t len, const char *const *names,
                             const struct dsa_json_where *w);

/* The whole text as jansson's json_loadb(text, len, 0) reads it (an object or an array), built
   from one event-parser pass with one copy of each string; NULL (nothing printed) where the
   event parser declines (as above, a duplicate key included): then call jansson, which
   either refuses the text with its message or reads it as it does. For the long texts of the
   hot paths (an MRCR row and its prompt). */
json_t *dsa_json_load_fast(const char *text, size_t len);

#ifdef DSA_UNITTEST_BUILD
/* The event-parser path alone: the picked object, or NULL where jansson must decide. */
json_t *dsa_json_pick_stream(const char *text, size_t len, const char *const *names);
#endif

#endif
