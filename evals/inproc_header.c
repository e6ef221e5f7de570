/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "evals/inproc_header.h"

#include <stdio.h>

#include "store/store.h"

json_t *dsa_inproc_header_new(json_t *backend, const char *eval, const struct dsa_inproc_opts *o)
{
    json_t *header = dsa_run_header_new(eval, 1, 0, NULL);
    if (o->command)
        json_object_set(header, "command", o->command);
    json_t *match = json_object_get(header, "match");
    json_object_set_new(match, "eval", json_string(eval));
    json_object_set_new(match, "backend", json_string("inprocess"));
    json_object_set(match, "device", json_object_get(backend, "device"));
    json_object_set(match, "kernels", json_object_get(backend, "kernels"));
    json_object_set(match, "variant", json_object_get(backend, "variant"));
    json_object_set_new(match, "topk", json_integer(o->topk));
    json_object_set_new(match, "seed", json_integer((json_int_t)o->seed));
    json_object_set_new(match, "proxy", json_string("proxy-v1"));
    json_object_set_new(header, "backend", backend);
    return header;
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
