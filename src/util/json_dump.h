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

#include "util/buf.h"

/* Appends v's compact JSON to out. Returns 0, or -1 when json_dumps would fail (a string
   that is not valid UTF-8, a NaN); out then holds a partial document the caller discards. */
int dsa_json_dump_compact(const json_t *v, struct dsa_buf *out);

#endif
