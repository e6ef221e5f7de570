/* Fuzz target: what the test server parses from clients. The first byte picks the endpoint
 * (chat, completions, SGLang /generate, /tokenize) and the rest is the request body; the MRCR
 * question parser and request matcher also get the raw bytes. Nothing may crash or leak,
 * whatever the body.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mrcr.h"
#include "server.h"
#include "tok.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static const char *const endpoints[] = {"chat", "completions", "generate", "tokenize"};
    int which = data[0] & 3;
    bool sglang = data[0] & 4;
    const char *body = (const char *)data + 1;
    size_t len = size - 1;
    struct srv_config cfg = {
        .model = "m",
        .max_model_len = 4096,
        .sglang = sglang,
        .eos_token_id = 1,
        .answer = {.seed = 1, .build = "b", .build_fraction = 0.5},
        .spec = {.k = 2, .rates = {1.0, 0.5}},
        .per_request_spec = 2,
    };
    char err[64];
    srv_ptable_parse("0.3", &cfg.answer.wrong, err, sizeof err);
    srv_ptable_parse("100:0,inf:0.3", &cfg.answer.garble, err, sizeof err);
    if (which == 3) {
        /* the handlers read the process-wide config; the server sets it at start-up */
        srv_cfg = &cfg;
        json_t *r = srv_http_tokenize(body, len, err, sizeof err);
        json_decref(r);
    } else {
        srv_http_fuzz_generate(&cfg, endpoints[which], body, len);
    }
    struct srv_mrcr_question q;
    if (srv_mrcr_parse_question(body, len, &q) == 0) {
        srv_mrcr_is_request(body, len, q.format, q.topic);
        srv_mrcr_question_release(&q);
    }
    srv_tok_count(body, len);
    srv_cfg = NULL; /* cfg lives on this stack frame: leave no dangling pointer behind */
    return 0;
}
