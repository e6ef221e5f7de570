/*
 * MRCR in-process (inproc_mrcr.h).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "evals/inproc_mrcr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "evals/inproc_header.h"
#include "datasets/mrcr.h"
#include "datasets/tokenize.h"
#include "kernels/plugin.h"
#include "run/loop.h"
#include "store/store.h"
#include "util/buf.h"
#include "util/exitcode.h"
#include "util/hash.h"
#include "util/msg.h"
#include "util/progress.h"

struct toks {
    uint32_t *v;
    long n, cap;
};

static void toks_add_text(struct toks *t, const char *s, size_t len)
{
    size_t n = dsa_tok_encode(s, len, NULL, 0);
    if (t->n + (long)n > t->cap) {
        t->cap = (t->n + (long)n) * 2 + 1024;
        t->v = dsa_xrealloc(t->v, (size_t)t->cap * sizeof *t->v);
    }
    dsa_tok_encode(s, len, t->v + t->n, n);
    t->n += (long)n;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* sorts each row's valid indices ascending (-1 padding last); returns the valid count */
static int sort_row(int32_t *row, int k)
{
    int n = 0;
    for (int i = 0; i < k; i++)
        if (row[i] >= 0)
            row[n++] = row[i];
    qsort(row, (size_t)n, sizeof *row, cmp_i32);
    for (int i = n; i < k; i++)
        row[i] = -1;
    return n;
}

static int in_range_count(const int32_t *a, int n, long lo, long hi)
{
    int c = 0;
    for (int i = 0; i < n; i++)
        c += a[i] >= lo && a[i] < hi;
    return c;
}

struct bin_sum {
    int n;
    double score, needle, needle_gold;
};

/* FNV-1a of a string: the topic of a row is its needle's request text */
static uint64_t topic_of(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

/* the keys that carry the row's topic (proxy-v2, kernels/proxy.h): the needle, the distractors
   (every other reply to the needle's request: MRCR's other needles, which share its lexical
   features) and the question; returns the distractors' token count */
static long plant_keys(const struct dsa_mrcr_row *row, const long *lo, const long *hi, long T,
                       long needle_msg, unsigned char *keys)
{
    size_t nmsg = json_array_size(row->messages);
    const char *req = needle_msg >= 1
                          ? json_string_value(json_object_get(
                                json_array_get(row->messages, needle_msg - 1), "content"))
                          : NULL;
    long ndis = 0;
    memset(keys, 0, (size_t)T);
    for (size_t i = 1; i < nmsg; i++) {
        const char *prev =
            json_string_value(json_object_get(json_array_get(row->messages, i - 1), "content"));
        bool same = req && prev && !strcmp(prev, req);
        if ((long)i == needle_msg || (same && i + 1 < nmsg) || i + 1 == nmsg) {
            memset(keys + lo[i], 1, (size_t)(hi[i] - lo[i]));
            if ((long)i != needle_msg && i + 1 < nmsg)
                ndis += hi[i] - lo[i];
        }
    }
    return ndis;
}

/* one row -> one record (new reference), or NULL on a backend error (printed) */
static json_t *run_row(dsa_inproc *ip, const struct dsa_inproc_opts *o, struct dsa_mrcr_row *row)
{
    struct toks t = {0};
    long needle_lo = -1, needle_hi = -1, q_lo = 0;
    size_t nmsg = json_array_size(row->messages);
    long needle_msg =
        row->desired_msg_index + 1; /* docs/mrcr.md "The dataset": the needle is messages[i+1] */
    long *mlo = dsa_xmalloc((nmsg + 1) * sizeof *mlo), *mhi = dsa_xmalloc((nmsg + 1) * sizeof *mhi);
    for (size_t i = 0; i < nmsg; i++) {
        json_t *m = json_array_get(row->messages, i);
        const char *role = json_string_value(json_object_get(m, "role"));
        const char *content = json_string_value(json_object_get(m, "content"));
        char tag[64];
        snprintf(tag, sizeof tag, "<|%s|>\n", role ? role : "user");
        toks_add_text(&t, tag, strlen(tag));
        long start = t.n;
        if (content)
            toks_add_text(&t, content, strlen(content));
        mlo[i] = start;
        mhi[i] = t.n;
        if ((long)i == needle_msg) {
            needle_lo = start;
            needle_hi = t.n;
        }
        if (i + 1 == nmsg)
            q_lo = start;
    }
    json_t *rec = NULL;
    long T = t.n, M = T - q_lo;
    if (o->max_query > 0 && M > o->max_query)
        M = o->max_query;
    if (M <= 0 || T <= 0) {
        free(t.v);
        free(mlo);
        free(mhi);
        rec = json_pack("{s:s, s:s, s:i, s:s, s:n, s:s}", "id", row->id, "bin", row->bin_label,
                        "bin_tokens", (json_int_t)row->bin_tokens, "status", "failed", "score",
                        "error", "empty prompt or question");
        return rec;
    }
    long *qpos = dsa_xmalloc((size_t)M * sizeof *qpos);
    for (long m = 0; m < M; m++)
        qpos[m] = T - M + m;
    int K = o->topk;
    int32_t *idx = dsa_xmalloc((size_t)M * K * 4), *gold = dsa_xmalloc((size_t)M * K * 4);
    unsigned char *keys = dsa_xmalloc((size_t)T);
    long ndis = plant_keys(row, mlo, mhi, T, needle_msg, keys);
    const char *req = needle_msg >= 1
                          ? json_string_value(json_object_get(
                                json_array_get(row->messages, needle_msg - 1), "content"))
                          : NULL;
    struct dsa_inproc_plant plant = {topic_of(req), keys, true};
    struct timespec t0, t1;
    dsa_inproc_times_reset(ip);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (dsa_inproc_select_planted(ip, t.v, T, &plant, qpos, (int)M, idx, gold) == 0) {
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double recall_sum = 0.0, recall_last = 0.0;
        int nsel_last = 0, ngold_last = 0;
        dsa_sha256 *h = dsa_sha256_new();
        for (long m = 0; m < M; m++) {
            int32_t *a = idx + (size_t)m * K, *g = gold + (size_t)m * K;
            int na = sort_row(a, K), ng = sort_row(g, K);
            double r = ng ? (double)dsa_inproc_overlap(a, na, g, ng) / ng : 1.0;
            recall_sum += r;
            if (m == M - 1) {
                recall_last = r;
                nsel_last = na;
                ngold_last = ng;
            }
            int32_t cnt = na;
            dsa_sha256_update(h, &cnt, 4); /* x86/arm little-endian hosts: int32 LE */
            dsa_sha256_update(h, a, (size_t)na * 4);
        }
        char hex[65];
        dsa_sha256_final_hex(h, hex);
        dsa_sha256_free(&h);
        long nneedle = needle_hi > needle_lo ? needle_hi - needle_lo : 0;
        const int32_t *alast = idx + (size_t)(M - 1) * K, *glast = gold + (size_t)(M - 1) * K;
        json_t *needle = json_null(), *needle_g = json_null();
        if (nneedle > 0) {
            needle = json_real((double)in_range_count(alast, nsel_last, needle_lo, needle_hi) /
                               (double)nneedle);
            needle_g = json_real((double)in_range_count(glast, ngold_last, needle_lo, needle_hi) /
                                 (double)nneedle);
        }
        double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
        rec = json_pack("{s:s, s:s, s:I, s:s, s:f, s:n, s:f, s:o, s:o, s:s, s:I, s:I, s:I, s:I, "
                        "s:i, s:f}",
                        "id", row->id, "bin", row->bin_label, "bin_tokens",
                        (json_int_t)row->bin_tokens, "status", "ok", "score", recall_sum / M,
                        "error", "recall_last", recall_last, "needle_retention", needle,
                        "needle_retention_golden", needle_g, "selection_sha256", hex,
                        "context_tokens", (json_int_t)T, "query_tokens", (json_int_t)M,
                        "needle_tokens", (json_int_t)nneedle, "distractor_tokens", (json_int_t)ndis,
                        "topk", K, "elapsed_ms", ms);
        json_object_set_new(rec, "stage_us_per_token", dsa_inproc_times_json(ip, T));
    }
    free(qpos);
    free(idx);
    free(gold);
    free(keys);
    free(mlo);
    free(mhi);
    free(t.v);
    return rec;
}

/* rows of one file; returns an exit status */
static int run_file(dsa_inproc *ip, const struct dsa_inproc_opts *o, dsa_mrcr_reader *rd,
                    dsa_run *run, struct bin_sum *sums, struct dsa_inproc_stage_sum *stages,
                    dsa_progress *pg)
{
    struct dsa_mrcr_row row = {0};
    int ret = DSA_EXIT_OK, r;
    while ((r = dsa_mrcr_next(rd, &row)) == 1) {
        if (!dsa_shard_keep(&o->shard, row.id))
            continue;
        json_t *rec = dsa_run_get(run, row.id);
        if (rec) {
            json_incref(rec); /* finished in an earlier attempt */
        } else {
            if (!(rec = run_row(ip, o, &row))) {
                ret = DSA_EXIT_BACKEND;
                break;
            }
            if (dsa_run_append(run, rec)) {
                json_decref(rec);
                ret = DSA_EXIT_IO;
                break;
            }
            /* a row takes seconds on the CPU: the meter (with ETA on a terminal) shows it */
            if (pg)
                dsa_progress_done(pg,
                                  strcmp(json_string_value(json_object_get(rec, "status")), "ok"));
        }
        if (!strcmp(json_string_value(json_object_get(rec, "status")), "ok") && row.bin >= 0 &&
            row.bin < DSA_MRCR_NBINS) {
            struct bin_sum *b = &sums[row.bin];
            b->n++;
            b->score += json_real_value(json_object_get(rec, "score"));
            b->needle += json_number_value(json_object_get(rec, "needle_retention"));
            b->needle_gold += json_number_value(json_object_get(rec, "needle_retention_golden"));
            dsa_inproc_stage_sum_add(stages, rec);
        } else if (ret == DSA_EXIT_OK) {
            ret = DSA_EXIT_FAIL;
        }
        json_decref(rec);
        if (o->interrupted && *o->interrupted) {
            ret = DSA_EXIT_INTERRUPTED;
            break;
        }
    }
    if (r < 0)
        ret = DSA_EXIT_DATA;
    dsa_mrcr_row_release(&row);
    return ret;
}

static bool shard_keep(void *ud, const char *id)
{
    return dsa_shard_keep(ud, id);
}

int dsa_inproc_mrcr_run(const struct dsa_inproc_opts *o)
{
    int ret = DSA_EXIT_OK;
    dsa_inproc *ip = NULL;
    dsa_run *run = NULL;
    json_t *header = NULL, *files = json_array(), *shas = json_array();
    char *path = NULL;
    struct bin_sum sums[DSA_MRCR_NBINS] = {{0}};
    struct dsa_inproc_stage_sum stages = {{0}, 0};
    struct dsa_mrcr_filter filt = {o->needles_mask, o->bins_mask, o->limit};

    /* every file is checked (and hashed) before any work */
    long selected = 0, selected_all = 0; /* this shard's rows, and every shard's */
    for (size_t i = 0; i < o->ndatasets; i++) {
        dsa_mrcr_reader *rd = dsa_mrcr_open(o->datasets[i], &filt);
        if (!rd) {
            ret = DSA_EXIT_DATA;
            goto cleanup;
        }
        selected_all += (long)dsa_mrcr_nselected(rd);
        selected += dsa_mrcr_nselected_if(rd, shard_keep, (void *)&o->shard);
        json_array_append_new(
            files, json_pack("{s:s, s:s}", "path", o->datasets[i], "sha256", dsa_mrcr_sha256(rd)));
        json_array_append_new(shas, json_string(dsa_mrcr_sha256(rd)));
        dsa_mrcr_free(&rd);
    }
    if (!selected_all) { /* as the endpoint run: an empty table with exit 0 would read as a pass */
        dsa_errorf("no rows of '%s' pass the filters (--needles, --bins)", o->dataset_name);
        ret = DSA_EXIT_DATA;
        goto cleanup;
    }
    if (!(ip = dsa_inproc_new(o))) {
        ret = DSA_EXIT_BACKEND;
        goto cleanup;
    }
    header = dsa_inproc_header_new(ip, "mrcr", o);
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
    path = dsa_run_file_name(o->out_dir, 1);
    if ((ret = dsa_loop_open(&run, path, header, o->force_new ? DSA_RUN_FORCE_NEW : 0)))
        goto cleanup;
    /* a rerun says what it found, as the endpoint run does */
    size_t resumed = dsa_run_count(run);
    size_t done = resumed < (size_t)selected ? resumed : (size_t)selected;
    dsa_loop_note_resume(resumed, (size_t)selected, path);
    dsa_progress *pg =
        o->quiet ? NULL : dsa_progress_new("mrcr in-process", (size_t)selected, done);
    if (!o->json)
        printf(
            "mrcr in-process on the proxy model (%s, seed %llu; no model weights): %s on %s, %s, "
            "top-%d -> %s\n",
            DSA_INPROC_PROXY_MRCR, (unsigned long long)o->seed,
            json_string_value(json_object_get(json_object_get(match, "kernels"), "name")),
            dsa_inproc_device(ip),
            json_string_value(json_object_get(json_object_get(header, "backend"), "variant_str")),
            o->topk, path);
    fflush(stdout);
    for (size_t i = 0; i < o->ndatasets && (ret == DSA_EXIT_OK || ret == DSA_EXIT_FAIL); i++) {
        dsa_mrcr_reader *rd = dsa_mrcr_open(o->datasets[i], &filt);
        if (!rd) {
            ret = DSA_EXIT_DATA;
            break;
        }
        int fr = run_file(ip, o, rd, run, sums, &stages, pg);
        if (fr != DSA_EXIT_OK && ret == DSA_EXIT_OK)
            ret = fr;
        else if (fr != DSA_EXIT_OK && fr != DSA_EXIT_FAIL)
            ret = fr;
        dsa_mrcr_free(&rd);
    }
    /*
     *   bin      rows     recall@k   needle  needle(golden)
     *   ≤8K         3       0.9885    0.348           0.353
     */
    if (pg) {
        dsa_progress_finish(pg);
        dsa_progress_free(&pg);
    }
    if (!o->json)
        printf("%-6s %5s %12s %8s %15s\n", "bin", "rows", "recall@k", "needle", "needle(golden)");
    for (int b = 0; b < DSA_MRCR_NBINS && !o->json; b++)
        if (sums[b].n)
            printf("%-6s %5d %12.4f %8.3f %15.3f\n", dsa_mrcr_bin_label(b), sums[b].n,
                   sums[b].score / sums[b].n, sums[b].needle / sums[b].n,
                   sums[b].needle_gold / sums[b].n);
    if (!o->json)
        dsa_inproc_stage_sum_print(&stages);
cleanup:
    dsa_run_free(&run);
    json_decref(header);
    json_decref(files);
    json_decref(shas);
    free(path);
    dsa_inproc_free(&ip);
    dsa_kernels_unload();
    return ret;
}
