/* RULER samples as JSONL rows; see ruler_json.h.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "evals/ruler_json.h"

#include <stdlib.h>

#include "datasets/tokenize.h"
#include "util/buf.h"
#include "util/hash.h"

/* the first token that overlaps byte b or comes after it (ends: the tokens' end offsets) */
static size_t token_at(const size_t *ends, size_t ntok, size_t b)
{
    size_t lo = 0, hi = ntok;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ends[mid] <= b)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* {"bytes": [lo, hi], "tokens": [tlo, thi]} */
static json_t *range(size_t lo, size_t hi, size_t tlo, size_t thi)
{
    return json_pack("{s:[I, I], s:[I, I]}", "bytes", (json_int_t)lo, (json_int_t)hi, "tokens",
                     (json_int_t)tlo, (json_int_t)thi);
}

static json_t *needles_json(const struct dsa_ruler_sample *s)
{
    size_t n = dsa_ruler_needle_tokens(s, NULL, 0);
    struct dsa_ruler_tok_span *ts = dsa_xcalloc(n ? n : 1, sizeof *ts);
    dsa_ruler_needle_tokens(s, ts, n);
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *r = range(s->spans[i].lo, s->spans[i].hi, ts[i].lo, ts[i].hi);
        json_object_set_new(
            r, "kind", json_string(ts[i].kind == DSA_RULER_SPAN_ANSWER ? "answer" : "distractor"));
        json_array_append_new(a, r);
    }
    free(ts);
    return a;
}

/* One sample as the object of ruler_json.h (new reference). */
static json_t *sample_json(const struct dsa_ruler_sample *s, unsigned long seed,
                           const dsa_ruler_haystack *h)
{
    size_t ntok = dsa_tok_ends(s->input, s->input_len, NULL, 0);
    size_t *ends = dsa_xmalloc((ntok ? ntok : 1) * sizeof *ends);
    dsa_tok_ends(s->input, s->input_len, ends, ntok);
    json_t *refs = json_array();
    for (size_t r = 0; r < s->noutputs; r++)
        json_array_append_new(refs, json_string(s->outputs[r]));
    char sha[65];
    dsa_sha256_hex(s->input, s->input_len, sha);
    json_t *o = json_pack(
        "{s:s, s:s, s:s, s:s, s:I, s:i, s:I, s:s, s:s, s:o, s:s, s:I, s:i, s:s, s:o, s:o, s:o, "
        "s:o}",
        "id", s->id, "eval", "ruler", "task", dsa_ruler_task_name(s->task), "bin",
        dsa_ruler_length_name(s->length), "bin_tokens", (json_int_t)s->max_length, "index",
        s->index, "seed", (json_int_t)seed, "haystack", dsa_ruler_haystack_name(h),
        "haystack_sha256", dsa_ruler_haystack_sha256(h), "prompt",
        json_stringn(s->input, s->input_len), "input_sha256", sha, "tokens", (json_int_t)ntok,
        "tokens_to_generate", s->tokens_to_generate, "metric",
        s->metric == DSA_RULER_MATCH_ALL ? "string_match_all" : "string_match_part", "references",
        refs, "needles", needles_json(s), "question",
        range(s->question, s->input_len, token_at(ends, ntok, s->question), ntok), "answer_prefix",
        range(s->answer_prefix, s->input_len, token_at(ends, ntok, s->answer_prefix), ntok));
    free(ends);
    return o;
}

struct writer {
    FILE *out;
    unsigned long seed;
    const dsa_ruler_haystack *h;
};

static int write_one(const struct dsa_ruler_sample *s, void *ud)
{
    struct writer *w = ud;
    json_t *o = sample_json(s, w->seed, w->h);
    int rc = json_dumpf(o, w->out, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    return rc || fputc('\n', w->out) == EOF || fflush(w->out);
}

int dsa_ruler_samples_write(FILE *out, const struct dsa_ruler_opts *o)
{
    struct writer w = {out, o->seed, o->haystack};
    return dsa_ruler_samples(o, write_one, &w);
}
