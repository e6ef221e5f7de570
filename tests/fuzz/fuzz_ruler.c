/* Fuzz target: the RULER haystack reader (a caller's --haystack file: plain UTF-8 text or
 * PaulGrahamEssays.json) and, on what it accepts, one essay sample built from it; and the
 * scorer on arbitrary predictions and references (evals/ruler.h).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "evals/ruler.h"
#include "fuzz.h"

static void fuzz_score(const uint8_t *data, size_t size)
{
    /* the prediction, then up to 4 NUL-separated references */
    const char *p = memchr(data, '\0', size);
    size_t plen = p ? (size_t)(p - (const char *)data) : size;
    char *pred = fuzz_copy(data, plen);
    char *rest = p ? fuzz_cstr((const uint8_t *)p + 1, size - plen - 1) : fuzz_cstr(data, 0);
    if (pred && rest) {
        const char *refs[4];
        size_t n = 0;
        for (char *r = rest; n < 4 && r <= rest + strlen(rest); r += strlen(r) + 1) {
            refs[n++] = r;
            if (!*r)
                break;
        }
        (void)dsa_ruler_score(DSA_RULER_MATCH_ALL, pred, plen, refs, n);
        (void)dsa_ruler_score(DSA_RULER_MATCH_PART, pred, plen, refs, n);
        size_t len;
        free(dsa_ruler_postprocess(pred, plen, &len));
    }
    free(pred);
    free(rest);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_score(data, size);
    const char *path = fuzz_input_file(data, size, ".txt");
    int err = 0;
    dsa_ruler_haystack *h = dsa_ruler_haystack_new(path, &err);
    if (!h)
        return 0;
    /* a 4k sample costs about a millisecond: build one for a sixteenth of the inputs */
    if (size && data[0] % 16 == 0) {
        struct dsa_ruler_sample s;
        if (dsa_ruler_sample_make(h, size, DSA_RULER_NIAH_SINGLE_2, 0, 0, &s) == 0) {
            struct dsa_ruler_tok_span t[4];
            (void)dsa_ruler_needle_tokens(&s, t, 4);
            dsa_ruler_sample_release(&s);
        }
    }
    dsa_ruler_haystack_free(&h);
    return 0;
}
