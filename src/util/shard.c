/* --shard i/n; see shard.h.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "util/shard.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "util/hash.h"
#include "util/msg.h"

int dsa_shard_parse(const char *s, struct dsa_shard *out)
{
    out->i = out->n = 0;
    if (!s)
        return 0;
    int i, n;
    char tail;
    if (sscanf(s, "%d/%d%c", &i, &n, &tail) != 2 || n < 1 || n > 65536 || i < 1 || i > n ||
        strchr(s, ' ') || s[0] == '+') {
        dsa_errorf("--shard '%s' is not i/n with 1 <= i <= n (e.g. 1/4)", s);
        return -1;
    }
    out->i = i;
    out->n = n;
    return 0;
}

bool dsa_shard_keep(const struct dsa_shard *s, const char *id)
{
    if (!s || s->n <= 1)
        return true;
    /* splitmix64 after FNV-1a: FNV alone puts ids that differ in the last digit ("q0001",
       "q0002") into neighbouring residues, which for small n would alternate shards by index */
    uint64_t h = dsa_splitmix64(dsa_fnv1a64(id, strlen(id)));
    return (int)(h % (uint64_t)s->n) == s->i - 1;
}

void dsa_shard_match(const struct dsa_shard *s, json_t *match)
{
    if (!s || s->n == 0)
        return;
    char label[32];
    snprintf(label, sizeof label, "%d/%d", s->i, s->n);
    json_object_set_new(match, "shard", json_string(label));
}
