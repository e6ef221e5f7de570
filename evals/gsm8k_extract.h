/*
 * GSM8K answer extraction, identical to the references (docs/gsm8k.md "Answer extraction"):
 *
 *   cot-strict    lm-eval gsm8k_cot "strict-match":  The answer is (\-?[0-9\.\,]+).
 *   gsm8k-strict  lm-eval gsm8k "strict-match":      #### (\-?[0-9\.\,]+)
 *                 both: re.findall, the FIRST match (lm-eval's default group_select 0)
 *   flexible      lm-eval "flexible-extract":        (-?[$0-9.,]{2,})|(-?[0-9]+)
 *                 re.findall, the LAST match (group_select -1), its first non-empty group
 *   vllm          vLLM CI / SGLang get_answer_value: drop ',', the last \d+ run (Unicode
 *                 decimal digits, as Python's str regex), ast.literal_eval: a run of more than
 *                 one digit starting with '0' and not all zeros is a SyntaxError (INVALID), so
 *                 is any non-ASCII digit; the value is written as a decimal integer string
 *
 * Every pattern runs through PCRE2 with Python `re` semantics: '.' does not match '\n' (and
 * only '\n': PCRE2_NEWLINE_LF), '$' matches at the end or before a final '\n', leftmost-first
 * alternation, non-overlapping left-to-right findall. The lm-eval patterns are pure ASCII,
 * so matching them on UTF-8 bytes finds the same groups as Python does on code points.
 * Nothing matched -> "[invalid]".
 *
 * Scoring: lm-eval modes compare exact_match after regexes_to_ignore
 * [",", "\$", "(?s).*#### ", "\.$"] (re.sub, in order) and lowercasing, applied to both the
 * prediction and the gold text (a bare "18" or a full solution ending in "#### 18").
 * vllm compares the numeric rule applied to both sides (so the sign is ignored, as upstream).
 *
 * Ownership: an extractor owns its compiled patterns and match data and is not thread-safe
 * (one per thread); returned strings are fresh and the caller frees them.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_EVALS_GSM8K_EXTRACT_H
#define DSA_EVALS_GSM8K_EXTRACT_H

#include <stdbool.h>
#include <stddef.h>

#define DSA_GSM8K_INVALID "[invalid]"

enum dsa_gsm8k_extract_mode {
    DSA_GSM8K_EXTRACT_COT_STRICT = 0,
    DSA_GSM8K_EXTRACT_GSM8K_STRICT,
    DSA_GSM8K_EXTRACT_FLEXIBLE,
    DSA_GSM8K_EXTRACT_VLLM,
    DSA_GSM8K_EXTRACT_N
};

/* "cot-strict", "gsm8k-strict", "flexible", "vllm" */
const char *dsa_gsm8k_extract_name(enum dsa_gsm8k_extract_mode m);
/* 0 and *out set, or -1 for an unknown name */
int dsa_gsm8k_extract_parse(const char *name, enum dsa_gsm8k_extract_mode *out);

typedef struct dsa_gsm8k_extractor dsa_gsm8k_extractor;

dsa_gsm8k_extractor *dsa_gsm8k_extractor_new(void);
void dsa_gsm8k_extractor_free(dsa_gsm8k_extractor **x);

/* The prediction: for lm-eval modes the string the filter returns (before normalisation),
   for vllm the decimal integer; DSA_GSM8K_INVALID when nothing is found. Fresh string. */
char *dsa_gsm8k_extract(dsa_gsm8k_extractor *x, enum dsa_gsm8k_extract_mode m, const char *text,
                        size_t len);
/* lm-eval exact_match normalisation (regexes_to_ignore, then ASCII lowercase). Fresh string. */
char *dsa_gsm8k_normalize(dsa_gsm8k_extractor *x, const char *s, size_t len);
/* Whether `pred` (as returned by dsa_gsm8k_extract for mode m) scores against `gold` (a bare
   final answer or a full solution). An invalid prediction is never correct. */
bool dsa_gsm8k_is_correct(dsa_gsm8k_extractor *x, enum dsa_gsm8k_extract_mode m, const char *pred,
                          const char *gold, size_t gold_len);

#endif
