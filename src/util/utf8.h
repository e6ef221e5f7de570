/*
 * Strict UTF-8 -> Unicode code points (RFC 3629): overlong forms, surrogates encoded in
 * UTF-8 (U+D800..U+DFFF), code points above U+10FFFF, stray continuation bytes and truncated
 * sequences are all rejected. NUL bytes are ordinary code points (U+0000).
 * Used wherever a string must be measured or compared in code points, as Python's str does
 * (the MRCR grader counts lengths and matches in code points, docs/mrcr.md "Grading").
 * Ownership: the caller owns every buffer; dsa_utf8_decode_alloc() returns a malloc'ed array
 * the caller frees.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_UTIL_UTF8_H
#define DSA_UTIL_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Decodes s[0..len) into out, which must hold at least len code points (a code point never
   takes fewer than one byte). Returns the number of code points, or -1 if the input is not
   valid UTF-8; then *bad_offset (if not NULL) is the byte offset of the first bad sequence. */
long dsa_utf8_decode(const char *s, size_t len, uint32_t *out, size_t *bad_offset);

/* Same, into a fresh array (never NULL, even for len == 0). Returns NULL if invalid. */
uint32_t *dsa_utf8_decode_alloc(const char *s, size_t len, size_t *n_out, size_t *bad_offset);

/* Number of code points in s[0..len), or -1 if invalid. */
long dsa_utf8_length(const char *s, size_t len);

/* Turns every byte of the NUL-terminated s that is not part of a valid sequence into '?', in
   place: for messages that quote outside bytes (an error body, a line cut at a buffer's end),
   which must become JSON strings and one-line errors. */
void dsa_utf8_scrub(char *s);

/* true if s[0..len) is valid UTF-8 */
bool dsa_utf8_valid(const char *s, size_t len);

/* Encodes one code point (<= U+10FFFF, surrogates allowed: this is also used to write
   test data) into out[0..4); returns the number of bytes, or 0 if cp > U+10FFFF. */
int dsa_utf8_encode(uint32_t cp, char out[4]);

#endif
