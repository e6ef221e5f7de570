/*
 * `dsa-eval kernels bench` (bench.h).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "kernels/bench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dsa_numeric.h"
#include "kernels/golden.h"
#include "kernels/kutil.h"

#define HBM_BYTES_PER_S 4.8e12  /* H200 HBM3e, datasheet */
#define FP8_FLOPS_PER_S 1979e12 /* H200 dense fp8 tensor-core rate, datasheet */
#define WARMUP          3
#define MAX_SETS        512
#define HEADS           64
#define TOPK_K          2048
#define SET_BUDGET      ((size_t)24 << 30) /* device bytes all input copies may take */

/* B_PREP: S1 + S2 for the new tokens of one decode step; B_LAYER: S1 + S2 + S3a + S4, the
   whole indexer of one layer for one decode step */
enum bstage { B_DECODE, B_PREFILL, B_TOPK, B_PREP, B_LAYER };
static const char *const stage_names[] = {"S3a", "S3b", "S4", "S1+S2", "layer"};

/* one row of the table: the shape, the peer's figure (0 = none) and the target */
struct bcase {
    enum bstage stage;
    int B, N; /* S3a */
    long L;   /* S3a context, S3b keys, S4 row length */
    int M;    /* S3b query rows, S4 rows */
    double peer_us;
    const char *peer;
    const char *target;
};

#define K128 (128L * 1024)
#define K256 (256L * 1024)
static const struct bcase cases[] = {
    {B_DECODE, 1, 1, K128, 0, 35, "DeepGEMM", "<=10us"},
    {B_DECODE, 8, 1, K128, 0, 63, "DeepGEMM", "<=35us"},
    {B_DECODE, 64, 1, K128, 0, 290, "DeepGEMM", "<=280us"},
    {B_DECODE, 64, 1, K256, 0, 569, "DeepGEMM", "<=550us"},
    {B_DECODE, 64, 2, K128, 0, 307, "DeepGEMM", "<=295us"},
    {B_DECODE, 64, 4, K128, 0, 0, "-", "<=445us"},
    {B_PREFILL, 0, 0, K128, 1024, 0, "-", "-"},
    {B_PREFILL, 0, 0, K128, 2048, 3900, "DeepGEMM", ">=1100TF/s"},
    {B_PREFILL, 0, 0, K128, 4096, 0, "-", ">=1100TF/s"},
    {B_TOPK, 0, 0, K128, 1, 144, "torch.topk", "<=20us"},
    {B_TOPK, 0, 0, K256, 8, 151, "torch.topk", "<=20us"},
    {B_TOPK, 0, 0, K256, 64, 304, "torch.topk", "<=35us"},
    {B_PREP, 64, 1, 0, 0, 0, "-", "<=10us"},
    {B_PREP, 64, 4, 0, 0, 0, "-", "<=10us"},
    {B_LAYER, 64, 1, K128, 0, 0, "-", "<=310us"},
};

/* ---- host inputs of one call: up to MAXB buffers, each uploaded (inputs), compared after
   the call (outputs) or both (the K cache that S1 writes into and S3a reads) ---- */

#define MAXB 24
enum { BUF_IN = 1, BUF_OUT = 2 };

/* where the S1/S2/S4 buffers of the composite jobs sit in h[] */
struct prep_ix {
    int kraw, lnw, lnb, pos, cos, sin, slot, cache, qraw, wraw, q8, qs, w;
    int start, idx; /* B_LAYER's S4 */
};

struct job {
    enum bstage stage;
    struct dsa_k_flags f;
    int nb;
    void *h[MAXB];
    size_t n[MAXB];
    int role[MAXB]; /* BUF_IN | BUF_OUT */
    int B, N, M, rows, maxblk, T, max_pos;
    long L, stride;
    struct prep_ix x;
    double bytes, flops; /* the least HBM traffic and the FLOPs of the call */
};

struct args {
    struct dsa_logits_decode_args dec;
    struct dsa_logits_prefill_args pre;
    struct dsa_topk_args topk;
    struct dsa_k_prep_args kp;
    struct dsa_q_prep_args qp;
};

static void *job_add(struct job *j, size_t n, int role)
{
    j->n[j->nb] = n;
    j->role[j->nb] = role;
    return j->h[j->nb++] = dsa_kutil_calloc(n ? n : 1, 1);
}

static void *job_buf(struct job *j, size_t n)
{
    return job_add(j, n, BUF_IN);
}

/* an output: poisoned before the call, compared after it */
static void *job_out(struct job *j, size_t n)
{
    return job_add(j, n, BUF_OUT);
}

static void job_release(struct job *j)
{
    for (int i = 0; i < j->nb; i++)
        free(j->h[i]);
    j->nb = 0;
}

static uint64_t rnd(uint64_t *s)
{
    *s += 0x9e3779b97f4a7c15ull;
    return dsa_kutil_splitmix64(*s);
}

/* uniform in [0, 1) */
static double unif(uint64_t *s)
{
    return (double)(rnd(s) >> 11) * 0x1p-53;
}

/* random e4m3 codes, never a NaN code (0x7f, 0xff) */
static void fill_fp8(uint64_t *s, uint8_t *x, size_t n)
{
    for (size_t i = 0; i < n; i += 8) {
        uint64_t r = rnd(s);
        for (size_t b = 0; b < 8 && i + b < n; b++) {
            uint8_t c = (uint8_t)(r >> (8 * b));
            x[i + b] = (c & 0x7f) == 0x7f ? 0x3f : c;
        }
    }
}

static void fill_f32(uint64_t *s, float *x, size_t n, double lo, double hi)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(lo + (hi - lo) * unif(s));
}

/*
 * S3a: B sequences of next_n N over paged K. The timed shape has every context L and pages in
 * order; the checked one (varied = 1) shortens sequence b by 37·b tokens (partial pages) and
 * shuffles the block table.
 */
static void make_decode(struct job *j, uint64_t *s, int B, int N, long L, int varied)
{
    memset(j, 0, sizeof *j);
    dsa_k_flags_default(&j->f);
    j->stage = B_DECODE, j->B = B, j->N = N, j->L = L;
    j->maxblk = (int)((L + DSA_K_PAGE - 1) / DSA_K_PAGE);
    j->stride = (L + 255) / 256 * 256;
    long rows = (long)B * N, pages = (long)B * j->maxblk;
    fill_fp8(s, job_buf(j, (size_t)rows * HEADS * 128), (size_t)rows * HEADS * 128);
    fill_f32(s, job_buf(j, (size_t)rows * HEADS * 4), (size_t)rows * HEADS, 0.0, 0.01);
    uint8_t *cache = job_buf(j, (size_t)pages * DSA_K_PAGE_BYTES);
    for (long p = 0; p < pages; p++) {
        fill_fp8(s, cache + p * DSA_K_PAGE_BYTES, DSA_K_SCALE_OFF);
        fill_f32(s, (float *)(cache + p * DSA_K_PAGE_BYTES + DSA_K_SCALE_OFF), DSA_K_PAGE, 0.005,
                 0.02);
    }
    int32_t *bt = job_buf(j, (size_t)pages * 4), *ctx = job_buf(j, (size_t)rows * 4);
    for (long p = 0; p < pages; p++)
        bt[p] = (int32_t)p;
    for (long p = pages - 1; varied && p > 0; p--) {
        long q = (long)(rnd(s) % (uint64_t)(p + 1));
        int32_t t = bt[p];
        bt[p] = bt[q], bt[q] = t;
    }
    for (int b = 0; b < B; b++) {
        long Lb = varied ? L - 37L * b : L;
        if (Lb < N)
            Lb = N;
        for (int r = 0; r < N; r++)
            ctx[b * N + r] = (int32_t)(Lb - N + r + 1);
    }
    job_out(j, (size_t)rows * j->stride * 4);
    j->bytes = (double)pages * DSA_K_PAGE_BYTES + (double)rows * HEADS * 132 + (double)rows * L * 4;
    j->flops = 2.0 * HEADS * 128 * rows * L;
}

/* S3b: M query rows at the end of a causal context of NK keys */
static void make_prefill(struct job *j, uint64_t *s, int M, long NK)
{
    memset(j, 0, sizeof *j);
    dsa_k_flags_default(&j->f);
    j->stage = B_PREFILL, j->M = M, j->L = NK, j->stride = NK;
    fill_fp8(s, job_buf(j, (size_t)M * HEADS * 128), (size_t)M * HEADS * 128);
    fill_f32(s, job_buf(j, (size_t)M * HEADS * 4), (size_t)M * HEADS, 0.0, 0.01);
    fill_fp8(s, job_buf(j, (size_t)NK * 128), (size_t)NK * 128);
    fill_f32(s, job_buf(j, (size_t)NK * 4), (size_t)NK, 0.005, 0.02);
    int32_t *st = job_buf(j, (size_t)M * 4), *en = job_buf(j, (size_t)M * 4);
    double visible = 0;
    for (int m = 0; m < M; m++) {
        st[m] = 0;
        en[m] = (int32_t)(NK - M + m + 1);
        visible += en[m];
    }
    job_out(j, (size_t)M * NK * 4);
    j->bytes = (double)NK * 132 + (double)M * HEADS * 132 + (double)M * NK * 4;
    j->flops = 2.0 * HEADS * 128 * visible;
}

/* S4: rows of len logits, uniform in [0, 1000) as the measurements used */
static void make_topk(struct job *j, uint64_t *s, int rows, long len)
{
    memset(j, 0, sizeof *j);
    dsa_k_flags_default(&j->f);
    j->stage = B_TOPK, j->rows = rows, j->L = len, j->stride = len;
    float *l = job_buf(j, (size_t)rows * len * 4);
    for (size_t i = 0; i < (size_t)rows * len; i++)
        l[i] = (float)(rnd(s) % 1000003) * 1e-3f;
    int32_t *st = job_buf(j, (size_t)rows * 4), *en = job_buf(j, (size_t)rows * 4);
    for (int r = 0; r < rows; r++)
        st[r] = 0, en[r] = (int32_t)len;
    job_out(j, (size_t)rows * TOPK_K * 4);
    j->bytes = (double)rows * len * 4 + (double)rows * TOPK_K * 4;
    j->flops = 0;
}

static uint16_t bf16_unif(uint64_t *s, double lo, double hi)
{
    return dsa_f32_to_bf16((float)(lo + (hi - lo) * unif(s)));
}

/*
 * S1 + S2 inputs and outputs for T new tokens (appended to j): bf16 k and q activations,
 * LayerNorm weights, a cos/sin table of max_pos rows; slot[t] is where token t goes in the
 * cache (j->x.cache, which the caller has added), pos[t] its position.
 */
static void add_prep(struct job *j, uint64_t *s, int T, int max_pos, const int64_t *pos,
                     const int64_t *slot)
{
    const size_t th = (size_t)T * HEADS;
    j->T = T, j->max_pos = max_pos;
    j->x.kraw = j->nb;
    uint16_t *k = job_buf(j, (size_t)T * 128 * 2);
    for (size_t i = 0; i < (size_t)T * 128; i++)
        k[i] = bf16_unif(s, -2.0, 2.0);
    j->x.lnw = j->nb;
    fill_f32(s, job_buf(j, 128 * 4), 128, 0.5, 1.5);
    j->x.lnb = j->nb;
    fill_f32(s, job_buf(j, 128 * 4), 128, -0.1, 0.1);
    j->x.pos = j->nb;
    memcpy(job_buf(j, (size_t)T * 8), pos, (size_t)T * 8);
    j->x.cos = j->nb;
    float *c = job_buf(j, (size_t)max_pos * 32 * 4);
    j->x.sin = j->nb;
    float *sn = job_buf(j, (size_t)max_pos * 32 * 4);
    for (size_t i = 0; i < (size_t)max_pos * 32; i++) {
        double a = 6.283185307179586 * unif(s);
        c[i] = (float)cos(a), sn[i] = (float)sin(a);
    }
    j->x.slot = j->nb;
    memcpy(job_buf(j, (size_t)T * 8), slot, (size_t)T * 8);
    j->x.qraw = j->nb;
    uint16_t *q = job_buf(j, th * 128 * 2);
    for (size_t i = 0; i < th * 128; i++)
        q[i] = bf16_unif(s, -2.0, 2.0);
    j->x.wraw = j->nb;
    fill_f32(s, job_buf(j, th * 4), th, -1.0, 1.0);
    j->bytes += (double)T * (128 * 2 + 132 + 2 * 8 + 2 * 32 * 8) + 1024 +
                (double)th * (128 * 2 + 4 + 128 + 4 + 4);
}

/* S1 + S2 for T = B * N new tokens written into 64-token pages; q8/qs/w and the pages out */
static void make_prep(struct job *j, uint64_t *s, int B, int N)
{
    memset(j, 0, sizeof *j);
    dsa_k_flags_default(&j->f);
    int T = B * N;
    j->stage = B_PREP, j->B = B, j->N = N;
    long pages = (T + DSA_K_PAGE - 1) / DSA_K_PAGE;
    j->x.cache = j->nb;
    job_out(j, (size_t)pages * DSA_K_PAGE_BYTES);
    int64_t *pos = dsa_kutil_malloc((size_t)T * 8), *slot = dsa_kutil_malloc((size_t)T * 8);
    for (int t = 0; t < T; t++)
        pos[t] = (int64_t)(rnd(s) % 4096), slot[t] = t;
    add_prep(j, s, T, 4096, pos, slot);
    free(pos);
    free(slot);
    j->x.q8 = j->nb;
    job_out(j, (size_t)T * HEADS * 128);
    j->x.qs = j->nb;
    job_out(j, (size_t)T * HEADS * 4);
    j->x.w = j->nb;
    job_out(j, (size_t)T * HEADS * 4);
}

/*
 * The whole indexer of one decode step: S1 writes the N new tokens of each sequence into its
 * last page, S2 makes q8/w of those tokens, S3a scores the context, S4 selects top-2048 of each
 * row. On make_decode's buffers: q8 (0) and w (1) become S2's outputs, the cache (2) is read
 * and written, the logits (5) are compared and fed to S4.
 */
static void make_layer(struct job *j, uint64_t *s, int B, int N, long L, int varied)
{
    make_decode(j, s, B, N, L, varied);
    j->stage = B_LAYER;
    j->role[0] = j->role[1] = BUF_OUT;
    j->role[2] = BUF_IN | BUF_OUT;
    j->x.q8 = 0, j->x.w = 1, j->x.cache = 2;
    const int T = B * N;
    const int32_t *bt = j->h[3], *ctx = j->h[4];
    int64_t *pos = dsa_kutil_malloc((size_t)T * 8), *slot = dsa_kutil_malloc((size_t)T * 8);
    for (int r = 0; r < T; r++) {
        int b = r / N;
        pos[r] = ctx[r] - 1; /* row r's own token is the last key it sees */
        slot[r] = (int64_t)bt[(size_t)b * j->maxblk + pos[r] / DSA_K_PAGE] * DSA_K_PAGE +
                  pos[r] % DSA_K_PAGE;
    }
    add_prep(j, s, T, (int)L, pos, slot);
    free(pos);
    free(slot);
    j->x.qs = j->nb;
    job_out(j, (size_t)T * HEADS * 4);
    j->rows = T;
    j->x.start = j->nb;
    job_buf(j, (size_t)T * 4); /* zeros: every row starts at key 0 */
    j->x.idx = j->nb;
    job_out(j, (size_t)T * TOPK_K * 4);
    j->bytes += (double)T * L * 4 + (double)T * TOPK_K * 4; /* S4 reads the logits again */
}

static void make_args(const struct job *j, void *const *d, struct args *a)
{
    if (j->stage == B_PREP || j->stage == B_LAYER) {
        const struct prep_ix *x = &j->x;
        a->kp =
            (struct dsa_k_prep_args){j->T,      j->max_pos, d[x->kraw], d[x->lnw],  d[x->lnb],
                                     d[x->pos], d[x->cos],  d[x->sin],  d[x->slot], d[x->cache]};
        a->qp = (struct dsa_q_prep_args){j->T,      j->max_pos, d[x->qraw], d[x->wraw], DSA_K_F32,
                                         d[x->pos], d[x->cos],  d[x->sin],  d[x->q8],   d[x->qs],
                                         d[x->w],   NULL,       TOPK_K};
    }
    switch (j->stage) {
    case B_DECODE:
        a->dec = (struct dsa_logits_decode_args){j->B,      j->N, d[0], d[1],      d[2], d[3],
                                                 j->maxblk, d[4], d[5], j->stride, 1};
        break;
    case B_PREFILL:
        a->pre = (struct dsa_logits_prefill_args){j->M, j->L, d[0], d[1],      d[2], d[3],
                                                  d[4], d[5], d[6], j->stride, 1};
        break;
    case B_TOPK:
        a->topk = (struct dsa_topk_args){j->rows, d[0], j->stride, d[1], d[2], TOPK_K, d[3]};
        break;
    case B_PREP:
        break;
    case B_LAYER:
        a->dec = (struct dsa_logits_decode_args){j->B,      j->N, d[0], d[1],      d[2], d[3],
                                                 j->maxblk, d[4], d[5], j->stride, 1};
        a->topk = (struct dsa_topk_args){j->rows, d[5],   j->stride,  d[j->x.start],
                                         d[4],    TOPK_K, d[j->x.idx]};
        break;
    }
}

static int call(const struct dsa_kernels_api *api, const struct job *j, const struct args *a)
{
    int rc;
    switch (j->stage) {
    case B_DECODE:
        return api->logits_decode(&j->f, &a->dec);
    case B_PREFILL:
        return api->logits_prefill(&j->f, &a->pre);
    case B_TOPK:
        return api->topk(&j->f, &a->topk);
    case B_PREP:
        return dsa_kernels_prep(api, &j->f, &a->kp, &a->qp);
    case B_LAYER: /* ctx is the end of each row: the decode rows see keys [0, ctx) */
        rc = dsa_kernels_prep(api, &j->f, &a->kp, &a->qp);
        rc = rc ? rc : api->logits_decode(&j->f, &a->dec);
        return rc ? rc : api->topk(&j->f, &a->topk);
    }
    return DSA_K_EINVAL;
}

/* ---- device copies ---- */

struct dset {
    void *d[MAXB];
};

static int upload(const struct dsa_kernels_api *api, const struct job *j, struct dset *s)
{
    memset(s, 0, sizeof *s);
    for (int i = 0; i < j->nb; i++) {
        s->d[i] = api->alloc(j->n[i] ? j->n[i] : 1);
        if (!s->d[i] ||
            ((j->role[i] & BUF_IN) && j->n[i] && api->upload(s->d[i], j->h[i], j->n[i])))
            return -1;
    }
    return 0;
}

static void release(const struct dsa_kernels_api *api, const struct job *j, struct dset *s)
{
    for (int i = 0; i < j->nb; i++)
        if (s->d[i])
            api->free(s->d[i]);
    memset(s, 0, sizeof *s);
}

static size_t job_bytes(const struct job *j)
{
    size_t t = 0;
    for (int i = 0; i < j->nb; i++)
        t += j->n[i];
    return t;
}

/* copies enough that together they exceed 3 x L2 (at least 2 when one set does not) */
static int sets_for(size_t set_bytes, size_t l2)
{
    if (set_bytes > 3 * l2)
        return 1;
    size_t n = (3 * l2 + set_bytes - 1) / set_bytes;
    if (n < 2)
        n = 2;
    if (n > MAX_SETS)
        n = MAX_SETS;
    if (n * set_bytes > SET_BUDGET)
        n = SET_BUDGET / set_bytes;
    return (int)(n ? n : 1);
}

/* ---- timing ---- */

struct timed {
    const struct dsa_kernels_api *api;
    const struct job *j;
    struct args *a;
    int nsets, next;
};

static int timed_call(void *p)
{
    struct timed *t = p;
    int s = t->next;
    t->next = (t->next + 1) % t->nsets;
    return call(t->api, t->j, &t->a[s]);
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* median and minimum microseconds of iters calls after WARMUP, rotating over the sets */
static int time_job(const struct dsa_kbench_opts *o, const struct job *j, struct dset *sets,
                    int nsets, double *med_us, double *min_us)
{
    struct args *a = dsa_kutil_calloc((size_t)nsets, sizeof *a);
    float *ms = dsa_kutil_calloc((size_t)o->iters, sizeof *ms);
    for (int s = 0; s < nsets; s++)
        make_args(j, sets[s].d, &a[s]);
    struct timed t = {o->impl, j, a, nsets, 0};
    int rc = 0;
    for (int i = 0; i < WARMUP && !rc; i++)
        rc = timed_call(&t) != DSA_K_OK;
    rc = rc || o->impl->sync() || dsa_cuda_time_calls(timed_call, &t, o->iters, ms);
    if (!rc) {
        qsort(ms, (size_t)o->iters, sizeof *ms, cmp_float);
        int n = o->iters;
        double med = n % 2 ? ms[n / 2] : 0.5 * ((double)ms[n / 2 - 1] + (double)ms[n / 2]);
        *med_us = 1e3 * med;
        *min_us = 1e3 * (double)ms[0];
    }
    free(a);
    free(ms);
    return rc ? -1 : 0;
}

/* ---- the check against the C reference ---- */

/* runs j on api; each output buffer i lands in out[i] (host, j->n[i] bytes) */
static int run_on(const struct dsa_kernels_api *api, const struct job *j, void **out)
{
    struct dset s;
    struct args a;
    int rc = upload(api, j, &s);
    for (int i = 0; i < j->nb && !rc; i++)
        if (j->role[i] == BUF_OUT)
            rc = api->memset_(s.d[i], 0x7f, j->n[i]);
    if (!rc) {
        make_args(j, s.d, &a);
        rc = call(api, j, &a) != DSA_K_OK || api->sync();
    }
    for (int i = 0; i < j->nb && !rc; i++)
        if (j->role[i] & BUF_OUT)
            rc = api->download(out[i], s.d[i], j->n[i]);
    release(api, j, &s);
    return rc ? -1 : 0;
}

static int logits_match(const struct job *j, const float *got, const float *want, double *diff)
{
    long rows = j->stage == B_PREFILL ? j->M : (long)j->B * j->N;
    size_t n = (size_t)rows * j->stride;
    double *x = dsa_kutil_malloc(n * sizeof *x), *y = dsa_kutil_malloc(n * sizeof *y);
    int nan = 0;
    for (size_t i = 0; i < n; i++) {
        x[i] = got[i], y[i] = want[i];
        nan |= isnan(x[i]);
    }
    int mask_equal;
    *diff = dsa_calc_diff(x, y, n, &mask_equal);
    free(x);
    free(y);
    return !nan && mask_equal && *diff <= 5e-6;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* the sorted order keys of one row's selection; -1 when it is not a valid selection */
static int selection(const int32_t *idx, const float *row, long len, uint32_t *keys, char *seen)
{
    int n = 0;
    memset(seen, 0, (size_t)len);
    for (int i = 0; i < TOPK_K; i++) {
        if (idx[i] == -1)
            continue;
        if (idx[i] < 0 || idx[i] >= len || seen[idx[i]])
            return -1;
        seen[idx[i]] = 1;
        keys[n++] = dsa_f32_order_key(row[idx[i]]);
    }
    qsort(keys, (size_t)n, sizeof *keys, cmp_u32);
    return n == (len < TOPK_K ? len : TOPK_K) ? n : -1;
}

/* rows of logits l (stride j->stride), row r of length len[r] (NULL: j->L) */
static int topk_match(const struct job *j, const float *l, const int32_t *len, const int32_t *got,
                      const int32_t *want)
{
    uint32_t *a = dsa_kutil_malloc(TOPK_K * 4), *b = dsa_kutil_malloc(TOPK_K * 4);
    char *seen = dsa_kutil_malloc((size_t)j->L);
    int ok = 1;
    for (int r = 0; r < j->rows && ok; r++) {
        const float *row = l + (size_t)r * j->stride;
        long n = len ? len[r] : j->L;
        int na = selection(got + (size_t)r * TOPK_K, row, n, a, seen);
        int nb = selection(want + (size_t)r * TOPK_K, row, n, b, seen);
        ok = na >= 0 && na == nb && !memcmp(a, b, (size_t)na * 4);
    }
    free(a);
    free(b);
    free(seen);
    return ok;
}

/* the reduced shape the C reference also runs: same batch and heads, a shorter context */
static void make_check(struct job *j, const struct bcase *c, uint64_t *s, char *shape, size_t n)
{
    switch (c->stage) {
    case B_DECODE: {
        long L = c->L < 8192 + 77 ? c->L : 8192 + 77;
        make_decode(j, s, c->B, c->N, L, 1);
        snprintf(shape, n, "B=%d N=%d L=%ld-37b", c->B, c->N, L);
        break;
    }
    case B_PREFILL:
        make_prefill(j, s, 37, 8192 + 77);
        snprintf(shape, n, "M=37 NK=%d", 8192 + 77);
        break;
    case B_TOPK: {
        int rows = c->M < 8 ? c->M : 8;
        make_topk(j, s, rows, c->L);
        snprintf(shape, n, "rows=%d len=%ldK", rows, c->L / 1024);
        break;
    }
    case B_PREP:
        make_prep(j, s, c->B, c->N);
        snprintf(shape, n, "the same");
        break;
    case B_LAYER:
        make_layer(j, s, c->B, c->N, 8192 + 77, 1);
        snprintf(shape, n, "B=%d N=%d L=%d-37b", c->B, c->N, 8192 + 77);
        break;
    }
}

/* S1/S2's outputs (the pages, q8, qs, w) are bit-exact in every implementation */
static int prep_match(const struct job *j, void **got, void **want)
{
    const int ix[] = {j->x.cache, j->x.q8, j->x.qs, j->x.w};
    for (size_t i = 0; i < sizeof ix / sizeof ix[0]; i++)
        if (memcmp(got[ix[i]], want[ix[i]], j->n[ix[i]]))
            return 0;
    return 1;
}

/*
 * The whole layer: S1/S2 bit-exact, the logits as S3a's check, and the top-k of the device's
 * own logits against the C reference's selection over those same logits (the logits may
 * differ from the reference's in the last bits, which may move a selection at a near-tie).
 */
static int layer_match(const struct job *j, void **got, void **want, double *diff)
{
    if (!prep_match(j, got, want) || !logits_match(j, got[5], want[5], diff))
        return 0;
    int32_t *idx = dsa_kutil_malloc(j->n[j->x.idx]);
    struct dsa_topk_args a = {j->rows, got[5], j->stride, j->h[j->x.start], j->h[4], TOPK_K, idx};
    int ok =
        dsa_cpu_topk(&j->f, &a) == DSA_K_OK && topk_match(j, got[5], j->h[4], got[j->x.idx], idx);
    free(idx);
    return ok;
}

/* 1 pass, 0 fail, -1 device error; diff = calc_diff for the logits stages */
static int check_case(const struct dsa_kbench_opts *o, const struct bcase *c, uint64_t *s,
                      char *shape, size_t n, double *diff)
{
    struct job j;
    make_check(&j, c, s, shape, n);
    void *got[MAXB] = {0}, *want[MAXB] = {0};
    for (int i = 0; i < j.nb; i++)
        if (j.role[i] & BUF_OUT) {
            got[i] = dsa_kutil_malloc(j.n[i] ? j.n[i] : 1);
            want[i] = dsa_kutil_malloc(j.n[i] ? j.n[i] : 1);
        }
    int rc = run_on(o->impl, &j, got);
    if (!rc && run_on(dsa_kernels_cpu(), &j, want))
        rc = -1;
    *diff = -1;
    const int last = j.nb - 1;
    if (!rc) {
        switch (c->stage) {
        case B_TOPK:
            rc = topk_match(&j, j.h[0], NULL, got[last], want[last]);
            break;
        case B_PREP:
            rc = prep_match(&j, got, want);
            break;
        case B_LAYER:
            rc = layer_match(&j, got, want, diff);
            break;
        default:
            rc = logits_match(&j, got[last], want[last], diff);
        }
    }
    for (int i = 0; i < j.nb; i++) {
        free(got[i]);
        free(want[i]);
    }
    job_release(&j);
    return rc;
}

/* ---- output ---- */

struct brow {
    const struct bcase *c;
    char shape[48], check_shape[48];
    double med, min, floor_us, gbps, tflops, diff;
    int sets, pass;
};

static void shape_str(const struct bcase *c, char *buf, size_t n)
{
    if (c->stage == B_DECODE || c->stage == B_LAYER)
        snprintf(buf, n, "N=%d B=%d L=%ldK", c->N, c->B, c->L / 1024);
    else if (c->stage == B_PREP)
        snprintf(buf, n, "T=%d (B=%d N=%d)", c->B * c->N, c->B, c->N);
    else if (c->stage == B_PREFILL)
        snprintf(buf, n, "M=%d NK=%ldK causal", c->M, c->L / 1024);
    else
        snprintf(buf, n, "k=%d rows=%d len=%ldK", TOPK_K, c->M, c->L / 1024);
}

static void json_str(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(out, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(out, "\\u%04x", (unsigned char)*s);
        else
            fputc(*s, out);
    }
    fputc('"', out);
}

/*
 *   stage shape                    median_us   min_us     GB/s  TFLOP/s floor_us x_floor sets check
 *   S3a   N=1 B=64 L=128K             992.0    990.1   4570.2    138.4    238.0    4.17    1 PASS
 *         (then: peer_us peer target, and the checked shape)
 */
static void print_row(FILE *out, const struct brow *r, int json, int first)
{
    const struct bcase *c = r->c;
    if (json) {
        fprintf(out, "%s\n    {\"stage\": \"%s\", \"shape\": ", first ? "" : ",",
                stage_names[c->stage]);
        json_str(out, r->shape);
        fprintf(out,
                ", \"median_us\": %.2f, \"min_us\": %.2f, \"gb_per_s\": %.1f, \"tflop_per_s\": "
                "%.1f, \"floor_us\": %.2f, \"x_floor\": %.3f, \"sets\": %d, \"check\": \"%s\", "
                "\"check_shape\": ",
                r->med, r->min, r->gbps, r->tflops, r->floor_us, r->med / r->floor_us, r->sets,
                r->pass ? "PASS" : "FAIL");
        json_str(out, r->check_shape);
        if (r->diff >= 0)
            fprintf(out, ", \"calc_diff\": %.2e", r->diff);
        if (c->peer_us > 0)
            fprintf(out, ", \"peer_us\": %.0f, \"peer\": \"%s (issue #13)\"", c->peer_us, c->peer);
        fprintf(out, ", \"target\": \"%s\"}", c->target);
        return;
    }
    char peer[32] = "-";
    if (c->peer_us > 0)
        snprintf(peer, sizeof peer, "%.0f", c->peer_us);
    fprintf(out, "%-5s %-24s %10.1f %9.1f %8.0f %8.1f %9.1f %7.2f %4d %-4s %8s %-11s %s\n",
            stage_names[c->stage], r->shape, r->med, r->min, r->gbps, r->tflops, r->floor_us,
            r->med / r->floor_us, r->sets, r->pass ? "PASS" : "FAIL", peer, c->target,
            r->check_shape);
    fflush(out);
}

static void print_header(const struct dsa_kbench_opts *o, FILE *out)
{
    const struct dsa_kernels_api *k = o->impl;
    size_t l2 = dsa_cuda_l2_bytes();
    if (o->json) {
        fprintf(out, "{\"impl\": ");
        json_str(out, k->name);
        fprintf(out, ", \"device\": ");
        json_str(out, k->device());
        fprintf(out, ", \"build\": ");
        json_str(out, k->build);
        fprintf(out,
                ", \"l2_bytes\": %zu, \"hbm_bytes_per_s\": %.3g, \"fp8_flop_per_s\": %.4g, "
                "\"warmup\": %d, \"iters\": %d, \"cases\": [",
                l2, HBM_BYTES_PER_S, FP8_FLOPS_PER_S, WARMUP, o->iters);
        return;
    }
    fprintf(out,
            "kernels bench: %s on %s, L2 %.0f MB; median of %d calls after %d warm-ups, inputs "
            "rotated over 'sets' copies (> 3 x L2); floors at %.1f TB/s and %.0f TFLOP/s fp8; "
            "peer = issue #13's H200 figures (not measured here)\n",
            k->name, k->device(), (double)l2 / 1e6, o->iters, WARMUP, HBM_BYTES_PER_S / 1e12,
            FP8_FLOPS_PER_S / 1e12);
    fprintf(out, "%-5s %-24s %10s %9s %8s %8s %9s %7s %4s %-4s %8s %-11s %s\n", "stage", "shape",
            "median_us", "min_us", "GB/s", "TFLOP/s", "floor_us", "x_floor", "sets", "chk",
            "peer_us", "target", "checked on");
}

static void make_job(struct job *j, const struct bcase *c, uint64_t *s)
{
    if (c->stage == B_DECODE)
        make_decode(j, s, c->B, c->N, c->L, 0);
    else if (c->stage == B_PREP)
        make_prep(j, s, c->B, c->N);
    else if (c->stage == B_LAYER)
        make_layer(j, s, c->B, c->N, c->L, 0);
    else if (c->stage == B_PREFILL)
        make_prefill(j, s, c->M, c->L);
    else
        make_topk(j, s, c->M, c->L);
}

/* times one case and checks it; -1 on a device error */
static int bench_case(const struct dsa_kbench_opts *o, const struct bcase *c, uint64_t *s,
                      struct brow *r)
{
    struct job j;
    make_job(&j, c, s);
    r->sets = sets_for(job_bytes(&j), dsa_cuda_l2_bytes());
    struct dset *sets = dsa_kutil_calloc((size_t)r->sets, sizeof *sets);
    int rc = 0;
    for (int i = 0; i < r->sets && !rc; i++)
        rc = upload(o->impl, &j, &sets[i]);
    if (!rc)
        rc = time_job(o, &j, sets, r->sets, &r->med, &r->min);
    for (int i = 0; i < r->sets; i++)
        release(o->impl, &j, &sets[i]);
    free(sets);
    double t = r->med * 1e-6;
    r->floor_us = 1e6 * fmax(j.bytes / HBM_BYTES_PER_S, j.flops / FP8_FLOPS_PER_S);
    r->gbps = t > 0 ? j.bytes / t / 1e9 : 0;
    r->tflops = t > 0 ? j.flops / t / 1e12 : 0;
    job_release(&j);
    if (rc)
        return -1;
    int ck = check_case(o, c, s, r->check_shape, sizeof r->check_shape, &r->diff);
    if (ck < 0)
        return -1;
    r->pass = ck;
    return 0;
}

int dsa_kbench_run(const struct dsa_kbench_opts *o, FILE *out, struct dsa_kbench_result *res)
{
    uint64_t s = o->seed;
    memset(res, 0, sizeof *res);
    int printed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct brow r = {.c = &cases[i]};
        char full[80];
        shape_str(&cases[i], r.shape, sizeof r.shape);
        snprintf(full, sizeof full, "%s/%s", stage_names[cases[i].stage], r.shape);
        if (o->filter && !strstr(full, o->filter))
            continue;
        if (!printed++)
            print_header(o, out);
        if (bench_case(o, &cases[i], &s, &r)) {
            if (o->json)
                fprintf(out, "]}\n");
            return dsa_kutil_errorf("device error while timing %s %s", stage_names[r.c->stage],
                                    r.shape);
        }
        print_row(out, &r, o->json, res->cases == 0);
        res->cases++;
        res->failed += !r.pass;
    }
    if (o->json && printed)
        fprintf(out, "\n]}\n");
    return 0;
}
