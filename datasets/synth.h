/*
 * Synthetic MRCR rows in the real openai/mrcr schema and conversation shape (docs/mrcr.md
 * "The dataset"), deterministic from a seed, sized by the built-in tokenizer (datasets/tokenize.h)
 * to land inside each requested bin. Every row also carries "bin" and "context_tokens", so
 * the reader never guesses its bin.
 *
 * Row shape: messages[0] is a user message with a few-shot block; then user/assistant pairs
 * "write a {format} about {topic}" / the piece; n_needles of those pairs repeat one
 * (format, topic); the last message asks "Prepend P to the kth (1 indexed) {format} about
 * {topic}. …". answer = P + the kth needle's text = P + messages[desired_msg_index + 1].
 * context_tokens = Σ tokens(content of every message) + tokens(answer) (the README's
 * "prompt + answer" definition, with our tokenizer in place of o200k).
 *
 * Determinism: row i of (n_needles, bin) draws from its own GSL taus2 generator seeded with
 * splitmix64(seed ^ fnv1a64("mrcr/n<N>/b<K>/i<I>")) (low 32 bits, 0 -> 1), so a row does not
 * depend on which other bins or needle counts are generated.
 * Ownership: the caller owns the FILE; nothing is kept between calls.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_DATASETS_SYNTH_H
#define DSA_DATASETS_SYNTH_H

#include <stdio.h>

struct dsa_synth_mrcr_opts {
    unsigned needles_mask; /* bit n = make n-needle rows (dsa_mrcr_parse_needles) */
    unsigned bins_mask;    /* bit k = make rows of bin k (dsa_mrcr_parse_bins) */
    int per_bin;           /* rows per (needle count, bin) */
    unsigned long seed;
    volatile int *interrupted; /* polled between rows (SIGINT); may be NULL */
};

/* Writes the rows as JSONL: needle counts ascending, then bins ascending, then row index.
   Returns 0, -1 with the error printed (a write error), or 1 when *interrupted was set. */
int dsa_synth_mrcr_write(FILE *out, const struct dsa_synth_mrcr_opts *o, const char *out_name);

#endif
