/*
 * --shard i/n: which samples one process of a split run takes (docs/runfiles.md "Sharding").
 * A sample belongs to shard 1 + splitmix64(fnv1a64(id)) mod n, so the split depends on the ids
 * alone (not on the order, the filters or the backend) and `dsa-eval merge` of the n run files
 * gives the records of the unsharded run. Pure functions of their arguments.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_UTIL_SHARD_H
#define DSA_UTIL_SHARD_H

#include <jansson.h>
#include <stdbool.h>

/* --shard i/n; n == 0: unsharded (every sample runs) */
struct dsa_shard {
    int i, n;
};

/* Parses "i/n" with 1 <= i <= n <= 65536 (NULL: unsharded). Returns 0, or -1 with one line
   printed (exit DSA_EXIT_USAGE). */
int dsa_shard_parse(const char *s, struct dsa_shard *out);
/* true when the sample with this id belongs to the shard (always when unsharded or NULL) */
bool dsa_shard_keep(const struct dsa_shard *s, const char *id);
/* Sets match."shard" = "i/n" when sharded, so that a resume stays in its shard and `merge`
   knows the parts; an unsharded match is left as it is (its bytes do not change). */
void dsa_shard_match(const struct dsa_shard *s, json_t *match);

#endif
