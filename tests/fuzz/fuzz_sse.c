/* Fuzz target: the SSE parser, fed the input in pieces whose sizes come from the input, and
 * each event's data through the stream-chunk parser.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/response.h"
#include "backend/sse.h"

static int on_event(void *ud, const char *event, const char *data, size_t len)
{
    (void)event;
    struct dsa_resp *r = ud;
    dsa_resp_parse_chunk(r, len & 1 ? DSA_API_CHAT : DSA_API_COMPLETION, data, len);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct dsa_resp r;
    dsa_resp_init(&r);
    struct dsa_sse p;
    dsa_sse_init(&p, on_event, &r);
    /* piece sizes 1..16 cycling from the first byte, so splits land everywhere */
    size_t step = size ? (size_t)(data[0] % 16) + 1 : 1;
    for (size_t i = 0; i < size; i += step)
        if (dsa_sse_feed(&p, (const char *)data + i, i + step > size ? size - i : step) < 0)
            break;
    dsa_sse_release(&p);
    dsa_resp_release(&r);
    return 0;
}
