/*
 * The test server's deterministic tokenizer. It is not any real model's tokenizer: it only has
 * to give stable, documented counts (docs/test-server.md "Tokens") that tests can recompute.
 *
 * A piece is: any run of whitespace (space, \t, \n, \r) followed by either up to 4 "word"
 * characters (ASCII letters and digits, or any non-ASCII UTF-8 character) or one other
 * character; whitespace at the very end of the text is a piece of its own. So English runs at
 * about 4 bytes per token, and pieces never split a UTF-8 character (streamed deltas stay
 * valid UTF-8). Token id of a piece = fnv1a64(piece bytes) % SRV_TOK_VOCAB.
 *
 * Chat prompts: tokens = 2 + sum over messages of (tokens(content) + 4): a fixed template
 * overhead of 4 per message and 2 for the generation prompt.
 * Ownership: no allocation except in srv_tok_ids (caller frees).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_SRV_TOK_H
#define DSA_SRV_TOK_H

#include <jansson.h>
#include <stddef.h>

#define SRV_TOK_VOCAB       129280
#define SRV_TOK_PER_MESSAGE 4
#define SRV_TOK_GEN_PROMPT  2

/* Length in bytes of the piece starting at s[0] (0 only when n == 0). */
size_t srv_tok_next(const char *s, size_t n);
/* Number of pieces in s[0..n). */
long srv_tok_count(const char *s, size_t n);
/* Byte length of the longest prefix holding at most max_tokens pieces. */
size_t srv_tok_prefix(const char *s, size_t n, long max_tokens);
/* Token count of a chat message array (see above); -1 if it is not an array of objects whose
   "content" is a string, null or an array of {"type":"text","text"} parts. */
long srv_tok_chat(const json_t *messages);
/* Ids of the pieces; *n_out gets the count. Caller frees. */
long *srv_tok_ids(const char *s, size_t n, size_t *n_out);

#endif
