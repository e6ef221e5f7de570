/*
 * MRCR in-process (inproc_mrcr.h): the rows go through the run loop (src/run/loop.h) to the
 * in-process backend as DSA_API_SELECT requests; this file builds each request from its row
 * (which messages carry the row's topic) and each record from the answer.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "evals/inproc_mrcr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "datasets/mrcr.h"
#include "evals/inproc_header.h"
#include "store/store.h"
#include "util/buf.h"
#include "util/exitcode.h"
#include "util/msg.h"
#include "util/progress.h"

struct state {
    const struct dsa_inproc_run *o;
    struct dsa_inproc_sink sink;
    dsa_progress *pg;
    struct dsa_mrcr_filter filter;
    struct dsa_mrcr_files files;
    struct dsa_mrcr_row row;
};

/* one row in flight */
struct job {
    struct state *st;
    char id[32];
    const char *bin_label;
    long bin_tokens;
};

/* The request of one row: its messages, the needle message (docs/mrcr.md "The dataset": the
   needle is messages[desired_msg_index + 1]) and the messages that carry its topic
   (proxy-v2, kernels/proxy.h): the needle, every other reply to the needle's request (MRCR's
   other needles, which share its lexical features) and the question. */
static json_t *select_body(const struct dsa_inproc_run *o, const struct dsa_mrcr_row *row)
{
    size_t nmsg = json_array_size(row->messages);
    long needle = row->desired_msg_index + 1;
    const char *req = needle >= 1 ? json_string_value(json_object_get(
                                        json_array_get(row->messages, needle - 1), "content"))
                                  : NULL;
    json_t *topic = json_array();
    for (size_t i = 1; i < nmsg; i++) {
        const char *prev =
            json_string_value(json_object_get(json_array_get(row->messages, i - 1), "content"));
        bool same = req && prev && !strcmp(prev, req);
        if ((long)i == needle || (same && i + 1 < nmsg) || i + 1 == nmsg)
            json_array_append_new(topic, json_integer((json_int_t)i));
    }
    return json_pack("{s:O, s:i, s:I, s:s?, s:o}", "messages", row->messages, "max_query",
                     o->max_query, "needle_message", (json_int_t)needle, "topic", req,
                     "topic_messages", topic);
}

/* the record of an answered row, keys in the order run files have always had */
static json_t *row_record(const struct job *j, const struct dsa_result *res)
{
    if (res->status != DSA_RES_OK)
        return json_pack("{s:s, s:s, s:I, s:s, s:n, s:s}", "id", j->id, "bin", j->bin_label,
                         "bin_tokens", (json_int_t)j->bin_tokens, "status", "failed", "score",
                         "error", res->error ? res->error : "failed");
    json_t *rec = json_pack("{s:s, s:s, s:I, s:s}", "id", j->id, "bin", j->bin_label, "bin_tokens",
                            (json_int_t)j->bin_tokens, "status", "ok");
    dsa_inproc_select_fields(rec, res->raw);
    return rec;
}

static void on_select(const struct dsa_result *res)
{
    struct job *j = res->ud;
    struct state *st = j->st;
    /* a row takes seconds on the CPU: the meter (with ETA) shows it */
    if (!dsa_inproc_sink_skip(&st->sink, res) &&
        dsa_inproc_sink_append(&st->sink, row_record(j, res)) && st->pg)
        dsa_progress_done(st->pg, res->status != DSA_RES_OK);
    free(j);
}

/* the run loop's submit_next: the next row of this shard without a record, sent */
static int submit_next(void *ud, dsa_backend *b)
{
    struct state *st = ud;
    const struct dsa_inproc_run *o = st->o;
    for (;;) {
        int rc = dsa_mrcr_files_next(&st->files, &st->row);
        if (rc <= 0)
            return rc < 0 ? -DSA_EXIT_DATA : 0;
        if (!dsa_shard_keep(&o->shard, st->row.id) || dsa_run_has(st->sink.run, st->row.id))
            continue;
        struct job *j = dsa_xcalloc(1, sizeof *j);
        *j = (struct job){st, "", st->row.bin_label, st->row.bin_tokens};
        snprintf(j->id, sizeof j->id, "%s", st->row.id);
        json_t *body = select_body(o, &st->row);
        struct dsa_request req = {
            .api = DSA_API_SELECT, .body = body, .endpoint = -1, .done = on_select, .ud = j};
        rc = dsa_backend_submit(b, &req);
        json_decref(body);
        if (rc) {
            free(j);
            return -DSA_EXIT_INTERNAL;
        }
        return 1;
    }
}

static int bin_of(json_t *rec)
{
    long edge = (long)json_integer_value(json_object_get(rec, "bin_tokens"));
    for (int b = 0; b < DSA_MRCR_NBINS; b++)
        if (edge == 8192L << b)
            return b;
    return -1;
}

/*
 *   bin      rows     recall@k   needle  needle(golden)
 *   ≤8K         3       0.9885    0.348           0.353
 *   µs per context token: 94.1 = proxy 3.0 + S1 2.1 + … + host 0.5
 * from the run file's records (resumed and new, file order). Returns DSA_EXIT_FAIL when a
 * record is not ok, else DSA_EXIT_OK.
 */
static int summarize(const dsa_run *run, bool print)
{
    struct dsa_inproc_bin_sum sums[DSA_MRCR_NBINS] = {{0}};
    struct dsa_inproc_stage_sum stages = {{0}, 0};
    int ret = DSA_EXIT_OK;
    for (size_t i = 0; i < dsa_run_count(run); i++) {
        json_t *rec = dsa_run_record(run, i);
        int b = bin_of(rec);
        if (strcmp(json_string_value(json_object_get(rec, "status")), "ok") || b < 0) {
            ret = DSA_EXIT_FAIL;
            continue;
        }
        dsa_inproc_bin_sum_add(&sums[b], rec);
        dsa_inproc_stage_sum_add(&stages, rec);
    }
    if (!print)
        return ret;
    const char *labels[DSA_MRCR_NBINS];
    for (int b = 0; b < DSA_MRCR_NBINS; b++)
        labels[b] = dsa_mrcr_bin_label(b);
    dsa_inproc_bin_table_print(labels, sums, DSA_MRCR_NBINS, &stages);
    return ret;
}

static bool shard_keep(void *ud, const char *id)
{
    return dsa_shard_keep(ud, id);
}

/* every file checked (and hashed) before any work; the rows of this shard into *selected */
static int check_files(const struct dsa_inproc_run *o, json_t *files, json_t *shas, long *selected)
{
    struct dsa_mrcr_filter filt = {o->needles_mask, o->bins_mask, o->limit};
    long all = 0;
    *selected = 0;
    for (size_t i = 0; i < o->ndatasets; i++) {
        dsa_mrcr_reader *rd = dsa_mrcr_open(o->datasets[i], &filt);
        if (!rd)
            return DSA_EXIT_DATA;
        all += (long)dsa_mrcr_nselected(rd);
        *selected += dsa_mrcr_nselected_if(rd, shard_keep, (void *)&o->shard);
        json_array_append_new(
            files, json_pack("{s:s, s:s}", "path", o->datasets[i], "sha256", dsa_mrcr_sha256(rd)));
        json_array_append_new(shas, json_string(dsa_mrcr_sha256(rd)));
        dsa_mrcr_free(&rd);
    }
    if (!all) { /* as the endpoint run: an empty table with exit 0 would read as a pass */
        dsa_errorf("no rows of '%s' pass the filters (--needles, --bins)", o->dataset_name);
        return DSA_EXIT_DATA;
    }
    return DSA_EXIT_OK;
}

static json_t *mrcr_header(dsa_backend *b, const struct dsa_inproc_run *o, json_t *files,
                           json_t *shas)
{
    json_t *header = dsa_inproc_header_new(dsa_backend_describe(b), "mrcr", o);
    json_t *match = json_object_get(header, "match");
    /* MRCR rows plant their retrieval structure in the proxy (kernels/proxy.h) */
    json_object_set_new(match, "proxy", json_string(DSA_INPROC_PROXY_MRCR));
    json_object_set_new(json_object_get(header, "backend"), "proxy",
                        json_string(DSA_INPROC_PROXY_MRCR));
    json_object_set(match, "dataset_sha256", shas);
    json_object_set_new(match, "max_query", json_integer(o->max_query));
    json_object_set_new(match, "limit", json_integer(o->limit));
    json_object_set_new(match, "bins_mask", json_integer(o->bins_mask));
    json_object_set_new(match, "needles_mask", json_integer(o->needles_mask));
    dsa_shard_match(&o->shard, match);
    json_t *ds = json_object_get(header, "dataset");
    json_object_set_new(ds, "name",
                        json_string(o->dataset_name ? o->dataset_name : o->datasets[0]));
    json_object_set(ds, "files", files);
    return header;
}

int dsa_inproc_mrcr_run(const struct dsa_inproc_run *o)
{
    dsa_backend *b = NULL;
    json_t *header = NULL, *files = json_array(), *shas = json_array();
    char *path = NULL;
    struct state st = {.o = o, .filter = {o->needles_mask, o->bins_mask, o->limit}};
    st.files = (struct dsa_mrcr_files){o->datasets, o->ndatasets, &st.filter, 0, NULL};
    long selected = 0;
    int ret = check_files(o, files, shas, &selected);
    if (ret)
        goto cleanup;
    if (!(b = dsa_inproc_backend_new(&o->stack))) {
        ret = DSA_EXIT_BACKEND;
        goto cleanup;
    }
    header = mrcr_header(b, o, files, shas);
    path = dsa_run_file_name(o->out_dir, 1);
    if ((ret =
             dsa_run_open_status(&st.sink.run, path, header, o->force_new ? DSA_RUN_FORCE_NEW : 0)))
        goto cleanup;
    size_t resumed = dsa_run_count(st.sink.run);
    size_t done = resumed < (size_t)selected ? resumed : (size_t)selected;
    dsa_run_note_resume(resumed, (size_t)selected, path);
    st.pg = o->quiet ? NULL : dsa_progress_new("mrcr in-process", (size_t)selected, done);
    json_t *backend = json_object_get(header, "backend");
    if (!o->json)
        printf(
            "mrcr in-process on the proxy model (%s, seed %llu; no model weights): %s on %s, %s, "
            "top-%d -> %s\n",
            DSA_INPROC_PROXY_MRCR, (unsigned long long)o->stack.seed,
            json_string_value(json_object_get(json_object_get(backend, "kernels"), "name")),
            dsa_inproc_backend_device(b),
            json_string_value(json_object_get(backend, "variant_str")), o->stack.topk, path);
    fflush(stdout);
    ret = dsa_inproc_drive(o, b, submit_next, &st, &st.sink);
    if (st.pg) {
        dsa_progress_finish(st.pg);
        dsa_progress_free(&st.pg);
    }
    int sr = summarize(st.sink.run, !o->json);
    if (ret == DSA_EXIT_OK)
        ret = sr;
cleanup:
    dsa_mrcr_row_release(&st.row);
    dsa_mrcr_files_release(&st.files);
    dsa_run_free(&st.sink.run);
    json_decref(header);
    json_decref(files);
    json_decref(shas);
    free(path);
    dsa_backend_free(&b);
    return ret;
}
