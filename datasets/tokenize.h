/*
 * The built-in deterministic tokenizer of dsa-eval: a stand-in for a model tokenizer, used
 * to size synthetic MRCR rows ("context_tokens") and to feed token ids to the in-process
 * kernels. It is not any model's tokenizer; it is stable, documented and fast.
 *
 * Definition (docs/datasets.md "The built-in tokenizer"):
 *   1. Pre-tokenize UTF-8 text with the PCRE2 pattern DSA_TOK_PATTERN (UTF + UCP), taking
 *      the leftmost match at each position: in order of preference
 *        ' ?\p{L}+'            a run of letters, with one optional leading space
 *        '\p{N}{1,3}'          a run of 1 to 3 digits (numerals split in threes)
 *        ' ?[^\s\p{L}\p{N}]+'  a run of punctuation/symbols, optional leading space
 *        '[\r\n]+'             a run of newlines
 *        '[^\S\r\n]+(?!\S)'    other whitespace, leaving the last space to the next word
 *        '[^\S\r\n]+'          other whitespace at the end or before a newline
 *      Bytes the pattern cannot match (only invalid UTF-8) become one piece per byte.
 *   2. id(piece) = fnv1a64(piece bytes) mod DSA_TOK_VOCAB.
 * Pieces never overlap and cover the input exactly, so concatenating them gives the text.
 *
 * Thread-safe: the compiled pattern is shared and read-only after the first call.
 * Ownership: inputs are borrowed; outputs go to caller-owned arrays.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_DATASETS_TOKENIZE_H
#define DSA_DATASETS_TOKENIZE_H

#include <stddef.h>
#include <stdint.h>

#define DSA_TOK_VOCAB 131072u
#define DSA_TOK_PATTERN                                                                            \
    " ?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+|[\\r\\n]+|[^\\S\\r\\n]+(?!\\S)|[^\\S\\r\\n]+"

/* Number of tokens of text[0..len). */
size_t dsa_tok_count(const char *text, size_t len);

/* Writes the ids of the first min(count, cap) tokens to ids (which may be NULL when cap is
   0) and returns the total count, like snprintf: call once with cap 0 to size the array. */
size_t dsa_tok_encode(const char *text, size_t len, uint32_t *ids, size_t cap);

/* Writes the end offset (exclusive, in bytes) of each of the first min(count, cap) tokens to
   ends and returns the total count, like dsa_tok_encode: token i covers
   [i ? ends[i - 1] : 0, ends[i]). Used to map byte spans of a prompt to token positions. */
size_t dsa_tok_ends(const char *text, size_t len, size_t *ends, size_t cap);

/* Piece iterator for tests and tools: returns 1 and sets *start and *plen to the next piece at
   or after *pos (advancing *pos), 0 at the end. */
int dsa_tok_next_piece(const char *text, size_t len, size_t *pos, size_t *start, size_t *plen);

#endif
