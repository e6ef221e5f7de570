/*
 * The DSA lightning-indexer stack as a C API with no CUDA types (docs/kernels.md "Numerics",
 * "Spec for developers"). Two implementations share these signatures: the C reference
 * (kernels/cpu/, prefix dsa_cpu_*) and the CUDA kernels (kernels/cuda/, through the vtable
 * of dsa_cuda_api()).
 * A third party's build is loaded through the plugin ABI (struct dsa_kernels_api below).
 *
 * Stages:
 *   S1 k_prep        LayerNorm -> RoPE -> [Hadamard] -> fp8 e4m3 quant -> paged K-cache write
 *   S2 q_prep        RoPE -> [Hadamard] -> fp8 quant per (token, head) -> weight folding
 *   S3a logits_decode paged MQA logits, next_n rows per sequence
 *   S3b logits_prefill ragged MQA logits over a gathered K
 *   S4 topk          top-k indices per row, relative to the row start
 *
 * Memory: every pointer in the *_args structs is in the implementation's address space
 * (host memory for the CPU reference, device memory for CUDA). Callers move data with the
 * implementation's alloc/upload/download slots, so one driver runs any implementation.
 * bf16 values travel as uint16_t bit patterns, fp8 e4m3fn as uint8_t.
 *
 * Return values: 0 = done, DSA_K_UNSUPPORTED = this implementation does not take these
 * flags/shapes (callers skip or fall back; nothing was written), DSA_K_EINVAL = bad
 * arguments, DSA_K_EDEVICE = device error (a message was printed).
 *
 * Ownership: the functions borrow every buffer for the duration of the call; outputs are
 * written in place; nothing is retained.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_KERNELS_H
#define DSA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DSA_K_HEAD_DIM   128  /* D: index head dim, one fp8 quant block */
#define DSA_K_ROPE_DIM   64   /* R: dims [0, 64) of each head are rotated */
#define DSA_K_PAGE       64   /* tokens per K-cache page (vLLM block size on CUDA) */
#define DSA_K_PAGE_BYTES 8448 /* 64 * 128 fp8 values + 64 fp32 scales */
#define DSA_K_SCALE_OFF  8192 /* byte offset of the scales inside a page */
#define DSA_K_LN_EPS     1e-6f
#define DSA_K_FP8_MAX    448.0f
#define DSA_K_AMAX_EPS   1e-4f

enum dsa_k_status {
    DSA_K_OK = 0,
    DSA_K_UNSUPPORTED = 1,
    DSA_K_EINVAL = -1,
    DSA_K_EDEVICE = -2,
};

enum dsa_k_rope { DSA_K_ROPE_NEOX = 0, DSA_K_ROPE_INTERLEAVED = 1 };
enum dsa_k_scale { DSA_K_SCALE_UE8M0 = 0, DSA_K_SCALE_FP32 = 1 };
enum dsa_k_dtype { DSA_K_F32 = 0, DSA_K_BF16 = 1 };

/*
 * Variant flags (spec "Variant flags"); recorded in every run header.
 *   rope:       NEOX pairs (i, i+32) [DeepSeek-V3.2] | INTERLEAVED pairs (2i, 2i+1) [GLM-5.x]
 *   hadamard:   1 = 128-point Walsh-Hadamard x 128^-0.5 after RoPE (reference, SGLang); 0 = vLLM
 *   bf16_round: 1 = round to bf16 after LN, after RoPE, after Hadamard (torch reference);
 *               0 = all in fp32 with one rounding at the quant (vLLM fused)
 *   scale:      UE8M0 s = 2^ceil(log2(max(amax,1e-4)/448)) | FP32 s = max(amax,1e-4)/448
 *   weights:    store dtype of the folded weights: F32 (sm_90 DeepGEMM) | BF16 (the seed's change)
 *   logits:     F32 | BF16 logits output
 *   heads:      64 (DeepSeek-V3.2) | 32 (GLM-5.x)
 */
struct dsa_k_flags {
    int rope;
    int hadamard;
    int bf16_round;
    int scale;
    int weights;
    int logits;
    int heads;
};

/* The defaults: DeepSeek-V3.2 on vLLM (NeoX, no Hadamard, fp32 path, UE8M0, fp32 w/logits, H=64) */
void dsa_k_flags_default(struct dsa_k_flags *f);
/* Sets one flag from "key=value" (weights=bf16, rope=interleaved, hadamard=on, heads=32, …).
   Returns 0, or -1 if the key or the value is unknown. */
int dsa_k_flags_set(struct dsa_k_flags *f, const char *kv);
/* "rope=neox,hadamard=off,bf16_round=off,scale=ue8m0,weights=f32,logits=f32,heads=64" */
void dsa_k_flags_str(const struct dsa_k_flags *f, char *buf, size_t n);

/*
 * S1 k_prep: T new tokens into the paged K cache.
 *   k_raw [T,128] bf16          (= x . Wk)
 *   ln_w, ln_b [128] f32        LayerNorm weight/bias, eps 1e-6, computed in fp32
 *   pos [T] i64                 positions, 0 <= pos < max_pos
 *   cos, sin [max_pos,32] f32   RoPE table (YaRN for V3.2, plain theta for GLM)
 *   slot [T] i64                cache slot = page*64 + offset; -1 = skip the token
 *   cache [npages * 8448] u8    written: e4m3 values at page*8448 + off*128,
 *                               fp32 scale at page*8448 + 8192 + off*4
 */
struct dsa_k_prep_args {
    int T;
    int max_pos;
    const uint16_t *k_raw;
    const float *ln_w, *ln_b;
    const int64_t *pos;
    const float *cos, *sin;
    const int64_t *slot;
    uint8_t *cache;
};

/*
 * S2 q_prep (vLLM fused_q): per (token, head).
 *   q_raw [T,H,128] bf16        (= qr . Wq_b)
 *   w_raw [T,H] f32 or bf16     (= x . Wp), dtype w_raw_dtype
 *   pos, cos, sin               as S1
 *   q8 [T,H,128] e4m3 out, qs [T,H] f32 out (the quant scales)
 *   w [T,H] out, f32 or bf16 per flags.weights:
 *       w = ((f32(w_raw) * qs) * 128^-0.5) * H^-0.5   fp32 round-to-nearest, no FMA, this order;
 *       bf16 store = RNE of that fp32
 *   topk_fill [T, topk_k] i32 out, optional (NULL): set to -1
 */
struct dsa_q_prep_args {
    int T;
    int max_pos;
    const uint16_t *q_raw;
    const void *w_raw;
    int w_raw_dtype;
    const int64_t *pos;
    const float *cos, *sin;
    uint8_t *q8;
    float *qs;
    void *w;
    int32_t *topk_fill;
    int topk_k;
};

/*
 * S1 and S2 of one step in one call (prep): the same bytes as k_prep(k) then q_prep(q), each
 * side's T may be 0. For a decode step, where either kernel alone is a few microseconds of
 * dependent loads and reductions over too few blocks to fill the GPU, one launch runs both
 * (kernels/cuda/prep.cu). Contract: no buffer q_prep writes is an input or output of k_prep,
 * nor the reverse.
 */
int dsa_cpu_prep(const struct dsa_k_flags *f, const struct dsa_k_prep_args *k,
                 const struct dsa_q_prep_args *q);

/*
 * S3a decode logits over the paged cache, next_n rows per sequence (MTP verify).
 *   q8 [B,N,H,128] e4m3, w [B*N,H] f32|bf16 (flags.weights), N in {1,2,3,4}
 *   cache pages, block_table [B,max_blocks] i32 (page ids), ctx [B,N] i32 (= L_b - N + j + 1)
 *   logits [B*N, stride] f32|bf16 (flags.logits), stride >= max ctx (round_up(max_ctx,256)):
 *       logits[r,s] = ks[s] * sum_h w[r,h] * max(0, q8[r,h] . k8[s])   for s < ctx[r]
 *       -inf for ctx[r] <= s < stride when clean = 1 (else left untouched)
 *   The kernel reads each K page once for all N rows of its sequence.
 */
struct dsa_logits_decode_args {
    int B, N;
    const uint8_t *q8;
    const void *w;
    const uint8_t *cache;
    const int32_t *block_table;
    int max_blocks;
    const int32_t *ctx;
    void *logits;
    long stride;
    int clean;
};

/*
 * S3b prefill logits, ragged: M query rows over NK gathered keys.
 *   q8 [M,H,128] e4m3, w [M,H] f32|bf16, k8 [NK,128] e4m3, ks [NK] f32
 *   row_start/row_end [M] i32: keys [start, end) are visible (causal: end = start + pos + 1)
 *   logits [M, stride] f32|bf16 (stride >= NK): columns outside [start,end) set to -inf when
 *   clean = 1. Callers split M so that M * NK * 4 bytes stays under their budget (512 MB).
 */
struct dsa_logits_prefill_args {
    int M;
    long NK;
    const uint8_t *q8;
    const void *w;
    const uint8_t *k8;
    const float *ks;
    const int32_t *row_start, *row_end;
    void *logits;
    long stride;
    int clean;
};

/*
 * S4 top-k per row: rows of logits [rows, stride] f32|bf16 (flags.logits), valid columns
 * [start[r], end[r]); k in {512, 1024, 2048}.
 *   idx [rows, k] i32 out: indices relative to start, unordered; -1 padding when the row has
 *   fewer than k valid columns. Contract: |S| = min(k, len) and min_S v >= max_notS v.
 *   The CPU reference returns the golden set: order by (value desc, index asc), sorted.
 *   NaN never appears in valid columns (callers' contract); -inf columns are ordinary values.
 */
struct dsa_topk_args {
    int rows;
    const void *logits;
    long stride;
    const int32_t *start, *end;
    int k;
    int32_t *idx;
};

/* One entry point per stage; `_supported` answers without touching memory. */
#define DSA_K_STAGES(X)                                                                            \
    X(k_prep, struct dsa_k_prep_args)                                                              \
    X(q_prep, struct dsa_q_prep_args)                                                              \
    X(logits_decode, struct dsa_logits_decode_args)                                                \
    X(logits_prefill, struct dsa_logits_prefill_args)                                              \
    X(topk, struct dsa_topk_args)

#define DSA_K_DECLARE(impl)                                                                        \
    int dsa_##impl##_k_prep(const struct dsa_k_flags *f, const struct dsa_k_prep_args *a);         \
    int dsa_##impl##_q_prep(const struct dsa_k_flags *f, const struct dsa_q_prep_args *a);         \
    int dsa_##impl##_logits_decode(const struct dsa_k_flags *f,                                    \
                                   const struct dsa_logits_decode_args *a);                        \
    int dsa_##impl##_logits_prefill(const struct dsa_k_flags *f,                                   \
                                    const struct dsa_logits_prefill_args *a);                      \
    int dsa_##impl##_topk(const struct dsa_k_flags *f, const struct dsa_topk_args *a);

DSA_K_DECLARE(cpu)
DSA_K_DECLARE(cuda)

enum dsa_k_stage {
    DSA_K_STAGE_K_PREP = 0,
    DSA_K_STAGE_Q_PREP,
    DSA_K_STAGE_LOGITS_DECODE,
    DSA_K_STAGE_LOGITS_PREFILL,
    DSA_K_STAGE_TOPK,
    DSA_K_NSTAGES
};

/* Shape summary for `_supported` (fields not used by a stage are ignored). */
struct dsa_k_shape {
    int stage; /* enum dsa_k_stage */
    int N;     /* next_n (decode) */
    int k;     /* top-k */
};
/* The shapes the C reference and the CUDA kernels both take (their `supported` slot; a plugin
   may take fewer): 64 or 32 heads, next_n 1..4, top-k 512, 1024 or 2048. */
static inline int dsa_k_shape_supported(const struct dsa_k_flags *f, const struct dsa_k_shape *s)
{
    if (f->heads != 64 && f->heads != 32)
        return 0;
    if (s->stage == DSA_K_STAGE_LOGITS_DECODE && (s->N < 1 || s->N > 4))
        return 0;
    if (s->stage == DSA_K_STAGE_TOPK && s->k != 512 && s->k != 1024 && s->k != 2048)
        return 0;
    return s->stage >= 0 && s->stage < DSA_K_NSTAGES;
}

/*
 * Plugin ABI. A shared object exports one symbol, DSA_KERNELS_SYMBOL, a function returning
 * a pointer to a static, filled struct dsa_kernels_api whose abi_version equals
 * DSA_KERNELS_ABI_VERSION and whose struct_size is at least the size the host knows.
 * Slots marked optional may be NULL. Memory slots move bytes between host memory and the
 * implementation's memory (for a host implementation they are malloc/memcpy).
 */
#define DSA_KERNELS_ABI_VERSION 1
#define DSA_KERNELS_SYMBOL      "dsa_kernels_get_api"

struct dsa_kernels_api {
    uint32_t abi_version;
    uint32_t struct_size;
    const char *name;  /* "cpu-reference", "cuda", … */
    const char *build; /* free text: git hash, compiler, … */
    /* the device it runs on, e.g. "NVIDIA H200" or "cpu"; called after init */
    const char *(*device)(void);
    int (*init)(void); /* optional: 0 or a negative status */
    void *(*alloc)(size_t bytes);
    void (*free)(void *p);
    int (*upload)(void *dst, const void *src, size_t bytes);
    int (*download)(void *dst, const void *src, size_t bytes);
    int (*memset_)(void *dst, int byte, size_t bytes);
    int (*sync)(void);
    int (*supported)(const struct dsa_k_flags *f, const struct dsa_k_shape *s);
    int (*k_prep)(const struct dsa_k_flags *f, const struct dsa_k_prep_args *a);
    int (*q_prep)(const struct dsa_k_flags *f, const struct dsa_q_prep_args *a);
    int (*logits_decode)(const struct dsa_k_flags *f, const struct dsa_logits_decode_args *a);
    int (*logits_prefill)(const struct dsa_k_flags *f, const struct dsa_logits_prefill_args *a);
    int (*topk)(const struct dsa_k_flags *f, const struct dsa_topk_args *a);
    /* optional, added after the first ABI: S1 and S2 in one call (dsa_cpu_prep). A plugin
       built before it has a struct_size of DSA_KERNELS_API_SIZE_V1 and no such slot:
       dsa_kernels_prep() below then makes the two calls. */
    int (*prep)(const struct dsa_k_flags *f, const struct dsa_k_prep_args *k,
                const struct dsa_q_prep_args *q);
};
/* the size of the struct before `prep`: the smallest a plugin may hand over */
#define DSA_KERNELS_API_SIZE_V1 offsetof(struct dsa_kernels_api, prep)

/* S1 then S2 through api: its prep slot where it has one, else k_prep and q_prep */
static inline int dsa_kernels_prep(const struct dsa_kernels_api *api, const struct dsa_k_flags *f,
                                   const struct dsa_k_prep_args *k, const struct dsa_q_prep_args *q)
{
    if (api->struct_size > DSA_KERNELS_API_SIZE_V1 && api->prep)
        return api->prep(f, k, q);
    int rc = api->k_prep(f, k);
    return rc ? rc : api->q_prep(f, q);
}

typedef const struct dsa_kernels_api *(*dsa_kernels_get_api_fn)(void);

/* The built-in implementations: the CPU reference always; CUDA only in a CUDA build (else
   NULL), and NULL when no usable GPU is present. */
const struct dsa_kernels_api *dsa_kernels_cpu(void);
const struct dsa_kernels_api *dsa_kernels_cuda(void);

/* For `kernels bench` (kernels/bench.h). Times n calls of fn(ctx), each between two CUDA
   events recorded on the default stream, into ms[0..n); returns 0, or -1 on a device error or
   in a build without CUDA. */
int dsa_cuda_time_calls(int (*fn)(void *ctx), void *ctx, int n, float *ms);
/* the L2 size of the CUDA device in bytes; 0 in a build without CUDA or without a GPU */
size_t dsa_cuda_l2_bytes(void);

#ifdef __cplusplus
}
#endif

#endif
