/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "evals/inproc_header.h"

#include <stdio.h>
#include <string.h>

#include "store/store.h"
#include "util/exitcode.h"

void dsa_inproc_match_set(json_t *match, json_t *backend, const char *eval,
                          const struct dsa_inproc_opts *stack)
{
    json_object_set_new(match, "eval", json_string(eval));
    json_object_set_new(match, "backend", json_string("inprocess"));
    json_object_set(match, "device", json_object_get(backend, "device"));
    json_object_set(match, "kernels", json_object_get(backend, "kernels"));
    json_object_set(match, "variant", json_object_get(backend, "variant"));
    json_object_set_new(match, "topk", json_integer(stack->topk));
    json_object_set_new(match, "seed", json_integer((json_int_t)stack->seed));
    json_object_set_new(match, "proxy", json_string("proxy-v1"));
}

void dsa_inproc_select_fields(json_t *rec, json_t *raw)
{
    static const char *const keys[] = {
        "recall_last",    "needle_retention", "needle_retention_golden", "selection_sha256",
        "context_tokens", "query_tokens",     "needle_tokens",           "distractor_tokens",
        "topk",           "elapsed_ms",       "stage_us_per_token",      NULL};
    json_object_set(rec, "score", json_object_get(raw, "recall"));
    json_object_set_new(rec, "error", json_null());
    for (size_t k = 0; keys[k]; k++)
        json_object_set(rec, keys[k], json_object_get(raw, keys[k]));
}

void dsa_inproc_stage_sum_add(struct dsa_inproc_stage_sum *s, json_t *rec)
{
    json_t *st = json_object_get(rec, "stage_us_per_token");
    long T = (long)json_integer_value(json_object_get(rec, "context_tokens"));
    if (!json_is_object(st) || T <= 0)
        return;
    for (int i = 0; i < DSA_INPROC_NT; i++)
        s->us[i] += json_number_value(json_object_get(st, dsa_inproc_stage_keys[i])) * (double)T;
    s->tokens += T;
}

void dsa_inproc_stage_sum_print(const struct dsa_inproc_stage_sum *s)
{
    static const char *const label[DSA_INPROC_NT] = {"proxy", "S1",     "S2",  "S3",
                                                     "S4",    "golden", "host"};
    if (!s->tokens)
        return;
    double total = 0.0;
    for (int i = 0; i < DSA_INPROC_NT; i++)
        total += s->us[i] / (double)s->tokens;
    printf("µs per context token: %.1f =", total);
    for (int i = 0; i < DSA_INPROC_NT; i++)
        printf("%s %s %.1f", i ? " +" : "", label[i], s->us[i] / (double)s->tokens);
    printf("\n");
}

void dsa_inproc_bin_sum_add(struct dsa_inproc_bin_sum *s, json_t *rec)
{
    s->n++;
    s->score += json_number_value(json_object_get(rec, "score"));
    s->needle += json_number_value(json_object_get(rec, "needle_retention"));
    s->needle_gold += json_number_value(json_object_get(rec, "needle_retention_golden"));
}

void dsa_inproc_bin_table_print(const char *const *labels, const struct dsa_inproc_bin_sum *sums,
                                int nbins, const struct dsa_inproc_stage_sum *stages)
{
    printf("%-6s %5s %12s %8s %15s\n", "bin", "rows", "recall@k", "needle", "needle(golden)");
    for (int b = 0; b < nbins; b++)
        if (sums[b].n)
            printf("%-6s %5d %12.4f %8.3f %15.3f\n", labels[b], sums[b].n,
                   sums[b].score / sums[b].n, sums[b].needle / sums[b].n,
                   sums[b].needle_gold / sums[b].n);
    dsa_inproc_stage_sum_print(stages);
}
