/*
 * GSM8K answering for the test server: a deterministic "model" that solves every GSM8K test
 * question by looking it up in the file given with --gsm8k-data (test.jsonl) and answering
 * with that row's gold solution, in the form the prompt asks for:
 *   "...Question: Q\nAnswer:" (vllm5, gsm8k, sglang5, chat): " " + the solution as in the
 *       file ("... #### 18") + "\n\nQuestion: " -- a few-shot model continues with the next
 *       question, which the "Question" stop string cuts off
 *   "...Q: Q\nA:" (cot8): " " + the solution lines without "<<...>>" calculator annotations
 *       and without the "#### " line, joined by spaces, + " The answer is N.\n\nQ: "
 * With a non-empty --build, question --gsm8k-build-question (default 7) is answered with its
 * final number plus one, so two server builds differ in exactly one known output.
 * Ownership: the loaded dataset is process-wide (srv_gsm8k_load once at startup).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_SRV_GSM8K_H
#define DSA_SRV_GSM8K_H

#include <stdbool.h>

#include "answer.h"

/* Loads test.jsonl for the answerer. Returns 0, or a dsa_exit code with the error printed. */
int srv_gsm8k_load(const char *path);
void srv_gsm8k_unload(void);

bool srv_answer_gsm8k(const struct srv_answer_in *in, const struct srv_answer_cfg *cfg,
                      struct dsa_buf *out, struct srv_answer_info *info);

#endif
