/*
 * The in-process backend (inprocess.h).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "backend/inprocess.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dsa_numeric.h"
#include "kernels/cpu/parallel.h"
#include "kernels/golden.h"
#include "kernels/plugin.h"
#include "kernels/proxy.h"
#include "kernels/trace.h"
#include "util/buf.h"
#include "util/hash.h"
#include "util/msg.h"
#include "version.h"

#define PROXY_NAME "proxy-v1"

struct dsa_inproc {
    const struct dsa_kernels_api *api;
    struct dsa_k_flags f;
    int topk;
    uint64_t seed;
    long max_pos;
    float *cos, *sin; /* host [max_pos, 32] */
    void *dcos, *dsin, *dln_w, *dln_b;
    float ln_w[128], ln_b[128];
    double times[DSA_INPROC_NT]; /* seconds since dsa_inproc_times_reset */
};

const char *const dsa_inproc_stage_keys[DSA_INPROC_NT] = {
    "proxy", "s1_k_prep", "s2_q_prep", "s3_logits", "s4_topk", "golden", "host"};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void dsa_inproc_times_reset(dsa_inproc *p)
{
    memset(p->times, 0, sizeof p->times);
}

const double *dsa_inproc_times(const dsa_inproc *p)
{
    return p->times;
}

json_t *dsa_inproc_times_json(const dsa_inproc *p, long tokens)
{
    json_t *o = json_object();
    double total = 0.0, per = tokens > 0 ? 1e6 / (double)tokens : 0.0;
    for (int i = 0; i < DSA_INPROC_NT; i++) {
        json_object_set_new(o, dsa_inproc_stage_keys[i], json_real(p->times[i] * per));
        total += p->times[i];
    }
    json_object_set_new(o, "total", json_real(total * per));
    return o;
}

void dsa_inproc_opts_init(struct dsa_inproc_opts *o)
{
    memset(o, 0, sizeof *o);
    dsa_k_flags_default(&o->flags);
    o->topk = 2048;
    o->seed = 1;
}

dsa_inproc *dsa_inproc_new(const struct dsa_inproc_opts *o)
{
    const struct dsa_kernels_api *api =
        o->kernels_so ? dsa_kernels_load(o->kernels_so) : dsa_kernels_pick(o->device);
    if (!api)
        return NULL;
    dsa_inproc *p = dsa_xcalloc(1, sizeof *p);
    p->api = api;
    p->f = o->flags;
    p->topk = o->topk;
    p->seed = o->seed;
    dsa_proxy_ln(p->seed, p->ln_w, p->ln_b);
    p->dln_w = api->alloc(512);
    p->dln_b = api->alloc(512);
    if (!p->dln_w || !p->dln_b || api->upload(p->dln_w, p->ln_w, 512) ||
        api->upload(p->dln_b, p->ln_b, 512)) {
        dsa_errorf("cannot set up kernels '%s' on '%s'", api->name, api->device());
        dsa_inproc_free(&p);
    }
    return p;
}

void dsa_inproc_free(dsa_inproc **pp)
{
    dsa_inproc *p = *pp;
    if (!p)
        return;
    void *dev[] = {p->dcos, p->dsin, p->dln_w, p->dln_b};
    for (size_t i = 0; i < 4; i++)
        if (dev[i])
            p->api->free(dev[i]);
    free(p->cos);
    free(p->sin);
    free(p);
    *pp = NULL;
}

const char *dsa_inproc_device(const dsa_inproc *p)
{
    return p->api->device();
}

json_t *dsa_inproc_describe(const dsa_inproc *p)
{
    char vs[256];
    dsa_k_flags_str(&p->f, vs, sizeof vs);
    json_t *variant = json_object();
    /* "rope=neox,hadamard=off,…" -> {"rope": "neox", …} */
    char *save = NULL, *copy = dsa_xstrdup(vs);
    for (char *kv = strtok_r(copy, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (eq) {
            *eq = 0;
            json_object_set_new(variant, kv, json_string(eq + 1));
        }
    }
    free(copy);
    json_t *d = json_object();
    json_object_set_new(d, "kind", json_string("inprocess"));
    json_object_set_new(d, "device", json_string(p->api->device()));
    json_object_set_new(d, "kernels",
                        json_pack("{s:s, s:s, s:s}", "name", p->api->name, "build",
                                  p->api->build ? p->api->build : "", "git", DSA_GIT_HASH));
    json_object_set_new(d, "variant", variant);
    json_object_set_new(d, "variant_str", json_string(vs));
    json_object_set_new(d, "topk", json_integer(p->topk));
    json_object_set_new(d, "seed", json_integer((json_int_t)p->seed));
    json_object_set_new(d, "source", json_string("proxy"));
    json_object_set_new(d, "proxy", json_string(PROXY_NAME));
    return d;
}

/* the RoPE table covers positions [0, T) */
static int ensure_rope(dsa_inproc *p, long T)
{
    if (T <= p->max_pos)
        return 0;
    long n = 4096;
    while (n < T)
        n *= 2;
    free(p->cos);
    free(p->sin);
    p->cos = dsa_xmalloc((size_t)n * 32 * 4);
    p->sin = dsa_xmalloc((size_t)n * 32 * 4);
    dsa_proxy_rope_table(n, p->cos, p->sin);
    if (p->dcos)
        p->api->free(p->dcos);
    if (p->dsin)
        p->api->free(p->dsin);
    p->dcos = p->api->alloc((size_t)n * 128);
    p->dsin = p->api->alloc((size_t)n * 128);
    if (!p->dcos || !p->dsin || p->api->upload(p->dcos, p->cos, (size_t)n * 128) ||
        p->api->upload(p->dsin, p->sin, (size_t)n * 128)) {
        p->max_pos = 0;
        return -1;
    }
    p->max_pos = n;
    return 0;
}

/* ---- proxy inputs, in parallel over tokens ---- */

struct kgen {
    const dsa_inproc *p;
    const uint32_t *tokens;
    const unsigned char *planted; /* [T] or NULL */
    const double *u;              /* the topic direction */
    uint16_t *k_raw;
};

static void kgen_range(void *c, long b, long e)
{
    struct kgen *g = c;
    for (long t = b; t < e; t++) {
        const double *u = g->planted && g->planted[t] ? g->u : NULL;
        dsa_proxy_k_planted(g->p->seed, g->tokens[t], t, u, g->k_raw + (size_t)t * 128);
    }
}

/* q and w of the query rows, in parallel over rows */
struct qgen {
    const dsa_inproc *p;
    const uint32_t *tokens;
    const long *qpos;
    const double *u; /* the topic direction, or NULL */
    uint16_t *q_raw, *w_raw;
};

static void qgen_range(void *c, long b, long e)
{
    struct qgen *g = c;
    const int H = g->p->f.heads;
    for (long m = b; m < e; m++) {
        long pos = g->qpos[m];
        dsa_proxy_q_planted(g->p->seed, H, g->tokens[pos], pos, g->u,
                            g->q_raw + (size_t)m * H * 128);
        dsa_proxy_w(g->p->seed, H, g->tokens[pos], pos, g->w_raw + (size_t)m * H);
    }
}

/* ---- golden logits, in parallel over key blocks ---- */

struct gold {
    int M, H;
    long T;
    const long *qpos;
    const double *q, *w, *k;
    double *out; /* [M, T] */
};

static void gold_range(void *c, long b, long e)
{
    const struct gold *g = c;
    for (long s = b * 64; s < e * 64 && s < g->T; s++) {
        const double *k = g->k + (size_t)s * 128;
        for (int m = 0; m < g->M; m++) {
            if (s > g->qpos[m])
                continue;
            g->out[(size_t)m * g->T + s] =
                dsa_relu_score(g->q + (size_t)m * g->H * 128, g->w + (size_t)m * g->H, g->H, k);
        }
    }
}

static int fail(dsa_inproc *p, const char *stage, int st)
{
    if (st == DSA_K_UNSUPPORTED)
        return dsa_errorf("kernels '%s' do not support %s with these flags", p->api->name, stage);
    return dsa_errorf("kernels '%s' failed in %s (status %d)", p->api->name, stage, st);
}

/* golden k vectors of given raw k (LayerNorm and RoPE in fp64), in parallel over tokens */
struct kgold {
    const struct dsa_inproc_inputs *in;
    int rope;
    double *out;
};

static void kgold_range(void *c, long b, long e)
{
    const struct kgold *g = c;
    const struct dsa_inproc_inputs *in = g->in;
    for (long t = b; t < e; t++) {
        const float *cs = in->cos + (size_t)t * 32, *sn = in->sin + (size_t)t * 32;
        if (in->k_f32)
            dsa_golden_k_vec_f32(in->k_f32 + (size_t)t * 128, in->ln_w, in->ln_b, cs, sn, g->rope,
                                 0, g->out + (size_t)t * 128);
        else
            dsa_golden_k_vec(in->k_raw + (size_t)t * 128, in->ln_w, in->ln_b, cs, sn, g->rope, 0,
                             g->out + (size_t)t * 128);
    }
}

/* golden q vectors and weights, in parallel over (row, head) */
struct qgold {
    const struct dsa_inproc_inputs *in;
    int H, rope;
    double *q, *w;
};

static void qgold_range(void *c, long b, long e)
{
    const struct qgold *g = c;
    const struct dsa_inproc_inputs *in = g->in;
    float hs = g->H == 64 ? 0.125f : 0.1767766952966369f;
    for (long mh = b; mh < e; mh++) {
        long pos = in->qpos[mh / g->H];
        const float *cs = in->cos + pos * 32, *sn = in->sin + pos * 32;
        if (in->q_f32)
            dsa_golden_q_vec_f32(in->q_f32 + mh * 128, cs, sn, g->rope, 0, g->q + mh * 128);
        else
            dsa_golden_q_vec(in->q_raw + mh * 128, cs, sn, g->rope, 0, g->q + mh * 128);
        double wr = in->w_raw_dtype == DSA_K_BF16
                        ? (double)dsa_bf16_to_f32(((const uint16_t *)in->w_raw)[mh])
                        : (double)((const float *)in->w_raw)[mh];
        g->w[mh] = wr * (1.0 / sqrt(128.0)) * hs;
    }
}

/* the golden top-k of each row, in parallel over rows (a full sort each) */
struct gtopk {
    const double *glog;
    const long *qpos;
    long T;
    int K;
    int32_t *golden;
};

static void gtopk_range(void *c, long b, long e)
{
    const struct gtopk *g = c;
    for (long m = b; m < e; m++)
        dsa_golden_topk_f64(g->glog + (size_t)m * g->T, g->qpos[m] + 1, g->K,
                            g->golden + (size_t)m * g->K);
}

/* the device buffers of one call, freed together (a failed alloc leaves NULL, which the
   call checks) */
struct dev_bufs {
    const struct dsa_kernels_api *api;
    void *d[24];
    int n;
};

static void *dev_alloc(struct dev_bufs *b, size_t bytes)
{
    return b->d[b->n++] = b->api->alloc(bytes);
}

/* true when an alloc of b failed */
static bool dev_missing(const struct dev_bufs *b)
{
    for (int i = 0; i < b->n; i++)
        if (!b->d[i])
            return true;
    return false;
}

static void dev_free_all(struct dev_bufs *b)
{
    for (int i = 0; i < b->n; i++)
        if (b->d[i])
            b->api->free(b->d[i]);
}

/* adds the seconds since *t0 to stage i and restarts the clock */
static void lap(dsa_inproc *p, int i, double *t0)
{
    double t = now_s();
    p->times[i] += t - *t0;
    *t0 = t;
}

int dsa_inproc_select_inputs(dsa_inproc *p, const struct dsa_inproc_inputs *in, int32_t *idx,
                             int32_t *golden)
{
    const struct dsa_kernels_api *api = p->api;
    const int H = p->f.heads, K = p->topk, M = in->M;
    const long T = in->T;
    const long *qpos = in->qpos;
    int rc = -1, st;
    /* host time is what the stages leave of the whole call */
    double t_call = now_s(), staged = 0.0;
    for (int i = DSA_INPROC_T_S1; i <= DSA_INPROC_T_GOLDEN; i++)
        staged -= p->times[i];
    if (T < 1 || M < 1 || in->max_pos < T)
        return dsa_errorf("in-process inputs need T >= 1, M >= 1 and a RoPE table of T rows");
    for (int m = 0; m < M; m++)
        if (qpos[m] < 0 || qpos[m] >= T || (m && qpos[m] <= qpos[m - 1]))
            return dsa_errorf("query positions must increase and lie inside the prompt");
    long npages = (T + DSA_K_PAGE - 1) / DSA_K_PAGE;
    size_t cbytes = (size_t)npages * DSA_K_PAGE_BYTES, tab = (size_t)in->max_pos * 128;
    size_t wb = p->f.weights == DSA_K_BF16 ? 2 : 4, lb = p->f.logits == DSA_K_BF16 ? 2 : 4;
    size_t wrb = in->w_raw_dtype == DSA_K_BF16 ? 2 : 4;
    double *kgold = dsa_xmalloc((size_t)T * 128 * sizeof(double));
    int64_t *pos = dsa_xmalloc((size_t)T * 8), *qpos64 = dsa_xmalloc((size_t)M * 8);
    double *qgold = dsa_xmalloc((size_t)M * H * 128 * sizeof(double));
    double *wgold = dsa_xmalloc((size_t)M * H * sizeof(double));
    uint8_t *cache = dsa_xmalloc(cbytes), *k8 = dsa_xmalloc((size_t)T * 128);
    float *ks = dsa_xmalloc((size_t)T * 4);
    int32_t *rs = dsa_xcalloc((size_t)M, 4), *re = dsa_xmalloc((size_t)M * 4);
    double *glog = dsa_xmalloc((size_t)M * T * sizeof(double));
    struct dev_bufs db = {api, {0}, 0};

    double t0 = now_s();
    struct kgold kg = {in, p->f.rope, kgold};
    dsa_cpu_parallel_for(T, 256, kgold_range, &kg);
    struct qgold qg = {in, H, p->f.rope, qgold, wgold};
    dsa_cpu_parallel_for((long)M * H, 64, qgold_range, &qg);
    lap(p, DSA_INPROC_T_GOLDEN, &t0);
    for (long t = 0; t < T; t++)
        pos[t] = t;
    for (int m = 0; m < M; m++) {
        qpos64[m] = qpos[m];
        re[m] = (int32_t)(qpos[m] + 1);
    }

    /* S1: the whole prompt into the paged cache, slot = position */
    void *dk_raw = dev_alloc(&db, (size_t)T * 256), *dpos = dev_alloc(&db, (size_t)T * 8);
    void *dcache = dev_alloc(&db, cbytes), *dcos = dev_alloc(&db, tab), *dsin = dev_alloc(&db, tab);
    void *dln_w = dev_alloc(&db, 512), *dln_b = dev_alloc(&db, 512);
    if (!dk_raw || !dpos || !dcache || !dcos || !dsin || !dln_w || !dln_b ||
        api->upload(dk_raw, in->k_raw, (size_t)T * 256) || api->upload(dpos, pos, (size_t)T * 8) ||
        api->upload(dcos, in->cos, tab) || api->upload(dsin, in->sin, tab) ||
        api->upload(dln_w, in->ln_w, 512) || api->upload(dln_b, in->ln_b, 512)) {
        dsa_errorf("cannot move the prompt to '%s'", api->device());
        goto cleanup;
    }
    struct dsa_k_prep_args ka = {
        (int)T, (int)in->max_pos, dk_raw, dln_w, dln_b, dpos, dcos, dsin, dpos, dcache};
    t0 = now_s();
    if ((st = api->k_prep(&p->f, &ka)) != DSA_K_OK || (st = api->sync() ? DSA_K_EDEVICE : 0)) {
        fail(p, "k_prep", st);
        goto cleanup;
    }
    lap(p, DSA_INPROC_T_S1, &t0);
    /* S2: the query rows */
    void *dq_raw = dev_alloc(&db, (size_t)M * H * 256),
         *dw_raw = dev_alloc(&db, (size_t)M * H * wrb);
    void *dqpos = dev_alloc(&db, (size_t)M * 8), *dq8 = dev_alloc(&db, (size_t)M * H * 128);
    void *dqs = dev_alloc(&db, (size_t)M * H * 4), *dw = dev_alloc(&db, (size_t)M * H * wb);
    if (!dq_raw || !dw_raw || !dqpos || !dq8 || !dqs || !dw ||
        api->upload(dq_raw, in->q_raw, (size_t)M * H * 256) ||
        api->upload(dw_raw, in->w_raw, (size_t)M * H * wrb) ||
        api->upload(dqpos, qpos64, (size_t)M * 8)) {
        dsa_errorf("cannot move the queries to '%s'", api->device());
        goto cleanup;
    }
    struct dsa_q_prep_args qa = {
        M, (int)in->max_pos, dq_raw, dw_raw, in->w_raw_dtype, dqpos, dcos, dsin, dq8, dqs, dw, NULL,
        0};
    t0 = now_s();
    if ((st = api->q_prep(&p->f, &qa)) != DSA_K_OK || (st = api->sync() ? DSA_K_EDEVICE : 0)) {
        fail(p, "q_prep", st);
        goto cleanup;
    }
    lap(p, DSA_INPROC_T_S2, &t0);
    /* gather K out of the pages (vLLM's cp_gather_indexer_k_quant_cache) */
    if (api->sync() || api->download(cache, dcache, cbytes)) {
        dsa_errorf("cannot read the K cache back from '%s'", api->device());
        goto cleanup;
    }
    for (long t = 0; t < T; t++) {
        const uint8_t *pg = cache + (size_t)(t / DSA_K_PAGE) * DSA_K_PAGE_BYTES;
        memcpy(k8 + t * 128, pg + (t % DSA_K_PAGE) * 128, 128);
        memcpy(ks + t, pg + DSA_K_SCALE_OFF + (t % DSA_K_PAGE) * 4, 4);
    }
    /* S3b + S4 */
    void *dk8 = dev_alloc(&db, (size_t)T * 128), *dks = dev_alloc(&db, (size_t)T * 4);
    void *drs = dev_alloc(&db, (size_t)M * 4), *dre = dev_alloc(&db, (size_t)M * 4);
    void *dlog = dev_alloc(&db, (size_t)M * T * lb), *didx = dev_alloc(&db, (size_t)M * K * 4);
    if (!dk8 || !dks || !drs || !dre || !dlog || !didx || api->upload(dk8, k8, (size_t)T * 128) ||
        api->upload(dks, ks, (size_t)T * 4) || api->upload(drs, rs, (size_t)M * 4) ||
        api->upload(dre, re, (size_t)M * 4)) {
        dsa_errorf("cannot move K to '%s'", api->device());
        goto cleanup;
    }
    struct dsa_logits_prefill_args la = {M, T, dq8, dw, dk8, dks, drs, dre, dlog, T, 1};
    t0 = now_s();
    if ((st = api->logits_prefill(&p->f, &la)) != DSA_K_OK ||
        (st = api->sync() ? DSA_K_EDEVICE : 0)) {
        fail(p, "logits_prefill", st);
        goto cleanup;
    }
    lap(p, DSA_INPROC_T_S3, &t0);
    struct dsa_topk_args ta = {M, dlog, T, drs, dre, K, didx};
    if ((st = api->topk(&p->f, &ta)) != DSA_K_OK || (st = api->sync() ? DSA_K_EDEVICE : 0)) {
        fail(p, "topk", st);
        goto cleanup;
    }
    lap(p, DSA_INPROC_T_S4, &t0);
    if (api->sync() || api->download(idx, didx, (size_t)M * K * 4)) {
        dsa_errorf("cannot read the selection back from '%s'", api->device());
        goto cleanup;
    }
    /* the golden selection */
    t0 = now_s();
    struct gold g = {M, H, T, qpos, qgold, wgold, kgold, glog};
    dsa_cpu_parallel_for((T + 63) / 64, 8, gold_range, &g);
    struct gtopk gt = {glog, qpos, T, K, golden};
    dsa_cpu_parallel_for(M, 1, gtopk_range, &gt);
    lap(p, DSA_INPROC_T_GOLDEN, &t0);
    rc = 0;
cleanup:
    for (int i = DSA_INPROC_T_S1; i <= DSA_INPROC_T_GOLDEN; i++)
        staged += p->times[i];
    p->times[DSA_INPROC_T_HOST] += now_s() - t_call - staged;
    dev_free_all(&db);
    free(kgold);
    free(pos);
    free(qpos64);
    free(qgold);
    free(wgold);
    free(cache);
    free(k8);
    free(ks);
    free(rs);
    free(re);
    free(glog);
    return rc;
}

/* The proxy model's inputs for tokens/qpos with a retrieval structure planted (plant NULL:
   none); k_raw, q_raw, w_raw owned by *in until inputs_release, the tables borrowed from p.
   Returns 0 or -1 (printed). */
static int proxy_inputs(dsa_inproc *p, const uint32_t *tokens, long T,
                        const struct dsa_inproc_plant *plant, const long *qpos, int M,
                        struct dsa_inproc_inputs *in)
{
    const int H = p->f.heads;
    double t0 = now_s();
    if (ensure_rope(p, T))
        return dsa_errorf("cannot set up the RoPE table on '%s'", p->api->device());
    double u[128];
    if (plant)
        dsa_proxy_topic(p->seed, plant->topic, u);
    uint16_t *k_raw = dsa_xmalloc((size_t)(T > 0 ? T : 1) * 256);
    uint16_t *q_raw = dsa_xmalloc((size_t)(M > 0 ? M : 1) * H * 256);
    uint16_t *w_raw = dsa_xmalloc((size_t)(M > 0 ? M : 1) * H * 2);
    struct kgen kg = {p, tokens, plant ? plant->keys : NULL, u, k_raw};
    dsa_cpu_parallel_for(T, 256, kgen_range, &kg);
    struct qgen qg = {p, tokens, qpos, plant && plant->queries ? u : NULL, q_raw, w_raw};
    dsa_cpu_parallel_for(M, 1, qgen_range, &qg);
    p->times[DSA_INPROC_T_PROXY] += now_s() - t0;
    *in =
        (struct dsa_inproc_inputs){T,       k_raw,   M,      qpos,   q_raw,      w_raw, DSA_K_BF16,
                                   p->ln_w, p->ln_b, p->cos, p->sin, p->max_pos, NULL,  NULL};
    return 0;
}

static void inputs_release(struct dsa_inproc_inputs *in)
{
    free((void *)in->k_raw);
    free((void *)in->q_raw);
    free((void *)in->w_raw);
    memset(in, 0, sizeof *in);
}

int dsa_inproc_select_planted(dsa_inproc *p, const uint32_t *tokens, long T,
                              const struct dsa_inproc_plant *plant, const long *qpos, int M,
                              int32_t *idx, int32_t *golden)
{
    struct dsa_inproc_inputs in;
    if (proxy_inputs(p, tokens, T, plant, qpos, M, &in))
        return -1;
    int rc = dsa_inproc_select_inputs(p, &in, idx, golden);
    inputs_release(&in);
    return rc;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static void sort_rows(int32_t *idx, long rows, int K)
{
    for (long r = 0; r < rows; r++) {
        int32_t *row = idx + (size_t)r * K;
        int n = 0;
        for (int i = 0; i < K; i++)
            if (row[i] >= 0)
                row[n++] = row[i];
        qsort(row, (size_t)n, sizeof *row, cmp_i32);
        for (int i = n; i < K; i++)
            row[i] = -1;
    }
}

int dsa_inproc_mtp_inputs(dsa_inproc *p, const struct dsa_inproc_inputs *in, long P, int n,
                          long *nsteps, unsigned char *identical, unsigned char *logits_identical,
                          int32_t *sel)
{
    const struct dsa_kernels_api *api = p->api;
    const int H = p->f.heads, K = p->topk;
    const long T = in->T;
    int rc = -1, st;
    *nsteps = 0;
    if (n < 1 || n > 4 || P < 0 || P > T || in->M != T - P || in->max_pos < T)
        return dsa_errorf("mtp rows must be 1..4, the decode rows the last T - P positions and "
                          "the RoPE table T rows");
    long R = T - P, steps = R / n, stride = ((T + 255) / 256) * 256;
    size_t tab = (size_t)in->max_pos * 128, wrb = in->w_raw_dtype == DSA_K_BF16 ? 2 : 4;
    long npages = (T + DSA_K_PAGE - 1) / DSA_K_PAGE;
    size_t cbytes = (size_t)(npages ? npages : 1) * DSA_K_PAGE_BYTES;
    size_t wb = p->f.weights == DSA_K_BF16 ? 2 : 4, lb = p->f.logits == DSA_K_BF16 ? 2 : 4;
    size_t lbytes = (size_t)n * stride * lb;
    int64_t *pos = dsa_xmalloc((size_t)T * 8 + 8);
    int32_t *bt = dsa_xmalloc((size_t)(npages ? npages : 1) * 4),
            *ctx = dsa_xmalloc((size_t)(R ? R : 1) * 4);
    int32_t *zeros = dsa_xcalloc((size_t)n, 4);
    int32_t *idx_b = dsa_xmalloc((size_t)n * K * 4), *idx_s = dsa_xmalloc((size_t)n * K * 4);
    unsigned char *lg_b = dsa_xmalloc(lbytes), *lg_s = dsa_xmalloc(lbytes);
    struct dev_bufs db = {api, {0}, 0};
    for (long t = 0; t < T; t++)
        pos[t] = t;
    for (long pg = 0; pg < npages; pg++)
        bt[pg] = (int32_t)pg;
    for (long r = 0; r < R; r++)
        ctx[r] = (int32_t)(P + r + 1);
    void *dk_raw = dev_alloc(&db, (size_t)T * 256 + 2), *dpos = dev_alloc(&db, (size_t)T * 8 + 8);
    void *dcache = dev_alloc(&db, cbytes), *dbt = dev_alloc(&db, (size_t)(npages ? npages : 1) * 4);
    void *dq_raw = dev_alloc(&db, (size_t)(R ? R : 1) * H * 256),
         *dw_raw = dev_alloc(&db, (size_t)(R ? R : 1) * H * wrb);
    void *dcos = dev_alloc(&db, tab), *dsin = dev_alloc(&db, tab), *dln_w = dev_alloc(&db, 512),
         *dln_b = dev_alloc(&db, 512);
    void *dq8 = dev_alloc(&db, (size_t)(R ? R : 1) * H * 128),
         *dqs = dev_alloc(&db, (size_t)(R ? R : 1) * H * 4);
    void *dw = dev_alloc(&db, (size_t)(R ? R : 1) * H * wb),
         *dctx = dev_alloc(&db, (size_t)(R ? R : 1) * 4);
    void *dzero = dev_alloc(&db, (size_t)n * 4), *dlog = dev_alloc(&db, lbytes),
         *didx = dev_alloc(&db, (size_t)n * K * 4);
    if (dev_missing(&db)) {
        dsa_errorf("cannot allocate on '%s'", api->device());
        goto cleanup;
    }
    if (api->upload(dk_raw, in->k_raw, (size_t)T * 256) || api->upload(dpos, pos, (size_t)T * 8) ||
        api->upload(dcos, in->cos, tab) || api->upload(dsin, in->sin, tab) ||
        api->upload(dln_w, in->ln_w, 512) || api->upload(dln_b, in->ln_b, 512) ||
        api->upload(dbt, bt, (size_t)npages * 4) ||
        (R && (api->upload(dq_raw, in->q_raw, (size_t)R * H * 256) ||
               api->upload(dw_raw, in->w_raw, (size_t)R * H * wrb) ||
               api->upload(dctx, ctx, (size_t)R * 4))) ||
        api->upload(dzero, zeros, (size_t)n * 4)) {
        dsa_errorf("cannot move the inputs to '%s'", api->device());
        goto cleanup;
    }
    struct dsa_k_prep_args ka = {
        (int)T, (int)in->max_pos, dk_raw, dln_w, dln_b, dpos, dcos, dsin, dpos, dcache};
    if ((st = api->k_prep(&p->f, &ka)) != DSA_K_OK) {
        fail(p, "k_prep", st);
        goto cleanup;
    }
    struct dsa_q_prep_args qa = {(int)R,
                                 (int)in->max_pos,
                                 dq_raw,
                                 dw_raw,
                                 in->w_raw_dtype,
                                 (const int64_t *)dpos + P,
                                 dcos,
                                 dsin,
                                 dq8,
                                 dqs,
                                 dw,
                                 NULL,
                                 0};
    if (R && (st = api->q_prep(&p->f, &qa)) != DSA_K_OK) {
        fail(p, "q_prep", st);
        goto cleanup;
    }
    for (long s = 0; s < steps; s++) {
        long r0 = s * n;
        const uint8_t *q8 = (const uint8_t *)dq8 + (size_t)r0 * H * 128;
        const char *w = (const char *)dw + (size_t)r0 * H * wb;
        const int32_t *c = (const int32_t *)dctx + r0;
        /* batched: one call with next_n = n */
        struct dsa_logits_decode_args da = {1,           n, q8,   w,      dcache, dbt,
                                            (int)npages, c, dlog, stride, 1};
        struct dsa_topk_args ta = {n, dlog, stride, dzero, c, K, didx};
        if ((st = api->logits_decode(&p->f, &da)) != DSA_K_OK ||
            (st = api->topk(&p->f, &ta)) != DSA_K_OK) {
            fail(p, "logits_decode/topk (batched)", st);
            goto cleanup;
        }
        if (api->sync() || api->download(lg_b, dlog, lbytes) ||
            api->download(idx_b, didx, (size_t)n * K * 4))
            goto cleanup;
        /* one row at a time, next_n = 1 */
        for (int j = 0; j < n; j++) {
            struct dsa_logits_decode_args dj = {1,
                                                1,
                                                q8 + (size_t)j * H * 128,
                                                w + (size_t)j * H * wb,
                                                dcache,
                                                dbt,
                                                (int)npages,
                                                c + j,
                                                (char *)dlog + (size_t)j * stride * lb,
                                                stride,
                                                1};
            if ((st = api->logits_decode(&p->f, &dj)) != DSA_K_OK) {
                fail(p, "logits_decode (single row)", st);
                goto cleanup;
            }
        }
        if ((st = api->topk(&p->f, &ta)) != DSA_K_OK) {
            fail(p, "topk (single rows)", st);
            goto cleanup;
        }
        if (api->sync() || api->download(lg_s, dlog, lbytes) ||
            api->download(idx_s, didx, (size_t)n * K * 4))
            goto cleanup;
        sort_rows(idx_b, n, K);
        sort_rows(idx_s, n, K);
        identical[s] = !memcmp(idx_b, idx_s, (size_t)n * K * 4);
        logits_identical[s] = !memcmp(lg_b, lg_s, lbytes);
        memcpy(sel + (size_t)r0 * K, idx_b, (size_t)n * K * 4);
    }
    *nsteps = steps;
    rc = 0;
cleanup:
    if (rc)
        dsa_errorf("mtp verify failed on '%s'", api->device());
    dev_free_all(&db);
    free(pos);
    free(bt);
    free(ctx);
    free(zeros);
    free(idx_b);
    free(idx_s);
    free(lg_b);
    free(lg_s);
    return rc;
}

int dsa_inproc_mtp(dsa_inproc *p, const uint32_t *tokens, long T, long P, int n, long *nsteps,
                   unsigned char *identical, unsigned char *logits_identical, int32_t *sel)
{
    *nsteps = 0;
    if (n < 1 || n > 4 || P < 0 || P > T)
        return dsa_errorf("mtp rows must be 1..4 and the prompt inside the tokens");
    long R = T - P;
    long *qpos = dsa_xmalloc((size_t)(R ? R : 1) * sizeof *qpos);
    for (long r = 0; r < R; r++)
        qpos[r] = P + r;
    struct dsa_inproc_inputs in;
    memset(&in, 0, sizeof in);
    int rc = proxy_inputs(p, tokens, T, NULL, qpos, (int)R, &in);
    if (!rc)
        rc = dsa_inproc_mtp_inputs(p, &in, P, n, nsteps, identical, logits_identical, sel);
    inputs_release(&in); /* frees NULLs when the inputs were never made */
    free(qpos);
    return rc;
}

/* a tensor of the trace with this dtype and shape (-1 = any extent), or NULL (printed) */
static const struct dsa_trace_tensor *want(const dsa_trace *tr, const char *name, int dtype1,
                                           int dtype2, int ndim, const int64_t *shape)
{
    const struct dsa_trace_tensor *t = dsa_trace_get(tr, name);
    if (!t) {
        dsa_errorf("trace has no tensor '%s'", name);
        return NULL;
    }
    int ok = ((int)t->dtype == dtype1 || (int)t->dtype == dtype2) && t->ndim == ndim;
    for (int d = 0; ok && d < ndim; d++)
        ok = shape[d] < 0 || t->shape[d] == shape[d];
    if (!ok)
        dsa_errorf("trace tensor '%s' has the wrong dtype or shape (docs/kernels.md)", name);
    return ok ? t : NULL;
}

/* a BF16 or F32 tensor as bf16 (rounded to nearest even), and the F32 original when it is F32 */
static void copy_raw(const struct dsa_trace_tensor *t, uint16_t **bf, float **f32)
{
    size_t n = t->nbytes / (t->dtype == DSA_TR_F32 ? 4 : 2);
    *bf = dsa_xmalloc(n * 2 + 2);
    *f32 = NULL;
    if (t->dtype != DSA_TR_F32) {
        memcpy(*bf, t->data, t->nbytes);
        return;
    }
    *f32 = dsa_xmalloc(n * 4 + 4);
    memcpy(*f32, t->data, t->nbytes);
    for (size_t i = 0; i < n; i++)
        (*bf)[i] = dsa_f32_to_bf16((*f32)[i]);
}

/* q_pos as longs, checked: increasing, inside [0, T) */
static long *trace_qpos(const struct dsa_trace_tensor *qp, long T)
{
    int64_t M = qp->shape[0];
    long *qpos = dsa_xmalloc((size_t)(M > 0 ? M : 1) * sizeof *qpos);
    for (int64_t m = 0; m < M; m++) {
        int64_t v;
        memcpy(&v, (const char *)qp->data + m * 8, 8);
        qpos[m] = (long)v;
        if (v < 0 || v >= T || (m && qpos[m] <= qpos[m - 1])) {
            free(qpos);
            dsa_errorf("trace q_pos must increase and lie in [0, %ld)", T);
            return NULL;
        }
    }
    return qpos;
}

int dsa_inproc_trace_layer_inputs(const dsa_trace *tr, const char *prefix, int H,
                                  struct dsa_inproc_inputs *in)
{
    memset(in, 0, sizeof *in);
    const struct dsa_trace_tensor *k, *q, *w, *qp, *lw, *lb, *c, *s;
    char n_k[96], n_q[96], n_w[96], n_lw[96], n_lb[96];
    snprintf(n_k, sizeof n_k, "%sk_raw", prefix);
    snprintf(n_q, sizeof n_q, "%sq_raw", prefix);
    snprintf(n_w, sizeof n_w, "%sw_raw", prefix);
    snprintf(n_lw, sizeof n_lw, "%sln_w", prefix);
    snprintf(n_lb, sizeof n_lb, "%sln_b", prefix);
    if (!(k = want(tr, n_k, DSA_TR_BF16, DSA_TR_F32, 2, (int64_t[]){-1, 128})))
        return -1;
    long T = (long)k->shape[0];
    if (!(qp = want(tr, "q_pos", DSA_TR_I64, -1, 1, (int64_t[]){-1})))
        return -1;
    int64_t M = qp->shape[0];
    if (!(q = want(tr, n_q, DSA_TR_BF16, DSA_TR_F32, 3, (int64_t[]){M, H, 128})) ||
        !(w = want(tr, n_w, DSA_TR_BF16, DSA_TR_F32, 2, (int64_t[]){M, H})) ||
        !(lw = want(tr, n_lw, DSA_TR_F32, -1, 1, (int64_t[]){128})) ||
        !(lb = want(tr, n_lb, DSA_TR_F32, -1, 1, (int64_t[]){128})) ||
        !(c = want(tr, "cos", DSA_TR_F32, -1, 2, (int64_t[]){-1, 32})) ||
        !(s = want(tr, "sin", DSA_TR_F32, -1, 2, c->shape)))
        return -1;
    if (T < 1 || M < 1 || M > 1 << 20 || c->shape[0] < T)
        return dsa_errorf("trace needs T >= 1 tokens, 1..2^20 query rows and cos/sin of T rows");
    long *qpos = trace_qpos(qp, T);
    if (!qpos)
        return -1;
    /* copies: the mapping need not be aligned for these element types */
    uint16_t *kc, *qc;
    float *kf, *qf;
    copy_raw(k, &kc, &kf);
    copy_raw(q, &qc, &qf);
    void *wc = dsa_xmalloc(w->nbytes);
    float *tabs = dsa_xmalloc(c->nbytes * 2 + 1024);
    memcpy(wc, w->data, w->nbytes);
    memcpy(tabs, lw->data, 512);
    memcpy(tabs + 128, lb->data, 512);
    memcpy(tabs + 256, c->data, c->nbytes);
    memcpy((char *)(tabs + 256) + c->nbytes, s->data, s->nbytes);
    *in = (struct dsa_inproc_inputs){T,
                                     kc,
                                     (int)M,
                                     qpos,
                                     qc,
                                     wc,
                                     w->dtype == DSA_TR_BF16 ? DSA_K_BF16 : DSA_K_F32,
                                     tabs,
                                     tabs + 128,
                                     tabs + 256,
                                     (const float *)((const char *)(tabs + 256) + c->nbytes),
                                     (long)c->shape[0],
                                     kf,
                                     qf};
    return 0;
}

int dsa_inproc_trace_inputs(const dsa_trace *tr, int H, struct dsa_inproc_inputs *in)
{
    return dsa_inproc_trace_layer_inputs(tr, "", H, in);
}

int dsa_inproc_trace_model_topk(const dsa_trace *tr, const char *prefix, int M, int K, int32_t *sel)
{
    char name[96];
    snprintf(name, sizeof name, "%stopk", prefix);
    if (!dsa_trace_get(tr, name))
        return 0;
    const struct dsa_trace_tensor *t = want(tr, name, DSA_TR_I32, -1, 2, (int64_t[]){M, -1});
    if (!t)
        return -1;
    long kc = (long)t->shape[1];
    if (kc < 1 || kc > 1 << 20)
        return dsa_errorf("trace tensor '%s' has %ld columns", name, kc);
    for (int m = 0; m < M; m++)
        for (int j = 0; j < K; j++) {
            int32_t v = -1;
            if (j < kc)
                memcpy(&v, (const char *)t->data + ((size_t)m * kc + j) * 4, 4);
            sel[(size_t)m * K + j] = v < 0 ? -1 : v;
        }
    return (int)kc;
}

int dsa_inproc_trace_layers(const dsa_trace *tr, int *layers, int cap)
{
    const char *ls = dsa_trace_meta(tr, "layers");
    if (!ls || dsa_trace_get(tr, "k_raw")) {
        layers[0] = -1; /* the single-layer form */
        return 1;
    }
    int n = 0;
    for (const char *p = ls; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > 100000 || n == cap || (*end && *end != ','))
            return dsa_errorf("trace __metadata__ \"layers\" is not a list of layer numbers: '%s'",
                              ls);
        layers[n++] = (int)v;
        p = *end ? end + 1 : end;
    }
    if (!n)
        return dsa_errorf("trace __metadata__ \"layers\" is empty");
    return n;
}

void dsa_inproc_trace_inputs_release(struct dsa_inproc_inputs *in)
{
    free((void *)in->qpos);
    free((void *)in->k_f32);
    free((void *)in->q_f32);
    free((void *)in->ln_w); /* the tables' block */
    inputs_release(in);
}

void dsa_inproc_rows_sha256(const int32_t *sel, long rows, int K, char hex[65])
{
    dsa_sha256 *h = dsa_sha256_new();
    for (long r = 0; r < rows; r++) {
        int32_t cnt = 0;
        const int32_t *row = sel + (size_t)r * K;
        while (cnt < K && row[cnt] >= 0)
            cnt++;
        dsa_sha256_update(h, &cnt, 4); /* x86/arm little-endian hosts: int32 LE */
        dsa_sha256_update(h, row, (size_t)cnt * 4);
    }
    dsa_sha256_final_hex(h, hex);
    dsa_sha256_free(&h);
}

/* |a ∩ b| of two ascending lists of na and nb positions */
static int overlap(const int32_t *a, int na, const int32_t *b, int nb)
{
    int i = 0, j = 0, c = 0;
    while (i < na && j < nb) {
        if (a[i] == b[j])
            c++, i++, j++;
        else if (a[i] < b[j])
            i++;
        else
            j++;
    }
    return c;
}

double dsa_inproc_recall(int32_t *idx, int32_t *golden, int M, int K, double *per_row, char hex[65])
{
    double sum = 0.0;
    dsa_sha256 *h = dsa_sha256_new();
    for (int m = 0; m < M; m++) {
        int32_t *a = idx + (size_t)m * K, *g = golden + (size_t)m * K;
        sort_rows(a, 1, K);
        sort_rows(g, 1, K);
        int na = 0, ng = 0;
        while (na < K && a[na] >= 0)
            na++;
        while (ng < K && g[ng] >= 0)
            ng++;
        double r = ng ? (double)overlap(a, na, g, ng) / ng : 1.0;
        if (per_row)
            per_row[m] = r;
        sum += r;
        int32_t cnt = na;
        dsa_sha256_update(h, &cnt, 4);
        dsa_sha256_update(h, a, (size_t)na * 4);
    }
    dsa_sha256_final_hex(h, hex);
    dsa_sha256_free(&h);
    return M ? sum / M : 1.0;
}

/* |a ∩ b| / |b| of two ascending, -1 padded rows of k */
double dsa_inproc_agreement(const int32_t *a, const int32_t *b, int k)
{
    int na = 0, nb = 0;
    while (na < k && a[na] >= 0)
        na++;
    while (nb < k && b[nb] >= 0)
        nb++;
    return nb ? (double)overlap(a, na, b, nb) / nb : 1.0;
}

int dsa_inproc_check_model_rows(const char *path, const struct dsa_inproc_inputs *in,
                                int32_t *model, int kc, int K)
{
    for (int m = 0; m < in->M; m++) {
        int32_t *r = model + (size_t)m * K;
        sort_rows(r, 1, K);
        int n = 0;
        while (n < K && r[n] >= 0)
            n++;
        long want = in->qpos[m] + 1 < kc ? in->qpos[m] + 1 : kc;
        int dup = 0;
        for (int j = 1; j < n; j++)
            dup |= r[j] == r[j - 1];
        if ((kc == K && n != want) || dup || (n && r[n - 1] > in->qpos[m]))
            return dsa_errorf("trace '%s': the model's selection of row %d (position %ld) is not "
                              "%ld distinct keys in [0, %ld]",
                              path, m, in->qpos[m], want, in->qpos[m]);
    }
    return 0;
}
