/*
 * GSM8K prompt modes, byte-identical to the references (docs/gsm8k.md "Prompt modes"; the sha256
 * test vectors are in docs/gsm8k.md and tests/unit/test_gsm8k.c):
 *
 *   vllm5    vLLM CI tests/evals/gsm8k: shots train[0..4], full solutions
 *              "Question: q\nAnswer: a\n\n" x5 + "Question: Q\nAnswer:"
 *              stop ["Question","Assistant:","<|separator|>"], 256 tokens, scored by "vllm"
 *   cot8     lm-eval gsm8k_cot: the 8 fixed chain-of-thought exemplars
 *              "Q: q\nA: t\n\n" x8 + "Q: Q\nA:"
 *              stop ["Q:","</s>","<|im_end|>"], 256 tokens, scored by "cot-strict"
 *   gsm8k    lm-eval gsm8k (strict "#### N" form): the vllm5 bytes (lm-eval samples its 5
 *              shots at random with seed 1234; we take train[0..4] so the prompt is
 *              reproducible), stop ["Question:","</s>","<|im_end|>"], 256, "gsm8k-strict"
 *   sglang5  SGLang benchmark/gsm8k: shots test[0..4] (so test[0..4] see their own solution),
 *              vllm5's layout, stop as vllm5, 512 tokens, scored by "vllm"
 *   chat     zero-shot "Question: Q\nAnswer:" as one user message to /v1/chat/completions
 *              (vLLM gsm8k_eval --num-shots 0 --use-chat-completions), stop as vllm5, 256
 *
 * Ownership: the mode table is static; prompts are appended to a caller's dsa_buf.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_EVALS_GSM8K_PROMPT_H
#define DSA_EVALS_GSM8K_PROMPT_H

#include <stdbool.h>
#include <stddef.h>

#include "datasets/gsm8k.h"
#include "evals/gsm8k_extract.h"
#include "util/buf.h"

enum dsa_gsm8k_shots {
    DSA_GSM8K_SHOTS_NONE,  /* zero-shot */
    DSA_GSM8K_SHOTS_TRAIN, /* train[0..n) with full solutions */
    DSA_GSM8K_SHOTS_TEST,  /* test[0..n) with full solutions (SGLang) */
    DSA_GSM8K_SHOTS_COT8,  /* the fixed lm-eval gsm8k_cot exemplars */
};

struct dsa_gsm8k_mode {
    const char *name;
    const char *summary;
    enum dsa_gsm8k_shots shots;
    int n_shots;
    const char *q_prefix; /* "Question: " or "Q: " */
    const char *a_prefix; /* "\nAnswer:" or "\nA:" (no trailing space) */
    const char *const *stop;
    size_t n_stop;
    int max_tokens;
    bool chat; /* /v1/chat/completions instead of /v1/completions */
    enum dsa_gsm8k_extract_mode extract;
};

/* The modes, ended by a row whose name is NULL; the first row is the default (vllm5). */
extern const struct dsa_gsm8k_mode dsa_gsm8k_modes[];
const struct dsa_gsm8k_mode *dsa_gsm8k_mode_find(const char *name);

/* Appends the prompt for `question` to `out`. `train` is needed for TRAIN shots and `test`
   for TEST shots (either may be NULL otherwise). Returns 0, or -1 with one line printed if
   the shot source has fewer than n_shots rows. */
int dsa_gsm8k_prompt(const struct dsa_gsm8k_mode *m, const dsa_gsm8k *train, const dsa_gsm8k *test,
                     const char *question, size_t question_len, struct dsa_buf *out);

#endif
