/* Fuzz target: dsa-eval's readers of llama-server answers (backend/llamacpp.c): the
 * /v1/models card context, /props, /apply-template's prompt, and the timings of a response
 * (after the whole-response parser, as the endpoint backend runs them), plus the /tokenize
 * body built from whatever prompt came back.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/llamacpp.h"
#include "backend/response.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *v = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (v) {
        json_t *card = json_array_get(json_object_get(v, "data"), 0);
        (void)dsa_llamacpp_card_context(card ? card : v);
        char *ver = NULL;
        long ctx;
        dsa_llamacpp_server_info(v, &ver, &ctx);
        free(ver);
        size_t len = 0;
        const char *p = dsa_llamacpp_template_prompt(v, &len);
        if (p) {
            json_t *b = dsa_llamacpp_count_body(p, len);
            char *s = json_dumps(b, JSON_COMPACT);
            free(s);
            json_decref(b);
        }
        json_t *in = json_pack("{s:O}", "messages", v);
        json_t *b = dsa_llamacpp_tokenize_body("m", in);
        json_decref(b);
        json_decref(in);
        json_decref(dsa_llamacpp_timings(v));
        json_decref(v);
    }
    /* the response parsers keep raw; its timings are what the evals record */
    for (int api = DSA_API_CHAT; api <= DSA_API_COMPLETION; api++) {
        struct dsa_resp r;
        dsa_resp_init(&r);
        if (dsa_resp_parse_body(&r, (enum dsa_api)api, (const char *)data, size) == DSA_RESP_OK)
            json_decref(dsa_llamacpp_timings(r.raw));
        dsa_resp_release(&r);
    }
    return 0;
}
