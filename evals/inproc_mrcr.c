/*
 * MRCR in-process (inproc_mrcr.h): the pieces of the MRCR eval's hooks (evals/mrcr_eval.c) for
 * the in-process backend — the DSA_API_SELECT request of a row (which messages carry the row's
 * topic), the record of its answer, the header's match keys and the by-bin summary.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "evals/inproc_mrcr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datasets/mrcr.h"
#include "evals/inproc_header.h"
#include "util/exitcode.h"

/* The request of one row: its messages, the needle message (docs/mrcr.md "The dataset": the
   needle is messages[desired_msg_index + 1]) and the messages that carry its topic
   (proxy-v2, kernels/proxy.h): the needle, every other reply to the needle's request (MRCR's
   other needles, which share its lexical features) and the question. */
json_t *dsa_inproc_mrcr_body(int max_query, json_t *messages, long desired_msg_index)
{
    size_t nmsg = json_array_size(messages);
    long needle = desired_msg_index + 1;
    const char *req =
        needle >= 1
            ? json_string_value(json_object_get(json_array_get(messages, needle - 1), "content"))
            : NULL;
    json_t *topic = json_array();
    for (size_t i = 1; i < nmsg; i++) {
        const char *prev =
            json_string_value(json_object_get(json_array_get(messages, i - 1), "content"));
        bool same = req && prev && !strcmp(prev, req);
        if ((long)i == needle || (same && i + 1 < nmsg) || i + 1 == nmsg)
            json_array_append_new(topic, json_integer((json_int_t)i));
    }
    return json_pack("{s:O, s:i, s:I, s:s?, s:o}", "messages", messages, "max_query", max_query,
                     "needle_message", (json_int_t)needle, "topic", req, "topic_messages", topic);
}

/* the record of an answered row, keys in the order run files have always had */
json_t *dsa_inproc_mrcr_record(const char *id, const char *bin_label, long bin_tokens,
                               const struct dsa_result *res)
{
    if (res->status != DSA_RES_OK)
        return json_pack("{s:s, s:s, s:I, s:s, s:n, s:s}", "id", id, "bin", bin_label, "bin_tokens",
                         (json_int_t)bin_tokens, "status", "failed", "score", "error",
                         res->error ? res->error : "failed");
    json_t *rec = json_pack("{s:s, s:s, s:I, s:s}", "id", id, "bin", bin_label, "bin_tokens",
                            (json_int_t)bin_tokens, "status", "ok");
    dsa_inproc_select_fields(rec, res->raw);
    return rec;
}

void dsa_inproc_mrcr_header(json_t *header, const struct dsa_inproc_opts *stack, int max_query,
                            const struct dsa_mrcr_filter *f, json_t *filters,
                            const char *dataset_name, json_t *files, json_t *shas)
{
    json_t *backend = json_object_get(header, "backend");
    json_t *match = json_object();
    dsa_inproc_match_set(match, backend, "mrcr", stack);
    /* MRCR rows plant their retrieval structure in the proxy (kernels/proxy.h) */
    json_object_set_new(match, "proxy", json_string(DSA_INPROC_PROXY_MRCR));
    json_object_set_new(backend, "proxy", json_string(DSA_INPROC_PROXY_MRCR));
    json_object_set(match, "dataset_sha256", shas);
    json_object_set_new(match, "max_query", json_integer(max_query));
    if (filters) {
        json_object_set(match, "filters", filters);
    } else { /* the form of older builds */
        json_object_set_new(match, "limit", json_integer(f->limit));
        json_object_set_new(match, "bins_mask", json_integer(f->bins_mask));
        json_object_set_new(match, "needles_mask", json_integer(f->needles_mask));
    }
    json_object_set_new(header, "match", match);
    json_object_set_new(header, "dataset",
                        json_pack("{s:s, s:O}", "name", dataset_name, "files", files));
}

void dsa_inproc_mrcr_banner(dsa_backend *b, const struct dsa_inproc_opts *stack, const char *path)
{
    json_t *backend = dsa_backend_describe(b);
    printf("mrcr in-process on the proxy model (%s, seed %llu; no model weights): %s on %s, %s, "
           "top-%d -> %s\n",
           DSA_INPROC_PROXY_MRCR, (unsigned long long)stack->seed,
           json_string_value(json_object_get(json_object_get(backend, "kernels"), "name")),
           dsa_inproc_backend_device(b), json_string_value(json_object_get(backend, "variant_str")),
           stack->topk, path);
    fflush(stdout);
    json_decref(backend);
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
 * from the run files' records (resumed and new, file order). Returns DSA_EXIT_FAIL when a
 * record is not ok, else DSA_EXIT_OK.
 */
int dsa_inproc_mrcr_summary(json_t *runs, bool print)
{
    struct dsa_inproc_bin_sum sums[DSA_MRCR_NBINS] = {{0}};
    struct dsa_inproc_stage_sum stages = {{0}, 0};
    int ret = DSA_EXIT_OK;
    size_t i, k;
    json_t *recs, *rec;
    json_array_foreach(runs, i, recs) json_array_foreach(recs, k, rec)
    {
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
