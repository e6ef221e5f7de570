/* Fuzz target: whole-response parsers (chat, completion, generate, tokenize, both error
 * shapes) and the over-context message recogniser. The first byte picks the API. A tokenize
 * body is also read as the endpoint reads it, its token list found while it arrives in pieces
 * (sizes from the first byte): it must read the same as the whole body, and the list must be
 * where the old two-pass cut put it, or the target aborts.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/response.h"
#include "fuzz.h"

#include "../token_cut_ref.h"

/* the tokenize body fed in pieces of 1 + (k * step) % 97 bytes, as libcurl hands it over */
static void check_streamed(const char *body, size_t len, unsigned step)
{
    struct dsa_resp_list l;
    dsa_resp_list_init(&l);
    for (size_t at = 0, k = 0; at < len; k++) {
        size_t piece = 1 + (k * step) % 97;
        at += piece < len - at ? piece : len - at;
        dsa_resp_list_feed(&l, body, at);
    }
    size_t open = 0, close = 0;
    bool want = ref_token_cut(body, len, &open, &close);
    if ((l.state == DSA_RESP_LIST_FOUND) != want || (want && (l.open != open || l.close != close)))
        abort();
    struct dsa_resp whole, streamed;
    dsa_resp_init(&whole);
    dsa_resp_init(&streamed);
    int a = dsa_resp_parse_body(&whole, DSA_API_TOKENIZE, body, len);
    int b = dsa_resp_parse_body_list(&streamed, DSA_API_TOKENIZE, body, len, &l);
    if (a != b || whole.prompt_tokens != streamed.prompt_tokens ||
        whole.max_model_len != streamed.max_model_len ||
        strcmp(whole.error ? whole.error : "", streamed.error ? streamed.error : ""))
        abort();
    dsa_resp_release(&whole);
    dsa_resp_release(&streamed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    enum dsa_api api = (enum dsa_api)(data[0] % 4);
    struct dsa_resp r;
    dsa_resp_init(&r);
    dsa_resp_parse_body(&r, api, (const char *)data + 1, size - 1);
    dsa_resp_release(&r);
    if (api == DSA_API_TOKENIZE) {
        char *body = fuzz_copy(data + 1, size - 1);
        if (body)
            check_streamed(body, size - 1, data[0]);
        free(body);
    }
    /* copy with a NUL terminator for the message recogniser */
    char *s = fuzz_cstr(data + 1, size - 1);
    if (!s)
        return 0;
    long pt, ml;
    dsa_resp_context_error(s, &pt, &ml);
    free(s);
    return 0;
}
