/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "metrics.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/opt.h"

int srv_spec_rates_from_length(struct srv_spec_cfg *c, double length)
{
    if (c->k < 1 || c->k > SRV_SPEC_MAX || !(length >= 1.0 && length <= c->k + 1.0))
        return -1;
    double x = length - 1.0;
    int whole = (int)x;
    for (int i = 0; i < c->k; i++)
        c->rates[i] = i < whole ? 1.0 : i == whole ? x - whole : 0.0;
    return 0;
}

int srv_spec_rates_parse(struct srv_spec_cfg *c, const char *list)
{
    struct dsa_strlist items = {0};
    dsa_split_commas(list, &items);
    int rc = -1;
    if (items.n < 1 || items.n > SRV_SPEC_MAX || (c->k && (size_t)c->k != items.n))
        goto cleanup;
    for (size_t i = 0; i < items.n; i++) {
        char *end;
        double r = strtod(items.v[i], &end);
        if (end == items.v[i] || *end || !(r >= 0.0 && r <= 1.0) || (i && r > c->rates[i - 1]))
            goto cleanup;
        c->rates[i] = r;
    }
    c->k = (int)items.n;
    rc = 0;
cleanup:
    dsa_strlist_free_items(&items);
    return rc;
}

/* Base-2 radical inverse: 1 -> 0.5, 2 -> 0.25, 3 -> 0.75, ... */
static double vdc(unsigned long n)
{
    double v = 0.0, f = 0.5;
    for (; n; n >>= 1, f *= 0.5)
        if (n & 1)
            v += f;
    return v;
}

int srv_spec_step_accepts(const struct srv_spec_cfg *c, unsigned long s)
{
    double u = vdc(s + 1);
    int n = 0;
    while (n < c->k && u < c->rates[n])
        n++;
    return n;
}

void srv_spec_simulate(const struct srv_spec_cfg *c, long completion_tokens,
                       struct srv_spec_result *r)
{
    memset(r, 0, sizeof *r);
    if (c->k < 1)
        return;
    long made = completion_tokens > 0 ? 1 : 0;
    for (unsigned long s = 0; made < completion_tokens; s++) {
        int n = srv_spec_step_accepts(c, s);
        r->steps++;
        r->draft_tokens += c->k;
        r->accepted += n;
        for (int i = 0; i < n; i++)
            r->per_pos[i]++;
        r->hist[n]++;
        made += 1 + n;
    }
}

void srv_py_repr(double d, char *out, size_t outlen)
{
    if (isnan(d)) {
        snprintf(out, outlen, "nan");
        return;
    }
    if (isinf(d)) {
        snprintf(out, outlen, d > 0 ? "inf" : "-inf");
        return;
    }
    /* Shortest digits that round-trip, as Python's repr does. */
    char buf[40];
    int prec = 1;
    for (; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*e", prec - 1, d);
        if (strtod(buf, NULL) == d)
            break;
    }
    /* buf = [-]D[.DDD]e[+-]XX */
    const char *p = buf;
    bool neg = *p == '-';
    if (neg)
        p++;
    char digits[24];
    size_t nd = 0;
    for (; *p && *p != 'e'; p++)
        if (*p != '.')
            digits[nd++] = *p;
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    digits[nd] = '\0';
    int e = atoi(p + 1);
    char res[64];
    size_t k = 0;
    if (neg)
        res[k++] = '-';
    if (d == 0.0) {
        snprintf(res + k, sizeof res - k, "0.0");
    } else if (e >= -4 && e < 16) {
        if (e < 0) {
            k += (size_t)snprintf(res + k, sizeof res - k, "0.");
            for (int i = -1; i > e; i--)
                res[k++] = '0';
            snprintf(res + k, sizeof res - k, "%s", digits);
        } else {
            for (int i = 0; i <= e; i++)
                res[k++] = (size_t)i < nd ? digits[i] : '0';
            res[k++] = '.';
            if ((size_t)e + 1 < nd)
                snprintf(res + k, sizeof res - k, "%s", digits + e + 1);
            else
                snprintf(res + k, sizeof res - k, "0");
        }
    } else {
        res[k++] = digits[0];
        if (nd > 1) {
            res[k++] = '.';
            memcpy(res + k, digits + 1, nd - 1);
            k += nd - 1;
        }
        snprintf(res + k, sizeof res - k, "e%c%02d", e < 0 ? '-' : '+', abs(e));
    }
    snprintf(out, outlen, "%s", res);
}

void srv_float_to_go(double d, char *out, size_t outlen)
{
    if (isinf(d)) {
        snprintf(out, outlen, d > 0 ? "+Inf" : "-Inf");
        return;
    }
    if (isnan(d)) {
        snprintf(out, outlen, "NaN");
        return;
    }
    char s[64];
    srv_py_repr(d, s, sizeof s);
    const char *dot = strchr(s, '.');
    long di = dot ? dot - s : -1;
    if (d > 0 && di > 6) {
        /* mantissa = s[0] + "." + s[1:dot] + s[dot+1:], then rstrip("0.") */
        char m[64];
        size_t k = 0;
        m[k++] = s[0];
        m[k++] = '.';
        for (long i = 1; i < di; i++)
            m[k++] = s[i];
        for (const char *q = dot + 1; *q; q++)
            m[k++] = *q;
        while (k > 0 && (m[k - 1] == '0' || m[k - 1] == '.'))
            k--;
        m[k] = '\0';
        /* Python writes f"e+0{dot - 1}": two digits below 10, three from 10 up. */
        snprintf(out, outlen, "%se+0%ld", m, di - 1);
        return;
    }
    snprintf(out, outlen, "%s", s);
}

/* Histogram buckets of vllm:e2e_request_latency_seconds. */
static const double latency_buckets[] = {0.3,  0.5,   0.8,   1.0,   1.5,   2.0,    2.5,
                                         5.0,  10.0,  15.0,  20.0,  30.0,  40.0,   50.0,
                                         60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
#define NBUCKETS (sizeof latency_buckets / sizeof latency_buckets[0])

static const char *const finish_reasons[] = {"stop", "length", "abort"};

static struct {
    pthread_mutex_t lock;
    char *model;
    bool sglang;
    struct srv_spec_cfg spec;
    double created;
    double running;
    double prompt_tokens, generation_tokens;
    double success[3];
    double drafts, draft_tokens, accepted, per_pos[SRV_SPEC_MAX];
    double lat_bucket[NBUCKETS], lat_count, lat_sum;
    double last_accept_length, last_accept_rate;
} M = {.lock = PTHREAD_MUTEX_INITIALIZER};

void srv_metrics_init(const char *model, const struct srv_spec_cfg *spec, bool sglang)
{
    free(M.model);
    M.model = strdup(model);
    M.sglang = sglang;
    M.spec = *spec;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    M.created = (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void srv_metrics_record(long prompt_tokens, long completion_tokens, const char *finish_reason,
                        const struct srv_spec_result *spec, double latency_s)
{
    pthread_mutex_lock(&M.lock);
    M.prompt_tokens += (double)prompt_tokens;
    M.generation_tokens += (double)completion_tokens;
    for (int i = 0; i < 3; i++)
        if (strcmp(finish_reason, finish_reasons[i]) == 0)
            M.success[i] += 1;
    if (spec && spec->steps) {
        M.drafts += (double)spec->steps;
        M.draft_tokens += (double)spec->draft_tokens;
        M.accepted += (double)spec->accepted;
        for (int i = 0; i < M.spec.k; i++)
            M.per_pos[i] += (double)spec->per_pos[i];
        M.last_accept_length = (double)completion_tokens / (double)spec->steps;
        M.last_accept_rate = (double)spec->accepted / (double)spec->draft_tokens;
    }
    for (size_t i = 0; i < NBUCKETS; i++)
        if (latency_s <= latency_buckets[i])
            M.lat_bucket[i] += 1;
    M.lat_count += 1;
    M.lat_sum += latency_s;
    pthread_mutex_unlock(&M.lock);
}

void srv_metrics_running(int delta)
{
    pthread_mutex_lock(&M.lock);
    M.running += delta;
    pthread_mutex_unlock(&M.lock);
}

int srv_metrics_running_now(void)
{
    pthread_mutex_lock(&M.lock);
    int n = (int)M.running;
    pthread_mutex_unlock(&M.lock);
    return n;
}

/* One label value, escaped as the exposition format requires. */
static void add_label(struct dsa_buf *b, const char *name, const char *value, bool first)
{
    dsa_buf_addf(b, "%s%s=\"", first ? "" : ",", name);
    for (const char *p = value; *p; p++) {
        if (*p == '\\')
            dsa_buf_adds(b, "\\\\");
        else if (*p == '"')
            dsa_buf_adds(b, "\\\"");
        else if (*p == '\n')
            dsa_buf_adds(b, "\\n");
        else
            dsa_buf_addch(b, *p);
    }
    dsa_buf_addch(b, '"');
}

/* name{engine="0"[,extra="v"],model_name="M"[,position="i"]} value: labels sorted by name,
   which for our label sets is: engine, finished_reason, le, model_name, position. */
static void sample(struct dsa_buf *b, const char *name, const char *extra_name,
                   const char *extra_value, const char *position, double v)
{
    char num[64];
    srv_float_to_go(v, num, sizeof num);
    dsa_buf_addf(b, "%s{", name);
    if (M.sglang) {
        add_label(b, "model_name", M.model, true);
    } else {
        add_label(b, "engine", "0", true);
        if (extra_name)
            add_label(b, extra_name, extra_value, false);
        add_label(b, "model_name", M.model, false);
        if (position)
            add_label(b, "position", position, false);
    }
    dsa_buf_addf(b, "} %s\n", num);
}

static void header(struct dsa_buf *b, const char *name, const char *help, const char *type)
{
    dsa_buf_addf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A counter child set: base "vllm:x" → vllm:x_total samples, then the vllm:x_created block. */
static void counter(struct dsa_buf *b, const char *base, const char *help, int nchildren,
                    const char *extra_name, const char *const *extra_values, const double *values,
                    bool per_position)
{
    char name[160];
    snprintf(name, sizeof name, "%s_total", base);
    header(b, name, help, "counter");
    for (int i = 0; i < nchildren; i++) {
        char pos[16];
        snprintf(pos, sizeof pos, "%d", i);
        sample(b, name, extra_name, extra_name ? extra_values[i] : NULL, per_position ? pos : NULL,
               values[i]);
    }
    snprintf(name, sizeof name, "%s_created", base);
    header(b, name, help, "gauge");
    for (int i = 0; i < nchildren; i++) {
        char pos[16];
        snprintf(pos, sizeof pos, "%d", i);
        sample(b, name, extra_name, extra_name ? extra_values[i] : NULL, per_position ? pos : NULL,
               M.created);
    }
}

void srv_metrics_render(struct dsa_buf *b)
{
    pthread_mutex_lock(&M.lock);
    header(b, "python_info", "Python platform information", "gauge");
    dsa_buf_adds(b, "python_info{implementation=\"CPython\",major=\"3\",minor=\"12\","
                    "patchlevel=\"3\",version=\"3.12.3\"} 1.0\n");
    if (M.sglang) {
        header(b, "sglang:num_running_reqs", "The number of running requests.", "gauge");
        sample(b, "sglang:num_running_reqs", NULL, NULL, NULL, M.running);
        header(b, "sglang:spec_accept_length",
               "The average acceptance length of speculative decoding.", "gauge");
        sample(b, "sglang:spec_accept_length", NULL, NULL, NULL, M.last_accept_length);
        header(b, "sglang:spec_accept_rate", "The average acceptance rate of speculative decoding.",
               "gauge");
        sample(b, "sglang:spec_accept_rate", NULL, NULL, NULL, M.last_accept_rate);
        counter(b, "sglang:prompt_tokens", "Number of prefill tokens processed.", 1, NULL, NULL,
                &M.prompt_tokens, false);
        counter(b, "sglang:generation_tokens", "Number of generation tokens processed.", 1, NULL,
                NULL, &M.generation_tokens, false);
        pthread_mutex_unlock(&M.lock);
        return;
    }
    header(b, "vllm:num_requests_running", "Number of requests in model execution batches.",
           "gauge");
    sample(b, "vllm:num_requests_running", NULL, NULL, NULL, M.running);
    counter(b, "vllm:prompt_tokens", "Number of prefill tokens processed.", 1, NULL, NULL,
            &M.prompt_tokens, false);
    counter(b, "vllm:generation_tokens", "Number of generation tokens processed.", 1, NULL, NULL,
            &M.generation_tokens, false);
    counter(b, "vllm:request_success", "Count of successfully processed requests.", 3,
            "finished_reason", finish_reasons, M.success, false);

    /* Histogram: buckets, count, sum, then the _created block (generate_latest order). */
    header(b, "vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.",
           "histogram");
    for (size_t i = 0; i <= NBUCKETS; i++) {
        char le[32];
        if (i < NBUCKETS)
            srv_float_to_go(latency_buckets[i], le, sizeof le);
        else
            snprintf(le, sizeof le, "+Inf");
        sample(b, "vllm:e2e_request_latency_seconds_bucket", "le", le, NULL,
               i < NBUCKETS ? M.lat_bucket[i] : M.lat_count);
    }
    sample(b, "vllm:e2e_request_latency_seconds_count", NULL, NULL, NULL, M.lat_count);
    sample(b, "vllm:e2e_request_latency_seconds_sum", NULL, NULL, NULL, M.lat_sum);
    header(b, "vllm:e2e_request_latency_seconds_created",
           "Histogram of e2e request latency in seconds.", "gauge");
    sample(b, "vllm:e2e_request_latency_seconds_created", NULL, NULL, NULL, M.created);

    if (M.spec.k > 0) {
        counter(b, "vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", 1, NULL, NULL,
                &M.drafts, false);
        counter(b, "vllm:spec_decode_num_draft_tokens", "Number of draft tokens.", 1, NULL, NULL,
                &M.draft_tokens, false);
        counter(b, "vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.", 1, NULL,
                NULL, &M.accepted, false);
        counter(b, "vllm:spec_decode_num_accepted_tokens_per_pos",
                "Accepted tokens per draft position.", M.spec.k, NULL, NULL, M.per_pos, true);
    }
    pthread_mutex_unlock(&M.lock);
}

void srv_metrics_spec_totals(double *drafts, double *accepted)
{
    pthread_mutex_lock(&M.lock);
    *drafts = M.drafts;
    *accepted = M.accepted;
    pthread_mutex_unlock(&M.lock);
}
