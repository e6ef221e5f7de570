/* Unit tests of the indexer stack's C reference (kernels/cpu) and its number formats:
 * e4m3 against the exhaustive table from the format definition (and a python3 cross-check),
 * bf16 rounding of folded weights against an independent round-to-nearest-even, hand-computed
 * small cases of every stage, top-k adversarial rows against the golden sort, the reference
 * against the fp64 golden on random shapes, every stage bit-identical on 1, 2 and 3 threads,
 * the plugin ABI, and kernels/kutil (message sink, splitmix64 parity with src/util/hash.c).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dsa_numeric.h"
#include "e4m3_table.h"
#include "kernels/check.h"
#include "kernels/golden.h"
#include "kernels/kutil.h"
#include "kernels/plugin.h"
#include "util/hash.h"

static uint64_t rng = 7;

static uint64_t next(void)
{
    rng = dsa_splitmix64(rng);
    return rng;
}

static void test_e4m3_exhaustive(void **state)
{
    (void)state;
    for (int c = 0; c < 256; c++) {
        float v = dsa_e4m3_to_f32((uint8_t)c);
        if (!strcmp(e4m3_table[c], "nan")) {
            assert_true(isnan(v));
            continue;
        }
        float want = strtof(e4m3_table[c], NULL);
        assert_true(v == want && signbit(v) == signbit(want));
        /* every finite code round-trips through the encoder */
        assert_int_equal(dsa_f32_to_e4m3(want), c);
    }
    /* midpoints between neighbours round to the even code; beyond 448 saturates */
    for (int c = 0; c < 0x7e; c++) {
        float lo = strtof(e4m3_table[c], NULL), hi = strtof(e4m3_table[c + 1], NULL);
        float mid = (lo + hi) / 2; /* exact: both have few bits */
        int even = (c & 1) ? c + 1 : c;
        assert_int_equal(dsa_f32_to_e4m3(mid), even);
        assert_int_equal(dsa_f32_to_e4m3(-mid), even | 0x80);
        assert_int_equal(dsa_f32_to_e4m3(nextafterf(mid, 0)), c);
        assert_int_equal(dsa_f32_to_e4m3(nextafterf(mid, 1000)), c + 1);
    }
    assert_int_equal(dsa_f32_to_e4m3(449.0f), 0x7e);
    assert_int_equal(dsa_f32_to_e4m3(464.0f), 0x7e);
    assert_int_equal(dsa_f32_to_e4m3(1e30f), 0x7e);
    assert_int_equal(dsa_f32_to_e4m3(-INFINITY), 0xfe);
    assert_int_equal(dsa_f32_to_e4m3(NAN) & 0x7f, 0x7f);
    assert_int_equal(dsa_f32_to_e4m3(0x1p-11f), 0x00); /* below half the smallest subnormal */
    assert_int_equal(dsa_f32_to_e4m3(0x1.8p-10f), 0x01);
}

/* the checked-in table equals what the generator computes now (when python3 is present) */
static void test_e4m3_table_python(void **state)
{
    (void)state;
    const char *py = getenv("DSA_PYTHON"), *src = getenv("DSA_SRC");
    if (!py || !*py || !src)
        fail_msg("python3 is required: DSA_PYTHON (set by ctest; scripts/setup.sh installs it)");
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "'%s' '%s/scripts/gen_e4m3_table.py' | cmp -s - '%s/tests/unit/e4m3_table.h'", py, src,
             src);
    assert_int_equal(system(cmd), 0);
}

/* independent RNE of an fp32 to bf16: choose the nearer of the two neighbours in double,
   ties to the even mantissa */
static uint16_t rne_bf16(float x)
{
    uint32_t u = dsa_f32_bits(x);
    uint16_t lo = (uint16_t)(u >> 16), hi = (uint16_t)(lo + 1);
    double dl = fabs((double)x - (double)dsa_bf16_to_f32(lo));
    double dh = fabs((double)dsa_bf16_to_f32(hi) - (double)x);
    if ((u & 0xffff) == 0)
        return lo;
    if (dl < dh)
        return lo;
    if (dh < dl)
        return hi;
    return (lo & 1) ? hi : lo;
}

static void test_bf16_weights_5m(void **state)
{
    (void)state;
    const float hs[2] = {0.125f, 0.1767766952966369f};
    for (long i = 0; i < 5000000; i++) {
        /* a folded weight as q_prep computes it: ((w_raw * qs) * 128^-0.5) * H^-0.5 */
        float wr = dsa_bf16_to_f32((uint16_t)(next() & 0xffff));
        if (!isfinite(wr))
            continue;
        float qs = ldexpf(1.0f, -(int)(next() % 20)) * ((next() & 1) ? 1.0f : 1.37f);
        float w = wr * qs;
        w = w * DSA_INV_SQRT_128;
        w = w * hs[i & 1];
        if (!isfinite(w))
            continue;
        assert_int_equal(dsa_f32_to_bf16(w), rne_bf16(w));
    }
    assert_int_equal(dsa_f32_to_bf16(1.00390625f), 0x3f80);               /* tie -> even (down) */
    assert_int_equal(dsa_f32_to_bf16(1.01171875f), 0x3f82);               /* tie -> even (up) */
    assert_int_equal(dsa_f32_to_bf16(dsa_bits_f32(0x3f808001u)), 0x3f81); /* above the tie */
}

/* constant k: LayerNorm gives ln_b exactly; one non-zero value 0.5 -> UE8M0 scale 2^-9 and
   code 0x78 (256); RoPE at position 0 is the identity */
static void test_k_prep_hand(void **state)
{
    (void)state;
    struct dsa_k_flags f;
    dsa_k_flags_default(&f);
    uint16_t k_raw[128];
    float ln_w[128], ln_b[128], cs[32], sn[32];
    for (int i = 0; i < 128; i++) {
        k_raw[i] = dsa_f32_to_bf16(3.0f);
        ln_w[i] = 1.0f;
        ln_b[i] = i == 70 ? 0.5f : 0.0f;
    }
    for (int i = 0; i < 32; i++)
        cs[i] = 1.0f, sn[i] = 0.0f;
    int64_t pos = 0, slot = 65; /* page 1, offset 1 */
    uint8_t cache[2 * DSA_K_PAGE_BYTES];
    memset(cache, 0xee, sizeof cache);
    struct dsa_k_prep_args a = {1, 1, k_raw, ln_w, ln_b, &pos, cs, sn, &slot, cache};
    assert_int_equal(dsa_cpu_k_prep(&f, &a), DSA_K_OK);
    const uint8_t *v = cache + DSA_K_PAGE_BYTES + 128;
    for (int i = 0; i < 128; i++)
        assert_int_equal(v[i], i == 70 ? 0x78 : 0x00);
    float s;
    memcpy(&s, cache + DSA_K_PAGE_BYTES + DSA_K_SCALE_OFF + 4, 4);
    assert_true(s == 0x1p-9f);
    /* the other slots are untouched */
    assert_int_equal(cache[0], 0xee);
    assert_int_equal(cache[DSA_K_PAGE_BYTES + 127], 0xee);
    assert_int_equal(cache[DSA_K_PAGE_BYTES + 256], 0xee);
    /* scale fp32: 0.5/448 */
    f.scale = DSA_K_SCALE_FP32;
    assert_int_equal(dsa_cpu_k_prep(&f, &a), DSA_K_OK);
    memcpy(&s, cache + DSA_K_PAGE_BYTES + DSA_K_SCALE_OFF + 4, 4);
    assert_true(s == 0.5f / 448.0f);
    assert_int_equal(v[70], 0x7e); /* 448 */
}

/* q = (1, 0, …) per head rotated by 90 degrees in pair 0 (NeoX: dims 0 and 32); w_raw = 2:
   w = ((2 * qs) * 128^-0.5) * 64^-0.5 */
static void test_q_prep_hand(void **state)
{
    (void)state;
    struct dsa_k_flags f;
    dsa_k_flags_default(&f);
    int H = 64;
    uint16_t *q = calloc((size_t)H * 128, 2), w_raw[64];
    float cs[32], sn[32], qs[64], w[64];
    uint8_t q8[64 * 128];
    int32_t fill[2048];
    for (int h = 0; h < H; h++) {
        q[h * 128] = dsa_f32_to_bf16(1.0f);
        w_raw[h] = dsa_f32_to_bf16(2.0f);
    }
    for (int i = 0; i < 32; i++)
        cs[i] = i == 0 ? 0.0f : 1.0f, sn[i] = i == 0 ? 1.0f : 0.0f;
    int64_t pos = 0;
    struct dsa_q_prep_args a = {1, 1, q, w_raw, DSA_K_BF16, &pos, cs, sn, q8, qs, w, fill, 2048};
    assert_int_equal(dsa_cpu_q_prep(&f, &a), DSA_K_OK);
    for (int h = 0; h < H; h++) {
        /* x1*c - x2*s = 0, x2*c + x1*s = 1 at dim 32; amax 1 -> s = 2^ceil(log2(1/448)) = 2^-8 */
        assert_true(qs[h] == 0x1p-8f);
        assert_int_equal(q8[h * 128 + 0], 0x00);
        assert_int_equal(q8[h * 128 + 32], 0x78); /* 256 */
        float want = 2.0f * 0x1p-8f;
        want = want * DSA_INV_SQRT_128;
        want = want * 0.125f;
        assert_true(w[h] == want);
    }
    for (int i = 0; i < 2048; i++)
        assert_int_equal(fill[i], -1);
    free(q);
}

/* one key, H heads of q = k = all 1.0 (code 0x38): dot 128; head 0 negated (relu 0) */
static void test_logits_hand(void **state)
{
    (void)state;
    struct dsa_k_flags f;
    dsa_k_flags_default(&f);
    int H = 64;
    uint8_t q8[2 * 64 * 128], page[DSA_K_PAGE_BYTES];
    float w[2 * 64], ks = 0.25f, logits[2 * 256];
    memset(q8, 0x38, sizeof q8);
    memset(q8, 0xb8, 128); /* row 0 head 0: -1.0 */
    memset(page, 0x38, sizeof page);
    for (int i = 0; i < 64; i++)
        memcpy(page + DSA_K_SCALE_OFF + i * 4, &ks, 4);
    for (int i = 0; i < 2 * H; i++)
        w[i] = 0.5f;
    int32_t bt = 0, ctx[2] = {1, 2};
    struct dsa_logits_decode_args a = {1, 2, q8, w, page, &bt, 1, ctx, logits, 256, 1};
    assert_int_equal(dsa_cpu_logits_decode(&f, &a), DSA_K_OK);
    /* row 0: 63 heads * 0.5 * 128 * 0.25; row 1: 64 heads */
    assert_true(logits[0] == 63 * 0.5f * 128 * 0.25f);
    assert_true(isinf(logits[1]) && logits[1] < 0);
    assert_true(logits[256] == 1024.0f && logits[257] == 1024.0f);
    assert_true(isinf(logits[258]) && logits[258] < 0);
    /* N = 5 is not supported */
    a.N = 5;
    assert_int_equal(dsa_cpu_logits_decode(&f, &a), DSA_K_UNSUPPORTED);
}

static void topk_vs_golden(const float *v, long len, int k, const int32_t *want_first)
{
    struct dsa_k_flags f;
    dsa_k_flags_default(&f);
    int32_t start = 0, end = (int32_t)len;
    int32_t *idx = malloc((size_t)k * 4), *gold = malloc((size_t)k * 4);
    double *d = malloc((size_t)(len + 1) * sizeof *d);
    for (long i = 0; i < len; i++)
        d[i] = v[i];
    struct dsa_topk_args a = {1, v, len > 0 ? len : 1, &start, &end, k, idx};
    assert_int_equal(dsa_cpu_topk(&f, &a), DSA_K_OK);
    dsa_golden_topk_f64(d, len, k, gold);
    assert_memory_equal(idx, gold, (size_t)k * 4);
    if (want_first)
        assert_int_equal(idx[0], want_first[0]);
    long n = len < k ? len : k;
    for (long i = n; i < k; i++)
        assert_int_equal(idx[i], -1);
    free(idx);
    free(gold);
    free(d);
}

static void test_topk_adversarial(void **state)
{
    (void)state;
    static const int ks[] = {512, 1024, 2048};
    float *v = malloc((size_t)65537 * 4);
    for (size_t ki = 0; ki < 3; ki++) {
        int k = ks[ki];
        long lens[] = {0, 1, k - 1, k, k + 1, 65535, 65537};
        for (size_t li = 0; li < 7; li++) {
            long len = lens[li];
            for (long i = 0; i < len; i++) /* all equal: the first k indices */
                v[i] = 2.5f;
            int32_t first = 0;
            topk_vs_golden(v, len, k, len ? &first : NULL);
            for (long i = 0; i < len; i++) /* ascending: the last index first */
                v[i] = (float)i;
            first = (int32_t)(len - 1);
            topk_vs_golden(v, len, k, len ? &first : NULL);
            /* ties at the threshold: k/2 values 9, then many 7s: the lowest-index 7s fill in */
            for (long i = 0; i < len; i++)
                v[i] = (i % 3 == 0 && i / 3 < k / 2) ? 9.0f : 7.0f;
            topk_vs_golden(v, len, k, NULL);
            for (long i = 0; i < len; i++) /* 10 LSBs random, -inf and -0 mixed in */
                v[i] = (i % 11 == 0)   ? -INFINITY
                       : (i % 13 == 0) ? -0.0f
                                       : dsa_bits_f32(0x3F900000u | (uint32_t)(next() & 0x3ff));
            topk_vs_golden(v, len, k, NULL);
        }
    }
    free(v);
    /* k outside {512, 1024, 2048} is not supported */
    struct dsa_k_flags f;
    dsa_k_flags_default(&f);
    int32_t s = 0, e = 1, idx[100];
    float one = 1.0f;
    struct dsa_topk_args a = {1, &one, 1, &s, &e, 100, idx};
    assert_int_equal(dsa_cpu_topk(&f, &a), DSA_K_UNSUPPORTED);
}

/* `kernels check` as o says, its report discarded; asserts that the run itself completed */
static struct dsa_kcheck_result kcheck_quiet(struct dsa_kcheck_opts o)
{
    struct dsa_kcheck_result res;
    FILE *out = fopen("/dev/null", "w");
    assert_non_null(out);
    assert_int_equal(dsa_kcheck_run(&o, out, &res), 0);
    fclose(out);
    return res;
}

/* the whole `kernels check --device cpu --quick` table passes (random shapes vs golden) */
static void test_reference_vs_golden(void **state)
{
    (void)state;
    struct dsa_kcheck_result res =
        kcheck_quiet((struct dsa_kcheck_opts){dsa_kernels_cpu(), 1, NULL, 1, 3, 1});
    assert_int_equal(res.failed, 0);
    assert_true(res.passed > 70);
    /* and the 64K contexts (decode next_n 1 and 4 at 65537 / 65535) */
    res = kcheck_quiet((struct dsa_kcheck_opts){dsa_kernels_cpu(), 1, "L=6553", 1, 3, 0});
    assert_int_equal(res.failed, 0);
    assert_int_equal(res.passed, 2);
}

/* sha256 of every stage's output (S1 cache, S2 q8/qs/w, S3b and S3a logits, S4 indices) on
   random inputs, with the thread pool at DSA_THREADS = threads */
#define TH_T 3000 /* not a multiple of the 64-token page or of any chunk */
#define TH_M 5
static void stages_hex(const struct dsa_k_flags *f, const char *threads, char hex[65])
{
    setenv("DSA_THREADS", threads, 1);
    const int H = f->heads, K = 2048;
    const long npages = (TH_T + DSA_K_PAGE - 1) / DSA_K_PAGE;
    uint64_t saved = rng;
    rng = 99; /* the same inputs for every thread count */
    uint16_t *k_raw = malloc((size_t)TH_T * 128 * 2), *q_raw = malloc((size_t)TH_M * H * 128 * 2);
    float *w_raw = malloc((size_t)TH_M * H * 4), *cs = malloc((size_t)TH_T * 32 * 4);
    float *sn = malloc((size_t)TH_T * 32 * 4), ln_w[128], ln_b[128];
    int64_t *pos = malloc((size_t)TH_T * 8), *slot = malloc((size_t)TH_T * 8), qpos[TH_M];
    for (long i = 0; i < (long)TH_T * 128; i++)
        k_raw[i] = dsa_f32_to_bf16((float)((double)(next() >> 11) / 0x1p53 * 4.0 - 2.0));
    for (long i = 0; i < (long)TH_M * H * 128; i++)
        q_raw[i] = dsa_f32_to_bf16((float)((double)(next() >> 11) / 0x1p53 * 4.0 - 2.0));
    for (long i = 0; i < (long)TH_M * H; i++)
        w_raw[i] = (float)((double)(next() >> 11) / 0x1p53 - 0.5);
    for (long i = 0; i < (long)TH_T * 32; i++) {
        double a = (double)(next() >> 11) / 0x1p53 * 6.283185307179586;
        cs[i] = (float)cos(a);
        sn[i] = (float)sin(a);
    }
    for (int i = 0; i < 128; i++) {
        ln_w[i] = (float)(0.5 + (double)(next() >> 11) / 0x1p53);
        ln_b[i] = (float)((double)(next() >> 11) / 0x1p53 * 0.2 - 0.1);
    }
    for (long t = 0; t < TH_T; t++)
        pos[t] = slot[t] = t;
    rng = saved;
    uint8_t *cache = calloc((size_t)npages, DSA_K_PAGE_BYTES);
    struct dsa_k_prep_args ka = {TH_T, TH_T, k_raw, ln_w, ln_b, pos, cs, sn, slot, cache};
    assert_int_equal(dsa_cpu_k_prep(f, &ka), DSA_K_OK);
    uint8_t *q8 = malloc((size_t)TH_M * H * 128), *k8 = malloc((size_t)TH_T * 128);
    float *qs = malloc((size_t)TH_M * H * 4), *w = malloc((size_t)TH_M * H * 4);
    float *ks = malloc((size_t)TH_T * 4);
    for (int m = 0; m < TH_M; m++)
        qpos[m] = TH_T - TH_M + m;
    struct dsa_q_prep_args qa = {TH_M, TH_T, q_raw, w_raw, DSA_K_F32, qpos, cs,
                                 sn,   q8,   qs,    w,     NULL,      0};
    assert_int_equal(dsa_cpu_q_prep(f, &qa), DSA_K_OK);
    for (long t = 0; t < TH_T; t++) { /* gather K out of the pages */
        const uint8_t *pg = cache + (size_t)(t / DSA_K_PAGE) * DSA_K_PAGE_BYTES;
        memcpy(k8 + t * 128, pg + (t % DSA_K_PAGE) * 128, 128);
        memcpy(ks + t, pg + DSA_K_SCALE_OFF + (t % DSA_K_PAGE) * 4, 4);
    }
    int32_t rs[TH_M], re[TH_M];
    for (int m = 0; m < TH_M; m++) {
        rs[m] = m * 7; /* ragged rows */
        re[m] = (int32_t)qpos[m] + 1;
    }
    float *plog = malloc((size_t)TH_M * TH_T * 4), *dlog = malloc((size_t)4 * TH_T * 4);
    struct dsa_logits_prefill_args pa = {TH_M, TH_T, q8, w, k8, ks, rs, re, plog, TH_T, 1};
    assert_int_equal(dsa_cpu_logits_prefill(f, &pa), DSA_K_OK);
    int32_t *bt = malloc((size_t)npages * 4), ctx[4];
    for (long i = 0; i < npages; i++)
        bt[i] = (int32_t)(npages - 1 - i); /* pages out of order */
    for (int j = 0; j < 4; j++)
        ctx[j] = TH_T - 4 + j + 1;
    /* decode over the cache with the pages listed backwards: K read through the table */
    uint8_t *rcache = malloc((size_t)npages * DSA_K_PAGE_BYTES);
    for (long i = 0; i < npages; i++)
        memcpy(rcache + (size_t)bt[i] * DSA_K_PAGE_BYTES, cache + (size_t)i * DSA_K_PAGE_BYTES,
               DSA_K_PAGE_BYTES);
    struct dsa_logits_decode_args da = {1, 4, q8, w, rcache, bt, (int)npages, ctx, dlog, TH_T, 1};
    assert_int_equal(dsa_cpu_logits_decode(f, &da), DSA_K_OK);
    int32_t *idx = malloc((size_t)TH_M * K * 4);
    struct dsa_topk_args ta = {TH_M, plog, TH_T, rs, re, K, idx};
    assert_int_equal(dsa_cpu_topk(f, &ta), DSA_K_OK);
    dsa_sha256 *h = dsa_sha256_new();
    dsa_sha256_update(h, cache, (size_t)npages * DSA_K_PAGE_BYTES);
    dsa_sha256_update(h, q8, (size_t)TH_M * H * 128);
    dsa_sha256_update(h, qs, (size_t)TH_M * H * 4);
    dsa_sha256_update(h, w, (size_t)TH_M * H * 4);
    dsa_sha256_update(h, plog, (size_t)TH_M * TH_T * 4);
    dsa_sha256_update(h, dlog, (size_t)4 * TH_T * 4);
    dsa_sha256_update(h, idx, (size_t)TH_M * K * 4);
    dsa_sha256_final_hex(h, hex);
    dsa_sha256_free(&h);
    void *bufs[] = {k_raw, q_raw, w_raw, cs, sn,   pos,  slot, cache,  q8,
                    k8,    qs,    w,     ks, plog, dlog, bt,   rcache, idx};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        free(bufs[i]);
    unsetenv("DSA_THREADS");
}

/* every stage of the reference gives the same bytes on 1, 2 and 3 threads (parallel.h), for
   the default flags and for the torch-reference ones (bf16 rounding, Hadamard, bf16 out) */
static void test_threads_bitwise(void **state)
{
    (void)state;
    for (int v = 0; v < 2; v++) {
        struct dsa_k_flags f;
        dsa_k_flags_default(&f);
        if (v) {
            f.hadamard = 1;
            f.bf16_round = 1;
            f.weights = DSA_K_BF16;
            f.logits = DSA_K_BF16;
        }
        char h1[65], h2[65], h3[65];
        stages_hex(&f, "1", h1);
        stages_hex(&f, "2", h2);
        stages_hex(&f, "3", h3);
        assert_string_equal(h1, h2);
        assert_string_equal(h1, h3);
    }
}

static void test_flags(void **state)
{
    (void)state;
    struct dsa_k_flags f;
    dsa_k_flags_default(&f);
    assert_int_equal(dsa_k_flags_set(&f, "weights=bf16"), 0);
    assert_int_equal(dsa_k_flags_set(&f, "rope=interleaved"), 0);
    assert_int_equal(dsa_k_flags_set(&f, "heads=32"), 0);
    assert_int_equal(dsa_k_flags_set(&f, "hadamard=on"), 0);
    assert_int_equal(dsa_k_flags_set(&f, "weights=fp8"), -1);
    assert_int_equal(dsa_k_flags_set(&f, "nonsense=1"), -1);
    assert_int_equal(dsa_k_flags_set(&f, "rope"), -1);
    char buf[256];
    dsa_k_flags_str(&f, buf, sizeof buf);
    assert_string_equal(buf, "rope=interleaved,hadamard=on,bf16_round=off,scale=ue8m0,"
                             "weights=bf16,logits=f32,heads=32");
}

/* a second build of the reference, loaded as a plugin, gives the same bytes */
static void test_plugin_abi(void **state)
{
    (void)state;
    const char *so = getenv("DSA_TEST_PLUGIN"), *bad = getenv("DSA_TEST_PLUGIN_BAD");
    if (!so || !bad)
        fail_msg("DSA_TEST_PLUGIN(_BAD) not set (run the tests through ctest)");
    const struct dsa_kernels_api *p = dsa_kernels_load(so);
    assert_non_null(p);
    assert_true(p != dsa_kernels_cpu());
    assert_string_equal(p->name, "test-plugin (cpu reference copy)");
    assert_true(p->k_prep != dsa_kernels_cpu()->k_prep); /* its own copy of the code */
    struct dsa_kcheck_result res =
        kcheck_quiet((struct dsa_kcheck_opts){p, 0, "logits_decode", 1, 5, 1});
    assert_int_equal(res.failed, 0);
    assert_true(res.passed >= 20);
    /* S1 + S2 in one call: the plugin's prep slot against its own two calls */
    res = kcheck_quiet((struct dsa_kcheck_opts){p, 0, "prep/Tk=", 1, 5, 1});
    assert_int_equal(res.failed, 0);
    assert_int_equal(res.skipped, 0);
    assert_int_equal(res.passed, 6);
    assert_null(dsa_kernels_load(bad)); /* wrong ABI version */
    assert_null(dsa_kernels_load("/nonexistent/libx.so"));
    dsa_kernels_unload();
}

/* A plugin built before the prep slot loads; its slot past struct_size (here a function that
   aborts) is never called: dsa_kernels_prep() makes the two calls, the check skips its rows */
static void test_plugin_v1(void **state)
{
    (void)state;
    const char *so = getenv("DSA_TEST_PLUGIN_V1");
    if (!so)
        fail_msg("DSA_TEST_PLUGIN_V1 not set (run the tests through ctest)");
    const struct dsa_kernels_api *p = dsa_kernels_load(so);
    assert_non_null(p);
    assert_int_equal(p->struct_size, DSA_KERNELS_API_SIZE_V1);
    struct dsa_kcheck_result res =
        kcheck_quiet((struct dsa_kcheck_opts){p, 0, "prep/Tk=", 1, 5, 1});
    assert_int_equal(res.failed, 0);
    assert_int_equal(res.passed, 0);
    assert_int_equal(res.skipped, 6);
    /* one token through dsa_kernels_prep(): the same bytes as the reference's two calls */
    struct dsa_k_flags f;
    dsa_k_flags_default(&f);
    uint16_t k_raw[128], q_raw[64 * 128], w_raw[64];
    float ln_w[128], ln_b[128], cs[32], sn[32], qs[2][64], w[2][64];
    int64_t pos = 0, slot = 3;
    for (int i = 0; i < 128; i++) {
        k_raw[i] = dsa_f32_to_bf16((float)(i % 11) - 5.0f);
        ln_w[i] = 1.0f, ln_b[i] = 0.01f * (float)i;
    }
    for (int i = 0; i < 64 * 128; i++)
        q_raw[i] = dsa_f32_to_bf16((float)(i % 13) - 6.0f);
    for (int i = 0; i < 64; i++)
        w_raw[i] = dsa_f32_to_bf16(0.01f * (float)(i + 1));
    for (int i = 0; i < 32; i++)
        cs[i] = 1.0f, sn[i] = 0.0f;
    static uint8_t cache[2][DSA_K_PAGE_BYTES], q8[2][64 * 128];
    for (int r = 0; r < 2; r++) {
        struct dsa_k_prep_args k = {1, 1, k_raw, ln_w, ln_b, &pos, cs, sn, &slot, cache[r]};
        struct dsa_q_prep_args q = {1,  1,     q_raw, w_raw, DSA_K_BF16, &pos, cs,
                                    sn, q8[r], qs[r], w[r],  NULL,       0};
        assert_int_equal(r ? dsa_kernels_prep(p, &f, &k, &q) : dsa_cpu_prep(&f, &k, &q), 0);
    }
    assert_memory_equal(cache[0], cache[1], sizeof cache[0]);
    assert_memory_equal(q8[0], q8[1], sizeof q8[0]);
    assert_memory_equal(qs[0], qs[1], sizeof qs[0]);
    assert_memory_equal(w[0], w[1], sizeof w[0]);
    dsa_kernels_unload();
}

/* kernels/kutil: the sink gets each message once, without the prefix, at its level; the
   mixer is src/util/hash.c's splitmix64 (the published first output for state 0) */
static int sunk_level = -1;
static char sunk[64];

static void sink(int level, const char *msg)
{
    sunk_level = level;
    snprintf(sunk, sizeof sunk, "%s", msg);
}

static void test_kutil(void **state)
{
    (void)state;
    dsa_kutil_set_sink(sink);
    assert_int_equal(dsa_kutil_errorf("cannot load '%s': %d", "x.so", 3), -1);
    assert_int_equal(sunk_level, DSA_KUTIL_ERROR);
    assert_string_equal(sunk, "cannot load 'x.so': 3");
    dsa_kutil_warnf("topk returned %d", -2);
    assert_int_equal(sunk_level, DSA_KUTIL_WARNING);
    assert_string_equal(sunk, "topk returned -2");
    dsa_kutil_set_sink(NULL);
    char *d = dsa_kutil_strdup("abc");
    assert_string_equal(d, "abc");
    free(d);
    assert_true(dsa_kutil_splitmix64(0) == 0xe220a8397b1dcdafull);
    for (uint64_t x = 1; x < 1000000; x = x * 3 + 1)
        assert_true(dsa_kutil_splitmix64(x) == dsa_splitmix64(x));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_e4m3_exhaustive),
        cmocka_unit_test(test_e4m3_table_python),
        cmocka_unit_test(test_bf16_weights_5m),
        cmocka_unit_test(test_k_prep_hand),
        cmocka_unit_test(test_q_prep_hand),
        cmocka_unit_test(test_logits_hand),
        cmocka_unit_test(test_topk_adversarial),
        cmocka_unit_test(test_reference_vs_golden),
        cmocka_unit_test(test_threads_bitwise),
        cmocka_unit_test(test_flags),
        cmocka_unit_test(test_plugin_abi),
        cmocka_unit_test(test_plugin_v1),
        cmocka_unit_test(test_kutil),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
