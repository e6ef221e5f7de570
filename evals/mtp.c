/* MTP acceptance from spec-decode counters; see mtp.h.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "evals/mtp.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/msg.h"

/* vLLM's name, or llama-server's: the same name under the "llamacpp:" prefix */
static bool named(const char *name, const char *vllm_name)
{
    return !strcmp(name, vllm_name) ||
           (!strncmp(name, "llamacpp:", 9) && !strcmp(name + 9, vllm_name + 5));
}

int dsa_mtp_counters_from_prom(const dsa_prom *p, struct dsa_mtp_counters *c, char *err,
                               size_t err_size)
{
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < dsa_prom_count(p); i++) {
        const struct dsa_prom_sample *s = dsa_prom_sample(p, i);
        if (named(s->name, DSA_MTP_DRAFTS)) {
            c->present = true;
            c->drafts += s->value;
        } else if (named(s->name, DSA_MTP_DRAFT_TOKENS)) {
            c->draft_tokens += s->value;
        } else if (named(s->name, DSA_MTP_ACCEPTED)) {
            c->accepted += s->value;
        } else if (named(s->name, DSA_MTP_PER_POS)) {
            const char *pos = dsa_prom_label(s, "position");
            char *end;
            errno = 0;
            long j = pos ? strtol(pos, &end, 10) : -1;
            if (!pos || !*pos || *end || errno || j < 0 || j >= DSA_MTP_MAX_POS) {
                snprintf(err, err_size, "%s has a bad position label '%s'", DSA_MTP_PER_POS,
                         pos ? pos : "(none)");
                return -1;
            }
            c->pos[j] += s->value;
            if ((size_t)j + 1 > c->n_pos)
                c->n_pos = (size_t)j + 1;
        }
    }
    return 0;
}

static bool counters_equal(const struct dsa_mtp_counters *a, const struct dsa_mtp_counters *b)
{
    if (a->present != b->present || a->drafts != b->drafts || a->draft_tokens != b->draft_tokens ||
        a->accepted != b->accepted || a->n_pos != b->n_pos)
        return false;
    for (size_t j = 0; j < a->n_pos; j++)
        if (a->pos[j] != b->pos[j])
            return false;
    return true;
}

json_t *dsa_mtp_counters_json(const struct dsa_mtp_counters *c)
{
    if (!c->present)
        return json_null();
    json_t *pos = json_array();
    for (size_t j = 0; j < c->n_pos; j++)
        json_array_append_new(pos, json_real(c->pos[j]));
    return json_pack("{s:f,s:f,s:f,s:o}", "drafts", c->drafts, "draft_tokens", c->draft_tokens,
                     "accepted", c->accepted, "per_pos", pos);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) && errno == EINTR)
        ;
}

static int read_once(dsa_mtp_fetch_fn fetch, void *ctx, struct dsa_buf *body,
                     struct dsa_mtp_counters *c)
{
    char err[256];
    dsa_prom *p = NULL;
    dsa_buf_reset(body);
    if (fetch(ctx, body))
        return -1;
    if (dsa_prom_parse(body->data, body->len, &p, err, sizeof err))
        return dsa_errorf("cannot parse /metrics: %s", err);
    int rc = dsa_mtp_counters_from_prom(p, c, err, sizeof err);
    dsa_prom_free(&p);
    if (rc)
        return dsa_errorf("cannot read /metrics: %s", err);
    return 0;
}

int dsa_mtp_scrape(dsa_mtp_fetch_fn fetch, void *ctx, bool settle, double interval_s, double max_s,
                   struct dsa_mtp_counters *out)
{
    struct dsa_buf body = DSA_BUF_INIT;
    struct dsa_mtp_counters prev;
    int ret = -1;
    dsa_buf_init(&body);
    if (read_once(fetch, ctx, &body, out))
        goto cleanup;
    ret = 0;
    if (!settle)
        goto cleanup;
    double start = now_s();
    for (;;) {
        prev = *out;
        if (now_s() - start + interval_s > max_s) {
            dsa_warnf("spec-decode counters still moving after %.1f s; using the last read", max_s);
            ret = 1;
            break;
        }
        sleep_s(interval_s);
        if (read_once(fetch, ctx, &body, out)) {
            ret = -1;
            break;
        }
        if (counters_equal(&prev, out))
            break;
    }
cleanup:
    dsa_buf_release(&body);
    return ret;
}

static void rates(struct dsa_mtp_result *r)
{
    r->measured = r->present && r->d_drafts > 0;
    if (!r->measured)
        return;
    r->al = 1.0 + r->d_accepted / r->d_drafts;
    r->draft_rate = r->d_draft_tokens > 0 ? r->d_accepted / r->d_draft_tokens : NAN;
    for (size_t j = 0; j < r->n_pos; j++)
        r->pos_rate[j] = r->d_pos[j] / r->d_drafts;
}

int dsa_mtp_delta(const struct dsa_mtp_counters *before, const struct dsa_mtp_counters *after,
                  struct dsa_mtp_result *r, char *err, size_t err_size)
{
    memset(r, 0, sizeof *r);
    r->present = before->present && after->present;
    if (!r->present)
        return 0;
    r->d_drafts = after->drafts - before->drafts;
    r->d_draft_tokens = after->draft_tokens - before->draft_tokens;
    r->d_accepted = after->accepted - before->accepted;
    r->n_pos = after->n_pos > before->n_pos ? after->n_pos : before->n_pos;
    bool down = r->d_drafts < 0 || r->d_draft_tokens < 0 || r->d_accepted < 0;
    for (size_t j = 0; j < r->n_pos; j++) {
        r->d_pos[j] = after->pos[j] - before->pos[j];
        down |= r->d_pos[j] < 0;
    }
    if (down) {
        snprintf(err, err_size,
                 "spec-decode counters went down during the run (the server restarted?)");
        r->present = false;
        return -1;
    }
    rates(r);
    return 0;
}

bool dsa_mtp_plausible(const struct dsa_mtp_result *r, double completion_tokens, size_t n_requests)
{
    if (!r->measured)
        return true;
    double per_step = (double)(r->n_pos ? r->n_pos : 1) + 1.0;
    return r->d_drafts + r->d_accepted <= completion_tokens + per_step * (double)n_requests;
}

static double num(json_t *o, const char *key, bool *found)
{
    json_t *v = json_object_get(o, key);
    if (json_is_number(v)) {
        *found = true;
        return json_number_value(v);
    }
    return 0;
}

void dsa_mtp_perreq_add_vllm(struct dsa_mtp_perreq *acc, json_t *spec)
{
    if (!json_is_object(spec))
        return;
    bool f = false;
    acc->num_spec_steps += num(spec, "num_spec_steps", &f);
    acc->num_draft_tokens += num(spec, "num_draft_tokens", &f);
    acc->num_accepted_draft_tokens += num(spec, "num_accepted_draft_tokens", &f);
    if (f)
        acc->n_with++;
}

void dsa_mtp_perreq_add_timings(struct dsa_mtp_perreq *acc, json_t *timings)
{
    if (!json_is_object(timings))
        return;
    bool f = false;
    acc->n_timings++;
    acc->timings_draft_n += num(timings, "draft_n", &f);
    acc->timings_draft_accepted += num(timings, "draft_n_accepted", &f);
}

void dsa_mtp_perreq_add_sglang(struct dsa_mtp_perreq *acc, json_t *meta)
{
    if (!json_is_object(meta))
        return;
    bool f = false, dummy = false;
    double verify = num(meta, "spec_verify_ct", &f);
    if (!f)
        return;
    acc->n_with++;
    acc->verify_ct += verify;
    /* spec_accepted_drafts is the older (FIXME) alias of spec_num_correct_drafts */
    bool c = false;
    double correct = num(meta, "spec_num_correct_drafts", &c);
    if (!c)
        correct = num(meta, "spec_accepted_drafts", &c);
    acc->correct_drafts += correct;
    bool p = false;
    double proposed = num(meta, "spec_num_proposed_drafts", &p);
    if (!p)
        proposed = num(meta, "spec_proposed_drafts", &p);
    acc->proposed_drafts += proposed;
    acc->completion_tokens += num(meta, "completion_tokens", &dummy);
    json_t *h = json_object_get(meta, "spec_correct_drafts_histogram");
    if (!json_is_array(h))
        h = json_object_get(meta, "spec_accept_histogram");
    if (json_is_array(h)) {
        size_t n = json_array_size(h);
        if (n > DSA_MTP_MAX_POS + 1)
            n = DSA_MTP_MAX_POS + 1;
        for (size_t i = 0; i < n; i++)
            acc->hist[i] += json_number_value(json_array_get(h, i));
        if (n > acc->n_hist)
            acc->n_hist = n;
    }
}

void dsa_mtp_result_from_sglang(const struct dsa_mtp_perreq *acc, struct dsa_mtp_result *r)
{
    memset(r, 0, sizeof *r);
    r->present = acc->n_with > 0;
    r->d_drafts = acc->verify_ct;
    r->d_accepted = acc->correct_drafts;
    r->d_draft_tokens = acc->proposed_drafts;
    /* histogram[i] = verify steps that accepted exactly i drafts, so position j was accepted
       in every step that accepted more than j */
    r->n_pos = acc->n_hist ? acc->n_hist - 1 : 0;
    for (size_t j = 0; j < r->n_pos; j++)
        for (size_t i = j + 1; i < acc->n_hist; i++)
            r->d_pos[j] += acc->hist[i];
    rates(r);
}

/* one line per figure, aligned with the run's other summary lines:
     acceptance length   3.4904   (1 + 1234 accepted / 823 drafts)
     draft acceptance    0.7470   (1234 / 1652 draft tokens)
     per position        0.9120 0.6430 0.3390 */
void dsa_mtp_print(FILE *out, const struct dsa_mtp_result *r)
{
    if (!r->measured) {
        fprintf(out, "acceptance length   n/a      (%s)\n",
                r->present ? "no drafts during the run" : "no spec-decode counters");
        return;
    }
    fprintf(out, "acceptance length   %.4f   (1 + %.0f accepted / %.0f drafts)\n", r->al,
            r->d_accepted, r->d_drafts);
    if (isnan(r->draft_rate))
        fprintf(out, "draft acceptance    n/a\n");
    else
        fprintf(out, "draft acceptance    %.4f   (%.0f / %.0f draft tokens)\n", r->draft_rate,
                r->d_accepted, r->d_draft_tokens);
    if (r->n_pos) {
        fprintf(out, "per position       ");
        for (size_t j = 0; j < r->n_pos; j++)
            fprintf(out, " %.4f", r->pos_rate[j]);
        fputc('\n', out);
    }
}

json_t *dsa_mtp_result_json(const struct dsa_mtp_result *r)
{
    json_t *o = json_pack("{s:b,s:b}", "present", r->present, "measured", r->measured);
    if (!r->present)
        return o;
    json_t *dpos = json_array(), *prate = json_array();
    for (size_t j = 0; j < r->n_pos; j++) {
        json_array_append_new(dpos, json_real(r->d_pos[j]));
        if (r->measured)
            json_array_append_new(prate, json_real(r->pos_rate[j]));
    }
    json_object_set_new(o, "drafts", json_real(r->d_drafts));
    json_object_set_new(o, "draft_tokens", json_real(r->d_draft_tokens));
    json_object_set_new(o, "accepted", json_real(r->d_accepted));
    json_object_set_new(o, "accepted_per_pos", dpos);
    if (r->measured) {
        json_object_set_new(o, "acceptance_length", json_real(r->al));
        json_object_set_new(o, "draft_acceptance_rate",
                            isnan(r->draft_rate) ? json_null() : json_real(r->draft_rate));
        json_object_set_new(o, "per_position_rate", prate);
    } else {
        json_decref(prate);
    }
    return o;
}
