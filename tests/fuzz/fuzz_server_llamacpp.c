/* Fuzz target: the test server's llamacpp mode on arbitrary request bodies. The first byte
 * picks chat or completions (and the context size); the body goes through validation, the
 * ChatML rendering, the answerers, the response and the SSE stream builders. Nothing may
 * crash or leak, whatever the body.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llamacpp.h"
#include "server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    struct srv_config cfg = {
        .model = "m",
        .server_version = "b1",
        .max_model_len = data[0] & 2 ? 64 : 4096,
        .llamacpp = true,
        .llamacpp_metrics = true,
        .eos_token_id = 1,
        .answer = {.seed = 1, .build = "b", .build_fraction = 0.5},
        .spec = {.k = 2, .rates = {1.0, 0.5}},
    };
    char err[64];
    srv_ptable_parse("0.3", &cfg.answer.wrong, err, sizeof err);
    srv_cfg = &cfg;
    struct dsa_buf out = DSA_BUF_INIT;
    dsa_buf_init(&out);
    srv_llamacpp_generate(data[0] & 1 ? "completions" : "chat", (const char *)data + 1, size - 1,
                          &out);
    dsa_buf_release(&out);
    json_t *v = json_loadb((const char *)data + 1, size - 1, 0, NULL);
    struct dsa_buf p = DSA_BUF_INIT;
    dsa_buf_init(&p);
    srv_llamacpp_render(json_object_get(v, "messages"), &p);
    dsa_buf_release(&p);
    json_decref(v);
    srv_cfg = NULL;
    return 0;
}
