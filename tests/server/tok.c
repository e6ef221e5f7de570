/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "tok.h"

#include <stdbool.h>
#include <string.h>

#include "util/buf.h"
#include "util/hash.h"

static bool is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool is_word(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80;
}

/* Length of the UTF-8 character at s (1 for stray continuation or truncated bytes, so bad
   input still advances). */
static size_t char_len(const char *s, size_t n)
{
    unsigned char c = (unsigned char)s[0];
    size_t want = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
    if (want > n)
        return 1;
    for (size_t i = 1; i < want; i++)
        if (((unsigned char)s[i] & 0xc0) != 0x80)
            return 1;
    return want;
}

size_t srv_tok_next(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && is_space((unsigned char)s[i]))
        i++;
    if (i == n)
        return n;
    if (!is_word((unsigned char)s[i]))
        return i + char_len(s + i, n - i);
    for (int chars = 0; chars < 4 && i < n && is_word((unsigned char)s[i]); chars++)
        i += char_len(s + i, n - i);
    return i;
}

long srv_tok_count(const char *s, size_t n)
{
    long count = 0;
    for (size_t i = 0; i < n; count++)
        i += srv_tok_next(s + i, n - i);
    return count;
}

size_t srv_tok_prefix(const char *s, size_t n, long max_tokens)
{
    size_t i = 0;
    for (long t = 0; t < max_tokens && i < n; t++)
        i += srv_tok_next(s + i, n - i);
    return i;
}

long srv_tok_chat(const json_t *messages)
{
    if (!json_is_array(messages))
        return -1;
    long total = SRV_TOK_GEN_PROMPT;
    size_t i;
    const json_t *m;
    json_array_foreach(messages, i, m)
    {
        if (!json_is_object(m))
            return -1;
        const json_t *c = json_object_get(m, "content");
        total += SRV_TOK_PER_MESSAGE;
        if (json_is_string(c)) {
            total += srv_tok_count(json_string_value(c), json_string_length(c));
        } else if (json_is_array(c)) {
            size_t j;
            const json_t *part;
            json_array_foreach(c, j, part)
            {
                const json_t *t = json_object_get(part, "text");
                if (!json_is_string(t))
                    return -1;
                total += srv_tok_count(json_string_value(t), json_string_length(t));
            }
        } else if (c && !json_is_null(c)) {
            return -1;
        }
    }
    return total;
}

long *srv_tok_ids(const char *s, size_t n, size_t *n_out)
{
    size_t cap = 16, k = 0;
    long *ids = dsa_xmalloc(cap * sizeof *ids);
    for (size_t i = 0; i < n;) {
        size_t len = srv_tok_next(s + i, n - i);
        if (k == cap)
            ids = dsa_xrealloc(ids, (cap *= 2) * sizeof *ids);
        ids[k++] = (long)(dsa_fnv1a64(s + i, len) % SRV_TOK_VOCAB);
        i += len;
    }
    *n_out = k;
    return ids;
}
