/*
 * GSM8K in-process (inproc_gsm8k.h).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "evals/inproc_gsm8k.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datasets/tokenize.h"
#include "evals/inproc_header.h"
#include "kernels/plugin.h"
#include "run/loop.h"
#include "store/store.h"
#include "util/buf.h"
#include "util/exitcode.h"
#include "util/hash.h"
#include "util/msg.h"

struct id {
    char s[32];
};

/* "q0007": the test index, as the endpoint records it */
static struct id item_id(const struct dsa_inproc_gsm8k_item *it)
{
    struct id id;
    snprintf(id.s, sizeof id.s, "q%04zu", it->index);
    return id;
}

static json_t *run_item(dsa_inproc *ip, const struct dsa_inproc_opts *o,
                        const struct dsa_inproc_gsm8k_item *it)
{
    size_t np = dsa_tok_encode(it->prompt, it->prompt_len, NULL, 0);
    size_t nc = dsa_tok_encode(it->continuation, it->continuation_len, NULL, 0);
    uint32_t *tok = dsa_xmalloc((np + nc + 1) * sizeof *tok);
    dsa_tok_encode(it->prompt, it->prompt_len, tok, np);
    dsa_tok_encode(it->continuation, it->continuation_len, tok + np, nc);
    long T = (long)(np + nc), P = (long)np;
    int n = o->mtp + 1, K = o->topk;
    long maxsteps = (T - P) / n + 1;
    unsigned char *same = dsa_xcalloc((size_t)maxsteps, 1),
                  *lsame = dsa_xcalloc((size_t)maxsteps, 1);
    int32_t *sel = dsa_xmalloc((size_t)maxsteps * n * K * 4);
    long steps = 0;
    struct id id = item_id(it);
    json_t *rec = NULL;
    if (dsa_inproc_mtp(ip, tok, T, P, n, &steps, same, lsame, sel) == 0) {
        long first = -1;
        int all_logits = 1;
        dsa_sha256 *h = dsa_sha256_new();
        for (long s = 0; s < steps; s++) {
            if (!same[s] && first < 0)
                first = s;
            all_logits &= lsame[s];
        }
        for (long r = 0; r < steps * n; r++) {
            int32_t cnt = 0;
            const int32_t *row = sel + (size_t)r * K;
            while (cnt < K && row[cnt] >= 0)
                cnt++;
            dsa_sha256_update(h, &cnt, 4);
            dsa_sha256_update(h, row, (size_t)cnt * 4);
        }
        char hex[65];
        dsa_sha256_final_hex(h, hex);
        dsa_sha256_free(&h);
        rec = json_pack("{s:s, s:s, s:s, s:f, s:n, s:b, s:b, s:o, s:I, s:I, s:I, s:I, s:i, s:i, "
                        "s:s}",
                        "id", id.s, "bin", "all", "status", "ok", "score", first < 0 ? 1.0 : 0.0,
                        "error", "identical", first < 0, "logits_identical", all_logits,
                        "first_diff_step", first < 0 ? json_null() : json_integer(first), "steps",
                        (json_int_t)steps, "rows", (json_int_t)(steps * n), "prompt_tokens",
                        (json_int_t)P, "context_tokens", (json_int_t)T, "mtp", o->mtp, "topk", K,
                        "selection_sha256", hex);
    }
    free(tok);
    free(same);
    free(lsame);
    free(sel);
    return rec;
}

int dsa_inproc_gsm8k_run(const struct dsa_inproc_opts *o, const char *mode,
                         const char *dataset_sha256, const struct dsa_inproc_gsm8k_item *items,
                         size_t n)
{
    int ret = DSA_EXIT_OK;
    dsa_inproc *ip = NULL;
    dsa_run *run = NULL;
    json_t *header = NULL;
    char *path = NULL;
    size_t nsame = 0, nlogits = 0, ndone = 0;
    if (o->mtp < 0 || o->mtp > 3) {
        dsa_errorf("--mtp N must be 0..3 in-process (next_n = N+1 <= 4)");
        return DSA_EXIT_USAGE;
    }
    if (!(ip = dsa_inproc_new(o)))
        return DSA_EXIT_BACKEND;
    header = dsa_inproc_header_new(ip, "gsm8k", o);
    json_t *backend = json_object_get(header, "backend"); /* borrowed from the header */
    json_t *match = json_object_get(header, "match");
    json_object_set_new(match, "dataset_sha256", json_string(dataset_sha256));
    json_object_set_new(match, "prompt", json_string(mode));
    json_object_set_new(match, "mtp", json_integer(o->mtp));
    json_object_set_new(match, "limit", json_integer((json_int_t)n));
    dsa_shard_match(&o->shard, match);
    path = dsa_run_file_name(o->out_dir, 1);
    if ((ret = dsa_loop_open(&run, path, header, o->force_new ? DSA_RUN_FORCE_NEW : 0)))
        goto cleanup;
    size_t in_shard = 0;
    for (size_t i = 0; i < n; i++)
        in_shard += dsa_shard_keep(&o->shard, item_id(&items[i]).s);
    dsa_loop_note_resume(dsa_run_count(run), in_shard, path);
    if (!o->json)
        printf("gsm8k in-process: MTP verify next_n=%d vs one row at a time, %s on %s, %s, top-%d "
               "-> %s\n",
               o->mtp + 1,
               json_string_value(json_object_get(json_object_get(backend, "kernels"), "name")),
               dsa_inproc_device(ip), json_string_value(json_object_get(backend, "variant_str")),
               o->topk, path);
    fflush(stdout);
    for (size_t i = 0; i < n; i++) {
        if (!dsa_shard_keep(&o->shard, item_id(&items[i]).s))
            continue;
        json_t *rec = dsa_run_get(run, item_id(&items[i]).s);
        if (rec) {
            json_incref(rec);
        } else {
            if (!(rec = run_item(ip, o, &items[i]))) {
                ret = DSA_EXIT_BACKEND;
                break;
            }
            if (dsa_run_append(run, rec)) {
                json_decref(rec);
                ret = DSA_EXIT_IO;
                break;
            }
        }
        ndone++;
        nsame += json_is_true(json_object_get(rec, "identical"));
        nlogits += json_is_true(json_object_get(rec, "logits_identical"));
        json_decref(rec);
        if (o->interrupted && *o->interrupted) {
            ret = DSA_EXIT_INTERRUPTED;
            break;
        }
    }
    if (!o->json) /* --json: the caller prints the summary document */
        printf("identical selections: %zu/%zu questions; bit-identical logits: %zu/%zu\n", nsame,
               ndone, nlogits, ndone);
    if (ret == DSA_EXIT_OK && nsame != ndone)
        ret = DSA_EXIT_FAIL;
cleanup:
    dsa_run_free(&run);
    json_decref(header);
    free(path);
    dsa_inproc_free(&ip);
    dsa_kernels_unload();
    return ret;
}
