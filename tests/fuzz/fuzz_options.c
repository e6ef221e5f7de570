/*
 * Fuzz target: the parsers of option values from the command line: --bins, --needles,
 * --max-bin (datasets/mrcr.c), --variant K=V (kernels/flags.c), --extra-body JSON merged into
 * a request body as the endpoint does, URLs through the redaction of their user-info
 * (src/util/url.c), --max-memory sizes and token counts (src/util/opt.c). The first byte picks
 * the parser, the rest is the value. Invariants abort(): masks within their bits, a parsed
 * variant round-trips through its string form, a merged body dumps and parses again, redaction
 * is idempotent and never keeps a password.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <fcntl.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datasets/mrcr.h"
#include "fuzz.h"
#include "dsa_kernels.h"
#include "util/opt.h"
#include "util/url.h"

static void check_variant(const char *kv)
{
    struct dsa_k_flags f, g;
    dsa_k_flags_default(&f);
    if (dsa_k_flags_set(&f, kv) < 0)
        return;
    char s[256];
    dsa_k_flags_str(&f, s, sizeof s);
    /* every flag of the string form, set on the defaults, gives the same flags back */
    dsa_k_flags_default(&g);
    for (char *item = strtok(s, ","); item; item = strtok(NULL, ","))
        if (dsa_k_flags_set(&g, item) < 0)
            abort();
    if (memcmp(&f, &g, sizeof f))
        abort();
}

static void check_extra_body(const char *text, size_t len)
{
    json_t *extra = json_loadb(text, len, 0, NULL);
    if (json_is_object(extra)) {
        /* as the endpoint builds a body: --extra-body first, the eval's keys win */
        json_t *body = json_object();
        json_object_update(body, extra);
        json_object_set_new(body, "max_tokens", json_integer(16));
        json_object_set_new(body, "model", json_string("m"));
        char *s = json_dumps(body, JSON_COMPACT);
        json_t *back = s ? json_loads(s, 0, NULL) : NULL;
        if (!back || !json_equal(back, body))
            abort();
        json_decref(back);
        free(s);
        json_decref(body);
    }
    json_decref(extra);
}

static void check_url(const char *url)
{
    char *r = dsa_url_redact(url);
    char *rr = dsa_url_redact(r);
    if (strcmp(r, rr))
        abort(); /* masking a masked URL changes nothing */
    if (dsa_url_has_userinfo(url) && !strstr(r, DSA_URL_MASK "@"))
        abort();
    if (!dsa_url_has_userinfo(url) && strcmp(r, url))
        abort();
    free(rr);
    free(r);
}

static void parse(const uint8_t *data, size_t size, const char *v);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    char *v = fuzz_cstr(data + 1, size - 1);
    if (!v)
        return 0;
    /* the parsers print one-line errors on fd 2: send them to /dev/null for this input only,
       so that libFuzzer's own output (also fd 2) stays */
    static int devnull = -2;
    if (devnull == -2)
        devnull = open("/dev/null", O_WRONLY);
    fflush(stderr);
    int saved = devnull >= 0 ? dup(2) : -1;
    if (saved >= 0)
        dup2(devnull, 2);
    parse(data, size, v);
    if (saved >= 0) {
        dup2(saved, 2);
        close(saved);
    }
    free(v);
    return 0;
}

static void parse(const uint8_t *data, size_t size, const char *v)
{
    unsigned mask = 0;
    switch (data[0] % 8) {
    case 0:
        if (dsa_mrcr_parse_bins(v, &mask) == 0 && (mask == 0 || mask > 0xffu))
            abort();
        break;
    case 1:
        (void)dsa_mrcr_parse_needles(v, &mask);
        break;
    case 2:
        if (dsa_mrcr_parse_max_bin(v, &mask) == 0 && mask > 0xffu)
            abort();
        break;
    case 3:
        check_variant(v);
        break;
    case 4:
        check_extra_body(v, size - 1);
        break;
    case 5:
        check_url(v);
        break;
    case 6:
        if (dsa_parse_bytes(v) == 0)
            abort(); /* a size is positive or refused */
        break;
    default:
        if (dsa_parse_tokens(v) < -1)
            abort();
        break;
    }
}
