/*
 * Compact JSON serialization of a jansson tree into a reusable dsa_buf, byte-identical to
 * json_dumps(v, JSON_COMPACT) (keys in insertion order, jansson's escapes, jansson's number
 * formatting), for request bodies that carry 32 KB to 1 MB prompts: jansson decodes every code
 * point of a string to decide its escapes, and json_dumps copies its result once more; here
 * strings are escaped in runs of plain bytes and written straight into the caller's buffer.
 * Numbers, true/false/null are still formatted by jansson.
 * Ownership: borrows v; appends to the caller's buffer, which the caller owns.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_UTIL_JSON_DUMP_H
#define DSA_UTIL_JSON_DUMP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "util/buf.h"

/* Appends v's compact JSON to out. Returns 0, or -1 when json_dumps would fail (a string
   that is not valid UTF-8, a NaN); out then holds a partial document the caller discards. */
int dsa_json_dump_compact(const json_t *v, struct dsa_buf *out);

/* Appends one string's JSON (quotes included) as json_dumps escapes it. Returns 0, or -1 when
   s is not valid UTF-8 (nothing appended). */
int dsa_json_dump_string(const char *s, size_t len, struct dsa_buf *out);

/* One value of a tree, found by pointer, whose bytes a dump records or copies: with bytes NULL
   the dump writes it as usual and sets off/len to where it lies in out; with bytes set, those
   len bytes (the same value's dump, from an earlier body) are copied in its place; with bytes
   set and hole, the first place is left empty (off says where those bytes belong: the caller
   sends them from where they are) and only later ones get a copy. seen: the dump met it. For a
   row's messages, counted in one request and sent in the next: escaped once, copied the
   second time (or, as a hole, never copied). */
struct dsa_json_splice {
    const json_t *v;
    const char *bytes;
    size_t off, len;
    bool hole;
    bool seen;
};
/* As dsa_json_dump_compact(), with sp (may be NULL) as above. */
int dsa_json_dump_compact_splice(const json_t *v, struct dsa_buf *out, struct dsa_json_splice *sp);

#endif
