/*
 * S4 top-k on CUDA: three launches per call, several CTAs per row, one full read of the
 * logits.
 *
 *   1. sample  (one CTA per row): the order keys of 4096 values of the row (1024 evenly
 *              spaced runs of 4 adjacent values, one 16-byte load each, in rows of 8192 or
 *              more; 4096 evenly spaced single values in shorter rows, all of them when the
 *              row is shorter still) and, by a radix select in shared memory, the m-th
 *              largest of them, m = 1.5·k·4096/len + 16 (k when the sample is the whole
 *              row): a threshold t that about 1.5k + 16·len/4096 values of the row reach, and
 *              at least k of them with overwhelming probability for any row whose values are
 *              not arranged against the sample's stride (runs of correlated neighbours make
 *              the estimate noisier; a miss costs time, not correctness: see below);
 *   2. gather  (slices x rows CTAs of 8 warps, gather_warps_kernel): each warp reads its
 *              eighth of the CTA's slice once, 512 values an iteration (four 16-byte loads a
 *              lane in flight), and writes, in index order, the (index, fp32 order key) of
 *              every value whose key is >= t into its own staging segment (a warp scan gives
 *              the positions; no CTA barrier; a lane's stores loop over its candidates only,
 *              warp_take_mask);
 *   3. final   (one CTA per row): loads the candidates of all segments into shared memory in
 *              segment order (= index order), selects the k largest by a radix select on their
 *              keys in 11-bit digits from their highest varying bit, and writes those above
 *              the k-th key in index order, then its ties in index order.
 * DSA_CUDA_TOPK_LAST=N: up to N rows the last gather CTA of each row does the final's work (two
 * launches). DSA_CUDA_TOPK_R4 puts back round 4's gather (one block scan an iteration, a
 * segment per slice) or final (digits from bit 31); DSA_CUDA_TOPK_COUNT=1 the count-select
 * sample (r4_parts below says what each measured).
 * DSA_CUDA_TOPK_CLUSTER=N selects, up to N rows, one launch of an 8-CTA thread-block cluster
 * per row instead (cluster_kernel below: the row in the cluster's shared memory, an exact
 * radix select over distributed shared memory); off by default, slower as measured.
 * The gather and the final are launched as programmatic dependents (common.cuh, d_pdl_config):
 * their CTAs are scheduled while the kernel before still runs and wait (d_pdl_wait) just before
 * their first read of its output, so the launch latency of two of the three kernels overlaps
 * the previous one; DSA_CUDA_PDL=0 makes them ordinary launches.
 * Every value >= t is a candidate, so when at least k are, the k largest of the row are among
 * them: the output is the golden set (value desc, index asc), at fixed positions, and reruns
 * are bitwise identical. A row with fewer than k candidates, or more than fit in shared memory
 * (near-constant rows, rows with few distinct values), falls back to a full-row radix select
 * inside `final` (4 passes of 8 bits over the row, the earlier kernel): slower, same result.
 *
 * Scratch: the thresholds and the staging rows live in a device buffer of this file, grown on
 * demand; the kernels API runs on one stream from one thread.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdlib.h>

#include <cooperative_groups.h>
#include <cub/block/block_scan.cuh>

#include "common.cuh"
#include "dsa_cuda.h"

#define BINS        2048          /* radix digits of the in-shared-memory selects */
#define SAMPLE      4096          /* sampled values per row */
#define SAMPLE_T    512           /* threads of sample (round 4) */
#define COUNT_T     1024          /* threads of sample_count */
#define PASS_T      256           /* threads of gather */
#define FINAL_T     1024          /* threads of final */
#define CAND_CAP    12288         /* candidates final keeps in shared memory (96 KB) */
#define MAX_SLICES  1024          /* slices a row, gather_kernel (one segment each) */
#define MAX_SEGS    1024          /* staging segments a row: <= FINAL_T */
#define SEG_W       (PASS_T / 32) /* warps (segments) a CTA of gather_warps_kernel */
#define SLICE_ALIGN 2048
#define CTAS_PER_SM 4 /* gather: 4 CTAs of 256 threads (64 registers) fit an SM */
#define SAMPLE_RUN  4 /* sampled values in a run of adjacent ones (one 16-byte load) */

/* DSA_CUDA_TOPK_R11's bits (r11_set on the host): 1 = the final finds each candidate's
   segment by its own binary search (round 10), 2 = the sample takes single values evenly
   spaced instead of runs of SAMPLE_RUN, 4 = the gather takes every chunk by warp_take */
__constant__ int d_tk_r11;
/* DSA_CUDA_TOPK_R12=1 (r11_set): every select pass a histogram, as in round 11 (no rank_bin) */
__constant__ int d_tk_r12;
#define LIST_CAP 64 /* keys of a bin that select_bits resolves by ranking instead of a pass */

/* ---- loads ---- */

/* the values of elements i..i+3 of a row starting at base; n = how many are inside [.., end) */
__device__ __forceinline__ int load4(const void *l, int lbf16, size_t base, long i, long end,
                                     float v[4])
{
    int n = end - i >= 4 ? 4 : (int)(end - i);
    if (!lbf16) {
        const float *row = (const float *)l + base;
        if (n == 4 && (((uintptr_t)(row + i)) & 15) == 0) {
            float4 q = __ldg((const float4 *)(row + i));
            v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
            return 4;
        }
        for (int j = 0; j < 4; j++)
            v[j] = j < n ? row[i + j] : 0.0f;
        return n;
    }
    const uint16_t *row = (const uint16_t *)l + base;
    for (int j = 0; j < 4; j++)
        v[j] = j < n ? d_bf16_to_f32(row[i + j]) : 0.0f;
    return n;
}

/* ---- selection in shared memory ---- */

/* h[d] += 1 for every lane of the warp with valid set, one shared atomic per distinct digit
   (__match_any_sync on the digit); all 32 lanes call it. Used by cluster_kernel only: in
   select_in_smem it made the final kernel 11.9 -> 18.3 us on the H200 (bench/RESULTS.md,
   round 4), the match costing more than the same-address atomics it saves. */
__device__ __forceinline__ void hist_add(int *h, uint32_t d, bool valid)
{
    const unsigned peers = __match_any_sync(0xffffffffu, valid ? d : 0xffffffffu);
    if (valid && (int)(threadIdx.x & 31) == __ffs(peers) - 1)
        atomicAdd(&h[d], __popc(peers));
}

/* rank_bin's list counter; select_bits' finder zeroes it before the barrier that ends a pass */
__shared__ int s_at[1];

/* The rest of select_bits once the need-th largest key lies in a bin of at most LIST_CAP keys
   (those under `mask` equal to `prefix`): the bin's keys into a list (h, free after the pass),
   then each list entry's thread counts the entries above its own key and its equals before it,
   on the keys with the bits under floor_bit cleared, and the first entry of the key that holds
   rank `need` writes *s_key and *s_need, as further passes would have. Two barriers instead of
   the 4 of a histogram pass (clearing, counting, the scan, the digit); the list's order (by
   atomics) does not change the answer. The final's second pass nearly always ends here (its
   ~1.5k-4k candidates spread over 2048 bins); measured on the H200 (round 12, against
   DSA_CUDA_TOPK_R12=1 in the same call): S4 1 x 128K -0.4..-0.6 us, 8 x 256K 0..-0.4, 64 x 256K
   -0.1..-0.4. Ends with a barrier. */
__device__ __forceinline__ void rank_bin(const uint32_t *keys, int n, int need, uint32_t prefix,
                                         uint32_t mask, int floor_bit, int *h, uint32_t *s_key,
                                         int *s_need)
{
    const int tid = threadIdx.x, nt = blockDim.x;
    for (int i = tid; i < n; i += nt)
        if ((keys[i] & mask) == prefix)
            h[atomicAdd(s_at, 1)] = (int)keys[i];
    __syncthreads();
    const int c = *s_at;
    const uint32_t low = floor_bit > 0 ? ~0u << floor_bit : ~0u;
    if (tid < c) {
        const uint32_t my = (uint32_t)h[tid] & low;
        int gt = 0, eq = 0, before = 0;
        for (int j = 0; j < c; j++) {
            const uint32_t kj = (uint32_t)h[j] & low;
            gt += kj > my;
            eq += kj == my;
            before += kj == my && j < tid;
        }
        if (!before && gt < need && need <= gt + eq) {
            *s_key = my;
            *s_need = need - gt;
        }
    }
    __syncthreads();
}

/* One radix pass per digit, from bit hb down to bit floor_bit, over the keys in keys[0..n)
   (shared memory) whose bits under `mask` equal `prefix`: afterwards *s_key is the need-th
   largest of those keys with the bits under floor_bit cleared and *s_need how many of its ties
   are taken. Digits of 11 bits from the top (the last one narrower), one histogram h of up to
   BINS bins, by T threads. Ends with a barrier. */
template <int T>
__device__ void select_bits(const uint32_t *keys, int n, int need, uint32_t prefix, uint32_t mask,
                            int hb, int floor_bit, int *h,
                            typename cub::BlockScan<int, T>::TempStorage &tmp, uint32_t *s_key,
                            int *s_need)
{
    constexpr int per = BINS / T;
    const int tid = threadIdx.x;
    __shared__ int s_cnt[1]; /* the keys of the bin the finder chose */
    if (tid == 0) {          /* the answer when no pass runs (every key equal above floor_bit) */
        *s_key = prefix;
        *s_need = need;
        *s_cnt = LIST_CAP + 1;
    }
#pragma unroll 1
    for (int hi = hb; hi >= floor_bit; hi -= 11) {
        const int sh = hi - 10 > 0 ? hi - 10 : 0, nb = 1 << (hi - sh + 1);
        for (int b = tid; b < nb; b += T)
            h[b] = 0;
        __syncthreads();
        for (int i = tid; i < n; i += T)
            if ((keys[i] & mask) == prefix)
                atomicAdd(&h[(keys[i] >> sh) & (nb - 1)], 1);
        __syncthreads();
        /* digits from the top, `per` a thread */
        int c = 0, incl, top = nb - 1 - per * tid;
        for (int j = 0; j < per; j++)
            c += top - j >= 0 ? h[top - j] : 0;
        cub::BlockScan<int, T>(tmp).InclusiveSum(c, incl);
        int acc = incl - c;
        if (acc < need && incl >= need)
            for (int j = 0; j < per && top - j >= 0; j++) {
                int cnt = h[top - j];
                if (acc + cnt >= need) {
                    *s_key = prefix | ((uint32_t)(top - j) << sh);
                    *s_need = need - acc;
                    *s_cnt = cnt;
                    s_at[0] = 0;
                    break;
                }
                acc += cnt;
            }
        __syncthreads();
        prefix = *s_key;
        need = *s_need;
        mask |= (uint32_t)(nb - 1) << sh;
        if (hi - 11 >= floor_bit && *s_cnt <= LIST_CAP && !(d_tk_r12 & 1)) {
            rank_bin(keys, n, need, prefix, mask, floor_bit, h, s_key, s_need);
            return; /* rank_bin ends with a barrier */
        }
    }
    __syncthreads();
}

/* The need-th largest key among keys[0..n) and how many of its ties are taken (*s_need): a
   radix select in 3 passes (11, 11, 10 bits) from bit 31. With PASSES = 2 it stops after 22
   bits: *s_key is then the need-th largest key with its 10 low bits cleared (a lower bound of
   it, exact to 2^-13 relative), enough for a threshold. Ends with a barrier. The round-4 select
   (DSA_CUDA_TOPK_R4): its first digit is sign, exponent and 2 mantissa bits, so rows of
   similar values put most keys in a few bins, whose same-address atomics serialise. */
template <int T, int PASSES = 3>
__device__ void select_in_smem(const uint32_t *keys, int n, int need, int *h,
                               typename cub::BlockScan<int, T>::TempStorage &tmp, uint32_t *s_key,
                               int *s_need)
{
    select_bits<T>(keys, n, need, 0, 0, 31, PASSES == 3 ? 0 : 10, h, tmp, s_key, s_need);
}

/* The same result as select_in_smem<T> for keys that agree in their high bits, in fewer and
   better spread passes: a block AND and OR of the keys give the bits that vary, and the digits
   start at the highest of them. The final's candidates are all >= the row threshold, so they
   share its high bits: for rows of similar values the first fixed digit put them all in one bin
   (one address for every atomic); here the first digit spreads them, and 2 passes cover the
   18-20 varying bits of the benchmark's rows. s_ao: [2][T / 32] scratch. Ends with a barrier. */
template <int T>
__device__ void select_adaptive(const uint32_t *keys, int n, int need, int *h,
                                typename cub::BlockScan<int, T>::TempStorage &tmp, uint32_t *s_key,
                                int *s_need, uint32_t (*s_ao)[T / 32])
{
    const int tid = threadIdx.x, lane = tid & 31;
    uint32_t a = ~0u, o = 0;
    for (int i = tid; i < n; i += T) {
        a &= keys[i];
        o |= keys[i];
    }
    a = __reduce_and_sync(0xffffffffu, a);
    o = __reduce_or_sync(0xffffffffu, o);
    if (lane == 0) {
        s_ao[0][tid >> 5] = a;
        s_ao[1][tid >> 5] = o;
    }
    __syncthreads();
    a = __reduce_and_sync(0xffffffffu, lane < T / 32 ? s_ao[0][lane] : ~0u);
    o = __reduce_or_sync(0xffffffffu, lane < T / 32 ? s_ao[1][lane] : 0u);
    const uint32_t diff = a ^ o; /* 0: every key is a */
    const int hb = diff ? 31 - __clz(diff) : -1;
    const uint32_t mask = hb >= 31 ? 0u : ~0u << (hb + 1);
    select_bits<T>(keys, n, need, a & mask, mask, hb, 0, h, tmp, s_key, s_need);
}

/* The largest P with its 10 low bits clear such that at least m of the keys are >= P, i.e. the
   m-th largest key with its 10 low bits cleared: select_in_smem<T, 2>'s threshold, computed
   without a histogram. Keys stay in registers (K a thread; entries past the row are 0, never
   counted: every probe is >= 1); P is built 2 bits a step from the top, each step counting
   the keys >= each of the 3 probes (count(>= P) does not increase with P, so the largest probe
   still reached by m keys is kept). One warp reduction and one barrier a step, no atomics, so
   the cost does not depend on how the values cluster. All T threads call it. */
template <int T, int K>
__device__ uint32_t count_select(const uint32_t (&key)[K], int m, uint32_t (*s_cnt)[T / 32])
{
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    uint32_t p = 0;
#pragma unroll 1
    for (int s = 0; s < 11; s++) {
        const int lo = 30 - 2 * s;
        /* three counts in 10-bit fields: at most 32 * K <= 1023 a warp */
        uint32_t x = 0;
#pragma unroll
        for (int i = 0; i < K; i++)
            x += (uint32_t)(key[i] >= p + (1u << lo)) +
                 ((uint32_t)(key[i] >= p + (2u << lo)) << 10) +
                 ((uint32_t)(key[i] >= p + (3u << lo)) << 20);
        x = __reduce_add_sync(0xffffffffu, x);
        if (lane == 0)
            s_cnt[s & 1][w] = x; /* buffer s & 1 was last read two steps ago, before a barrier */
        __syncthreads();
        const uint32_t y = lane < T / 32 ? s_cnt[s & 1][lane] : 0;
        const int c1 = (int)__reduce_add_sync(0xffffffffu, y & 1023u),
                  c2 = (int)__reduce_add_sync(0xffffffffu, (y >> 10) & 1023u),
                  c3 = (int)__reduce_add_sync(0xffffffffu, y >> 20);
        p += c3 >= m ? 3u << lo : c2 >= m ? 2u << lo : c1 >= m ? 1u << lo : 0u;
    }
    return p;
}

/* ---- 1: the sampled threshold ---- */

/* shared memory of one threshold computation by T threads */
template <int T> struct sample_smem {
    uint32_t keys[SAMPLE];
    int h[BINS];
    typename cub::BlockScan<int, T>::TempStorage tmp;
    uint32_t s_key;
    int s_need;
};

/* the sample size of a row of len values and the rank m of the threshold within it */
__device__ __forceinline__ int sample_rank(long len, int k, int *n_out)
{
    const int n = len < SAMPLE ? (int)len : SAMPLE;
    long m = n == len ? k : (3L * k * n + 2 * len - 1) / (2 * len) + 16;
    *n_out = n;
    return (int)(m > n ? n : m);
}

/* the value of sampled element i < n of the row at base: evenly spaced positions */
__device__ __forceinline__ float sample_at(const void *logits, int lbf16, size_t base, long len,
                                           int n, int i)
{
    const size_t at = base + (size_t)((long long)i * len / n);
    return lbf16 ? d_bf16_to_f32(((const uint16_t *)logits)[at]) : ((const float *)logits)[at];
}

/* the start of sampled run c of SAMPLE / SAMPLE_RUN in a row of len >= 2 * SAMPLE values at
   base: evenly spaced, moved up by at most 3 so that an fp32 run is one 16-byte aligned load.
   The even starts are >= 8 apart, so the runs never overlap, and the last ends inside the row. */
__device__ __forceinline__ long sample_run_at(size_t base, long len, int c)
{
    const long i = (long)((long long)c * len / (SAMPLE / SAMPLE_RUN));
    return i + (long)((4u - ((base + (size_t)i) & 3u)) & 3u);
}

/* the threshold key of the row at base (len > k values), computed by the T threads of a CTA
   (all of them call it); the same value in every CTA that computes it. The sample is SAMPLE /
   SAMPLE_RUN runs of SAMPLE_RUN adjacent values in rows of 2 * SAMPLE or more, else single
   values evenly spaced (the whole row when it is shorter than SAMPLE): one CTA's loads of 4096
   single values were 4096 sectors, which took 3 us at one row (round 11's marks); the runs are a
   quarter of the sectors. */
template <int T>
__device__ uint32_t row_threshold(const void *logits, int lbf16, size_t base, long len, int k,
                                  sample_smem<T> &sm)
{
    int n;
    const int m = sample_rank(len, k, &n);
    /* SAMPLE / T loads per thread, all in flight before the first store */
    float v[SAMPLE / T];
    if (len < 2 * SAMPLE || (d_tk_r11 & 2)) {
#pragma unroll
        for (int u = 0; u < SAMPLE / T; u++) {
            const int i = (int)threadIdx.x + u * T;
            v[u] = i < n ? sample_at(logits, lbf16, base, len, n, i) : 0.0f;
        }
    } else {
#pragma unroll
        for (int u = 0; u < SAMPLE / T / SAMPLE_RUN; u++) {
            const int c = (int)threadIdx.x + u * T;
            load4(logits, lbf16, base, sample_run_at(base, len, c), len, &v[SAMPLE_RUN * u]);
        }
    }
    /* value u of this thread is sample entry threadIdx.x + u * T (single values) or entry
       SAMPLE_RUN * (threadIdx.x + (u / SAMPLE_RUN) * T) + u % SAMPLE_RUN (runs): the order of
       the keys does not matter to the select */
#pragma unroll
    for (int u = 0; u < SAMPLE / T; u++)
        if ((int)threadIdx.x + u * T < n)
            sm.keys[threadIdx.x + u * T] = d_order_key(v[u]);
    __syncthreads();
    /* the threshold need not be the m-th key itself: a lower bound of it only admits the
       few more values of its 22-bit bin (still >= m candidates), and saves the third pass */
    select_in_smem<T, 2>(sm.keys, n, m, sm.h, sm.tmp, &sm.s_key, &sm.s_need);
    return sm.s_key; /* select_in_smem ends with a barrier */
}

/* round 4's threshold kernel (DSA_CUDA_TOPK_R4 bit 0): the sample in shared memory, a
   2-pass radix select */
__global__ static void __launch_bounds__(SAMPLE_T)
    sample_kernel(const void *logits, int lbf16, long stride, const int32_t *start,
                  const int32_t *end, int k, uint32_t *thr)
{
    __shared__ sample_smem<SAMPLE_T> sm;
    const int r = blockIdx.x;
    d_pdl_launch_next();
    const long st = start[r], len = end[r] - st;
    if (len <= k)
        return;
    const uint32_t t = row_threshold<SAMPLE_T>(logits, lbf16, (size_t)r * stride + st, len, k, sm);
    if (threadIdx.x == 0)
        thr[r] = t;
}

/* the same threshold (count_select returns select_in_smem<T, 2>'s value) with the sample in
   registers, 4 keys a thread, and no histogram: the default */
__global__ static void __launch_bounds__(COUNT_T)
    sample_count_kernel(const void *logits, int lbf16, long stride, const int32_t *start,
                        const int32_t *end, int k, uint32_t *thr)
{
    __shared__ uint32_t s_cnt[2][COUNT_T / 32];
    constexpr int K = SAMPLE / COUNT_T;
    const int r = blockIdx.x;
    d_pdl_launch_next();
    const long st = start[r], len = end[r] - st;
    if (len <= k)
        return;
    const size_t base = (size_t)r * stride + st;
    int n;
    const int m = sample_rank(len, k, &n);
    float v[K];
#pragma unroll
    for (int u = 0; u < K; u++) {
        const int i = (int)threadIdx.x + u * COUNT_T;
        v[u] = i < n ? sample_at(logits, lbf16, base, len, n, i) : 0.0f;
    }
    uint32_t key[K];
#pragma unroll
    for (int u = 0; u < K; u++)
        key[u] = (int)threadIdx.x + u * COUNT_T < n ? d_order_key(v[u]) : 0u;
    const uint32_t t = count_select<COUNT_T, K>(key, m, s_cnt);
    if (threadIdx.x == 0)
        thr[r] = t;
}

/* ---- 2: the candidates ---- */

/* the candidates of each row in segments, the segments of a row in index order: one per slice
   (gather_kernel) or one per warp of a slice (gather_warps_kernel) */
struct staging {
    int segs;      /* segments per row (<= MAX_SEGS) */
    long cap;      /* candidates per segment */
    uint32_t *thr; /* [rows] */
    int *cnt;      /* [rows, segs] candidates found (may exceed cap) */
    int32_t *idx;  /* [rows, segs, cap] */
    uint32_t *key; /* [rows, segs, cap] fp32 order keys */
    int *done; /* [rows] CTAs of the row finished (gather_warps_kernel<true>); 0 between calls */
};

/* FUSED: each CTA computes its row's threshold itself (the sample kernel's work, repeated
   per slice) instead of reading sample_kernel's: one launch less, for few rows */
template <bool FUSED>
__global__ static void __launch_bounds__(PASS_T)
    gather_kernel(const void *logits, int lbf16, long stride, const int32_t *start,
                  const int32_t *end, int k, long slice, staging sg)
{
    typedef cub::BlockScan<long long, PASS_T> scan_t;
    __shared__ typename scan_t::TempStorage tmp;
    __shared__ sample_smem<FUSED ? PASS_T : 32> sm;
    const int r = blockIdx.y, s = blockIdx.x, tid = threadIdx.x;
    d_pdl_launch_next();
    const long st = start[r], len = end[r] - st, lo = s * slice;
    const size_t slot = (size_t)r * sg.segs + s;
    /* every CTA passes d_pdl_wait before it ends, the early ones too: then this grid ends only
       after the sample has, and what follows the final in the stream sees all three done */
    if (len <= k) {
        d_pdl_wait();
        return;
    }
    if (lo >= len) {
        d_pdl_wait();
        if (tid == 0)
            sg.cnt[slot] = 0;
        return;
    }
    const long hi = lo + slice < len ? lo + slice : len, sub = 4L * PASS_T;
    const size_t base = (size_t)r * stride + st;
    uint32_t t;
    if constexpr (FUSED)
        t = row_threshold<PASS_T>(logits, lbf16, base, len, k, sm);
    else {
        d_pdl_wait(); /* sample_kernel's thresholds */
        t = sg.thr[r];
    }
    int32_t *oi = sg.idx + slot * sg.cap;
    uint32_t *ok = sg.key + slot * sg.cap;
    int off = 0;
    /* per iteration 4 sub-tiles of 4 values a thread (16-byte loads, all four in flight); one
       scan of the four counts packed in 16-bit fields gives index-order positions */
    for (long i0 = lo; i0 < hi; i0 += 4 * sub) {
        float v[4][4];
        int n[4];
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const long i = i0 + u * sub + 4L * tid;
            n[u] = i < hi ? load4(logits, lbf16, base, i, hi, v[u]) : 0;
        }
        long long c = 0;
#pragma unroll
        for (int u = 0; u < 4; u++) {
            int cu = 0;
#pragma unroll
            for (int j = 0; j < 4; j++)
                cu += j < n[u] && d_order_key(v[u][j]) >= t;
            c |= (long long)cu << (16 * u);
        }
        long long pre, tot;
        scan_t(tmp).ExclusiveSum(c, pre, tot);
        __syncthreads();
        int p = off;
#pragma unroll
        for (int u = 0; u < 4; u++) {
            int q = p + (int)((pre >> (16 * u)) & 0xffff);
            const long i = i0 + u * sub + 4L * tid;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                uint32_t kk = d_order_key(v[u][j]);
                if (j < n[u] && kk >= t) {
                    if (q < sg.cap) {
                        oi[q] = (int32_t)(i + j);
                        ok[q] = kk;
                    }
                    q++;
                }
            }
            p += (int)((tot >> (16 * u)) & 0xffff);
        }
        off = p;
    }
    if (tid == 0)
        sg.cnt[slot] = off;
}

/* ---- 3: the selection ---- */

template <int T> union fin_tmp {
    typename cub::BlockScan<int, T>::TempStorage i;
    typename cub::BlockScan<long long, T>::TempStorage ll;
};

/* the earlier full-row select: 4 passes of 8 bits over the row, then a compaction in index
   order; for rows whose candidates do not fit in shared memory, or too few were taken */
template <int T>
__device__ __noinline__ void full_row_select(const void *logits, int lbf16, size_t base, long len,
                                             int k, int32_t *out, int *h, fin_tmp<T> &t,
                                             uint32_t *s_key, int *s_need)
{
    const int tid = threadIdx.x;
    uint32_t prefix = 0, mask = 0;
    int need = k;
    for (int sh = 24; sh >= 0; sh -= 8) {
        for (int b = tid; b < 256; b += T)
            h[b] = 0;
        __syncthreads();
        for (long i = 4L * tid; i < len; i += 4L * T) {
            float v[4];
            int n = load4(logits, lbf16, base, i, len, v);
            for (int j = 0; j < n; j++) {
                uint32_t key = d_order_key(v[j]);
                if ((key & mask) == prefix)
                    atomicAdd(&h[(key >> sh) & 255], 1);
            }
        }
        __syncthreads();
        int c = tid < 256 ? h[255 - tid] : 0, incl;
        cub::BlockScan<int, T>(t.i).InclusiveSum(c, incl);
        if (tid < 256 && incl >= need && incl - c < need) {
            *s_key = prefix | ((uint32_t)(255 - tid) << sh);
            *s_need = need - (incl - c);
        }
        __syncthreads();
        prefix = *s_key;
        need = *s_need;
        mask |= 255u << sh;
        __syncthreads();
    }
    int off_gt = 0, off_eq = 0;
    for (long i0 = 0; i0 < len; i0 += 4L * T) {
        const long i = i0 + 4L * tid;
        float v[4];
        int n = i < len ? load4(logits, lbf16, base, i, len, v) : 0, ngt = 0, neq = 0;
        uint32_t key[4];
        for (int j = 0; j < n; j++) {
            key[j] = d_order_key(v[j]);
            ngt += key[j] > prefix;
            neq += key[j] == prefix;
        }
        long long pre, tot;
        cub::BlockScan<long long, T>(t.ll).ExclusiveSum(((long long)ngt << 32) | neq, pre, tot);
        __syncthreads();
        int pg = off_gt + (int)(pre >> 32), pe = off_eq + (int)(pre & 0xffffffff);
        for (int j = 0; j < n; j++) {
            if (key[j] > prefix) {
                out[pg++] = (int32_t)(i + j);
            } else if (key[j] == prefix) {
                if (pe < need)
                    out[(k - need) + pe] = (int32_t)(i + j);
                pe++;
            }
        }
        off_gt += (int)(tot >> 32);
        off_eq += (int)(tot & 0xffffffff);
    }
}

/* writes the candidates taken: the n_gt keys above `thr` in index order, then `take` ties at
   thr in index order. Thread tid takes the run [tid*per, (tid+1)*per) of the candidates, so one
   block scan of its two counts (16 bits each: n <= CAND_CAP < 2^16) places them all. */
template <int T>
__device__ void take_candidates(const uint32_t *ck, const int32_t *ci, int n, uint32_t thr,
                                int n_gt, int take, int32_t *out, fin_tmp<T> &t)
{
    const int per = (n + T - 1) / T, lo = (int)threadIdx.x * per;
    const int hi = lo + per < n ? lo + per : n;
    int c = 0, pre, tot;
    for (int i = lo; i < hi; i++)
        c += ck[i] > thr ? 1 << 16 : (ck[i] == thr);
    cub::BlockScan<int, T>(t.i).ExclusiveSum(c, pre, tot);
    int pg = pre >> 16, pe = pre & 0xffff;
    for (int i = lo; i < hi; i++) {
        if (ck[i] > thr)
            out[pg++] = ci[i];
        else if (ck[i] == thr && pe++ < take)
            out[n_gt + pe - 1] = ci[i];
    }
}

/* the segment holding element j of the concatenation: the last s in [lo, hi) with off[s] <= j,
   given off[lo] <= j < off[hi] (off[segs] = the total) */
__device__ __forceinline__ int seg_in(const int *off, int lo, int hi, int j)
{
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (off[mid] <= j)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* seg[j] = the segment of candidate j < n. Each thread takes a run of adjacent candidates:
   one binary search for its first, then the next segment or, past empty ones, a search from
   there. A search per candidate (round 10, DSA_CUDA_TOPK_R11 bit 0) was 4 searches of 9
   dependent shared-memory steps a thread at one row, and the copy took 4.1 us of the final's
   10.5 (round 11's marks). Ends with a barrier. */
template <int T> __device__ void seg_ids(const int *off, int segs, int n, int32_t *seg)
{
    const int per = (n + T - 1) / T, lo = (int)threadIdx.x * per;
    const int hi = lo + per < n ? lo + per : n;
    int s = lo < hi ? seg_in(off, 0, segs, lo) : 0;
    for (int j = lo; j < hi; j++) {
        if (off[s + 1] <= j) /* off[s + 1] <= j < total: s + 1 < segs */
            s = off[s + 2] > j ? s + 1 : seg_in(off, s + 1, segs, j);
        seg[j] = s;
    }
    __syncthreads();
}

/* the candidates (key, index) into shared memory, in segment order (= index order); through
   the L2 (__ldcg), as other CTAs of this grid may have written them (gather_warps_kernel<true>).
   Candidate j's segment is read from ci[j] (seg_ids) and ci[j] then overwritten by its index,
   both by the thread that copies j; or, with DSA_CUDA_TOPK_R11 bit 0, searched for here.
   Round 12 tried it without a search (each nonempty segment marking its first position, a
   block max-scan over per-thread runs): 3 % fewer instructions, two more barriers, and S4 1.1-
   2.6 us slower on the H200; not kept. */
template <int T>
__device__ void copy_candidates(const staging &sg, size_t slot0, const int *off, int n,
                                uint32_t *ck, int32_t *ci)
{
    const bool search = d_tk_r11 & 1;
    if (!search)
        seg_ids<T>(off, sg.segs, n, ci);
    for (int j0 = 0; j0 < n; j0 += 4 * T) {
        uint32_t kk[4];
        int32_t ii[4];
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const int j = j0 + u * T + (int)threadIdx.x;
            const int s = j >= n ? 0 : search ? seg_in(off, 0, sg.segs, j) : ci[j];
            size_t at = (slot0 + s) * sg.cap + (j - off[s]);
            kk[u] = j < n ? __ldcg(sg.key + at) : 0;
            ii[u] = j < n ? __ldcg(sg.idx + at) : 0;
        }
#pragma unroll
        for (int u = 0; u < 4; u++) {
            int j = j0 + u * T + (int)threadIdx.x;
            if (j < n) {
                ck[j] = kk[u];
                ci[j] = ii[u];
            }
        }
    }
}

/* The final's work for row r once its candidates are staged, by the T threads of a CTA (all
   of them call it): the offsets of the segments, the candidates into shared memory (dynamic:
   keys [CAND_CAP], then indices [CAND_CAP]), the select, the output. ADAPT: the candidates'
   select starts at their highest varying bit (select_adaptive, the default); else the fixed
   11 + 11 + 10-bit digits of round 4 (DSA_CUDA_TOPK_R4 bit 2). */
template <int T, bool ADAPT>
__device__ void final_row(const void *logits, int lbf16, size_t base, long len, int k,
                          const staging &sg, int r, int32_t *out)
{
    constexpr int P = MAX_SEGS / T; /* segments a thread, blocked */
    extern __shared__ uint32_t cand[];
    __shared__ fin_tmp<T> t;
    __shared__ int h[BINS], s_off[MAX_SEGS + 1];
    __shared__ uint32_t s_ao[2][T / 32];
    __shared__ int s_need;
    __shared__ uint32_t s_key;
    const int tid = threadIdx.x;
    /* offsets of each segment's candidates, in segment order */
    const size_t slot0 = (size_t)r * sg.segs;
    long long c[P], pre[P], tot;
    int over = 0;
#pragma unroll
    for (int q = 0; q < P; q++) {
        const int s = tid * P + q;
        c[q] = s < sg.segs ? __ldcg(sg.cnt + slot0 + s) : 0;
        over |= c[q] > sg.cap;
    }
    /* one load a thread, all in one L2 round trip: warp 0 alone (a lane's run of the counts,
       then a shuffle scan) took 2-3 dependent round trips and measured 0.6-1.1 us slower at 1
       and 8 rows (round 12) */
    const int overflow = __syncthreads_or(over);
    cub::BlockScan<long long, T>(t.ll).ExclusiveSum(c, pre, tot);
#pragma unroll
    for (int q = 0; q < P; q++)
        if (tid * P + q < sg.segs)
            s_off[tid * P + q] = (int)(pre[q] < CAND_CAP ? pre[q] : CAND_CAP);
    if (tid == 0)
        s_off[sg.segs] = (int)(tot < CAND_CAP ? tot : CAND_CAP);
    __syncthreads();
    if (overflow || tot > CAND_CAP || tot < k) {
        full_row_select<T>(logits, lbf16, base, len, k, out, h, t, &s_key, &s_need);
        return;
    }
    const int E = (int)tot;
    uint32_t *ck = cand;
    int32_t *ci = (int32_t *)(cand + CAND_CAP);
    copy_candidates<T>(sg, slot0, s_off, E, ck, ci);
    __syncthreads();
    if constexpr (ADAPT)
        select_adaptive<T>(ck, E, k, h, t.i, &s_key, &s_need, s_ao);
    else
        select_in_smem<T>(ck, E, k, h, t.i, &s_key, &s_need);
    take_candidates<T>(ck, ci, E, s_key, k - s_need, s_need, out, t);
}

template <bool ADAPT>
__global__ static void __launch_bounds__(FINAL_T)
    final_kernel(const void *logits, int lbf16, long stride, const int32_t *start,
                 const int32_t *end, int k, staging sg, int32_t *idx)
{
    const int r = blockIdx.x;
    const long st = start[r], len = end[r] - st;
    int32_t *out = idx + (size_t)r * k;
    d_pdl_wait(); /* the gather's counts and staging rows; and so that this grid ends after it */
    if (len <= k) {
        for (long i = threadIdx.x; i < k; i += FINAL_T)
            out[i] = i < len ? (int32_t)i : -1;
        return;
    }
    final_row<FINAL_T, ADAPT>(logits, lbf16, (size_t)r * stride + st, len, k, sg, r, out);
}

/* the inclusive sum of c over the warp's lanes up to this one (shuffles); all 32 lanes call it */
__device__ __forceinline__ uint32_t warp_incl_sum(uint32_t c)
{
    const int lane = threadIdx.x & 31;
    uint32_t incl = c;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const uint32_t y = __shfl_up_sync(0xffffffffu, incl, d);
        if (lane >= d)
            incl += y;
    }
    return incl;
}

/* a warp's chunk of 512 values from i0 (v[u][j] = element i0 + 128 u + 4 lane + j, 0 past
   hi): four 16-byte loads a lane, issued together */
__device__ __forceinline__ void warp_load(const void *logits, int lbf16, size_t base, long i0,
                                          long hi, float (&v)[4][4])
{
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int u = 0; u < 4; u++) {
        const long i = i0 + u * 128 + 4L * lane;
        if (i < hi)
            load4(logits, lbf16, base, i, hi, v[u]);
        else
            v[u][0] = v[u][1] = v[u][2] = v[u][3] = 0.0f;
    }
}

/* the candidates (key >= t) of the chunk at i0 into the warp's segment (oi, ok: cap slots)
   from position off, in index order; returns the position after them (may pass cap: the
   final then takes the full-row path). Positions from one warp scan of the 4 sub-tiles'
   counts (<= 4 a lane) packed in 8-bit fields (<= 128 a warp). */
__device__ __forceinline__ int warp_take(const float (&v)[4][4], long i0, long hi, uint32_t t,
                                         int off, int32_t *oi, uint32_t *ok, int cap)
{
    const int lane = threadIdx.x & 31;
    uint32_t c = 0;
#pragma unroll
    for (int u = 0; u < 4; u++) {
        const long i = i0 + u * 128 + 4L * lane;
        const int n = i < hi ? (hi - i >= 4 ? 4 : (int)(hi - i)) : 0;
        uint32_t cu = 0;
#pragma unroll
        for (int j = 0; j < 4; j++)
            cu += j < n && d_order_key(v[u][j]) >= t;
        c |= cu << (8 * u);
    }
    const uint32_t incl = warp_incl_sum(c);
    const uint32_t pre = incl - c, tot = __shfl_sync(0xffffffffu, incl, 31);
    int p = off;
#pragma unroll
    for (int u = 0; u < 4; u++) {
        int q = p + (int)((pre >> (8 * u)) & 255);
        const long i = i0 + u * 128 + 4L * lane;
        const int n = i < hi ? (hi - i >= 4 ? 4 : (int)(hi - i)) : 0;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const uint32_t kk = d_order_key(v[u][j]);
            if (j < n && kk >= t) {
                if (q < cap) {
                    oi[q] = (int32_t)(i + j);
                    ok[q] = kk;
                }
                q++;
            }
        }
        p += (int)((tot >> (8 * u)) & 255);
    }
    return p;
}

/* signed_key(v) >= signed_thr(t) exactly when d_order_key(v) >= t, for every bit pattern of
   v (NaNs too), in 3 instructions instead of d_order_key's 6 and a compare: the order key with
   its top bit flipped, read as a signed int, except that -0 gets -1 (d_order_key gives it +0's
   key), so a threshold of +0's key becomes -1; no other value maps to -1 or 0 but -0 and +0 */
__device__ __forceinline__ int32_t signed_key(float v)
{
    const int32_t u = __float_as_int(v);
    return u ^ ((u >> 31) & 0x7fffffff);
}

__device__ __forceinline__ int32_t signed_thr(uint32_t t)
{
    const int32_t ts = (int32_t)(t ^ 0x80000000u);
    return ts == 0 ? -1 : ts;
}

/* a full chunk (warp_load's layout) of a 16-byte aligned fp32 row: the loads and nothing else */
__device__ __forceinline__ void warp_load_full(const float *row, long i0, float (&v)[4][4])
{
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int u = 0; u < 4; u++) {
        const float4 q = __ldg((const float4 *)(row + i0 + u * 128 + 4L * lane));
        v[u][0] = q.x, v[u][1] = q.y, v[u][2] = q.z, v[u][3] = q.w;
    }
}

/* warp_take for a full chunk of an fp32 row (i0 + 512 <= hi), in fewer instructions: each
   lane's candidates as a 16-bit mask (bit 4u + j: value (u, j)), the counts from its nibbles,
   and the stores in a loop over the set bits only, each value read again (an L1 hit: the
   chunk was just loaded) instead of selected from the registers. warp_take's stores, one
   predicated sequence for each of the 16 values of every lane whether or not it is a
   candidate (about 1 in 64 at 256K), made the 64-row gather issue-bound (round 11: ncu 69 %
   SM throughput, 38 % of DRAM's). Same positions, same bytes. */
__device__ __forceinline__ int warp_take_mask(const float (&v)[4][4], const float *row, long i0,
                                              uint32_t t, int off, int32_t *oi, uint32_t *ok,
                                              int cap)
{
    const int lane = threadIdx.x & 31;
    const int32_t ts = signed_thr(t);
    uint32_t m = 0;
#pragma unroll
    for (int u = 0; u < 4; u++)
#pragma unroll
        for (int j = 0; j < 4; j++)
            m |= (uint32_t)(signed_key(v[u][j]) >= ts) << (4 * u + j);
    uint32_t c = 0;
#pragma unroll
    for (int u = 0; u < 4; u++)
        c |= (uint32_t)__popc((m >> (4 * u)) & 15u) << (8 * u);
    const uint32_t incl = warp_incl_sum(c);
    const uint32_t pre = incl - c, tot = __shfl_sync(0xffffffffu, incl, 31);
    /* p[u] = the position of this lane's first candidate of sub-tile u */
    int p[4], at = off;
#pragma unroll
    for (int u = 0; u < 4; u++) {
        p[u] = at + (int)((pre >> (8 * u)) & 255);
        at += (int)((tot >> (8 * u)) & 255);
    }
    for (uint32_t rest = m; rest; rest &= rest - 1) {
        const int b = __ffs((int)rest) - 1, u = b >> 2;
        const int q = (u == 0   ? p[0]
                       : u == 1 ? p[1]
                       : u == 2 ? p[2]
                                : p[3]) +
                      __popc(m & ~(~0u << b) & (15u << (4 * u)));
        const long i = i0 + u * 128 + 4L * lane + (b & 3);
        if (q < cap) {
            oi[q] = (int32_t)i;
            ok[q] = d_order_key(__ldg(row + i));
        }
    }
    return at;
}

/* The default gather: each warp of a CTA owns a contiguous eighth of the CTA's slice and its
   own staging segment, so the positions come from a warp scan (shuffles) and no barrier of the
   CTA ever stalls the loads (gather_kernel's block scan, one an iteration, held each CTA's
   next loads until all its warps had written). A warp walks its part in chunks of 512 values
   (four 16-byte loads a lane, in flight together; the next chunk's are issued after this
   one's candidates are taken: issuing them before, with the registers of two chunks, measured
   slower in round 11). The first chunk's loads are issued before d_pdl_wait: the logits were
   complete before the sample kernel (an ordinary launch) started, which this kernel depends on, so
   only the threshold waits. LAST: the last CTA of a row to finish (a counter per row, sg.done,
   reset by that CTA) runs the final's work for the row (final_row, 256 threads, CAND_CAP * 8 bytes
   of dynamic shared memory), so no final launch waits for this grid to end; idx is only written
   then. */
template <bool LAST>
__global__ static void __launch_bounds__(PASS_T, LAST ? 2 : CTAS_PER_SM)
    gather_warps_kernel(const void *logits, int lbf16, long stride, const int32_t *start,
                        const int32_t *end, int k, long slice, staging sg, int32_t *idx)
{
    const int r = blockIdx.y, s = blockIdx.x, w = threadIdx.x >> 5;
    d_pdl_launch_next();
    const long st = start[r], len = end[r] - st, wlen = slice / SEG_W;
    const long lo = s * slice + w * wlen, hi = lo + wlen < len ? lo + wlen : len;
    const size_t seg = (size_t)r * sg.segs + (size_t)s * SEG_W + w;
    /* every warp passes d_pdl_wait before it ends (see gather_kernel) */
    if (len <= k) { /* the same for the whole CTA */
        d_pdl_wait();
        if (LAST && s == 0)
            for (long i = threadIdx.x; i < k; i += PASS_T)
                idx[(size_t)r * k + i] = i < len ? (int32_t)i : -1;
        return;
    }
    const size_t base = (size_t)r * stride + st;
    const float *row = (const float *)logits + base;
    int32_t *oi = sg.idx + seg * sg.cap;
    uint32_t *ok = sg.key + seg * sg.cap;
    /* full chunks of an fp32 row aligned to 16 bytes take the short path (warp_take_mask);
       round 10's (warp_take for every chunk) with DSA_CUDA_TOPK_R11 bit 2 */
    const bool fast = !lbf16 && !((uintptr_t)(row + lo) & 15) && !(d_tk_r11 & 4);
    float v[4][4];
    if (fast && lo + 512 <= hi)
        warp_load_full(row, lo, v);
    else if (lo < hi) /* past the row's end: no loop below, an empty segment */
        warp_load(logits, lbf16, base, lo, hi, v);
    d_pdl_wait(); /* the sample's thresholds */
    const uint32_t t = sg.thr[r];
    int off = 0;
    for (long i0 = lo; i0 < hi; i0 += 512) {
        off = fast && i0 + 512 <= hi ? warp_take_mask(v, row, i0, t, off, oi, ok, sg.cap)
                                     : warp_take(v, i0, hi, t, off, oi, ok, sg.cap);
        const long i1 = i0 + 512;
        if (fast && i1 + 512 <= hi)
            warp_load_full(row, i1, v);
        else if (i1 < hi)
            warp_load(logits, lbf16, base, i1, hi, v);
    }
    if ((threadIdx.x & 31) == 0)
        sg.cnt[seg] = off;
    if constexpr (LAST) {
        __shared__ int s_last;
        __threadfence(); /* this thread's candidates and count, before the CTA's arrival */
        __syncthreads();
        if (threadIdx.x == 0)
            s_last = atomicAdd(sg.done + r, 1) == (int)gridDim.x - 1;
        __syncthreads();
        if (!s_last)
            return;
        __threadfence(); /* every CTA of the row has arrived: their writes are visible */
        if (threadIdx.x == 0)
            sg.done[r] = 0; /* for the next call (the stream orders it) */
        final_row<PASS_T, true>(logits, lbf16, (size_t)r * stride + st, len, k, sg, r,
                                idx + (size_t)r * k);
    }
}

/* ---- few rows: one cluster of CTAs per row, the row in shared memory ---- */

/* The top-k of one row by a cluster of CL_N CTAs (thread-block cluster, distributed shared
   memory) in one launch: CTA c keeps the order keys of its slice [c·slice, (c+1)·slice) of the
   row in its shared memory (read once from global memory, 16-byte loads); the radix select of
   select_in_smem runs over the whole cluster: each pass every CTA builds its slice's histogram,
   the cluster syncs, and every CTA sums the CL_N histograms through DSMEM in the same order, so
   all find the same digit. The histograms are double-buffered, so one cluster barrier per pass
   suffices (a buffer is cleared two passes after it was last read, and every CTA has passed the
   barrier in between). The output is final_kernel's: the keys above the k-th key in index order,
   then its first ties in index order, each CTA's writes placed by the counts of the CTAs before
   it. Exact at any distribution (no sample, no fallback). */
#define CL_N   8     /* CTAs per row: the largest portable cluster */
#define CL_T   1024  /* threads per CTA */
#define CL_CAP 32768 /* keys per CTA (128 KB): rows up to CL_N * CL_CAP = 256K */

namespace cg = cooperative_groups;

/* cb[j] = the count of digit top - j (0 when negative) summed over the cluster's CTAs, in rank
   order: every CTA gets the same sums */
template <int per>
__device__ __forceinline__ void cluster_bins(cg::cluster_group &cl, int *hb, int top, int cb[per])
{
#pragma unroll
    for (int j = 0; j < per; j++)
        cb[j] = 0;
#pragma unroll
    for (int q = 0; q < CL_N; q++) {
        const int *rh = cl.map_shared_rank(hb, q);
#pragma unroll
        for (int j = 0; j < per; j++)
            cb[j] += top - j >= 0 ? rh[top - j] : 0;
    }
}

__global__ static void __cluster_dims__(CL_N, 1, 1) __launch_bounds__(CL_T)
    cluster_kernel(const void *logits, int lbf16, long stride, const int32_t *start,
                   const int32_t *end, int k, int slice, int32_t *idx)
{
    extern __shared__ uint32_t keys[]; /* [slice] */
    __shared__ int h[2][BINS];
    __shared__ fin_tmp<CL_T> t;
    __shared__ uint32_t s_key;
    __shared__ int s_need;
    __shared__ long long s_tot; /* this CTA's (gt << 32 | eq) counts, read by the others */
    cg::cluster_group cl = cg::this_cluster();
    const int r = blockIdx.y, rank = (int)cl.block_rank(), tid = threadIdx.x;
    const long st = start[r], len = end[r] - st;
    int32_t *out = idx + (size_t)r * k;
    if (len <= k) { /* the same for every CTA of the cluster: none waits on a barrier */
        if (rank == 0)
            for (long i = tid; i < k; i += CL_T)
                out[i] = i < len ? (int32_t)i : -1;
        return;
    }
    const size_t base = (size_t)r * stride + st;
    const long lo = (long)rank * slice, hi = lo + slice < len ? lo + slice : len;
    const int n = hi > lo ? (int)(hi - lo) : 0;
    /* the keys into shared memory, 4 loads of 16 bytes a thread in flight, and the first
       digit's histogram (bits 31..21) on the way */
    for (int b = tid; b < BINS; b += CL_T)
        h[0][b] = 0;
    __syncthreads();
    for (int i0 = 0; i0 < n; i0 += 16 * CL_T) {
        float v[4][4];
        int m[4];
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const int i = i0 + (u * CL_T + tid) * 4;
            m[u] = i < n ? load4(logits, lbf16, base, lo + i, hi, v[u]) : 0;
        }
#pragma unroll
        for (int u = 0; u < 4; u++)
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const int i = i0 + (u * CL_T + tid) * 4 + j;
                const uint32_t key = j < m[u] ? d_order_key(v[u][j]) : 0;
                if (j < m[u])
                    keys[i] = key;
                hist_add(h[0], key >> 21, j < m[u]);
            }
    }
    uint32_t prefix = 0, mask = 0;
    int need = k;
#pragma unroll 1
    for (int p = 0; p < 3; p++) {
        const int sh = p == 0 ? 21 : (p == 1 ? 10 : 0), nb = p == 2 ? 1024 : 2048;
        int *hb = h[p & 1];
        if (p > 0) {
            for (int b = tid; b < BINS; b += CL_T)
                hb[b] = 0;
            __syncthreads();
            for (int i0 = 0; i0 < n; i0 += CL_T) {
                const int i = i0 + tid;
                const uint32_t key = i < n ? keys[i] : 0;
                hist_add(hb, (key >> sh) & (nb - 1), i < n && (key & mask) == prefix);
            }
        }
        cl.sync(); /* every slice's histogram of this pass is complete */
        constexpr int per = BINS / CL_T;
        const int top = nb - 1 - per * tid;
        int cb[per], c = 0, incl;
        cluster_bins<per>(cl, hb, top, cb);
#pragma unroll
        for (int j = 0; j < per; j++)
            c += cb[j];
        cub::BlockScan<int, CL_T>(t.i).InclusiveSum(c, incl);
        int acc = incl - c;
        if (acc < need && incl >= need)
#pragma unroll
            for (int j = 0; j < per; j++) {
                if (acc + cb[j] >= need) {
                    s_key = prefix | ((uint32_t)(top - j) << sh);
                    s_need = need - acc;
                    break;
                }
                acc += cb[j];
            }
        __syncthreads();
        prefix = s_key;
        need = s_need;
        mask |= (uint32_t)(nb - 1) << sh;
        __syncthreads();
    }
    /* prefix = the k-th largest key of the row, need = how many of its ties are taken; each
       thread counts a run of the slice, one block scan places them within the slice */
    const int per = (n + CL_T - 1) / CL_T, a = tid * per < n ? tid * per : n;
    const int b = a + per < n ? a + per : n;
    long long cnt = 0, pre, tot;
    for (int i = a; i < b; i++)
        cnt += keys[i] > prefix ? 1LL << 32 : (long long)(keys[i] == prefix);
    cub::BlockScan<long long, CL_T>(t.ll).ExclusiveSum(cnt, pre, tot);
    if (tid == 0)
        s_tot = tot;
    cl.sync(); /* every CTA's counts are published */
    long long before = 0;
    for (int q = 0; q < rank; q++)
        before += *cl.map_shared_rank(&s_tot, q);
    cl.sync(); /* no CTA leaves while another still reads its shared memory */
    const int n_gt = k - need;
    int pg = (int)((before + pre) >> 32), pe = (int)((before + pre) & 0xffffffff);
    for (int i = a; i < b; i++) {
        if (keys[i] > prefix)
            out[pg++] = (int32_t)(lo + i);
        else if (keys[i] == prefix && pe++ < need)
            out[n_gt + pe - 1] = (int32_t)(lo + i);
    }
}

/* ---- host side ---- */

static void *g_stage; /* thresholds and staging rows */
static int *g_done;   /* [g_done_rows] gather_warps_kernel<true>'s counters, 0 between calls */
static long g_done_rows;

/* g_done for rows rows, zeroed when (re)allocated, on the stream of the launches */
static int grow_done(long rows, cudaStream_t st)
{
    if (rows <= g_done_rows)
        return DSA_K_OK;
    cudaFree(g_done);
    g_done = NULL;
    g_done_rows = 0;
    CUDA_CHECK(cudaMalloc(&g_done, (size_t)rows * 4));
    CUDA_CHECK(cudaMemsetAsync(g_done, 0, (size_t)rows * 4, st));
    g_done_rows = rows;
    return DSA_K_OK;
}
static size_t g_stage_bytes;

static int grow(size_t bytes)
{
    if (bytes <= g_stage_bytes)
        return DSA_K_OK;
    cudaFree(g_stage);
    g_stage = NULL;
    g_stage_bytes = 0;
    CUDA_CHECK(cudaMalloc(&g_stage, bytes));
    g_stage_bytes = bytes;
    return DSA_K_OK;
}

static int sm_count(void)
{
    static int n = -1;
    int dev = 0;
    if (n < 0 && (cudaGetDevice(&dev) != cudaSuccess ||
                  cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess))
        n = 132;
    return n;
}

/*
 * Up to DSA_CUDA_TOPK_FUSE rows (default 0: never) the gather CTAs compute the row threshold
 * themselves instead of a sample launch. Measured on the H200 (bench/RESULTS.md): one 128K row
 * 25.3 -> 24.9 us, 8 x 256K rows 31.4 -> 38.6 us (each of the 64 slices of a row repeats the
 * 4096 scattered loads and the select), so it stays off by default.
 */
/* DSA_CUDA_TOPK_SLICES=N: N slices a row (before the caps below) instead of the one-wave count,
   for timings of the slice geometry */
static int slices_env(void)
{
    static int v = -1;
    if (v < 0)
        v = d_env_count("DSA_CUDA_TOPK_SLICES");
    return v;
}

static int fuse_rows(void)
{
    static int v = -1;
    if (v < 0)
        v = d_env_count("DSA_CUDA_TOPK_FUSE");
    return v;
}

/*
 * Up to DSA_CUDA_TOPK_LAST rows (default 0: never) the gather's last CTA of each row runs the
 * final's work (gather_warps_kernel<true>), two launches per call instead of three; its CTAs
 * carry the final's 96 KB of candidates, so 2 of them fit an SM instead of 4. Measured slower
 * on the H200 (bench/RESULTS.md, round 5, call 3): 1 x 128K 28.0 us, 8 x 256K 33.8 against
 * 21.6 / 26.5 for the three kernels in the same call; the final's work on 256 threads takes
 * longer than the kernel boundary it saves. Kept opt-in, checked, for the next round.
 */
static int last_rows(void)
{
    static int v = -1;
    if (v < 0)
        v = d_env_count("DSA_CUDA_TOPK_LAST");
    return v;
}

/*
 * DSA_CUDA_TOPK_R11 = a bit mask (default 0) that puts back round 10's parts, for A/B timings
 * in one call: bit 0 the final's binary search per candidate for its segment (copy_candidates),
 * bit 1 the sample of single values evenly spaced (row_threshold), bit 2 the gather's take of
 * every chunk by warp_take (no warp_take_mask). Measured on the H200 (bench/RESULTS.md, round
 * 11, call C): 7 (round 10) 22.5 / 27.6 / 65.1-65.2 us at 1 x 128K, 8 x 256K, 64 x 256K, 4
 * 19.6 / 25.0-25.1 / 58.4-58.6, 0 19.6 / 23.7-23.8 / 40.7, in the same call. Read once and
 * copied to d_tk_r11, ordered before the launches by the stream. DSA_CUDA_TOPK_R12=1 the same
 * way (d_tk_r12) puts back round 11's select: a histogram for every pass (no rank_bin).
 */
static int r11_set(cudaStream_t st)
{
    static int v = -1, v12;
    if (v < 0) {
        const char *e = getenv("DSA_CUDA_TOPK_R11"), *e12 = getenv("DSA_CUDA_TOPK_R12");
        v = e ? atoi(e) & 7 : 0; /* static: the asynchronous copies read them later */
        v12 = e12 ? atoi(e12) & 1 : 0;
        CUDA_CHECK(cudaMemcpyToSymbolAsync(d_tk_r11, &v, sizeof v, 0, cudaMemcpyHostToDevice, st));
        CUDA_CHECK(
            cudaMemcpyToSymbolAsync(d_tk_r12, &v12, sizeof v12, 0, cudaMemcpyHostToDevice, st));
    }
    return DSA_K_OK;
}

/*
 * DSA_CUDA_TOPK_R4 = a bit mask (default 0) that puts back round 4's kernels, for A/B timings
 * in one call and as a fallback: bit 1 the gather with a block scan an iteration and one
 * segment a slice (gather_kernel), bit 2 the final's fixed 11 + 11 + 10-bit digits; 6 is round
 * 4's path. DSA_CUDA_TOPK_COUNT=1 takes the threshold from sample_count_kernel instead of
 * round 4's sample_kernel: the same value, measured 2.3-3.0 us slower on the H200 (round 5,
 * call 1, where it was the default and R4 bit 0 put sample_kernel back). Returned: bit 0 set
 * for sample_kernel.
 */
static int r4_parts(void)
{
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("DSA_CUDA_TOPK_R4"), *c = getenv("DSA_CUDA_TOPK_COUNT");
        v = (e ? atoi(e) & 6 : 0) | (c && atoi(c) ? 0 : 1);
    }
    return v;
}

/*
 * Up to DSA_CUDA_TOPK_CLUSTER rows (default 0: never) of at most 256K values, one cluster per
 * row does the whole top-k in one launch (cluster_kernel) instead of the three-launch sample /
 * gather / final path. Measured on the H200 (bench/RESULTS.md, round 4): 1 x 128K 44.1 us,
 * 8 x 256K 82.5 us against 29.7 / 35.0 us for the three kernels in the same call, so it is
 * opt-in until its histograms are faster.
 */
static int cluster_rows(void)
{
    static int v = -1;
    if (v < 0)
        v = d_env_count("DSA_CUDA_TOPK_CLUSTER");
    return v;
}

/* slice = the keys per CTA of cluster_kernel for rows of at most stride values (a multiple of
   4, so that the slices of an aligned row stay 16-byte aligned); 0 when the path is not taken:
   more rows than cluster_rows(), rows too long, or a device that cannot run one such cluster */
static int cluster_slice(long rows, long stride)
{
    static int fits = -1;
    long slice = ((stride + CL_N - 1) / CL_N + 3) / 4 * 4;
    if (rows > cluster_rows() || rows > 65535 || slice > CL_CAP)
        return 0;
    if (fits < 0) {
        int nc = 0;
        cudaLaunchConfig_t c = {};
        c.gridDim = dim3(CL_N, 1);
        c.blockDim = dim3(CL_T);
        c.dynamicSmemBytes = CL_CAP * 4;
        fits = cudaFuncSetAttribute(cluster_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    CL_CAP * 4) == cudaSuccess &&
               cudaOccupancyMaxActiveClusters(&nc, cluster_kernel, &c) == cudaSuccess && nc > 0;
        (void)cudaGetLastError(); /* a refusal here only means the other path */
    }
    return fits ? (int)slice : 0;
}

int dsa_cuda_topk_launch(const dsa_k_flags *f, const dsa_topk_args *a, cudaStream_t st)
{
    static int attr_set;
    if (a->rows <= 0)
        return DSA_K_OK;
    const int rc11 = r11_set(st);
    if (rc11 != DSA_K_OK)
        return rc11;
    const int cslice = cluster_slice(a->rows, a->stride);
    if (cslice > 0) {
        cluster_kernel<<<dim3(CL_N, (unsigned)a->rows), CL_T, (size_t)cslice * 4, st>>>(
            a->logits, f->logits == DSA_K_BF16, a->stride, a->start, a->end, a->k, cslice, a->idx);
        return DSA_K_OK;
    }
    const int r4 = r4_parts(), fused = a->rows <= fuse_rows();
    const int old_gather = fused || (r4 & 2), last = !old_gather && a->rows <= last_rows();
    void (*fk)(const void *, int, long, const int32_t *, const int32_t *, int, staging, int32_t *) =
        r4 & 4 ? final_kernel<false> : final_kernel<true>;
    if (!attr_set) {
        CUDA_CHECK(cudaFuncSetAttribute(final_kernel<true>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, CAND_CAP * 8));
        CUDA_CHECK(cudaFuncSetAttribute(final_kernel<false>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, CAND_CAP * 8));
        CUDA_CHECK(cudaFuncSetAttribute(gather_warps_kernel<true>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, CAND_CAP * 8));
        attr_set = 1;
    }
    /* slices: at most CTAS_PER_SM gather CTAs per SM in all (2 with LAST: one wave), at least
       SLICE_ALIGN values each, at most MAX_SLICES (gather_kernel) or MAX_SEGS / SEG_W
       (gather_warps_kernel: a staging segment per warp) */
    const long max_n = old_gather ? MAX_SLICES : MAX_SEGS / SEG_W;
    long per_row = (long)(last ? 2 : CTAS_PER_SM) * sm_count() / a->rows,
         max_sl = (a->stride + SLICE_ALIGN - 1) / SLICE_ALIGN;
    if (slices_env() > 0)
        per_row = slices_env();
    long n = per_row < max_sl ? per_row : max_sl;
    if (n > max_n)
        n = max_n;
    if (n < 1)
        n = 1;
    const long slice = ((a->stride + n - 1) / n + SLICE_ALIGN - 1) / SLICE_ALIGN * SLICE_ALIGN;
    const int slices = (int)((a->stride + slice - 1) / slice); /* <= n */
    staging sg;
    sg.segs = old_gather ? slices : slices * SEG_W;
    const long seg_len = old_gather ? slice : slice / SEG_W;
    sg.cap = seg_len < CAND_CAP ? seg_len : CAND_CAP;
    sg.done = NULL;
    if (last) {
        int rc = grow_done(a->rows, st);
        if (rc != DSA_K_OK)
            return rc;
        sg.done = g_done;
    }
    const size_t slots = (size_t)a->rows * sg.segs;
    int rc = grow((size_t)a->rows * 4 + slots * 4 + slots * 8 * (size_t)sg.cap);
    if (rc != DSA_K_OK)
        return rc;
    char *p = (char *)g_stage;
    sg.thr = (uint32_t *)p;
    p += (size_t)a->rows * 4;
    sg.cnt = (int *)p;
    p += slots * 4;
    sg.idx = (int32_t *)p;
    p += slots * 4 * (size_t)sg.cap;
    sg.key = (uint32_t *)p;
    const int lbf16 = f->logits == DSA_K_BF16;
    dim3 grid((unsigned)slices, (unsigned)a->rows);
    cudaLaunchAttribute pdl;
    const cudaLaunchConfig_t gc = d_pdl_config(grid, dim3(PASS_T), 0, st, &pdl);
    const cudaLaunchConfig_t fc =
        d_pdl_config(dim3((unsigned)a->rows), dim3(FINAL_T), CAND_CAP * 8, st, &pdl);
    if (fused) { /* follows whatever ran before: an ordinary launch */
        gather_kernel<true><<<grid, PASS_T, 0, st>>>(a->logits, lbf16, a->stride, a->start, a->end,
                                                     a->k, slice, sg);
    } else {
        /* ordinary launch: the gather's early loads of the logits rely on it (see there) */
        if (r4 & 1)
            sample_kernel<<<a->rows, SAMPLE_T, 0, st>>>(a->logits, lbf16, a->stride, a->start,
                                                        a->end, a->k, sg.thr);
        else
            sample_count_kernel<<<a->rows, COUNT_T, 0, st>>>(a->logits, lbf16, a->stride, a->start,
                                                             a->end, a->k, sg.thr);
        if (old_gather)
            CUDA_CHECK(cudaLaunchKernelEx(&gc, gather_kernel<false>, a->logits, lbf16, a->stride,
                                          a->start, a->end, a->k, slice, sg));
        else if (last) {
            const cudaLaunchConfig_t lc = d_pdl_config(grid, dim3(PASS_T), CAND_CAP * 8, st, &pdl);
            CUDA_CHECK(cudaLaunchKernelEx(&lc, gather_warps_kernel<true>, a->logits, lbf16,
                                          a->stride, a->start, a->end, a->k, slice, sg, a->idx));
            return DSA_K_OK;
        } else
            CUDA_CHECK(cudaLaunchKernelEx(&gc, gather_warps_kernel<false>, a->logits, lbf16,
                                          a->stride, a->start, a->end, a->k, slice, sg, a->idx));
    }
    CUDA_CHECK(cudaLaunchKernelEx(&fc, fk, a->logits, lbf16, a->stride, a->start, a->end, a->k, sg,
                                  a->idx));
    return DSA_K_OK;
}
