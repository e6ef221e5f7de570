/*
 * `dsa-eval kernels check` (check.h).
 *
 *   stage           case                                   result max_err     calc_diff  mask topk
 * det k_prep          T=17 rope=neox hadamard=off            PASS   0 B         -          -    -
 * 20/20 logits_decode   B=3 N=2 L=4097 w=f32 logits=f32        PASS   2.1e-07     3.4e-14    ok   -
 * 20/20 topk            k=2048 data=ties logits=f32            PASS   -           -          - ok
 * 20/20
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "dsa_numeric.h"
#include "kernels/check.h"
#include "kernels/golden.h"
#include "kernels/proxy.h"
#include "kernels/kutil.h"

#define MAX_POS 8192

struct ck {
    const struct dsa_kcheck_opts *o;
    const struct dsa_kernels_api *impl, *ref;
    FILE *out;
    struct dsa_kcheck_result *res;
    uint64_t rng;
    int device_error;
    float *cos, *sin;
};

/* ---- random inputs ---- */

static uint64_t rnd(struct ck *c)
{
    c->rng += 0x9e3779b97f4a7c15ull;
    return dsa_kutil_splitmix64(c->rng);
}

static double unif(struct ck *c)
{
    return ((double)(rnd(c) >> 11) + 0.5) * 0x1p-53;
}

static double normal(struct ck *c)
{
    return sqrt(-2.0 * log(unif(c))) * cos(2.0 * M_PI * unif(c));
}

static void fill_bf16(struct ck *c, uint16_t *x, size_t n, size_t vec)
{
    for (size_t i = 0; i < n; i += vec) {
        double amp = exp(1.5 * normal(c)); /* per-vector amax varies, so fp8 scales vary */
        for (size_t j = i; j < i + vec && j < n; j++)
            x[j] = dsa_f32_to_bf16((float)(amp * normal(c)));
    }
}

static void fill_fp8(struct ck *c, uint8_t *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = dsa_f32_to_e4m3((float)(64.0 * normal(c)));
}

static void fill_weights(struct ck *c, void *w, int dtype, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float v = (float)(0.3 + 0.5 * normal(c)) * 1e-2f;
        if (dtype == DSA_K_BF16)
            ((uint16_t *)w)[i] = dsa_f32_to_bf16(v);
        else
            ((float *)w)[i] = v;
    }
}

static void shuffle_i64(struct ck *c, int64_t *a, long n)
{
    for (long i = n - 1; i > 0; i--) {
        long j = (long)(rnd(c) % (uint64_t)(i + 1));
        int64_t t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

/* ---- moving buffers through the implementation's memory ---- */

struct dev {
    const struct dsa_kernels_api *api;
    void *p[16];
    int n;
    int failed;
};

static void *dput(struct dev *d, const void *h, size_t bytes)
{
    void *p = d->api->alloc(bytes ? bytes : 1);
    if (!p) {
        d->failed = 1;
        return NULL;
    }
    d->p[d->n++] = p;
    if (h && bytes && d->api->upload(p, h, bytes) != 0)
        d->failed = 1;
    return p;
}

/* an output buffer filled with a poison byte, so unwritten elements show */
static void *dout(struct dev *d, size_t bytes, int poison)
{
    void *p = dput(d, NULL, bytes);
    if (p && d->api->memset_(p, poison, bytes ? bytes : 1) != 0)
        d->failed = 1;
    return p;
}

static int dget(struct dev *d, void *h, const void *p, size_t bytes)
{
    if (!bytes)
        return 0;
    if (d->api->sync() != 0 || d->api->download(h, p, bytes) != 0)
        d->failed = 1;
    return d->failed ? -1 : 0;
}

static void dfree(struct dev *d)
{
    for (int i = 0; i < d->n; i++)
        d->api->free(d->p[i]);
    d->n = 0;
}

/* ---- the table ---- */

static int selected(struct ck *c, const char *stage, const char *name)
{
    if (!c->o->filter)
        return 1;
    char full[256];
    snprintf(full, sizeof full, "%s/%s", stage, name);
    return strstr(full, c->o->filter) != NULL;
}

static void row(struct ck *c, const char *stage, const char *name, const char *result,
                const char *err, const char *diff, const char *mask, const char *topk,
                const char *det)
{
    fprintf(c->out, "%-15s %-48s %-6s %-11s %-10s %-4s %-4s %s\n", stage, name, result, err, diff,
            mask, topk, det);
    fflush(c->out);
    if (!strcmp(result, "PASS"))
        c->res->passed++;
    else if (!strcmp(result, "SKIP"))
        c->res->skipped++;
    else
        c->res->failed++;
}

static int supported(struct ck *c, const struct dsa_k_flags *f, int stage, int N, int k)
{
    struct dsa_k_shape s = {stage, N, k};
    return c->impl->supported(f, &s);
}

static int status_ok(struct ck *c, int st, const char *stage)
{
    if (st == DSA_K_OK)
        return 1;
    if (st == DSA_K_EDEVICE)
        c->device_error = 1;
    else
        dsa_kutil_warnf("%s returned %d", stage, st);
    return 0;
}

/* fp8 ULP distance of code*s from the exact value g, in units of the e4m3 step at |g/s|.
   With bf16_round, the golden vector skips the three bf16 roundings, each worth up to 2^-9 of
   the vector's amax (448 in quantized units), which the Hadamard spreads over every element:
   the unit is then at least 448 * 2^-8 (the vector's bf16 resolution). */
static double fp8_ulp_err(uint8_t code, float s, double g, int bf16_round)
{
    double x = g / s, q = dsa_e4m3_to_f32(code);
    double ax = fabs(x) > 448.0 ? 448.0 : fabs(x);
    double step = ax < 0x1p-6 ? 0x1p-9 : ldexp(1.0, (int)floor(log2(ax)) - 3);
    if (bf16_round && step < 448.0 * 0x1p-8)
        step = 448.0 * 0x1p-8;
    return fabs(q - x) / step;
}

static void det_str(char *buf, size_t n, int same, int runs)
{
    snprintf(buf, n, "%d/%d", same, runs);
}

/*
 * The stages by name, so that one rerun loop serves them all (their argument structs differ,
 * their calling convention does not).
 */
enum stage {
    STAGE_K_PREP,
    STAGE_Q_PREP,
    STAGE_LOGITS_DECODE,
    STAGE_LOGITS_PREFILL,
    STAGE_TOPK,
    STAGE_PREP /* args: struct prep_pair */
};

struct prep_pair;
static int run_prep(const struct ck *c, const struct dsa_k_flags *f, const struct prep_pair *p);

static int run_stage(const struct ck *c, enum stage s, const struct dsa_k_flags *f,
                     const void *args)
{
    switch (s) {
    case STAGE_K_PREP:
        return c->impl->k_prep(f, args);
    case STAGE_Q_PREP:
        return c->impl->q_prep(f, args);
    case STAGE_LOGITS_DECODE:
        return c->impl->logits_decode(f, args);
    case STAGE_LOGITS_PREFILL:
        return c->impl->logits_prefill(f, args);
    case STAGE_TOPK:
        return c->impl->topk(f, args);
    case STAGE_PREP:
        return run_prep(c, f, args);
    }
    return DSA_K_EINVAL;
}

/*
 * Determinism: reruns a stage c->o->reruns times on the same inputs, poisoning its output
 * (dev_out, `bytes` long) before each run, and counts the results bitwise equal to `got`, the
 * host copy of the first run. Writes "same/runs" to det; true when every rerun matched.
 */
static bool reruns_identical(const struct ck *c, struct dev *d, enum stage s,
                             const struct dsa_k_flags *f, const void *args, void *dev_out,
                             size_t bytes, const void *got, void *again, char *det, size_t detlen)
{
    int same = 0;
    for (int r = 0; r < c->o->reruns; r++) {
        d->api->memset_(dev_out, 0x5a, bytes);
        if (run_stage(c, s, f, args) != DSA_K_OK || dget(d, again, dev_out, bytes))
            break;
        same += !memcmp(again, got, bytes);
    }
    det_str(det, detlen, same, c->o->reruns);
    return same == c->o->reruns;
}

/* ---- S1 ---- */

/* S1's inputs for T tokens: the cache has two pages more than T needs, its slots shuffled,
   about one token in 20 skipped (slot -1) */
struct kin {
    int T;
    size_t cbytes;
    uint16_t *k_raw;
    float ln_w[128], ln_b[128];
    int64_t *pos, *slots;
};

static void kin_make(struct ck *c, int T, struct kin *k)
{
    long npages = T / DSA_K_PAGE + 2, nslots = npages * DSA_K_PAGE;
    k->T = T;
    k->cbytes = (size_t)npages * DSA_K_PAGE_BYTES;
    k->k_raw = dsa_kutil_malloc((size_t)T * 128 * 2 + 2);
    k->pos = dsa_kutil_malloc((size_t)T * 8 + 8);
    k->slots = dsa_kutil_malloc((size_t)nslots * 8);
    fill_bf16(c, k->k_raw, (size_t)T * 128, 128);
    dsa_proxy_ln(c->rng, k->ln_w, k->ln_b);
    for (long i = 0; i < nslots; i++)
        k->slots[i] = i;
    shuffle_i64(c, k->slots, nslots);
    for (int t = 0; t < T; t++) {
        k->pos[t] = (int64_t)(rnd(c) % MAX_POS);
        if (rnd(c) % 20 == 0)
            k->slots[t] = -1; /* skipped token: its slot stays untouched */
    }
}

static void kin_free(struct kin *k)
{
    free(k->k_raw);
    free(k->pos);
    free(k->slots);
}

/* the host arguments writing into cache */
static struct dsa_k_prep_args kin_args(const struct ck *c, const struct kin *k, uint8_t *cache)
{
    return (struct dsa_k_prep_args){k->T,   MAX_POS, k->k_raw, k->ln_w,  k->ln_b,
                                    k->pos, c->cos,  c->sin,   k->slots, cache};
}

/* the same arguments with every input copied into d's memory (cache is d's already) */
static struct dsa_k_prep_args kin_upload(struct dev *d, const struct dsa_k_prep_args *a,
                                         uint8_t *cache)
{
    struct dsa_k_prep_args da = *a;
    da.k_raw = dput(d, a->k_raw, (size_t)a->T * 256);
    da.ln_w = dput(d, a->ln_w, 512);
    da.ln_b = dput(d, a->ln_b, 512);
    da.pos = dput(d, a->pos, (size_t)a->T * 8);
    da.cos = dput(d, a->cos, (size_t)MAX_POS * 32 * 4);
    da.sin = dput(d, a->sin, (size_t)MAX_POS * 32 * 4);
    da.slot = dput(d, a->slot, (size_t)a->T * 8);
    da.cache = cache;
    return da;
}

static void check_k_prep(struct ck *c, int T, const struct dsa_k_flags *f)
{
    char name[128], err[32] = "-", det[16] = "-";
    snprintf(name, sizeof name, "T=%d rope=%s hadamard=%s bf16_round=%s scale=%s", T,
             f->rope ? "interleaved" : "neox", f->hadamard ? "on" : "off",
             f->bf16_round ? "on" : "off", f->scale ? "fp32" : "ue8m0");
    if (!selected(c, "k_prep", name))
        return;
    if (!supported(c, f, DSA_K_STAGE_K_PREP, 0, 0)) {
        row(c, "k_prep", name, "SKIP", "-", "-", "-", "-", "not supported");
        return;
    }
    struct kin k;
    kin_make(c, T, &k);
    size_t cbytes = k.cbytes;
    const int64_t *slots = k.slots, *pos = k.pos;
    uint8_t *ref = dsa_kutil_malloc(cbytes), *got = dsa_kutil_malloc(cbytes),
            *again = dsa_kutil_malloc(cbytes);
    memset(ref, 0x5a, cbytes);
    struct dsa_k_prep_args a = kin_args(c, &k, ref);
    int pass = status_ok(c, dsa_cpu_k_prep(f, &a), "k_prep");

    struct dev d = {.api = c->impl};
    struct dsa_k_prep_args da = kin_upload(&d, &a, dout(&d, cbytes, 0x5a));
    if (d.failed || !status_ok(c, c->impl->k_prep(f, &da), "k_prep") ||
        dget(&d, got, da.cache, cbytes)) {
        pass = 0;
        c->device_error |= d.failed;
    }
    if (pass && c->o->vs_golden) {
        double worst = 0.0;
        for (int t = 0; t < T; t++) {
            if (slots[t] < 0)
                continue;
            double g[128];
            dsa_golden_k_vec(k.k_raw + (size_t)t * 128, k.ln_w, k.ln_b, c->cos + pos[t] * 32,
                             c->sin + pos[t] * 32, f->rope, f->hadamard, g);
            const uint8_t *page = got + (size_t)(slots[t] / 64) * DSA_K_PAGE_BYTES;
            float s;
            memcpy(&s, page + DSA_K_SCALE_OFF + (slots[t] % 64) * 4, 4);
            for (int i = 0; i < 128; i++) {
                double e = fp8_ulp_err(page[(slots[t] % 64) * 128 + i], s, g[i], f->bf16_round);
                if (e > worst)
                    worst = e;
            }
        }
        snprintf(err, sizeof err, "%.2fulp", worst);
        pass = worst <= 1.0;
    } else if (pass) {
        size_t ndiff = 0;
        for (size_t i = 0; i < cbytes; i++)
            ndiff += ref[i] != got[i];
        snprintf(err, sizeof err, "%zu B", ndiff);
        pass = ndiff == 0;
    }
    if (pass)
        pass = reruns_identical(c, &d, STAGE_K_PREP, f, &da, da.cache, cbytes, got, again, det,
                                sizeof det);
    row(c, "k_prep", name, pass ? "PASS" : "FAIL", err, "-", "-", "-", det);
    dfree(&d);
    kin_free(&k);
    free(ref);
    free(got);
    free(again);
}

/* ---- S2 ---- */

/* Vectors at the ends of the fp8 scale's range (extreme q rows): all zero (the scale's floor),
   tiny (1e-35: every quotient rounds to 0 or a subnormal before the fp8 byte), huge (3e36:
   the scale 2^113), and tiny elements beside one huge one. */
static void fill_extreme(uint16_t *x, size_t n)
{
    static const float amp[] = {0.0f, 1e-35f, 1e36f, 1e-30f};
    for (size_t v = 0; v < 4 && (v + 1) * 128 <= n; v++)
        for (size_t j = 0; j < 128; j++) {
            float y = amp[v] * (float)((int)(j % 7) - 3);
            if (v == 3 && j == 5)
                y = 3e37f;
            x[v * 128 + j] = dsa_f32_to_bf16(y);
        }
}

/* S2's inputs for T tokens of H heads, bf16 raw weights */
struct qin {
    int T;
    size_t nq, nw;
    uint16_t *q_raw, *w_raw;
    int64_t *pos;
};

static void qin_make(struct ck *c, int T, int H, bool extreme, struct qin *q)
{
    q->T = T;
    q->nq = (size_t)T * H * 128;
    q->nw = (size_t)T * H;
    q->q_raw = dsa_kutil_malloc(q->nq * 2 + 2);
    q->w_raw = dsa_kutil_malloc(q->nw * 2 + 2);
    q->pos = dsa_kutil_malloc((size_t)T * 8 + 8);
    fill_bf16(c, q->q_raw, q->nq, 128);
    if (extreme)
        fill_extreme(q->q_raw, q->nq);
    fill_bf16(c, q->w_raw, q->nw, q->nw ? q->nw : 1);
    for (int t = 0; t < T; t++)
        q->pos[t] = (int64_t)(rnd(c) % MAX_POS);
}

static void qin_free(struct qin *q)
{
    free(q->q_raw);
    free(q->w_raw);
    free(q->pos);
}

/* The outputs back to back in one buffer: q8 | qs | w | topk_fill (K per token); their size */
static size_t qout_bytes(const struct qin *q, const struct dsa_k_flags *f, int K)
{
    return q->nq + q->nw * 4 + q->nw * (f->weights == DSA_K_BF16 ? 2 : 4) + (size_t)q->T * K * 4;
}

/* the arguments reading q's inputs at the given addresses, writing into out (qout_bytes) */
static struct dsa_q_prep_args qin_args(const struct ck *c, const struct qin *q,
                                       const struct dsa_k_flags *f, int K, uint8_t *out)
{
    size_t wb = f->weights == DSA_K_BF16 ? 2 : 4;
    return (struct dsa_q_prep_args){q->T,
                                    MAX_POS,
                                    q->q_raw,
                                    q->w_raw,
                                    DSA_K_BF16,
                                    q->pos,
                                    c->cos,
                                    c->sin,
                                    out,
                                    (float *)(out + q->nq),
                                    out + q->nq + q->nw * 4,
                                    (int32_t *)(out + q->nq + q->nw * 4 + q->nw * wb),
                                    K};
}

/* qin_args with the inputs copied into d's memory and the outputs in d's buffer out */
static struct dsa_q_prep_args qin_upload(struct dev *d, const struct ck *c, const struct qin *q,
                                         const struct dsa_k_flags *f, int K, uint8_t *out)
{
    struct qin dq = *q;
    dq.q_raw = dput(d, q->q_raw, q->nq * 2);
    dq.w_raw = dput(d, q->w_raw, q->nw * 2);
    dq.pos = dput(d, q->pos, (size_t)q->T * 8);
    struct dsa_q_prep_args da = qin_args(c, &dq, f, K, out);
    da.cos = dput(d, c->cos, (size_t)MAX_POS * 32 * 4);
    da.sin = dput(d, c->sin, (size_t)MAX_POS * 32 * 4);
    return da;
}

static void check_q_prep(struct ck *c, int T, const struct dsa_k_flags *f, bool extreme)
{
    char name[128], err[32] = "-", det[16] = "-";
    snprintf(name, sizeof name, "T=%d H=%d rope=%s hadamard=%s w=%s%s", T, f->heads,
             f->rope ? "interleaved" : "neox", f->hadamard ? "on" : "off",
             f->weights ? "bf16" : "f32", extreme ? " extreme" : "");
    if (!selected(c, "q_prep", name))
        return;
    if (!supported(c, f, DSA_K_STAGE_Q_PREP, 0, 0)) {
        row(c, "q_prep", name, "SKIP", "-", "-", "-", "-", "not supported");
        return;
    }
    int H = f->heads, K = 2048;
    struct qin q;
    qin_make(c, T, H, extreme, &q);
    size_t nq = q.nq, nw = q.nw, wb = f->weights == DSA_K_BF16 ? 2 : 4;
    const uint16_t *w_raw = q.w_raw;
    const int64_t *pos = q.pos;
    size_t out_bytes = qout_bytes(&q, f, K);
    uint8_t *ref = dsa_kutil_malloc(out_bytes + 1), *got = dsa_kutil_malloc(out_bytes + 1),
            *again = dsa_kutil_malloc(out_bytes + 1);
    memset(ref, 0x5a, out_bytes);
    struct dsa_q_prep_args a = qin_args(c, &q, f, K, ref);
    int pass = status_ok(c, dsa_cpu_q_prep(f, &a), "q_prep");

    struct dev d = {.api = c->impl};
    uint8_t *dall = dout(&d, out_bytes, 0x5a);
    struct dsa_q_prep_args da = qin_upload(&d, c, &q, f, K, dall);
    if (d.failed || !status_ok(c, c->impl->q_prep(f, &da), "q_prep") ||
        dget(&d, got, dall, out_bytes)) {
        pass = 0;
        c->device_error |= d.failed;
    }
    for (size_t i = 0; pass && i < (size_t)T * K; i++)
        pass = ((int32_t *)(got + nq + nw * 4 + nw * wb))[i] == -1;
    if (pass && c->o->vs_golden) {
        double worst = 0.0, wrel = 0.0;
        float hs = H == 64 ? 0.125f : 0.1767766952966369f;
        for (int t = 0; t < T; t++)
            for (int h = 0; h < H; h++) {
                size_t th = (size_t)t * H + h;
                double g[128];
                dsa_golden_q_vec(q.q_raw + th * 128, c->cos + pos[t] * 32, c->sin + pos[t] * 32,
                                 f->rope, f->hadamard, g);
                float s = ((float *)(got + nq))[th];
                for (int i = 0; i < 128; i++) {
                    double e = fp8_ulp_err(got[th * 128 + i], s, g[i], f->bf16_round);
                    if (e > worst)
                        worst = e;
                }
                double gw = (double)dsa_bf16_to_f32(w_raw[th]) * s * DSA_INV_SQRT_128 * hs;
                const void *wp = got + nq + nw * 4;
                double w = f->weights == DSA_K_BF16 ? dsa_bf16_to_f32(((const uint16_t *)wp)[th])
                                                    : ((const float *)wp)[th];
                double rel = gw != 0.0 ? fabs(w - gw) / fabs(gw) : fabs(w);
                if (rel > wrel)
                    wrel = rel;
                /* bf16 weights are exactly the fp32 weights rounded to nearest even */
                if (f->weights == DSA_K_BF16) {
                    float w32 = dsa_bf16_to_f32(w_raw[th]) * s;
                    w32 = w32 * DSA_INV_SQRT_128;
                    w32 = w32 * hs;
                    if (((const uint16_t *)wp)[th] != dsa_f32_to_bf16(w32))
                        wrel = 1.0;
                }
            }
        snprintf(err, sizeof err, "%.2fulp", worst);
        pass = worst <= 1.0 && wrel <= (f->weights == DSA_K_BF16 ? 0x1p-8 : 1e-6);
    } else if (pass) {
        size_t ndiff = 0;
        for (size_t i = 0; i < out_bytes; i++)
            ndiff += ref[i] != got[i];
        snprintf(err, sizeof err, "%zu B", ndiff);
        pass = ndiff == 0;
    }
    if (pass)
        pass = reruns_identical(c, &d, STAGE_Q_PREP, f, &da, dall, out_bytes, got, again, det,
                                sizeof det);
    row(c, "q_prep", name, pass ? "PASS" : "FAIL", err, "-", "-", "-", det);
    dfree(&d);
    qin_free(&q);
    free(ref);
    free(got);
    free(again);
}

/* ---- S1 + S2 in one call ---- */

struct prep_pair {
    struct dsa_k_prep_args k;
    struct dsa_q_prep_args q;
};

static int run_prep(const struct ck *c, const struct dsa_k_flags *f, const struct prep_pair *p)
{
    return c->impl->prep(f, &p->k, &p->q);
}

/*
 * The prep slot: its bytes (q8 | qs | w | top-k fill | the K cache, one buffer) equal those of
 * the same implementation's k_prep then q_prep on the same inputs, and the C reference's where
 * the stages are checked bitwise (not with --golden). Tk and Tq differ to cover one side empty
 * and a grid whose q blocks start at any k block count.
 */
static void check_prep(struct ck *c, int Tk, int Tq, const struct dsa_k_flags *f)
{
    char name[128], err[32] = "-", det[16] = "-";
    snprintf(name, sizeof name, "Tk=%d Tq=%d H=%d w=%s (S1+S2 in one call)", Tk, Tq, f->heads,
             f->weights ? "bf16" : "f32");
    if (!selected(c, "prep", name))
        return;
    if (!supported(c, f, DSA_K_STAGE_Q_PREP, 0, 0) || !supported(c, f, DSA_K_STAGE_K_PREP, 0, 0)) {
        row(c, "prep", name, "SKIP", "-", "-", "-", "-", "not supported");
        return;
    }
    if (c->impl->struct_size <= DSA_KERNELS_API_SIZE_V1 || !c->impl->prep) {
        row(c, "prep", name, "SKIP", "-", "-", "-", "-", "no prep slot");
        return;
    }
    const int K = 512;
    struct kin k;
    struct qin q;
    kin_make(c, Tk, &k);
    qin_make(c, Tq, f->heads, false, &q);
    size_t qb = qout_bytes(&q, f, K), all = qb + k.cbytes;
    uint8_t *ref = dsa_kutil_malloc(all), *want = dsa_kutil_malloc(all),
            *got = dsa_kutil_malloc(all), *again = dsa_kutil_malloc(all);
    memset(ref, 0x5a, all);
    struct prep_pair h = {kin_args(c, &k, ref + qb), qin_args(c, &q, f, K, ref)};
    int pass = status_ok(c, dsa_cpu_prep(f, &h.k, &h.q), "prep");

    /* out1: the two calls; out2: the one call */
    struct dev d = {.api = c->impl};
    uint8_t *out1 = dout(&d, all, 0x5a), *out2 = dout(&d, all, 0x5a);
    struct prep_pair p1 = {kin_upload(&d, &h.k, out1 + qb), qin_upload(&d, c, &q, f, K, out1)};
    struct prep_pair p2 = {p1.k, qin_args(c, &q, f, K, out2)};
    p2.k.cache = out2 + qb;
    p2.q.q_raw = p1.q.q_raw, p2.q.w_raw = p1.q.w_raw, p2.q.pos = p1.q.pos;
    p2.q.cos = p1.q.cos, p2.q.sin = p1.q.sin;
    if (d.failed || !status_ok(c, c->impl->k_prep(f, &p1.k), "k_prep") ||
        !status_ok(c, c->impl->q_prep(f, &p1.q), "q_prep") || dget(&d, want, out1, all) ||
        !status_ok(c, c->impl->prep(f, &p2.k, &p2.q), "prep") || dget(&d, got, out2, all)) {
        pass = 0;
        c->device_error |= d.failed;
    }
    if (pass) {
        size_t ndiff = 0;
        for (size_t i = 0; i < all; i++)
            ndiff += want[i] != got[i] || (!c->o->vs_golden && ref[i] != got[i]);
        snprintf(err, sizeof err, "%zu B", ndiff);
        pass = ndiff == 0;
    }
    if (pass)
        pass = reruns_identical(c, &d, STAGE_PREP, f, &p2, out2, all, got, again, det, sizeof det);
    row(c, "prep", name, pass ? "PASS" : "FAIL", err, "-", "-", "-", det);
    dfree(&d);
    kin_free(&k);
    qin_free(&q);
    free(ref);
    free(want);
    free(got);
    free(again);
}

/* ---- S3 shared: compare logits ---- */

static double logit_at(const void *l, int dtype, size_t i)
{
    return dtype == DSA_K_BF16 ? dsa_bf16_to_f32(((const uint16_t *)l)[i]) : ((const float *)l)[i];
}

static double round_logit(double v, int dtype)
{
    if (isinf(v))
        return v;
    float f = (float)v;
    return dtype == DSA_K_BF16 ? dsa_round_bf16(f) : f;
}

/* compares rows x [rows, stride] of got against want (double, [rows, width]); returns pass */
static int compare_logits(struct ck *c, const struct dsa_k_flags *f, const void *got,
                          const double *want, long rows, long stride, long width, char *err,
                          size_t errn, char *diff, size_t diffn, char *mask)
{
    size_t n = (size_t)rows * width;
    double *g = dsa_kutil_malloc(n * sizeof *g + 8);
    double maxabs = 0.0, maxref = 0.0;
    for (long r = 0; r < rows; r++)
        for (long s = 0; s < width; s++) {
            double v = logit_at(got, f->logits, (size_t)r * stride + s);
            double w = want[(size_t)r * width + s];
            g[(size_t)r * width + s] = v;
            if (isfinite(v) && isfinite(w)) {
                if (fabs(v - w) > maxabs)
                    maxabs = fabs(v - w);
                if (fabs(w) > maxref)
                    maxref = fabs(w);
            } else if (isnan(v)) {
                maxabs = INFINITY;
            }
        }
    int meq;
    double cd = dsa_calc_diff(g, want, n, &meq);
    free(g);
    strcpy(mask, meq ? "ok" : "DIFF");
    snprintf(diff, diffn, "%.1e", cd);
    snprintf(err, errn, "%.1e", maxref > 0 ? maxabs / maxref : maxabs);
    if (c->o->vs_golden)
        return meq && maxabs == 0.0; /* the reference rounds the golden fp64 value once */
    double tol = (f->weights == DSA_K_BF16 || f->logits == DSA_K_BF16) ? 3e-5 : 5e-6;
    return meq && cd <= tol && maxabs != INFINITY;
}

static void check_decode(struct ck *c, int B, int N, long L, const struct dsa_k_flags *f)
{
    char name[128], err[32] = "-", diff[32] = "-", mask[8] = "-", det[16] = "-";
    snprintf(name, sizeof name, "B=%d N=%d L=%ld H=%d w=%s logits=%s", B, N, L, f->heads,
             f->weights ? "bf16" : "f32", f->logits ? "bf16" : "f32");
    if (!selected(c, "logits_decode", name))
        return;
    if (!supported(c, f, DSA_K_STAGE_LOGITS_DECODE, N, 0)) {
        row(c, "logits_decode", name, "SKIP", "-", "-", "-", "-", "not supported");
        return;
    }
    int H = f->heads;
    long maxblk = (L + 63) / 64 + 1, npages = (long)B * maxblk;
    long rows = (long)B * N, stride = ((L + 255) / 256) * 256;
    if (stride == 0)
        stride = 256;
    size_t cbytes = (size_t)npages * DSA_K_PAGE_BYTES, lb = f->logits == DSA_K_BF16 ? 2 : 4;
    size_t wb = f->weights == DSA_K_BF16 ? 2 : 4, lbytes = (size_t)rows * stride * lb;
    uint8_t *cache = dsa_kutil_malloc(cbytes), *q8 = dsa_kutil_malloc((size_t)rows * H * 128);
    void *w = dsa_kutil_malloc((size_t)rows * H * wb);
    int32_t *bt = dsa_kutil_malloc((size_t)B * maxblk * 4),
            *ctx = dsa_kutil_malloc((size_t)rows * 4);
    int64_t *perm = dsa_kutil_malloc((size_t)npages * 8);
    for (long p = 0; p < npages; p++) {
        fill_fp8(c, cache + p * DSA_K_PAGE_BYTES, DSA_K_SCALE_OFF);
        for (int o = 0; o < 64; o++) {
            float s = (float)(exp(normal(c)) * 1e-2);
            memcpy(cache + p * DSA_K_PAGE_BYTES + DSA_K_SCALE_OFF + o * 4, &s, 4);
        }
        perm[p] = p;
    }
    shuffle_i64(c, perm, npages);
    for (long i = 0; i < (long)B * maxblk; i++)
        bt[i] = (int32_t)perm[i];
    fill_fp8(c, q8, (size_t)rows * H * 128);
    fill_weights(c, w, f->weights, (size_t)rows * H);
    for (int b = 0; b < B; b++) {
        long Lb = b == 0 ? L : 1 + (long)(rnd(c) % (uint64_t)L); /* sequences differ */
        for (int j = 0; j < N; j++) {
            long v = Lb - N + j + 1;
            ctx[b * N + j] = (int32_t)(v < 0 ? 0 : v);
        }
    }
    void *ref = dsa_kutil_malloc(lbytes), *got = dsa_kutil_malloc(lbytes),
         *again = dsa_kutil_malloc(lbytes);
    memset(ref, 0x5a, lbytes);
    struct dsa_logits_decode_args a = {B, N, q8, w, cache, bt, (int)maxblk, ctx, ref, stride, 1};
    int pass = status_ok(c, dsa_cpu_logits_decode(f, &a), "logits_decode");

    struct dev d = {.api = c->impl};
    struct dsa_logits_decode_args da = a;
    da.q8 = dput(&d, q8, (size_t)rows * H * 128);
    da.w = dput(&d, w, (size_t)rows * H * wb);
    da.cache = dput(&d, cache, cbytes);
    da.block_table = dput(&d, bt, (size_t)B * maxblk * 4);
    da.ctx = dput(&d, ctx, (size_t)rows * 4);
    da.logits = dout(&d, lbytes, 0x5a);
    if (d.failed || !status_ok(c, c->impl->logits_decode(f, &da), "logits_decode") ||
        dget(&d, got, da.logits, lbytes)) {
        pass = 0;
        c->device_error |= d.failed;
    }
    if (pass) {
        double *want = dsa_kutil_malloc((size_t)rows * stride * sizeof(double));
        if (c->o->vs_golden) {
            /* gather each sequence's K flat through the block table, then the golden model */
            uint8_t *k8 = dsa_kutil_malloc((size_t)maxblk * 64 * 128);
            float *ks = dsa_kutil_malloc((size_t)maxblk * 64 * 4);
            for (int b = 0; b < B; b++) {
                for (long s = 0; s < maxblk * 64; s++) {
                    const uint8_t *pg = cache + (size_t)bt[b * maxblk + s / 64] * DSA_K_PAGE_BYTES;
                    memcpy(k8 + s * 128, pg + (s % 64) * 128, 128);
                    memcpy(ks + s, pg + DSA_K_SCALE_OFF + (s % 64) * 4, 4);
                }
                int32_t st[4] = {0, 0, 0, 0};
                double *gl = dsa_kutil_malloc((size_t)N * stride * sizeof(double));
                dsa_golden_logits_q8(N, H, stride > maxblk * 64 ? maxblk * 64 : stride,
                                     q8 + (size_t)b * N * H * 128,
                                     (const uint8_t *)w + (size_t)b * N * H * wb, f->weights, k8,
                                     ks, st, ctx + b * N, gl);
                long width = stride > maxblk * 64 ? maxblk * 64 : stride;
                for (int j = 0; j < N; j++)
                    for (long s = 0; s < stride; s++)
                        want[((size_t)b * N + j) * stride + s] =
                            s < width ? round_logit(gl[(size_t)j * width + s], f->logits)
                                      : -INFINITY;
                free(gl);
            }
            free(k8);
            free(ks);
        } else {
            for (size_t i = 0; i < (size_t)rows * stride; i++)
                want[i] = logit_at(ref, f->logits, i);
        }
        pass = compare_logits(c, f, got, want, rows, stride, stride, err, sizeof err, diff,
                              sizeof diff, mask);
        free(want);
    }
    if (pass)
        pass = reruns_identical(c, &d, STAGE_LOGITS_DECODE, f, &da, da.logits, lbytes, got, again,
                                det, sizeof det);
    row(c, "logits_decode", name, pass ? "PASS" : "FAIL", err, diff, mask, "-", det);
    dfree(&d);
    free(cache);
    free(q8);
    free(w);
    free(bt);
    free(ctx);
    free(perm);
    free(ref);
    free(got);
    free(again);
}

/* blocked: the two requests' rows one after the other (as a serving engine lays out a ragged
   batch), so that the second request's row groups see no key of the first half (tiles dead
   before the live ones); else interleaved (every group sees both halves) */
static void check_prefill(struct ck *c, int M, long NK, const struct dsa_k_flags *f, int blocked)
{
    char name[128], err[32] = "-", diff[32] = "-", mask[8] = "-", det[16] = "-";
    snprintf(name, sizeof name, "M=%d NK=%ld H=%d w=%s logits=%s%s", M, NK, f->heads,
             f->weights ? "bf16" : "f32", f->logits ? "bf16" : "f32", blocked ? " blocked" : "");
    if (!selected(c, "logits_prefill", name))
        return;
    if (!supported(c, f, DSA_K_STAGE_LOGITS_PREFILL, 0, 0)) {
        row(c, "logits_prefill", name, "SKIP", "-", "-", "-", "-", "not supported");
        return;
    }
    int H = f->heads;
    long stride = NK + 3; /* a stride that is not the width */
    size_t lb = f->logits == DSA_K_BF16 ? 2 : 4, wb = f->weights == DSA_K_BF16 ? 2 : 4;
    size_t lbytes = (size_t)M * stride * lb;
    uint8_t *q8 = dsa_kutil_malloc((size_t)M * H * 128 + 1),
            *k8 = dsa_kutil_malloc((size_t)NK * 128 + 1);
    float *ks = dsa_kutil_malloc((size_t)NK * 4 + 4);
    void *w = dsa_kutil_malloc((size_t)M * H * wb + 4);
    int32_t *st = dsa_kutil_malloc((size_t)M * 4 + 4), *en = dsa_kutil_malloc((size_t)M * 4 + 4);
    fill_fp8(c, q8, (size_t)M * H * 128);
    fill_fp8(c, k8, (size_t)NK * 128);
    for (long s = 0; s < NK; s++)
        ks[s] = (float)(exp(normal(c)) * 1e-2);
    fill_weights(c, w, f->weights, (size_t)M * H);
    /* two ragged requests: keys [0, NK/2) and [NK/2, NK); causal ends within each */
    for (int m = 0; m < M; m++) {
        const int second = blocked ? m >= M / 2 : m & 1;
        long lo = second ? NK / 2 : 0, hi = second ? NK : NK / 2;
        st[m] = (int32_t)lo;
        en[m] = (int32_t)(hi > lo ? lo + 1 + (long)(rnd(c) % (uint64_t)(hi - lo)) : lo);
    }
    void *ref = dsa_kutil_malloc(lbytes + 1), *got = dsa_kutil_malloc(lbytes + 1),
         *again = dsa_kutil_malloc(lbytes + 1);
    memset(ref, 0x5a, lbytes);
    struct dsa_logits_prefill_args a = {M, NK, q8, w, k8, ks, st, en, ref, stride, 1};
    int pass = status_ok(c, dsa_cpu_logits_prefill(f, &a), "logits_prefill");

    struct dev d = {.api = c->impl};
    struct dsa_logits_prefill_args da = a;
    da.q8 = dput(&d, q8, (size_t)M * H * 128);
    da.w = dput(&d, w, (size_t)M * H * wb);
    da.k8 = dput(&d, k8, (size_t)NK * 128);
    da.ks = dput(&d, ks, (size_t)NK * 4);
    da.row_start = dput(&d, st, (size_t)M * 4);
    da.row_end = dput(&d, en, (size_t)M * 4);
    da.logits = dout(&d, lbytes, 0x5a);
    if (d.failed || !status_ok(c, c->impl->logits_prefill(f, &da), "logits_prefill") ||
        dget(&d, got, da.logits, lbytes)) {
        pass = 0;
        c->device_error |= d.failed;
    }
    if (pass) {
        double *want = dsa_kutil_malloc((size_t)M * stride * sizeof(double) + 8);
        if (c->o->vs_golden) {
            double *gl = dsa_kutil_malloc((size_t)M * NK * sizeof(double) + 8);
            dsa_golden_logits_q8(M, H, NK, q8, w, f->weights, k8, ks, st, en, gl);
            for (int m = 0; m < M; m++)
                for (long s = 0; s < stride; s++)
                    want[(size_t)m * stride + s] =
                        s < NK ? round_logit(gl[(size_t)m * NK + s], f->logits) : -INFINITY;
            free(gl);
        } else {
            for (size_t i = 0; i < (size_t)M * stride; i++)
                want[i] = logit_at(ref, f->logits, i);
        }
        pass = compare_logits(c, f, got, want, M, stride, stride, err, sizeof err, diff,
                              sizeof diff, mask);
        free(want);
    }
    if (pass)
        pass = reruns_identical(c, &d, STAGE_LOGITS_PREFILL, f, &da, da.logits, lbytes, got, again,
                                det, sizeof det);
    row(c, "logits_prefill", name, pass ? "PASS" : "FAIL", err, diff, mask, "-", det);
    dfree(&d);
    free(q8);
    free(k8);
    free(ks);
    free(w);
    free(st);
    free(en);
    free(ref);
    free(got);
    free(again);
}

/* ---- S4 ---- */

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* the sorted value keys of a selection, and whether it is a valid selection of the row */
static int selection_keys(const int32_t *idx, int k, long len, const void *l, int dtype,
                          size_t base, uint32_t *keys, int *count)
{
    int n = 0, ok = 1;
    char *seen = calloc((size_t)(len > 0 ? len : 1), 1);
    for (int i = 0; i < k; i++) {
        if (idx[i] == -1)
            continue;
        if (idx[i] < 0 || idx[i] >= len || seen[idx[i]]) {
            ok = 0;
            continue;
        }
        seen[idx[i]] = 1;
        keys[n++] = dsa_f32_order_key((float)logit_at(l, dtype, base + (size_t)idx[i]));
    }
    free(seen);
    qsort(keys, (size_t)n, sizeof *keys, cmp_u32);
    *count = n;
    return ok && n == (len < k ? len : k);
}

/* rows of the lengths below, or (wide_rows > 0) wide_rows rows of wide_len: the shapes where
   the CUDA kernel splits a row over many CTAs or overflows its per-slice candidate rows (with
   DSA_CUDA_TOPK_CLUSTER=N, up to N rows run one 8-CTA cluster per row instead) */
static void check_topk(struct ck *c, int k, const char *data, const struct dsa_k_flags *f,
                       int wide_rows, long wide_len)
{
    char name[128], det[16] = "-", topk[8] = "-";
    if (wide_rows > 0)
        snprintf(name, sizeof name, "k=%d data=%s logits=%s rows=%d len=%ld", k, data,
                 f->logits ? "bf16" : "f32", wide_rows, wide_len);
    else
        snprintf(name, sizeof name, "k=%d data=%s logits=%s%s", k, data, f->logits ? "bf16" : "f32",
                 c->o->quick ? "" : " (incl. 64K+-1)");
    if (!selected(c, "topk", name))
        return;
    if (!supported(c, f, DSA_K_STAGE_TOPK, 0, k)) {
        row(c, "topk", name, "SKIP", "-", "-", "-", "-", "not supported");
        return;
    }
    long lens[] = {0, 1, k - 1, k, k + 1, 8192, 65535, 65537};
    int rows = wide_rows > 0 ? wide_rows : (c->o->quick ? 6 : 8);
    long stride = (wide_rows > 0 ? wide_len : (c->o->quick ? 8192 : 65537)) + 16;
    size_t lb = f->logits == DSA_K_BF16 ? 2 : 4, lbytes = (size_t)rows * stride * lb;
    void *l = dsa_kutil_malloc(lbytes);
    int32_t *st = dsa_kutil_malloc((size_t)rows * 4), *en = dsa_kutil_malloc((size_t)rows * 4);
    for (int r = 0; r < rows; r++) {
        st[r] = (int32_t)(rnd(c) % 16);
        en[r] = (int32_t)(st[r] + (wide_rows > 0 ? wide_len : lens[r]));
        for (long s = 0; s < stride; s++) {
            float v;
            if (s < st[r] || s >= en[r])
                v = INFINITY; /* outside the row: must be ignored */
            else if (!strcmp(data, "random"))
                v = (float)normal(c);
            else if (!strcmp(data, "10lsbits")) /* dense near-ties: top 22 bits fixed */
                v = dsa_bits_f32(0x3F900000u | (uint32_t)(rnd(c) & 0x3ff));
            else if (!strcmp(data, "constant"))
                v = 1.5f;
            else if (!strcmp(data, "ascending"))
                v = (float)(s - st[r]);
            else /* ties: a few distinct values, so the threshold value is shared */
                v = (float)floor(4.0 * normal(c)) - (s % 7 == 0 ? INFINITY : 0.0f);
            if (f->logits == DSA_K_BF16)
                ((uint16_t *)l)[(size_t)r * stride + s] = dsa_f32_to_bf16(v);
            else
                ((float *)l)[(size_t)r * stride + s] = v;
        }
    }
    size_t ib = (size_t)rows * k * 4;
    int32_t *ref = dsa_kutil_malloc(ib), *got = dsa_kutil_malloc(ib), *again = dsa_kutil_malloc(ib);
    struct dsa_topk_args a = {rows, l, stride, st, en, k, ref};
    int pass = status_ok(c, dsa_cpu_topk(f, &a), "topk");
    struct dev d = {.api = c->impl};
    struct dsa_topk_args da = a;
    da.logits = dput(&d, l, lbytes);
    da.start = dput(&d, st, (size_t)rows * 4);
    da.end = dput(&d, en, (size_t)rows * 4);
    da.idx = dout(&d, ib, 0x5a);
    if (d.failed || !status_ok(c, c->impl->topk(f, &da), "topk") || dget(&d, got, da.idx, ib)) {
        pass = 0;
        c->device_error |= d.failed;
    }
    uint32_t *ka = dsa_kutil_malloc((size_t)k * 4), *kb = dsa_kutil_malloc((size_t)k * 4);
    double *v = dsa_kutil_malloc((size_t)stride * sizeof(double));
    int32_t *gold = dsa_kutil_malloc((size_t)k * 4);
    for (int r = 0; pass && r < rows; r++) {
        long len = en[r] - st[r];
        size_t base = (size_t)r * stride + st[r];
        if (c->o->vs_golden) {
            for (long s = 0; s < len; s++)
                v[s] = logit_at(l, f->logits, base + s);
            dsa_golden_topk_f64(v, len, k, gold);
            pass = !memcmp(gold, got + (size_t)r * k, (size_t)k * 4);
        } else {
            int na, nb;
            int oka = selection_keys(ref + (size_t)r * k, k, len, l, f->logits, base, ka, &na);
            int okb = selection_keys(got + (size_t)r * k, k, len, l, f->logits, base, kb, &nb);
            pass = oka && okb && na == nb && !memcmp(ka, kb, (size_t)na * 4);
        }
    }
    strcpy(topk, pass ? "ok" : "DIFF");
    if (pass)
        pass = reruns_identical(c, &d, STAGE_TOPK, f, &da, da.idx, ib, got, again, det, sizeof det);
    row(c, "topk", name, pass ? "PASS" : "FAIL", "-", "-", "-", topk, det);
    dfree(&d);
    free(l);
    free(st);
    free(en);
    free(ref);
    free(got);
    free(again);
    free(ka);
    free(kb);
    free(v);
    free(gold);
}

int dsa_kcheck_run(const struct dsa_kcheck_opts *o, FILE *out, struct dsa_kcheck_result *res)
{
    struct ck c = {o, o->impl, dsa_kernels_cpu(), out, res, o->seed, 0, NULL, NULL};
    memset(res, 0, sizeof *res);
    c.cos = dsa_kutil_malloc((size_t)MAX_POS * 32 * 4);
    c.sin = dsa_kutil_malloc((size_t)MAX_POS * 32 * 4);
    dsa_proxy_rope_table(MAX_POS, c.cos, c.sin);
    fprintf(out, "%-15s %-48s %-6s %-11s %-10s %-4s %-4s %s\n", "stage", "case", "result",
            "max_err", "calc_diff", "mask", "topk", "det");

    struct dsa_k_flags f;
    static const int Ts[] = {1, 4, 17, 512, 4096};
    for (size_t i = 0; i < 5 && !c.device_error; i++)
        for (int rope = 0; rope < 2; rope++) {
            if (o->quick && Ts[i] > 512)
                continue;
            dsa_k_flags_default(&f);
            f.rope = rope;
            check_k_prep(&c, Ts[i], &f);
        }
    dsa_k_flags_default(&f);
    f.hadamard = 1;
    check_k_prep(&c, 17, &f);
    f.bf16_round = 1;
    check_k_prep(&c, 17, &f);
    f.scale = DSA_K_SCALE_FP32;
    check_k_prep(&c, 17, &f);

    for (size_t i = 0; i < 5 && !c.device_error; i++)
        for (int rope = 0; rope < 2; rope++)
            for (int wt = 0; wt < 2; wt++) {
                if ((o->quick || o->vs_golden) && Ts[i] > 512)
                    continue;
                dsa_k_flags_default(&f);
                f.rope = rope;
                f.weights = wt;
                check_q_prep(&c, Ts[i], &f, false);
            }
    dsa_k_flags_default(&f);
    f.heads = 32;
    f.hadamard = 1;
    f.bf16_round = 1;
    f.scale = DSA_K_SCALE_FP32;
    check_q_prep(&c, 17, &f, false);

    static const long Ls[] = {1, 65, 4097};
    for (int N = 1; N <= 4 && !c.device_error; N++)
        for (size_t i = 0; i < 3; i++)
            for (int wt = 0; wt < 2; wt++) {
                dsa_k_flags_default(&f);
                f.weights = wt;
                f.logits = wt; /* W16 pairs with bf16 logits (the DeepGEMM SM100 form) */
                check_decode(&c, i == 2 ? 3 : 1, N, Ls[i], &f);
            }
    if (!o->quick) {
        dsa_k_flags_default(&f);
        check_decode(&c, 1, 1, 65537, &f);
        check_decode(&c, 1, 4, 65535, &f);
        /* the CUDA kernel's flat page list: with B = 5 and 67 (no multiple of a CTA's share)
           the CTAs' page ranges cross from one sequence into the next, partial pages at each
           end; H = 32 and bf16 weights/logits take the same path */
        for (int N = 1; N <= 4; N *= 2)
            check_decode(&c, 5, N, 20000, &f);
        check_decode(&c, 67, 1, 3000, &f);
        /* the overlapped wgmma kernel at next_n 3: three passes per tile, so the two
           accumulators alternate across tile and sequence boundaries (an odd unit count per
           tile), with many tiles past the shorter sequences' contexts */
        check_decode(&c, 5, 3, 20000, &f);
        f.heads = 32;
        check_decode(&c, 4, 3, 700, &f);
        check_decode(&c, 5, 4, 20000, &f);
        dsa_k_flags_default(&f);
        f.weights = f.logits = DSA_K_BF16;
        check_decode(&c, 5, 2, 20000, &f);
    }
    dsa_k_flags_default(&f);
    f.heads = 32;
    check_decode(&c, 2, 2, 1000, &f);

    static const int Ms[] = {1, 4, 17};
    static const long NKs[] = {1, 100, 4096};
    for (size_t i = 0; i < 3 && !c.device_error; i++)
        for (size_t j = 0; j < 3; j++) {
            dsa_k_flags_default(&f);
            f.weights = f.logits = (int)((i + j) & 1);
            check_prefill(&c, Ms[i], NKs[j], &f, 0);
        }
    /* the wgmma prefill kernel's groups of 256 / H rows: H = 32 (8 rows a group), M not a
       multiple of the group, NK not a multiple of the 64-key tile (the tensor copy's rows past
       NK), and CTA ranges that cross groups */
    for (int i = 0; i < 2 && !c.device_error; i++) {
        dsa_k_flags_default(&f);
        f.heads = 32;
        f.weights = f.logits = i;
        check_prefill(&c, i ? 13 : 37, i ? 1000 : 4096 + 77, &f, 0);
        check_prefill(&c, i ? 21 : 37, i ? 3000 : 4096 + 77, &f, 1);
    }
    dsa_k_flags_default(&f);
    f.weights = DSA_K_BF16;
    check_prefill(&c, 37, 8192 + 77, &f, 0);
    check_prefill(&c, 37, 8192 + 77, &f, 1);
    if (!o->vs_golden && !o->quick) {
        dsa_k_flags_default(&f);
        check_prefill(&c, 512, 4096, &f, 0);
    }

    static const int Ks[] = {512, 1024, 2048};
    static const char *datas[] = {"random", "10lsbits", "constant", "ascending", "ties"};
    for (size_t i = 0; i < 3 && !c.device_error; i++)
        for (size_t j = 0; j < 5; j++) {
            dsa_k_flags_default(&f);
            check_topk(&c, Ks[i], datas[j], &f, 0, 0);
        }
    dsa_k_flags_default(&f);
    if (!o->quick) {
        check_topk(&c, 2048, "random", &f, 1, 200003);
        check_topk(&c, 2048, "random", &f, 64, 70001);
        check_topk(&c, 2048, "constant", &f, 64, 70001);
        check_topk(&c, 512, "ascending", &f, 3, 100000);
        /* one cluster per row at its longest rows (256K: full slices), the k-th value shared
           across all the slices of a row, and a row length no multiple of 4 or of the slice */
        check_topk(&c, 2048, "ties", &f, 8, 262128);
        check_topk(&c, 2048, "constant", &f, 8, 262128);
        check_topk(&c, 1024, "10lsbits", &f, 2, 131071);
    }
    f.logits = DSA_K_BF16;
    check_topk(&c, 2048, "random", &f, 0, 0);
    check_topk(&c, 2048, "ties", &f, 0, 0);
    if (!o->quick)
        check_topk(&c, 2048, "random", &f, 1, 131075);
    /* cases added later go last: they draw from the one random stream, so every case above
       keeps the inputs of earlier runs (a result can be compared with an earlier one) */
    dsa_k_flags_default(&f);
    check_q_prep(&c, 17, &f, true);
    /* S1 + S2 in one call: a decode step's T = 256 (64 k blocks then 1,024 q blocks), odd
       counts on both sides, one side empty, 32 heads with bf16 weights */
    static const int Tk[] = {256, 1, 17, 0, 9}, Tq[] = {256, 1, 5, 3, 0};
    for (size_t i = 0; i < 5 && !c.device_error; i++)
        check_prep(&c, Tk[i], Tq[i], &f);
    f.heads = 32;
    f.weights = DSA_K_BF16;
    check_prep(&c, 63, 63, &f);
    /* the Hadamard rotation with each RoPE layout at 64 heads (S2's half-warp layout keeps
       three of its stages in registers and four across lanes) */
    for (int rope = 0; rope < 2 && !c.device_error; rope++) {
        dsa_k_flags_default(&f);
        f.rope = rope;
        f.hadamard = 1;
        f.bf16_round = 1;
        check_q_prep(&c, 33, &f, false);
    }

    free(c.cos);
    free(c.sin);
    if (c.device_error) {
        dsa_kutil_errorf("device error while checking '%s'", o->impl->name);
        return -1;
    }
    return 0;
}
