/*
 * The hot-path JSON reader of util/json_pick.h, over simdjson (one C++ file, json_simd.cc, with
 * this C API). simdjson parses a whole text into its tape at GB/s, validating UTF-8 strictly and
 * refusing control bytes in strings, lone surrogate escapes and anything but the four JSON
 * blanks between tokens; what jansson refuses beyond that (a duplicate key, an integer beyond
 * long long, a NUL byte decoded from "\u0000") is checked here on the parsed values, so a text
 * either builds exactly jansson's tree or is declined (NULL, nothing printed) for jansson to read
 * or refuse with its own message.
 *
 * The parsers (and their buffers, sized to the longest text seen) are kept per thread between
 * calls, so a stream of lines costs no allocation per line.
 * Ownership: every json_t returned is a new reference (json_decref it). Within one tree, short
 * strings that repeat (a message list's roles) may be one shared json_t: read the trees, do not
 * change their strings in place.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_UTIL_JSON_SIMD_H
#define DSA_UTIL_JSON_SIMD_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#ifdef __cplusplus
extern "C" {
#endif

/* padded: at least DSA_JSIMD_PADDING readable bytes follow text + len (their values do not
   matter), so simdjson parses the text where it lies instead of copying it first */
#define DSA_JSIMD_PADDING 64

/* An object holding the members named in names[] (NULL-terminated) that the top-level object
   text has, as jansson reads them, after the whole text was checked as jansson with
   JSON_REJECT_DUPLICATES would; NULL where jansson must decide. */
json_t *dsa_jsimd_pick(const char *text, size_t len, bool padded, const char *const *names);

/* The whole text (an object or an array) as jansson's json_loadb(text, len, 0) reads it, or NULL
   where jansson must decide (a duplicate key included). With inner_key: where the top-level
   member of that name is a string whose decoded bytes are themselves a text this function
   takes (an MRCR row's prompt), *inner gets that tree and the member holds ""; otherwise *inner
   is NULL and the member is the string. */
json_t *dsa_jsimd_load(const char *text, size_t len, bool padded, const char *inner_key,
                       json_t **inner);

struct dsa_buf;

/* An object text as dsa_jsimd_load() reads it with inner_key, except that the inner text is not
   built as a tree: when it is a non-empty array of objects that each have a string member of
   every name in required[] (NULL-terminated), its compact JSON is appended to inner_json, the
   very bytes dsa_json_dump_compact() (util/json_dump.h) writes of the tree dsa_jsimd_load()
   would have built, the member holds "" and *dumped is set. Otherwise (another shape, a real
   number, anything jansson must decide) the member is the string as decoded, *dumped is false
   and the caller reads it as before. NULL: the outer text is declined. */
json_t *dsa_jsimd_load_dumped(const char *text, size_t len, bool padded, const char *inner_key,
                              const char *const *required, struct dsa_buf *inner_json,
                              bool *dumped);

#ifdef __cplusplus
}
#endif

#endif
