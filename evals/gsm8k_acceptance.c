/* GSM8K's acceptance-length hook for compare; see gsm8k_acceptance.h.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "evals/gsm8k_acceptance.h"

#include <gsl/gsl_sort.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "stats/stats.h"
#include "util/buf.h"

/*
 * llama-server's per-response timings have the drafted (draft_n) and accepted
 * (draft_n_accepted) tokens but not the number of verify steps. After the prompt's first token,
 * every step emits one token of its own plus the drafts it accepted, so
 * steps = predicted_n - 1 - draft_n_accepted (docs/compare.md "Acceptance length"). A response
 * that drafted nothing (draft_n absent or 0) has no acceptance length.
 */
static bool timings_counts(json_t *t, double *drafts, double *accepted)
{
    json_t *pn = json_object_get(t, "predicted_n"), *dn = json_object_get(t, "draft_n"),
           *da = json_object_get(t, "draft_n_accepted");
    if (!json_is_number(pn) || !json_is_number(dn) || !json_is_number(da))
        return false;
    double steps = json_number_value(pn) - 1 - json_number_value(da);
    if (!(json_number_value(dn) > 0) || !(json_number_value(da) >= 0) || !(steps >= 1))
        return false;
    *drafts = steps;
    *accepted = json_number_value(da);
    return true;
}

/*
 * One response's speculative-decoding counts, from what the server gave per request: vLLM's
 * metrics.speculative_decoding (num_spec_steps, num_accepted_draft_tokens; recorded as
 * "spec"), SGLang's meta_info (spec_verify_ct, spec_num_correct_drafts or its older name
 * spec_accepted_drafts; recorded as "spec"), llama-server's timings (recorded as "timings":
 * draft_n_accepted, and the steps from predicted_n, below). Returns false without both.
 */
static bool spec_counts(json_t *rec, double *drafts, double *accepted)
{
    if (timings_counts(json_object_get(rec, "timings"), drafts, accepted))
        return true;
    json_t *s = json_object_get(rec, "spec");
    static const char *const pairs[][3] = {
        {"num_spec_steps", "num_accepted_draft_tokens", NULL},
        {"spec_verify_ct", "spec_num_correct_drafts", "spec_accepted_drafts"},
    };
    for (int k = 0; k < 2; k++) {
        json_t *d = json_object_get(s, pairs[k][0]), *a = json_object_get(s, pairs[k][1]);
        if (!json_is_number(a) && pairs[k][2])
            a = json_object_get(s, pairs[k][2]);
        if (json_is_number(d) && json_is_number(a)) {
            *drafts = json_number_value(d);
            *accepted = json_number_value(a);
            return *drafts >= 0 && *accepted >= 0;
        }
    }
    return false;
}

/* per id of a side's first run: [drafts, accepted] of the responses that carry them */
static json_t *side_spec(const struct dsa_cmp_side *s)
{
    json_t *by = json_object();
    json_t *recs = s->n_runs ? s->runs[0].records : NULL;
    for (size_t k = 0; k < json_array_size(recs); k++) {
        json_t *r = json_array_get(recs, k);
        double d, a;
        if (spec_counts(r, &d, &a))
            json_object_set_new(by, json_string_value(json_object_get(r, "id")),
                                json_pack("[ff]", d, a));
    }
    return by;
}

struct al_pairs {
    size_t n;
    double *db, *ab, *dc, *ac; /* drafts and accepted per paired request, each side */
};

/* 1 + Σaccepted/Σdrafts over the drawn requests: the ratio estimator that the server's
   counters give for the whole run, so the point estimate equals the counter deltas */
static double al_of(const double *d, const double *a, const size_t *idx, size_t n)
{
    double sd = 0, sa = 0;
    for (size_t j = 0; j < n; j++) {
        sd += d[idx ? idx[j] : j];
        sa += a[idx ? idx[j] : j];
    }
    return sd > 0 ? 1 + sa / sd : NAN;
}

/* the paired percentile bootstrap of AL_cand - AL_base and AL_cand / AL_base (and of each
   side's AL) over requests, one stream "main..cand/acceptance_length" */
static json_t *al_bootstrap(const struct al_pairs *p, const struct dsa_boot_cfg *cfg)
{
    size_t B = (size_t)cfg->resamples, n = p->n;
    double *rep[4];
    for (int k = 0; k < 4; k++)
        rep[k] = dsa_xmalloc(B * sizeof *rep[k]);
    size_t *idx = dsa_xmalloc(n * sizeof *idx), ok = 0;
    gsl_rng *r = dsa_stats_rng_new(
        cfg->rng, dsa_stats_stream_seed(cfg->seed, "main..cand/acceptance_length"));
    for (size_t b = 0; b < B; b++) {
        for (size_t j = 0; j < n; j++)
            idx[j] = (size_t)gsl_rng_uniform_int(r, n);
        double x = al_of(p->db, p->ab, idx, n), y = al_of(p->dc, p->ac, idx, n);
        if (isnan(x) || isnan(y))
            continue; /* a draw without drafts on a side: no AL to compare */
        rep[0][ok] = y - x;
        rep[1][ok] = y / x;
        rep[2][ok] = x;
        rep[3][ok++] = y;
    }
    gsl_rng_free(r);
    double lo[4] = {NAN, NAN, NAN, NAN}, hi[4] = {NAN, NAN, NAN, NAN};
    for (int k = 0; k < 4 && ok >= 2; k++) {
        gsl_sort(rep[k], 1, ok);
        dsa_stats_ci_percentile(rep[k], ok, cfg->confidence, &lo[k], &hi[k]);
    }
    for (int k = 0; k < 4; k++)
        free(rep[k]);
    free(idx);
    return json_pack("{s:o,s:o,s:o,s:o}", "diff_ci", dsa_cmp_json_ci(lo[0], hi[0]), "ratio_ci",
                     dsa_cmp_json_ci(lo[1], hi[1]), "base_ci", dsa_cmp_json_ci(lo[2], hi[2]),
                     "cand_ci", dsa_cmp_json_ci(lo[3], hi[3]));
}

/*
 * Acceptance length of both sides with statistics (docs/compare.md "Acceptance length"):
 * from per-request draft/accepted counts when both sides' first runs carry them for the
 * same requests (paired by id): AL = 1 + Σaccepted/Σdrafts per side, the difference and
 * ratio cand/base with paired bootstrap CIs; else from the run headers' counter deltas
 * ("source": "counters", no CI). NULL when neither side has an acceptance length.
 */
json_t *dsa_gsm8k_acceptance(const struct dsa_cmp_side *base, const struct dsa_cmp_side *cand,
                             const struct dsa_boot_cfg *cfg)
{
    json_t *sb = side_spec(base), *sc = side_spec(cand), *out = NULL;
    struct al_pairs p = {0};
    size_t cap = json_object_size(sb) + 1;
    p.db = dsa_xmalloc(cap * sizeof(double));
    p.ab = dsa_xmalloc(cap * sizeof(double));
    p.dc = dsa_xmalloc(cap * sizeof(double));
    p.ac = dsa_xmalloc(cap * sizeof(double));
    /* requests in the baseline's file order, paired by id */
    json_t *recs = base->n_runs ? base->runs[0].records : NULL;
    for (size_t k = 0; k < json_array_size(recs); k++) {
        const char *id = json_string_value(json_object_get(json_array_get(recs, k), "id"));
        json_t *x = json_object_get(sb, id), *y = json_object_get(sc, id);
        if (!x || !y)
            continue;
        p.db[p.n] = json_real_value(json_array_get(x, 0));
        p.ab[p.n] = json_real_value(json_array_get(x, 1));
        p.dc[p.n] = json_real_value(json_array_get(y, 0));
        p.ac[p.n++] = json_real_value(json_array_get(y, 1));
    }
    double alb = al_of(p.db, p.ab, NULL, p.n), alc = al_of(p.dc, p.ac, NULL, p.n);
    if (p.n >= 2 && !isnan(alb) && !isnan(alc)) {
        out = json_pack("{s:s,s:I,s:f,s:f,s:f,s:f}", "source", "per-request", "n", (json_int_t)p.n,
                        "base", alb, "cand", alc, "diff", alc - alb, "ratio", alc / alb);
        json_t *ci = al_bootstrap(&p, cfg);
        json_object_update(out, ci);
        json_decref(ci);
    } else if (dsa_cmp_header_al(base, &alb) && dsa_cmp_header_al(cand, &alc)) {
        out = json_pack("{s:s,s:n,s:f,s:f,s:f,s:f,s:n,s:n}", "source", "counters", "n", "base", alb,
                        "cand", alc, "diff", alc - alb, "ratio", alc / alb, "diff_ci", "ratio_ci");
    }
    free(p.db);
    free(p.ab);
    free(p.dc);
    free(p.ac);
    json_decref(sb);
    json_decref(sc);
    return out;
}
