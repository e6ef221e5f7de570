/*
 * MRCR answering: parse the final question, find the k-th matching request in the
 * conversation, answer prefix + the assistant message that follows it, then apply the seeded
 * wrong-needle / garble / build decisions (docs/test-server.md "Determinism contract").
 *
 * Question (docs/mrcr.md "The dataset", the real phrasing):
 *   "Prepend P to the Kth (1 indexed) FORMAT about TOPIC. Do not include any other text in
 *    your response."
 * Requests: user messages reading "write a FORMAT about TOPIC" ("an" accepted, case-insensitive,
 * trailing '.', '!' and whitespace ignored); the needle is the next message when it is an
 * assistant message. messages[0] (the few-shot header) never matches.
 * Ownership: srv_mrcr_question owns its strings until srv_mrcr_question_release().
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_SRV_MRCR_H
#define DSA_SRV_MRCR_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct srv_mrcr_question {
    char *prefix;
    long k; /* 1-based */
    char *format;
    char *topic;
};

/* 0 when s is an MRCR question (q filled), -1 otherwise (q zeroed). */
int srv_mrcr_parse_question(const char *s, size_t n, struct srv_mrcr_question *q);
void srv_mrcr_question_release(struct srv_mrcr_question *q);
/* Whether s is the request "write a FORMAT about TOPIC" (rules above). */
bool srv_mrcr_is_request(const char *s, size_t n, const char *format, const char *topic);
/* The sample content hash: the first 8 bytes (big-endian) of
   sha256(role_0 NUL content_0 NUL role_1 NUL content_1 NUL ...); a missing or non-string
   role/content counts as "". */
uint64_t srv_mrcr_content_hash(const json_t *messages);
/* Keeps the first `num/den` of the code points of s[0..n) (floor); returns the byte length. */
size_t srv_mrcr_cut(const char *s, size_t n, size_t num, size_t den);

#endif
