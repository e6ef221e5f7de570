/*
 * Endpoint dialects: what differs between server families that all serve the OpenAI API,
 * kept in one table so that a dialect (llama.cpp, issue #7) is one more row and the event
 * loop never changes. Error shapes and over-context messages are recognised for every
 * dialect (response.h); a row says where to count tokens, how to ask, and how to read the
 * answer.
 * Ownership: rows are static; json returned by tokenize_body is a new reference.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_BACKEND_DIALECT_H
#define DSA_BACKEND_DIALECT_H

#include <jansson.h>
#include <stdbool.h>

struct dsa_dialect {
    const char *name;          /* --dialect value */
    const char *owned_by;      /* GET /v1/models data[].owned_by that selects it, or NULL */
    const char *version_path;  /* GET → {"version": "..."}, or NULL */
    const char *tokenize_path; /* POST path counting chat prompt tokens, or NULL (then the
                                  count comes from an over-context 400 error) */
    const char *generate_path; /* native generation endpoint, or NULL */
    /* the /tokenize body for `in` = {"messages": [...]} or {"prompt": "..."} (new ref) */
    json_t *(*tokenize_body)(const char *model, json_t *in);
    /* llama.cpp (backend/llamacpp.h): fields a row may leave NULL/false */
    const char *template_path; /* chat prompts are counted in two steps: POST here renders
                                  {"messages"} to {"prompt"}, then tokenize_path counts it */
    bool no_stream_options;    /* the last stream chunk carries usage unasked: send no
                                  stream_options */
    /* reads the version_path answer when it is not {"version": "..."}: the version
       (malloc'd or NULL) and the per-slot context (-1 unknown) */
    void (*server_info)(json_t *body, char **version, long *context);
    /* the context length of a /v1/models card that has no max_model_len (-1 unknown) */
    long (*card_context)(json_t *card);
};

/* The table's row by name, or NULL. */
const struct dsa_dialect *dsa_dialect_find(const char *name);
/* The row for an owned_by value; the generic "openai" row when none matches. */
const struct dsa_dialect *dsa_dialect_detect(const char *owned_by);
/* "vllm, sglang, llamacpp, openai" for messages */
const char *dsa_dialect_names(void);

#endif
