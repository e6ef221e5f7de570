/*
 * GSM8K in-process (inproc_gsm8k.h): the pieces of the GSM8K eval's hooks
 * (evals/gsm8k_eval.c) for the in-process backend — the DSA_API_MTP_VERIFY request of a
 * question, the record of its answer, the header's match keys and the verdict line.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "evals/inproc_gsm8k.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evals/inproc_header.h"
#include "util/exitcode.h"

json_t *dsa_inproc_gsm8k_body(const char *prompt, size_t prompt_len, const char *continuation,
                              size_t continuation_len, int mtp)
{
    return json_pack("{s:s%, s:s%, s:i}", "prompt", prompt, prompt_len, "continuation",
                     continuation, continuation_len, "mtp", mtp);
}

/* the record of an answered question, keys in the order run files have always had */
json_t *dsa_inproc_gsm8k_record(const char *id, const struct dsa_result *res)
{
    bool same = json_is_true(json_object_get(res->raw, "identical"));
    json_t *rec = json_pack("{s:s, s:s, s:s, s:f, s:n}", "id", id, "bin", "all", "status", "ok",
                            "score", same ? 1.0 : 0.0, "error");
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

void dsa_inproc_gsm8k_header(json_t *header, const struct dsa_inproc_opts *stack, const char *mode,
                             const char *dataset_sha256, int mtp, size_t limit)
{
    json_t *match = json_object();
    dsa_inproc_match_set(match, json_object_get(header, "backend"), "gsm8k", stack);
    json_object_set_new(match, "dataset_sha256", json_string(dataset_sha256));
    json_object_set_new(match, "prompt", json_string(mode));
    json_object_set_new(match, "mtp", json_integer(mtp));
    json_object_set_new(match, "limit", json_integer((json_int_t)limit));
    json_object_set_new(header, "match", match);
}

void dsa_inproc_gsm8k_banner(dsa_backend *b, const struct dsa_inproc_opts *stack, int mtp,
                             const char *path)
{
    json_t *backend = dsa_backend_describe(b);
    printf("gsm8k in-process: MTP verify next_n=%d vs one row at a time, %s on %s, %s, top-%d "
           "-> %s\n",
           mtp + 1, json_string_value(json_object_get(json_object_get(backend, "kernels"), "name")),
           dsa_inproc_backend_device(b), json_string_value(json_object_get(backend, "variant_str")),
           stack->topk, path);
    fflush(stdout);
    json_decref(backend);
}

int dsa_inproc_gsm8k_summary(json_t *runs, bool print)
{
    size_t nsame = 0, nlogits = 0, ndone = 0, i, k;
    json_t *recs, *rec;
    json_array_foreach(runs, i, recs) json_array_foreach(recs, k, rec)
    {
        ndone++;
        nsame += json_is_true(json_object_get(rec, "identical"));
        nlogits += json_is_true(json_object_get(rec, "logits_identical"));
    }
    if (print)
        printf("identical selections: %zu/%zu questions; bit-identical logits: %zu/%zu\n", nsame,
               ndone, nlogits, ndone);
    return nsame == ndone ? DSA_EXIT_OK : DSA_EXIT_FAIL;
}
