/*
 * Embedded samples: lookup, and materialisation into the cache for the streaming readers.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "datasets/samples.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/msg.h"

const struct dsa_sample *dsa_sample_find(const char *name)
{
    if (!strncmp(name, DSA_SAMPLE_PREFIX, strlen(DSA_SAMPLE_PREFIX)))
        name += strlen(DSA_SAMPLE_PREFIX);
    size_t n = strlen(name);
    /* README spells the demo sample without its ".jsonl": accept both */
    for (const struct dsa_sample *s = dsa_samples; s->name; s++)
        if (!strcmp(s->name, name) ||
            (!strncmp(s->name, name, n) && !strcmp(s->name + n, ".jsonl")))
            return s;
    return NULL;
}

char *dsa_sample_path(const char *name)
{
    const struct dsa_sample *s = dsa_sample_find(name);
    if (!s) {
        struct dsa_buf known = DSA_BUF_INIT;
        for (const struct dsa_sample *k = dsa_samples; k->name; k++)
            dsa_buf_addf(&known, "%s%s%s", known.len ? ", " : "", DSA_SAMPLE_PREFIX, k->name);
        dsa_errorf("'%s' is not a shipped sample (known: %s)", name, known.data);
        dsa_buf_release(&known);
        return NULL;
    }
    char *cache = dsa_cache_dir();
    struct dsa_buf dir = DSA_BUF_INIT, path = DSA_BUF_INIT;
    dsa_buf_addf(&dir, "%s/samples/%.16s", cache, s->sha256);
    dsa_buf_addf(&path, "%s/%s", dir.data, s->name);
    free(cache);
    char hex[65];
    char *ret = NULL;
    /* reuse only a verified copy; anything else is rewritten from the embedded bytes */
    if (dsa_is_file(path.data) && !dsa_sha256_file(path.data, hex) && !strcmp(hex, s->sha256)) {
        ret = dsa_buf_detach(&path, NULL);
        goto cleanup;
    }
    if (dsa_mkdirs(dir.data))
        goto cleanup;
    struct dsa_atomic a;
    if (dsa_atomic_open(&a, path.data))
        goto cleanup;
    fwrite(s->data, 1, s->len, a.f); /* a short write shows in the stream's error flag */
    if (dsa_atomic_commit(&a))
        goto cleanup;
    ret = dsa_buf_detach(&path, NULL);
cleanup:
    dsa_buf_release(&dir);
    dsa_buf_release(&path);
    return ret;
}
