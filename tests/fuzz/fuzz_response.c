/* Fuzz target: whole-response parsers (chat, completion, generate, tokenize, both error
 * shapes) and the over-context message recogniser. The first byte picks the API.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/response.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    enum dsa_api api = (enum dsa_api)(data[0] % 4);
    struct dsa_resp r;
    dsa_resp_init(&r);
    dsa_resp_parse_body(&r, api, (const char *)data + 1, size - 1);
    dsa_resp_release(&r);
    /* copy with a NUL terminator for the message recogniser */
    char *s = fuzz_cstr(data + 1, size - 1);
    if (!s)
        return 0;
    long pt, ml;
    dsa_resp_context_error(s, &pt, &ml);
    free(s);
    return 0;
}
