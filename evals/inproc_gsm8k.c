/*
 * GSM8K in-process (inproc_gsm8k.h): the questions go through the run loop (src/run/loop.h)
 * to the in-process backend as DSA_API_MTP_VERIFY requests; this file builds the request of
 * each question and its record from the answer.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "evals/inproc_gsm8k.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "evals/inproc_header.h"
#include "store/store.h"
#include "util/buf.h"
#include "util/exitcode.h"
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

struct state {
    const struct dsa_inproc_run *o;
    const struct dsa_inproc_gsm8k_item *items;
    size_t n, next;
    struct dsa_inproc_sink sink;
};

struct job {
    struct state *st;
    struct id id;
};

/* the record of an answered question, keys in the order run files have always had */
static json_t *item_record(const struct job *j, const struct dsa_result *res)
{
    bool same = json_is_true(json_object_get(res->raw, "identical"));
    json_t *rec = json_pack("{s:s, s:s, s:s, s:f, s:n}", "id", j->id.s, "bin", "all", "status",
                            "ok", "score", same ? 1.0 : 0.0, "error");
    static const char *const keys[] = {"identical",
                                       "logits_identical",
                                       "first_diff_step",
                                       "steps",
                                       "rows",
                                       "prompt_tokens",
                                       "context_tokens",
                                       "mtp",
                                       "topk",
                                       "selection_sha256",
                                       NULL};
    for (size_t k = 0; keys[k]; k++)
        json_object_set(rec, keys[k], json_object_get(res->raw, keys[k]));
    return rec;
}

static void on_verify(const struct dsa_result *res)
{
    struct job *j = res->ud;
    if (!dsa_inproc_sink_skip(&j->st->sink, res))
        dsa_inproc_sink_append(&j->st->sink, item_record(j, res));
    free(j);
}

/* the run loop's submit_next: the next question of this shard without a record, sent */
static int submit_next(void *ud, dsa_backend *b)
{
    struct state *st = ud;
    while (st->next < st->n) {
        const struct dsa_inproc_gsm8k_item *it = &st->items[st->next++];
        struct id id = item_id(it);
        if (!dsa_shard_keep(&st->o->shard, id.s) || dsa_run_has(st->sink.run, id.s))
            continue;
        struct job *j = dsa_xcalloc(1, sizeof *j);
        *j = (struct job){st, id};
        json_t *body =
            json_pack("{s:s%, s:s%, s:i}", "prompt", it->prompt, it->prompt_len, "continuation",
                      it->continuation, it->continuation_len, "mtp", st->o->mtp);
        struct dsa_request req = {
            .api = DSA_API_MTP_VERIFY, .body = body, .endpoint = -1, .done = on_verify, .ud = j};
        int rc = dsa_backend_submit(b, &req);
        json_decref(body);
        if (rc) {
            free(j);
            return -DSA_EXIT_INTERNAL;
        }
        return 1;
    }
    return 0;
}

int dsa_inproc_gsm8k_run(const struct dsa_inproc_run *o, const char *mode,
                         const char *dataset_sha256, const struct dsa_inproc_gsm8k_item *items,
                         size_t n)
{
    int ret = DSA_EXIT_OK;
    dsa_backend *b = NULL;
    json_t *header = NULL;
    char *path = NULL;
    struct state st = {.o = o, .items = items, .n = n};
    size_t nsame = 0, nlogits = 0, ndone = 0;
    if (o->mtp < 0 || o->mtp > 3) {
        dsa_errorf("--mtp N must be 0..3 in-process (next_n = N+1 <= 4)");
        return DSA_EXIT_USAGE;
    }
    if (!(b = dsa_inproc_backend_new(&o->stack)))
        return DSA_EXIT_BACKEND;
    header = dsa_inproc_header_new(dsa_backend_describe(b), "gsm8k", o);
    json_t *backend = json_object_get(header, "backend"); /* borrowed from the header */
    json_t *match = json_object_get(header, "match");
    json_object_set_new(match, "dataset_sha256", json_string(dataset_sha256));
    json_object_set_new(match, "prompt", json_string(mode));
    json_object_set_new(match, "mtp", json_integer(o->mtp));
    json_object_set_new(match, "limit", json_integer((json_int_t)n));
    dsa_shard_match(&o->shard, match);
    path = dsa_run_file_name(o->out_dir, 1);
    if ((ret =
             dsa_run_open_status(&st.sink.run, path, header, o->force_new ? DSA_RUN_FORCE_NEW : 0)))
        goto cleanup;
    size_t in_shard = 0;
    for (size_t i = 0; i < n; i++)
        in_shard += dsa_shard_keep(&o->shard, item_id(&items[i]).s);
    dsa_run_note_resume(dsa_run_count(st.sink.run), in_shard, path);
    if (!o->json)
        printf("gsm8k in-process: MTP verify next_n=%d vs one row at a time, %s on %s, %s, top-%d "
               "-> %s\n",
               o->mtp + 1,
               json_string_value(json_object_get(json_object_get(backend, "kernels"), "name")),
               dsa_inproc_backend_device(b),
               json_string_value(json_object_get(backend, "variant_str")), o->stack.topk, path);
    fflush(stdout);
    ret = dsa_inproc_drive(o, b, submit_next, &st, &st.sink);
    /* the verdict over this shard's questions that have a record (resumed or new) */
    for (size_t i = 0; i < n; i++) {
        json_t *rec = dsa_run_get(st.sink.run, item_id(&items[i]).s);
        if (!rec || !dsa_shard_keep(&o->shard, item_id(&items[i]).s))
            continue;
        ndone++;
        nsame += json_is_true(json_object_get(rec, "identical"));
        nlogits += json_is_true(json_object_get(rec, "logits_identical"));
    }
    if (!o->json) /* --json: the caller prints the summary document */
        printf("identical selections: %zu/%zu questions; bit-identical logits: %zu/%zu\n", nsame,
               ndone, nlogits, ndone);
    if (ret == DSA_EXIT_OK && nsame != ndone)
        ret = DSA_EXIT_FAIL;
cleanup:
    dsa_run_free(&st.sink.run);
    json_decref(header);
    free(path);
    dsa_backend_free(&b);
    return ret;
}
