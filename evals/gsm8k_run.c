/* GSM8K records, summaries and summary files; see gsm8k_run.h.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "evals/gsm8k_run.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/exitcode.h"
#include "util/json.h"
#include "util/fs.h"
#include "util/msg.h"

void dsa_gsm8k_record_grade(dsa_gsm8k_extractor *x, json_t *rec,
                            enum dsa_gsm8k_extract_mode primary, const char *text, size_t len,
                            const char *gold)
{
    json_t *ex = json_object();
    char *pred = NULL;
    for (int m = 0; m < DSA_GSM8K_EXTRACT_N; m++) {
        char *p = dsa_gsm8k_extract(x, (enum dsa_gsm8k_extract_mode)m, text, len);
        json_object_set_new(ex, dsa_gsm8k_extract_name((enum dsa_gsm8k_extract_mode)m),
                            json_string(p));
        if (m == (int)primary)
            pred = p;
        else
            free(p);
    }
    bool ok = dsa_gsm8k_is_correct(x, primary, pred, gold, strlen(gold));
    json_object_set_new(rec, "extract", ex);
    json_object_set_new(rec, "pred", json_string(pred));
    json_object_set_new(rec, "correct", json_boolean(ok));
    json_object_set_new(rec, "score", json_integer(ok ? 1 : 0));
    free(pred);
}

double dsa_gsm8k_stderr(size_t correct, size_t n)
{
    if (n < 2)
        return NAN;
    double p = (double)correct / (double)n;
    return sqrt(p * (1.0 - p) / (double)(n - 1));
}

static bool record_ok(json_t *rec)
{
    const char *st = json_string_value(json_object_get(rec, "status"));
    return rec && (!st || !strcmp(st, "ok")) && json_is_string(json_object_get(rec, "output"));
}

/* Scores `pred` of another extraction mode against the record's gold, for the "other
   extractions" line; the grading is recomputed so old records need no extra keys. */
static void other_accuracies(json_t *const *records, size_t n, enum dsa_gsm8k_extract_mode primary,
                             size_t graded, FILE *out, json_t *by)
{
    dsa_gsm8k_extractor *x = dsa_gsm8k_extractor_new();
    size_t correct[DSA_GSM8K_EXTRACT_N] = {0};
    for (size_t i = 0; i < n; i++) {
        if (!record_ok(records[i]))
            continue;
        const char *gold = json_string_value(json_object_get(records[i], "gold"));
        json_t *ex = json_object_get(records[i], "extract");
        for (int m = 0; m < DSA_GSM8K_EXTRACT_N && gold; m++) {
            const char *p = json_string_value(
                json_object_get(ex, dsa_gsm8k_extract_name((enum dsa_gsm8k_extract_mode)m)));
            if (p && dsa_gsm8k_is_correct(x, (enum dsa_gsm8k_extract_mode)m, p, gold, strlen(gold)))
                correct[m]++;
        }
    }
    if (graded)
        fprintf(out, "other extractions  ");
    for (int m = 0; m < DSA_GSM8K_EXTRACT_N; m++) {
        double acc = graded ? (double)correct[m] / (double)graded : NAN;
        json_object_set_new(by, dsa_gsm8k_extract_name((enum dsa_gsm8k_extract_mode)m),
                            graded ? json_real(acc) : json_null());
        if (graded && m != (int)primary)
            fprintf(out, " %s %.4f", dsa_gsm8k_extract_name((enum dsa_gsm8k_extract_mode)m), acc);
    }
    if (graded)
        fputc('\n', out);
    dsa_gsm8k_extractor_free(&x);
}

/* llama-server: the summed per-request timings.draft_n / draft_n_accepted against the counter
   deltas. They agree exactly on an otherwise idle server. */
static void check_timings(const struct dsa_mtp_perreq *p, const struct dsa_mtp_result *r, FILE *out,
                          json_t *m)
{
    bool agree =
        p->timings_draft_n == r->d_draft_tokens && p->timings_draft_accepted == r->d_accepted;
    fprintf(out, "timings cross-check %s   (%.0f drafted, %.0f accepted over %zu responses)\n",
            agree ? "agrees" : "DIFFERS", p->timings_draft_n, p->timings_draft_accepted,
            p->n_timings);
    json_object_set_new(m, "timings",
                        json_pack("{s:I,s:f,s:f,s:b}", "responses", (json_int_t)p->n_timings,
                                  "draft_n", p->timings_draft_n, "draft_n_accepted",
                                  p->timings_draft_accepted, "agree", agree));
    if (!agree)
        dsa_warnf("per-response timings (%.0f draft tokens, %.0f accepted) differ from the "
                  "/metrics deltas (%.0f draft tokens, %.0f accepted): other traffic reached "
                  "the server, or it prints counters past 1e6 rounded to 6 digits",
                  p->timings_draft_n, p->timings_draft_accepted, r->d_draft_tokens, r->d_accepted);
}

/* No counters to difference (a llama-server without --metrics, or a build without the
   spec-decode counters): the per-response timings still give the draft acceptance rate; the
   acceptance length needs the number of drafts, which timings do not carry. */
static void timings_only(const struct dsa_mtp_perreq *p, FILE *out, json_t *m)
{
    double rate = p->timings_draft_accepted / p->timings_draft_n;
    fprintf(out, "draft acceptance    %.4f   (%.0f / %.0f draft tokens, from timings)\n", rate,
            p->timings_draft_accepted, p->timings_draft_n);
    json_object_set_new(m, "timings",
                        json_pack("{s:I,s:f,s:f,s:f}", "responses", (json_int_t)p->n_timings,
                                  "draft_n", p->timings_draft_n, "draft_n_accepted",
                                  p->timings_draft_accepted, "draft_acceptance_rate", rate));
}

/* Questions/s, output tokens/s and wall time of this attempt (what vLLM's gsm8k script
   prints): "throughput          3.20 questions/s, 412.5 output tokens/s, wall 10.0 s (32 sent)" */
static void add_throughput(const struct dsa_gsm8k_summary_in *in, FILE *out, json_t *s)
{
    bool have = in->sent > 0 && in->wall_s > 0;
    double qps = have ? (double)in->sent / in->wall_s : NAN;
    double tps = have ? in->completion_tokens / in->wall_s : NAN;
    if (have)
        fprintf(out,
                "throughput          %.2f questions/s, %.1f output tokens/s, wall %.1f s (%zu "
                "sent)\n",
                qps, tps, in->wall_s, in->sent);
    else
        fprintf(out, "throughput          n/a      (nothing sent in this attempt)\n");
    json_object_set_new(s, "throughput",
                        json_pack("{s:o,s:o,s:o,s:I,s:f}", "wall_s",
                                  have ? json_real(in->wall_s) : json_null(), "questions_per_s",
                                  have ? json_real(qps) : json_null(), "output_tokens_per_s",
                                  have ? json_real(tps) : json_null(), "sent", (json_int_t)in->sent,
                                  "completion_tokens", in->completion_tokens));
}

/* The acceptance part of the summary; returns DSA_EXIT_BACKEND when expect_mtp is unmet. */
static int summarize_mtp(const struct dsa_gsm8k_summary_in *in, FILE *out, json_t *summary)
{
    struct dsa_mtp_result r;
    const char *source = in->sglang ? "meta_info" : "metrics";
    char err[256] = "";
    memset(&r, 0, sizeof r);
    if (in->sglang) {
        dsa_mtp_result_from_sglang(in->perreq, &r);
        if (!r.present)
            snprintf(err, sizeof err,
                     "no response carried spec_verify_ct in meta_info: is speculative decoding "
                     "on (--speculative-algorithm)?");
    } else if (!in->have_counters) {
        snprintf(err, sizeof err, "cannot read the server's /metrics");
    } else if (dsa_mtp_delta(in->before, in->after, &r, err, sizeof err) == 0 && !r.present) {
        snprintf(err, sizeof err,
                 "the server exposes no spec-decode counters (%s): is speculative decoding "
                 "on (--speculative-config)?",
                 DSA_MTP_DRAFTS);
    } else if (r.present && !r.measured) {
        snprintf(err, sizeof err, "the spec-decode counters did not move during the run");
    }
    json_t *stored = (json_t *)in->stored_mtp;
    if (!r.measured && json_is_true(json_object_get(stored, "measured")) &&
        json_is_number(json_object_get(stored, "acceptance_length"))) {
        /* nothing was sent now: the run's acceptance is the one measured before */
        fprintf(out,
                "acceptance length   %.4f   (stored: measured by an earlier attempt of this run)\n",
                json_number_value(json_object_get(stored, "acceptance_length")));
        json_object_set(summary, "mtp", stored);
        return DSA_EXIT_OK;
    }
    dsa_mtp_print(out, &r);
    json_t *m = dsa_mtp_result_json(&r);
    json_object_set_new(m, "source", json_string(source));
    json_object_set_new(m, "requests", json_integer((json_int_t)in->sent));
    if (!in->sglang && in->have_counters) {
        json_object_set_new(m, "counters_before", dsa_mtp_counters_json(in->before));
        json_object_set_new(m, "counters_after", dsa_mtp_counters_json(in->after));
    }
    if (in->sglang && r.measured)
        json_object_set_new(m, "sglang_accept_length",
                            json_real(in->perreq->completion_tokens / in->perreq->verify_ct));
    if (*err)
        json_object_set_new(m, "note", json_string(err));
    json_object_set_new(summary, "mtp", m);

    if (r.measured && in->sglang)
        fprintf(out,
                "sglang accept len   %.4f   (completion tokens / verify steps, counts the "
                "prefill token)\n",
                in->perreq->completion_tokens / in->perreq->verify_ct);
    if (r.measured && !in->sglang && !dsa_mtp_plausible(&r, in->completion_tokens, in->sent))
        dsa_warnf("%.0f drafts + %.0f accepted tokens are more than the %.0f completion tokens "
                  "of this run's %zu requests can explain: other traffic reached the server, so "
                  "the acceptance length is not this run's alone",
                  r.d_drafts, r.d_accepted, in->completion_tokens, in->sent);
    if (r.measured && !in->sglang && in->perreq->n_with &&
        (in->perreq->num_spec_steps != r.d_drafts ||
         in->perreq->num_accepted_draft_tokens != r.d_accepted))
        dsa_warnf("per-request spec-decode metrics (%.0f steps, %.0f accepted) differ from the "
                  "/metrics deltas (%.0f drafts, %.0f accepted)",
                  in->perreq->num_spec_steps, in->perreq->num_accepted_draft_tokens, r.d_drafts,
                  r.d_accepted);
    if (r.measured && !in->sglang && in->perreq->n_timings)
        check_timings(in->perreq, &r, out, m);
    else if (!r.measured && !in->sglang && in->perreq->timings_draft_n > 0)
        timings_only(in->perreq, out, m);
    if (r.measured && in->resumed)
        dsa_notef("the acceptance length covers the %zu questions sent in this attempt, not the "
                  "%zu resumed",
                  in->sent, in->resumed);
    if (!r.measured) {
        if (in->expect_mtp) {
            dsa_errorf("--expect-mtp: %s", *err ? err : "no acceptance measured");
            return DSA_EXIT_BACKEND;
        }
        if (*err)
            dsa_notef("acceptance length not measured: %s", err);
    }
    return DSA_EXIT_OK;
}

int dsa_gsm8k_summarize(const struct dsa_gsm8k_summary_in *in, json_t *const *records, FILE *out,
                        json_t **summary)
{
    size_t graded = 0, correct = 0, invalid = 0, failed = 0, missing = 0, excluded = 0;
    for (size_t i = 0; i < in->n; i++) {
        json_t *rec = records[i];
        if (!rec) {
            missing++;
            continue;
        }
        const char *st = json_string_value(json_object_get(rec, "status"));
        if (st && !strcmp(st, "excluded")) { /* over-context: neither graded nor failed */
            excluded++;
            continue;
        }
        if (!record_ok(rec)) {
            failed++;
            continue;
        }
        graded++;
        correct += json_is_true(json_object_get(rec, "correct"));
        const char *pred = json_string_value(json_object_get(rec, "pred"));
        invalid += pred && !strcmp(pred, DSA_GSM8K_INVALID);
    }
    double acc = graded ? (double)correct / (double)graded : NAN;
    double se = dsa_gsm8k_stderr(correct, graded);
    double inv = graded ? (double)invalid / (double)graded : NAN;
    const char *ex = dsa_gsm8k_extract_name(in->extract);

    fprintf(out, "gsm8k %s: %zu questions, %zu graded (%zu sent, %zu resumed, %zu failed", in->mode,
            in->n, graded, in->sent, in->resumed, failed);
    if (excluded)
        fprintf(out, ", %zu excluded over context", excluded);
    fputs(")\n", out);
    if (graded)
        fprintf(out,
                "accuracy            %.4f ± %.4f   (%zu/%zu correct, %s; ± CLT standard error)\n",
                acc, isnan(se) ? 0.0 : se, correct, graded, ex);
    else
        fprintf(out, "accuracy            n/a      (nothing graded)\n");
    if (graded)
        fprintf(out, "invalid answers     %.4f            (%zu/%zu)\n", inv, invalid, graded);

    json_t *s =
        json_pack("{s:s,s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "eval", "gsm8k", "prompt",
                  in->mode, "extract", ex, "questions", (json_int_t)in->n, "graded",
                  (json_int_t)graded, "correct", (json_int_t)correct, "invalid",
                  (json_int_t)invalid, "failed", (json_int_t)failed, "missing", (json_int_t)missing,
                  "sent", (json_int_t)in->sent, "resumed", (json_int_t)in->resumed);
    json_object_set_new(s, "excluded", json_integer((json_int_t)excluded));
    json_object_set_new(s, "accuracy", graded ? json_real(acc) : json_null());
    json_object_set_new(s, "stderr", isnan(se) ? json_null() : json_real(se));
    json_object_set_new(s, "invalid_rate", graded ? json_real(inv) : json_null());
    json_t *by = json_object();
    other_accuracies(records, in->n, in->extract, graded, out, by);
    json_object_set_new(s, "accuracy_by_extract", by);

    add_throughput(in, out, s);
    int ret = DSA_EXIT_OK;
    if (in->mtp)
        ret = summarize_mtp(in, out, s);
    else
        json_object_set_new(s, "mtp", json_null());
    if (excluded)
        dsa_notef("%zu of %zu questions excluded: their prompts do not fit the server's context "
                  "(see their records)",
                  excluded, in->n);
    if (failed)
        dsa_errorf("%zu of %zu questions failed (their records hold the error; --force-new "
                   "starts the run anew)",
                   failed, in->n);
    if (missing)
        dsa_errorf("%zu of %zu questions did not finish; rerun with the same --out to finish "
                   "them",
                   missing, in->n);
    if ((failed || missing) && !ret)
        ret = DSA_EXIT_FAIL;
    *summary = s;
    return ret;
}

char *dsa_gsm8k_summary_path(const char *run_path)
{
    size_t n = strlen(run_path);
    if (n > 6 && !strcmp(run_path + n - 6, ".jsonl"))
        n -= 6;
    struct dsa_buf b = DSA_BUF_INIT;
    dsa_buf_init(&b);
    dsa_buf_add(&b, run_path, n);
    dsa_buf_adds(&b, ".summary.json");
    return dsa_buf_detach(&b, NULL);
}

int dsa_gsm8k_summary_write(const char *path, json_t *summary)
{
    struct dsa_buf tmp = DSA_BUF_INIT;
    dsa_buf_init(&tmp);
    char *tmp_name = dsa_tmp_path(path);
    dsa_buf_adds(&tmp, tmp_name);
    free(tmp_name);
    char *line = dsa_json_dumps_line(summary);
    int ret = -1;
    FILE *f = fopen(tmp.data, "w");
    if (!f) {
        dsa_errorf("cannot write '%s': %s", tmp.data, strerror(errno));
        goto cleanup;
    }
    int werr = fputs(line, f) < 0 || fputc('\n', f) == EOF;
    if (fclose(f) || werr) {
        dsa_errorf("cannot write '%s': %s", tmp.data, strerror(errno));
        unlink(tmp.data);
        goto cleanup;
    }
    if (rename(tmp.data, path)) {
        dsa_errorf("cannot rename '%s' to '%s': %s", tmp.data, path, strerror(errno));
        unlink(tmp.data);
        goto cleanup;
    }
    ret = 0;
cleanup:
    free(line);
    dsa_buf_release(&tmp);
    return ret;
}

json_t *dsa_gsm8k_summary_read(const char *path)
{
    if (access(path, F_OK))
        return NULL;
    json_error_t e;
    json_t *v = json_load_file(path, 0, &e);
    if (!json_is_object(v)) {
        dsa_errorf("cannot parse '%s': %s", path, v ? "not a JSON object" : e.text);
        json_decref(v);
        return NULL;
    }
    return v;
}
