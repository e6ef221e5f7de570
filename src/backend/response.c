/* Response, stream-chunk and error parsers; see response.h.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "backend/response.h"

#include <pcre2.h>
#include <stdint.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include <stdlib.h>
#include <string.h>

#include "util/json_pick.h"

void dsa_resp_init(struct dsa_resp *r)
{
    memset(r, 0, sizeof *r);
    dsa_buf_init(&r->content);
    dsa_buf_init(&r->reasoning);
    r->prompt_tokens = r->completion_tokens = r->max_model_len = -1;
}

void dsa_resp_release(struct dsa_resp *r)
{
    dsa_buf_release(&r->content);
    dsa_buf_release(&r->reasoning);
    free(r->finish_reason);
    free(r->stop_reason);
    free(r->error);
    json_decref(r->usage);
    json_decref(r->token_ids);
    json_decref(r->raw);
    memset(r, 0, sizeof *r);
}

void dsa_resp_reset(struct dsa_resp *r)
{
    dsa_resp_release(r);
    dsa_resp_init(r);
}

static void set_error(struct dsa_resp *r, const char *msg, long code)
{
    free(r->error);
    r->error = dsa_xstrdup(msg ? msg : "(no message)");
    r->error_code = code;
}

bool dsa_resp_error_of(json_t *v, const char **message, long *code)
{
    if (!json_is_object(v))
        return false;
    json_t *e = json_object_get(v, "error");
    json_t *obj = NULL;
    if (json_is_object(e)) {
        obj = e;
    } else if (json_is_string(json_object_get(v, "object")) &&
               !strcmp(json_string_value(json_object_get(v, "object")), "error")) {
        obj = v;
    } else if (json_is_string(e)) {
        /* some proxies answer {"error": "text"} */
        *message = json_string_value(e);
        *code = 0;
        return true;
    } else {
        return false;
    }
    json_t *m = json_object_get(obj, "message");
    json_t *c = json_object_get(obj, "code");
    *message = json_is_string(m) ? json_string_value(m) : NULL;
    *code = json_is_integer(c) ? (long)json_integer_value(c) : 0;
    if (json_is_string(c)) /* OpenAI itself sends string codes ("context_length_exceeded") */
        *code = strtol(json_string_value(c), NULL, 10);
    return true;
}

static long get_long(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (json_is_integer(v))
        return (long)json_integer_value(v);
    if (json_is_real(v)) { /* some servers send counts as 12.0 */
        /* a count outside long's range (1e92) or fractional is no count: converting it would be
           undefined behaviour, so it reads as absent like any other malformed field */
        double d = json_real_value(v);
        if (d >= 0 && d < 0x1p63) {
            long n = (long)d;
            if ((double)n == d)
                return n;
        }
    }
    return -1;
}

static void take_usage(struct dsa_resp *r, json_t *usage)
{
    if (!json_is_object(usage))
        return;
    json_decref(r->usage);
    r->usage = json_incref(usage);
    r->prompt_tokens = get_long(usage, "prompt_tokens");
    r->completion_tokens = get_long(usage, "completion_tokens");
}

static void take_finish(struct dsa_resp *r, json_t *choice)
{
    json_t *fr = json_object_get(choice, "finish_reason");
    if (json_is_string(fr)) {
        free(r->finish_reason);
        r->finish_reason = dsa_xstrdup(json_string_value(fr));
    } else if (json_is_object(fr) && json_is_string(json_object_get(fr, "type"))) {
        /* SGLang /generate: meta_info.finish_reason = {"type": "stop", "matched": …} */
        free(r->finish_reason);
        r->finish_reason = dsa_xstrdup(json_string_value(json_object_get(fr, "type")));
        json_t *m = json_object_get(fr, "matched");
        if (m && !json_is_null(m)) {
            free(r->stop_reason);
            r->stop_reason = json_dumps(m, JSON_COMPACT | JSON_ENCODE_ANY);
        }
    }
    json_t *sr = json_object_get(choice, "stop_reason");
    if (!sr || json_is_null(sr))
        sr = json_object_get(choice, "matched_stop");
    if (sr && !json_is_null(sr)) {
        free(r->stop_reason);
        r->stop_reason = json_dumps(sr, JSON_COMPACT | JSON_ENCODE_ANY);
    }
}

/* Adds a text field of `o` to buf; returns the number of bytes added, or -1 if the key is
   present with a wrong type. */
static long add_text(struct dsa_buf *buf, bool *has, json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return -1;
    size_t n = json_string_length(v);
    dsa_buf_add(buf, json_string_value(v), n);
    *has = true;
    return (long)n;
}

static int malformed(struct dsa_resp *r, const char *why)
{
    set_error(r, why, 0);
    return DSA_RESP_MALFORMED;
}

static json_t *first_choice(json_t *v)
{
    json_t *choices = json_object_get(v, "choices");
    if (!json_is_array(choices) || json_array_size(choices) == 0)
        return NULL;
    json_t *c = json_array_get(choices, 0);
    return json_is_object(c) ? c : NULL;
}

static int parse_json(struct dsa_resp *r, enum dsa_api api, json_t *v)
{
    const char *msg;
    long code;
    if (dsa_resp_error_of(v, &msg, &code)) {
        set_error(r, msg, code);
        return DSA_RESP_ERROR;
    }
    switch (api) {
    case DSA_API_CHAT:
    case DSA_API_COMPLETION: {
        json_t *c = first_choice(v);
        if (!c)
            return malformed(r, "response has no choices[0]");
        if (api == DSA_API_CHAT) {
            json_t *m = json_object_get(c, "message");
            if (!json_is_object(m))
                return malformed(r, "choices[0].message is not an object");
            if (add_text(&r->content, &r->has_content, m, "content") < 0)
                return malformed(r, "message.content is not a string");
            /* vLLM >= 0.10 says "reasoning", older vLLM and SGLang "reasoning_content" */
            if (add_text(&r->reasoning, &r->has_reasoning, m, "reasoning_content") < 0 ||
                (!r->has_reasoning &&
                 add_text(&r->reasoning, &r->has_reasoning, m, "reasoning") < 0))
                return malformed(r, "message.reasoning_content is not a string");
        } else {
            if (add_text(&r->content, &r->has_content, c, "text") < 0)
                return malformed(r, "choices[0].text is not a string");
            json_t *ids = json_object_get(c, "token_ids");
            if (json_is_array(ids))
                r->token_ids = json_incref(ids);
        }
        take_finish(r, c);
        take_usage(r, json_object_get(v, "usage"));
        break;
    }
    case DSA_API_GENERATE: {
        if (add_text(&r->content, &r->has_content, v, "text") < 0 || !r->has_content)
            return malformed(r, "\"text\" is not a string");
        json_t *mi = json_object_get(v, "meta_info");
        if (json_is_object(mi)) {
            r->prompt_tokens = get_long(mi, "prompt_tokens");
            r->completion_tokens = get_long(mi, "completion_tokens");
            take_finish(r, mi);
        }
        json_t *ids = json_object_get(v, "output_ids");
        if (json_is_array(ids))
            r->token_ids = json_incref(ids);
        break;
    }
    case DSA_API_TOKENIZE: {
        r->prompt_tokens = get_long(v, "count");
        json_t *toks = json_object_get(v, "tokens");
        if (r->prompt_tokens < 0 && json_is_array(toks))
            r->prompt_tokens = (long)json_array_size(toks);
        if (r->prompt_tokens < 0)
            return malformed(r, "tokenize response has no \"count\"");
        r->max_model_len = get_long(v, "max_model_len");
        break;
    }
    case DSA_API_GET:
    case DSA_API_SELECT: /* in-process only: never parsed from HTTP */
    case DSA_API_MTP_VERIFY:
        break;
    }
    json_decref(r->raw);
    r->raw = json_incref(v);
    return DSA_RESP_OK;
}

/* The first place of needle[0, n) in s[0, len), or NULL (memmem is a GNU extension). */
static const char *find(const char *s, size_t len, const char *needle, size_t n)
{
    const char *end = s + len;
    while (n && (size_t)(end - s) >= n) {
        const char *c = memchr(s, needle[0], (size_t)(end - s) - n + 1);
        if (!c)
            return NULL;
        if (!memcmp(c, needle, n))
            return c;
        s = c + 1;
    }
    return NULL;
}

static bool contains(const char *s, size_t len, const char *needle)
{
    return find(s, len, needle, strlen(needle)) != NULL;
}

/* The bytes a plain integer list holds: digits, '-', ',' and JSON blanks. */
static bool plain_byte(unsigned char c)
{
    return (c >= '0' && c <= '9') || c == '-' || c == ',' || c == ' ' || c == '\n' || c == '\t' ||
           c == '\r';
}

#ifdef __SSE2__
/* 16 bytes at once: the mask of those that are plain_byte(). Digits and commas, nearly all of
   a list, take two compares; the blanks and '-' are looked for only in a block with another
   byte. */
static unsigned plain_mask16(const char *p)
{
    const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
    const __m128i d = _mm_sub_epi8(v, _mm_set1_epi8('0'));
    __m128i m = _mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(9)), d); /* '0'..'9' */
    m = _mm_or_si128(m, _mm_cmpeq_epi8(v, _mm_set1_epi8(',')));
    unsigned mask = (unsigned)_mm_movemask_epi8(m);
    if (mask == 0xffffu)
        return mask;
    m = _mm_or_si128(m, _mm_cmpeq_epi8(v, _mm_set1_epi8('-')));
    m = _mm_or_si128(m, _mm_cmpeq_epi8(v, _mm_set1_epi8(' ')));
    m = _mm_or_si128(m, _mm_cmpeq_epi8(v, _mm_set1_epi8('\n')));
    m = _mm_or_si128(m, _mm_cmpeq_epi8(v, _mm_set1_epi8('\t')));
    m = _mm_or_si128(m, _mm_cmpeq_epi8(v, _mm_set1_epi8('\r')));
    return (unsigned)_mm_movemask_epi8(m);
}
#endif

/* The first byte from p on that is not plain_byte(), or end. A 128K-token list is ~900 KB of
   digits and commas: 16 bytes a step. */
static const char *first_unplain(const char *p, const char *end)
{
#ifdef __SSE2__
    while (end - p >= 16) {
        unsigned plain = plain_mask16(p);
        if (plain != 0xffffu)
            return p + __builtin_ctz(~plain);
        p += 16;
    }
#endif
    while (p < end && plain_byte((unsigned char)*p))
        p++;
    return p;
}

DSA_UNITTEST const char *dsa_resp_list_end(const char *p, const char *end)
{
    /* one pass, where a memchr for ']' and a check of the bytes before it were two: the first
       byte that is not plain ends the list if it is ']' (not plain itself), else it is no
       plain list */
    const char *q = first_unplain(p, end);
    return q < end && *q == ']' ? q : NULL;
}

static const char tokens_key[] = "\"tokens\"";
#define TOKENS_KEY_LEN (sizeof tokens_key - 1)

static bool list_blank(char c)
{
    return c == ' ' || c == ':' || c == '\n' || c == '\t' || c == '\r';
}

void dsa_resp_list_init(struct dsa_resp_list *l)
{
    memset(l, 0, sizeof *l);
}

void dsa_resp_list_feed(struct dsa_resp_list *l, const char *body, size_t len)
{
    for (;;) {
        switch (l->state) {
        case DSA_RESP_LIST_KEY: {
            /* the first "tokens" with a byte after it; starts before `at` are ruled out */
            const char *k =
                len > l->at ? find(body + l->at, len - l->at, tokens_key, TOKENS_KEY_LEN) : NULL;
            if (!k) {
                if (len >= TOKENS_KEY_LEN && len - TOKENS_KEY_LEN + 1 > l->at)
                    l->at = len - TOKENS_KEY_LEN + 1;
                return;
            }
            l->at = (size_t)(k - body) + TOKENS_KEY_LEN;
            l->state = DSA_RESP_LIST_AFTER_KEY;
            break;
        }
        case DSA_RESP_LIST_AFTER_KEY:
            while (l->at < len && list_blank(body[l->at]))
                l->at++;
            if (l->at == len)
                return;
            l->state = body[l->at] == '[' ? DSA_RESP_LIST_IN : DSA_RESP_LIST_NONE;
            l->open = ++l->at;
            break;
        case DSA_RESP_LIST_IN: {
            const char *q = first_unplain(body + l->at, body + len);
            l->at = (size_t)(q - body);
            if (l->at == len)
                return;
            l->state = *q == ']' ? DSA_RESP_LIST_FOUND : DSA_RESP_LIST_NONE;
            l->close = l->at;
            return;
        }
        default:
            return;
        }
    }
}

/* Where drop_token_list() cuts: the first "tokens" key, then blanks or ':', then '[', then a
   plain list up to ']'. true with the offsets after '[' and of ']'. */
static bool locate_list(const char *body, size_t len, size_t *open, size_t *close)
{
    struct dsa_resp_list l;
    dsa_resp_list_init(&l);
    dsa_resp_list_feed(&l, body, len);
    *open = l.open;
    *close = l.close;
    return l.state == DSA_RESP_LIST_FOUND;
}

/* A /tokenize answer lists every token id: 256K integers would cost ~15 MB as json_t values
   to read one "count". Copies the body without the contents of the top-level "tokens"
   array (integers only, so its first ']' ends it), given where they lie (locate_list); NULL
   when the body has no "count" (the list's length is the count then). */
static char *drop_token_list(const char *body, size_t len, size_t open, size_t close,
                             size_t *out_len)
{
    if (!contains(body, len, "\"count\""))
        return NULL; /* the count is the list's length then */
    size_t tail = len - close;
    char *out = dsa_xmalloc(open + tail + 1);
    memcpy(out, body, open);
    memcpy(out + open, body + close, tail);
    out[open + tail] = 0;
    *out_len = open + tail;
    return out;
}

int dsa_resp_parse_body(struct dsa_resp *r, enum dsa_api api, const char *body, size_t len)
{
    return dsa_resp_parse_body_list(r, api, body, len, NULL);
}

int dsa_resp_parse_body_list(struct dsa_resp *r, enum dsa_api api, const char *body, size_t len,
                             const struct dsa_resp_list *l)
{
    if (api == DSA_API_GET)
        return DSA_RESP_OK;
    char *slim = NULL;
    size_t slim_len = 0, open = 0, close = 0;
    bool found = false;
    if (api == DSA_API_TOKENIZE) {
        if (l) {
            found = l->state == DSA_RESP_LIST_FOUND;
            open = l->open;
            close = l->close;
        } else {
            found = locate_list(body, len, &open, &close);
        }
    }
    if (found && (slim = drop_token_list(body, len, open, close, &slim_len))) {
        body = slim;
        len = slim_len;
    }
    /* simdjson builds the tree where it can (util/json_pick.h); what it declines (a NUL
       escape, a duplicate key, a bare scalar, bad JSON) jansson reads or refuses with its
       message, as before */
    json_error_t err;
    json_t *v = dsa_json_load_fast(body, len);
    if (!v)
        v = json_loadb(body, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
    free(slim);
    if (!v) {
        char why[256];
        snprintf(why, sizeof why, "response is not JSON: %s", err.text);
        return malformed(r, why);
    }
    if (!json_is_object(v)) {
        json_decref(v);
        return malformed(r, "response is not a JSON object");
    }
    int rc = parse_json(r, api, v);
    json_decref(v);
    return rc;
}

int dsa_resp_parse_chunk(struct dsa_resp *r, enum dsa_api api, const char *data, size_t len)
{
    if (len == 6 && !memcmp(data, "[DONE]", 6)) {
        r->done = true;
        return DSA_RESP_DONE;
    }
    json_error_t err;
    json_t *v = json_loadb(data, len, JSON_ALLOW_NUL, &err);
    if (!v) {
        char why[256];
        snprintf(why, sizeof why, "stream chunk is not JSON: %s", err.text);
        return malformed(r, why);
    }
    int rc = DSA_RESP_OK;
    const char *msg;
    long code;
    if (dsa_resp_error_of(v, &msg, &code)) {
        set_error(r, msg, code);
        rc = DSA_RESP_ERROR;
        goto cleanup;
    }
    json_t *usage = json_object_get(v, "usage");
    if (json_is_object(usage)) {
        take_usage(r, usage);
        json_decref(r->raw);
        r->raw = json_incref(v);
    }
    json_t *c = first_choice(v);
    if (!c)
        goto cleanup; /* the usage-only chunk has "choices": [] */
    long got = 0, n;
    if (api == DSA_API_CHAT) {
        json_t *d = json_object_get(c, "delta");
        if (json_is_object(d)) {
            if ((n = add_text(&r->content, &r->has_content, d, "content")) < 0)
                goto bad_type;
            got += n;
            n = add_text(&r->reasoning, &r->has_reasoning, d, "reasoning_content");
            if (n == 0)
                n = add_text(&r->reasoning, &r->has_reasoning, d, "reasoning");
            if (n < 0)
                goto bad_type;
            got += n;
        }
    } else {
        if ((n = add_text(&r->content, &r->has_content, c, "text")) < 0)
            goto bad_type;
        got += n;
        json_t *ids = json_object_get(c, "token_ids");
        if (json_is_array(ids)) {
            if (!r->token_ids)
                r->token_ids = json_array();
            json_array_extend(r->token_ids, ids);
        }
    }
    if (got > 0)
        r->got_token = true;
    take_finish(r, c);
    if (!r->raw)
        r->raw = json_incref(v);
    goto cleanup;
bad_type:
    rc = malformed(r, "stream delta text is not a string");
cleanup:
    json_decref(v);
    return rc;
}

/* Over-context messages: each pattern names (prompt, max) in the groups given. */
static const struct {
    const char *re;
    int prompt_group, max_group;
} ctx_patterns[] = {
    {"maximum context length is (\\d+) tokens\\. However, you requested \\d+ tokens \\((\\d+) "
     "in the messages",
     2, 1},
    {"maximum context length is (\\d+) tokens and your request has (\\d+) input tokens", 2, 1},
    {"maximum context length is (\\d+) tokens\\. However, your request has (\\d+) input tokens", 2,
     1},
    {"maximum context length of (\\d+) tokens\\. You requested a total of \\d+ tokens: (\\d+) "
     "tokens from the input",
     2, 1},
    {"input \\((\\d+) tokens\\) is longer than the model's context length \\((\\d+) tokens\\)", 1,
     2},
    /* llama-server's exceed_context_size_error (it also sends n_prompt_tokens and n_ctx) */
    {"request \\((\\d+) tokens\\) exceeds the available context size \\((\\d+) tokens\\)", 1, 2},
    {"maximum context length is (\\d+) tokens", 0, 1},
    {"maximum context length of (\\d+) tokens", 0, 1},
    {"(?i)context length exceeded|context_length_exceeded", 0, 0},
};

static long group_long(pcre2_match_data *md, const char *s, int g)
{
    if (g <= 0)
        return -1;
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    if (ov[2 * g] == PCRE2_UNSET)
        return -1;
    return strtol(s + ov[2 * g], NULL, 10);
}

bool dsa_resp_context_error(const char *msg, long *prompt_tokens, long *max_len)
{
    *prompt_tokens = *max_len = -1;
    if (!msg)
        return false;
    /* compiled once per call: over-context errors are rare, so simplicity wins */
    for (size_t i = 0; i < sizeof ctx_patterns / sizeof ctx_patterns[0]; i++) {
        int ec;
        PCRE2_SIZE eo;
        pcre2_code *re =
            pcre2_compile((PCRE2_SPTR)ctx_patterns[i].re, PCRE2_ZERO_TERMINATED, 0, &ec, &eo, NULL);
        if (!re)
            continue;
        pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
        int rc = pcre2_match(re, (PCRE2_SPTR)msg, strlen(msg), 0, 0, md, NULL);
        if (rc > 0) {
            *prompt_tokens = group_long(md, msg, ctx_patterns[i].prompt_group);
            *max_len = group_long(md, msg, ctx_patterns[i].max_group);
        }
        pcre2_match_data_free(md);
        pcre2_code_free(re);
        if (rc > 0)
            return true;
    }
    return false;
}
