/*
 * Parsers of what OpenAI-compatible servers send back (docs/gsm8k.md "Server responses"): whole
 * responses of /v1/chat/completions, /v1/completions, SGLang /generate and vLLM /tokenize;
 * streaming chunks (chat.completion.chunk, text_completion); and both error shapes
 *   {"error": {"message", "type", "param", "code"}}            current vLLM, OpenAI
 *   {"object": "error", "message", "type", "param", "code"}    older vLLM, SGLang
 * plus the over-context messages of vLLM and SGLang.
 *
 * A struct dsa_resp accumulates one attempt: a whole body, or the chunks of a stream.
 * Ownership: the accumulator owns its strings and holds references to the json values it
 * keeps (raw, usage, token_ids); inputs are borrowed.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_BACKEND_RESPONSE_H
#define DSA_BACKEND_RESPONSE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "backend/backend.h"
#include "util/buf.h"

struct dsa_resp {
    struct dsa_buf content, reasoning;
    bool has_content, has_reasoning;
    bool got_token;      /* a non-empty content/reasoning delta arrived (for ttft) */
    bool done;           /* stream: "[DONE]" seen */
    char *finish_reason; /* malloc'd or NULL */
    char *stop_reason;   /* JSON text of stop_reason / matched_stop, or NULL */
    long prompt_tokens, completion_tokens, max_model_len;
    json_t *usage, *token_ids, *raw;
    char *error;     /* message of an error object, or why the body is malformed */
    long error_code; /* the error object's code (or 0) */
};

enum dsa_resp_rc {
    DSA_RESP_OK = 0,
    DSA_RESP_DONE = 1,      /* stream chunk "[DONE]" */
    DSA_RESP_ERROR = 2,     /* an error object (r->error, r->error_code) */
    DSA_RESP_MALFORMED = -1 /* not the expected JSON (r->error says why) */
};

void dsa_resp_init(struct dsa_resp *r);
void dsa_resp_reset(struct dsa_resp *r);
void dsa_resp_release(struct dsa_resp *r);

/* A whole (non-streaming) response body of `api`. */
int dsa_resp_parse_body(struct dsa_resp *r, enum dsa_api api, const char *body, size_t len);

/* A /tokenize answer lists every token id (about a megabyte for 128K tokens) to say one
   count: the list is skipped unparsed when it is plain (digits, '-', ',' and JSON blanks up to
   its ']'), found as the body arrives, while its bytes are fresh in the cache, so the whole
   body is not read again for it. Feed it the body so far after each piece (the same bytes,
   growing); start over with init when the body does. */
enum dsa_resp_list_state {
    DSA_RESP_LIST_KEY,       /* looking for the first "tokens" */
    DSA_RESP_LIST_AFTER_KEY, /* blanks or ':', then '[' */
    DSA_RESP_LIST_IN,        /* in the list: plain bytes so far */
    DSA_RESP_LIST_FOUND,     /* a plain list from open to its ']' at close */
    DSA_RESP_LIST_NONE       /* no plain list: the body is parsed as it is */
};
struct dsa_resp_list {
    enum dsa_resp_list_state state;
    size_t at;          /* bytes of the body looked at (for the key: starts ruled out) */
    size_t open, close; /* FOUND: the offsets after '[' and of ']' */
};
void dsa_resp_list_init(struct dsa_resp_list *l);
void dsa_resp_list_feed(struct dsa_resp_list *l, const char *body, size_t len);
/* As dsa_resp_parse_body(), with the list of a TOKENIZE body found by l (fed that whole body;
   NULL: found here): the same result either way. */
int dsa_resp_parse_body_list(struct dsa_resp *r, enum dsa_api api, const char *body, size_t len,
                             const struct dsa_resp_list *l);
/* One SSE data payload of a streaming CHAT or COMPLETION response. */
int dsa_resp_parse_chunk(struct dsa_resp *r, enum dsa_api api, const char *data, size_t len);
/* Finds an error object of either shape in `v`: returns true and sets the borrowed message
   (NULL if none given) and code (0 if none). */
bool dsa_resp_error_of(json_t *v, const char **message, long *code);
/*
 * Recognises an over-context error message and extracts the numbers it names:
 *   vLLM  "This model's maximum context length is 8192 tokens. However, you requested
 *          9000 tokens (4904 in the messages, 4096 in the completion). …"
 *   vLLM  "… maximum context length is 8192 tokens and your request has 5000 input tokens …"
 *   SGLang "Requested token count exceeds the model's maximum context length of 8192 tokens.
 *          You requested a total of 9000 tokens: 4904 tokens from the input messages …"
 *   SGLang "The input (9000 tokens) is longer than the model's context length (8192 tokens)."
 *   llama-server "request (1202 tokens) exceeds the available context size (512 tokens), try
 *          increasing it"
 * Returns true when it is one; *prompt_tokens / *max_len are -1 when not named.
 */
bool dsa_resp_context_error(const char *msg, long *prompt_tokens, long *max_len);

#ifdef DSA_UNITTEST_BUILD
/* The ']' that ends a plain integer list whose bytes start at p (digits, '-', ',' and JSON
   blanks only before it), or NULL when there is none before end or another byte comes first:
   the test of a /tokenize answer's "tokens" that is skipped unparsed. */
const char *dsa_resp_list_end(const char *p, const char *end);
#endif

#endif
