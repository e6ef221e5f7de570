/*
 * dsa-eval merge: joins the run files of one sharded run (--shard i/n on several GPUs or
 * hosts) into the run file an unsharded run would have written: the same header "match"
 * without its "shard" key, and every record once. Refuses inputs from different commands
 * (other match, eval or run index) and ids present in two inputs.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "store/store.h"
#include "util/buf.h"
#include "util/exitcode.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/msg.h"
#include "util/opt.h"
#include "util/url.h"

/* "i/n" with 1 <= i <= n; anything else is an opaque shard label */
static bool parse_shard(json_t *v, long *i, long *n)
{
    const char *s = json_string_value(v);
    char tail;
    return s && sscanf(s, "%ld/%ld%c", i, n, &tail) == 2 && *i >= 1 && *i <= *n;
}

static int write_merged(const char *out, json_t *header, json_t **recs, size_t n_in)
{
    /* write beside OUT, then rename: a crash never leaves a half-merged OUT */
    struct dsa_atomic a;
    if (dsa_atomic_open(&a, out))
        return DSA_EXIT_IO;
    char *line = dsa_json_dumps_line(header);
    fprintf(a.f, "%s\n", line);
    free(line);
    for (size_t k = 0; k < n_in; k++) {
        size_t i;
        json_t *rec;
        json_array_foreach(recs[k], i, rec)
        {
            line = dsa_json_dumps_line(rec);
            fprintf(a.f, "%s\n", line);
            free(line);
        }
    }
    return dsa_atomic_commit(&a) ? DSA_EXIT_IO : DSA_EXIT_OK;
}

int cmd_merge(int argc, char **argv)
{
    /* the rules (same match but "shard", distinct ids) are in docs/runfiles.md "merge" */
    static const char *const usage[] = {"dsa-eval merge [--force] OUT IN...", NULL};
    bool force = false;
    struct dsa_option opts[] = {
        DSA_OPT_BOOL('f', "force", &force, "replace OUT if it exists"),
        DSA_OPT_END(),
    };
    int n = dsa_opt_parse(&argc, argv, opts, usage);
    if (n < 0)
        return dsa_opt_exit(n);
    if (n < 2) {
        fprintf(stderr, "usage: %s\n", usage[0]);
        return DSA_EXIT_USAGE;
    }
    const char *out = argv[0];
    size_t n_in = (size_t)n - 1;
    char **in = argv + 1;

    int ret = DSA_EXIT_DATA;
    json_t **headers = dsa_xcalloc(n_in, sizeof *headers);
    json_t **recs = dsa_xcalloc(n_in, sizeof *recs);
    json_t *seen = json_object(); /* id -> index of the input holding it */
    json_t *shards = json_object();
    json_t *merged = NULL;
    json_t *match0 = NULL;
    long shard_n = 0;

    for (size_t k = 0; k < n_in; k++) {
        if (!strcmp(in[k], out)) {
            dsa_errorf("'%s' is both the output and an input", out);
            ret = DSA_EXIT_USAGE;
            goto cleanup;
        }
    }
    struct stat st;
    if (!force && stat(out, &st) == 0) {
        dsa_errorf("'%s' exists; use --force to replace it", out);
        ret = DSA_EXIT_USAGE;
        goto cleanup;
    }

    for (size_t k = 0; k < n_in; k++) {
        if (dsa_run_load(in[k], &headers[k], &recs[k]) < 0)
            goto cleanup;
        json_t *h = headers[k];
        dsa_url_redact_json(h); /* a file written before URLs were masked */
        if (!json_object_get(h, "dsa_eval_run")) {
            dsa_errorf("'%s' is not a dsa-eval run file (a plain score file has no header)", in[k]);
            goto cleanup;
        }
        json_t *match = json_deep_copy(json_object_get(h, "match"));
        json_t *shard = json_object_get(match, "shard");
        char *label = shard ? dsa_json_dumps_line(shard) : dsa_xstrdup("(none)");
        if (shard && json_object_get(shards, label)) {
            dsa_errorf("'%s' and '%s' are the same shard %s",
                       in[json_integer_value(json_object_get(shards, label))], in[k], label);
            free(label);
            json_decref(match);
            goto cleanup;
        }
        json_object_set_new(shards, label, json_integer((json_int_t)k));
        long si, sn;
        if (shard && parse_shard(shard, &si, &sn)) {
            if (shard_n && sn != shard_n) {
                dsa_errorf("'%s' is shard %s but '%s' is of %ld shards", in[k], label, in[0],
                           shard_n);
                free(label);
                json_decref(match);
                ret = DSA_EXIT_MISMATCH;
                goto cleanup;
            }
            shard_n = sn;
        }
        free(label);
        json_object_del(match, "shard");
        if (k == 0) {
            match0 = match;
        } else {
            char *d = dsa_run_match_diff(match0, match);
            if (!d && !json_equal(json_object_get(h, "eval"), json_object_get(headers[0], "eval")))
                d = dsa_xstrdup("eval");
            if (!d && !json_equal(json_object_get(h, "run"), json_object_get(headers[0], "run")))
                d = dsa_xstrdup("run index");
            json_decref(match);
            if (d) {
                dsa_errorf("'%s' and '%s' are not shards of the same run (different %s)", in[0],
                           in[k], d);
                free(d);
                ret = DSA_EXIT_MISMATCH;
                goto cleanup;
            }
        }
        size_t i;
        json_t *rec;
        json_array_foreach(recs[k], i, rec)
        {
            const char *id = json_string_value(json_object_get(rec, "id"));
            json_t *where = json_object_get(seen, id);
            if (where) {
                dsa_errorf("id '%s' is in both '%s' and '%s'", id, in[json_integer_value(where)],
                           in[k]);
                goto cleanup;
            }
            json_object_set_new(seen, id, json_integer((json_int_t)k));
        }
    }
    if (shard_n && (long)json_object_size(shards) != shard_n)
        dsa_warnf("merging %zu of %ld shards: the merged run is incomplete (a rerun of the "
                  "unsharded command resumes it)",
                  json_object_size(shards), shard_n);

    /* the header of the unsharded run: the first input's, without "shard", plus where the
       records came from */
    merged = json_deep_copy(headers[0]);
    json_object_set(merged, "match", match0);
    json_t *from = json_array();
    for (size_t k = 0; k < n_in; k++) {
        json_t *sh = json_object_get(json_object_get(headers[k], "match"), "shard");
        json_array_append_new(from, json_pack("{s:s,s:O,s:I}", "file", in[k], "shard",
                                              sh ? sh : json_null(), "records",
                                              (json_int_t)json_array_size(recs[k])));
    }
    json_object_set_new(merged, "merged_from", from);
    ret = write_merged(out, merged, recs, n_in);
    if (ret == DSA_EXIT_OK)
        dsa_notef("merged %zu records from %zu files into '%s'", json_object_size(seen), n_in, out);
cleanup:
    for (size_t k = 0; k < n_in; k++) {
        json_decref(headers[k]);
        json_decref(recs[k]);
    }
    free(headers);
    free(recs);
    json_decref(seen);
    json_decref(shards);
    json_decref(merged);
    json_decref(match0);
    return ret;
}
