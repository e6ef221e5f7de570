/* GSM8K prompt modes; see gsm8k_prompt.h.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "evals/gsm8k_prompt.h"

#include <string.h>

#include "util/msg.h"

static const char *const stop_vllm[] = {"Question", "Assistant:", "<|separator|>"};
static const char *const stop_cot[] = {"Q:", "</s>", "<|im_end|>"};
static const char *const stop_lmeval[] = {"Question:", "</s>", "<|im_end|>"};

/* lm-eval lm_eval/tasks/gsm8k/gsm8k-cot.yaml fewshot_config.samples, in order, as PyYAML
   reads the folded scalars (single spaces, no trailing newline). */
static const char *const cot8_q[8] = {
    "There are 15 trees in the grove. Grove workers will plant trees in the grove today. After "
    "they are done, there will be 21 trees. How many trees did the grove workers plant today?",
    "If there are 3 cars in the parking lot and 2 more cars arrive, how many cars are in the "
    "parking lot?",
    "Leah had 32 chocolates and her sister had 42. If they ate 35, how many pieces do they have "
    "left in total?",
    "Jason had 20 lollipops. He gave Denny some lollipops. Now Jason has 12 lollipops. How many "
    "lollipops did Jason give to Denny?",
    "Shawn has five toys. For Christmas, he got two toys each from his mom and dad. How many toys "
    "does he have now?",
    "There were nine computers in the server room. Five more computers were installed each day, "
    "from monday to thursday. How many computers are now in the server room?",
    "Michael had 58 golf balls. On tuesday, he lost 23 golf balls. On wednesday, he lost 2 more. "
    "How many golf balls did he have at the end of wednesday?",
    "Olivia has $23. She bought five bagels for $3 each. How much money does she have left?",
};
static const char *const cot8_t[8] = {
    "There are 15 trees originally. Then there were 21 trees after some more were planted. So "
    "there must have been 21 - 15 = 6. The answer is 6.",
    "There are originally 3 cars. 2 more cars arrive. 3 + 2 = 5. The answer is 5.",
    "Originally, Leah had 32 chocolates. Her sister had 42. So in total they had 32 + 42 = 74. "
    "After eating 35, they had 74 - 35 = 39. The answer is 39.",
    "Jason started with 20 lollipops. Then he had 12 after giving some to Denny. So he gave Denny "
    "20 - 12 = 8. The answer is 8.",
    "Shawn started with 5 toys. If he got 2 toys each from his mom and dad, then that is 4 more "
    "toys. 5 + 4 = 9. The answer is 9.",
    "There were originally 9 computers. For each of 4 days, 5 more computers were added. So 5 * 4 "
    "= 20 computers were added. 9 + 20 is 29. The answer is 29.",
    "Michael started with 58 golf balls. After losing 23 on tuesday, he had 58 - 23 = 35. After "
    "losing 2 more, he had 35 - 2 = 33 golf balls. The answer is 33.",
    "Olivia had 23 dollars. 5 bagels for 3 dollars each will be 5 x 3 = 15 dollars. So she has 23 "
    "- 15 dollars left. 23 - 15 is 8. The answer is 8.",
};

#define STOPS(a) (a), (sizeof(a) / sizeof((a)[0]))

const struct dsa_gsm8k_mode dsa_gsm8k_modes[] = {
    {"vllm5", "vLLM CI: 5 shots from train, full solutions", DSA_GSM8K_SHOTS_TRAIN, 5,
     "Question: ", "\nAnswer:", STOPS(stop_vllm), 256, false, DSA_GSM8K_EXTRACT_VLLM},
    {"cot8", "lm-eval gsm8k_cot: 8 fixed chain-of-thought exemplars", DSA_GSM8K_SHOTS_COT8, 8,
     "Q: ", "\nA:", STOPS(stop_cot), 256, false, DSA_GSM8K_EXTRACT_COT_STRICT},
    {"gsm8k", "lm-eval gsm8k (\"#### N\"): train[0..4] as shots", DSA_GSM8K_SHOTS_TRAIN, 5,
     "Question: ", "\nAnswer:", STOPS(stop_lmeval), 256, false, DSA_GSM8K_EXTRACT_GSM8K_STRICT},
    {"sglang5", "SGLang benchmark: 5 shots from test, full solutions", DSA_GSM8K_SHOTS_TEST, 5,
     "Question: ", "\nAnswer:", STOPS(stop_vllm), 512, false, DSA_GSM8K_EXTRACT_VLLM},
    {"chat", "zero-shot, one user message, /v1/chat/completions", DSA_GSM8K_SHOTS_NONE, 0,
     "Question: ", "\nAnswer:", STOPS(stop_vllm), 256, true, DSA_GSM8K_EXTRACT_VLLM},
    {NULL, NULL, DSA_GSM8K_SHOTS_NONE, 0, NULL, NULL, NULL, 0, 0, false, DSA_GSM8K_EXTRACT_VLLM},
};

const struct dsa_gsm8k_mode *dsa_gsm8k_mode_find(const char *name)
{
    for (const struct dsa_gsm8k_mode *m = dsa_gsm8k_modes; m->name; m++)
        if (!strcmp(m->name, name))
            return m;
    return NULL;
}

/* one shot: q_prefix + q + a_prefix + " " + a + "\n\n" (lm-eval target_delimiter " ",
   fewshot_delimiter "\n\n"; vLLM/SGLang build the same bytes) */
static void add_shot(struct dsa_buf *out, const struct dsa_gsm8k_mode *m, const char *q,
                     size_t qlen, const char *a, size_t alen)
{
    dsa_buf_adds(out, m->q_prefix);
    dsa_buf_add(out, q, qlen);
    dsa_buf_adds(out, m->a_prefix);
    dsa_buf_addch(out, ' ');
    dsa_buf_add(out, a, alen);
    dsa_buf_adds(out, "\n\n");
}

int dsa_gsm8k_prompt(const struct dsa_gsm8k_mode *m, const dsa_gsm8k *train, const dsa_gsm8k *test,
                     const char *question, size_t question_len, struct dsa_buf *out)
{
    const dsa_gsm8k *src = NULL;
    switch (m->shots) {
    case DSA_GSM8K_SHOTS_NONE:
        break;
    case DSA_GSM8K_SHOTS_COT8:
        for (int i = 0; i < m->n_shots; i++)
            add_shot(out, m, cot8_q[i], strlen(cot8_q[i]), cot8_t[i], strlen(cot8_t[i]));
        break;
    case DSA_GSM8K_SHOTS_TRAIN:
    case DSA_GSM8K_SHOTS_TEST:
        src = m->shots == DSA_GSM8K_SHOTS_TRAIN ? train : test;
        if (!src || dsa_gsm8k_count(src) < (size_t)m->n_shots)
            return dsa_errorf("prompt mode '%s' needs %d shots from the %s split, found %zu",
                              m->name, m->n_shots,
                              m->shots == DSA_GSM8K_SHOTS_TRAIN ? "train" : "test",
                              src ? dsa_gsm8k_count(src) : (size_t)0);
        for (int i = 0; i < m->n_shots; i++) {
            const struct dsa_gsm8k_row *r = dsa_gsm8k_row(src, (size_t)i);
            add_shot(out, m, r->question, r->question_len, r->answer, r->answer_len);
        }
        break;
    }
    dsa_buf_adds(out, m->q_prefix);
    dsa_buf_add(out, question, question_len);
    dsa_buf_adds(out, m->a_prefix);
    return 0;
}
