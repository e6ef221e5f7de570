/*
 * RULER samples as JSONL rows (`dsa-eval datasets synth ruler`, docs/ruler.md "The samples as
 * a file"): exactly the prompts `dsa-eval ruler` sends, with the byte and token positions of
 * their needles and question, for tools outside dsa-eval (scripts/capture_traces.py runs them
 * through a model to capture indexer traces). One object per sample:
 *
 *   {"id": "niah_single_2/4k/0000", "eval": "ruler", "task", "bin": "4k", "bin_tokens": 4096,
 *    "index", "seed", "haystack", "haystack_sha256", "prompt": the input, "input_sha256",
 *    "tokens": built-in count, "tokens_to_generate", "metric", "references": [...],
 *    "needles": [{"kind": "answer"|"distractor", "bytes": [lo, hi], "tokens": [lo, hi]}...],
 *    "question": {"bytes": [lo, len], "tokens": [lo, tokens]},
 *    "answer_prefix": {"bytes": [lo, len], "tokens": [lo, tokens]}}
 *
 * Byte offsets are into the UTF-8 prompt; token positions are of the prompt tokenized alone
 * by the built-in tokenizer (datasets/tokenize.h), each range every token that overlaps the
 * bytes (dsa_ruler_needle_tokens). The in-process backend puts the role tag "<|user|>\n" before
 * the prompt, which shifts its positions by the tag's tokens.
 *
 * Ownership: borrows the sample, the options and the haystack; the object returned is the
 * caller's. Nothing here prints.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_EVALS_RULER_JSON_H
#define DSA_EVALS_RULER_JSON_H

#include <jansson.h>
#include <stdio.h>

#include "evals/ruler.h"

/* Every sample o selects, in the library's order, one compact line each (keys sorted),
   flushed as written. Returns 0, DSA_RULER_ESTOP on a write error (errno kept), an enum
   dsa_ruler_err code from making a sample, or DSA_RULER_EINTR. */
int dsa_ruler_samples_write(FILE *out, const struct dsa_ruler_opts *o);

#endif
