/*
 * Variant flags of the indexer stack: defaults, "key=value" parsing, canonical string.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "dsa_kernels.h"

void dsa_k_flags_default(struct dsa_k_flags *f)
{
    f->rope = DSA_K_ROPE_NEOX;
    f->hadamard = 0;
    f->bf16_round = 0;
    f->scale = DSA_K_SCALE_UE8M0;
    f->weights = DSA_K_F32;
    f->logits = DSA_K_F32;
    f->heads = 64;
}

/* the words a key takes, each with the value it sets */
struct word {
    const char *word;
    int value;
};
static const struct word w_onoff[] = {{"on", 1}, {"1", 1},     {"true", 1}, {"off", 0},
                                      {"0", 0},  {"false", 0}, {NULL, 0}};
static const struct word w_dtype[] = {
    {"f32", DSA_K_F32}, {"fp32", DSA_K_F32}, {"bf16", DSA_K_BF16}, {NULL, 0}};
static const struct word w_rope[] = {
    {"neox", DSA_K_ROPE_NEOX}, {"interleaved", DSA_K_ROPE_INTERLEAVED}, {NULL, 0}};
static const struct word w_scale[] = {
    {"ue8m0", DSA_K_SCALE_UE8M0}, {"fp32", DSA_K_SCALE_FP32}, {"f32", DSA_K_SCALE_FP32}, {NULL, 0}};
static const struct word w_heads[] = {{"64", 64}, {"32", 32}, {NULL, 0}};

/* each key, the field it sets and its words */
static const struct {
    const char *key;
    size_t offset;
    const struct word *words;
} keys[] = {
    {"rope", offsetof(struct dsa_k_flags, rope), w_rope},
    {"hadamard", offsetof(struct dsa_k_flags, hadamard), w_onoff},
    {"bf16_round", offsetof(struct dsa_k_flags, bf16_round), w_onoff},
    {"scale", offsetof(struct dsa_k_flags, scale), w_scale},
    {"weights", offsetof(struct dsa_k_flags, weights), w_dtype},
    {"logits", offsetof(struct dsa_k_flags, logits), w_dtype},
    {"heads", offsetof(struct dsa_k_flags, heads), w_heads},
};

int dsa_k_flags_set(struct dsa_k_flags *f, const char *kv)
{
    const char *eq = strchr(kv, '=');
    if (!eq)
        return -1;
    size_t kl = (size_t)(eq - kv);
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        if (strlen(keys[k].key) != kl || strncmp(kv, keys[k].key, kl))
            continue;
        for (const struct word *w = keys[k].words; w->word; w++)
            if (!strcmp(eq + 1, w->word)) {
                *(int *)((char *)f + keys[k].offset) = w->value;
                return 0;
            }
        return -1;
    }
    return -1;
}

void dsa_k_flags_str(const struct dsa_k_flags *f, char *buf, size_t n)
{
    snprintf(buf, n, "rope=%s,hadamard=%s,bf16_round=%s,scale=%s,weights=%s,logits=%s,heads=%d",
             f->rope == DSA_K_ROPE_NEOX ? "neox" : "interleaved", f->hadamard ? "on" : "off",
             f->bf16_round ? "on" : "off", f->scale == DSA_K_SCALE_UE8M0 ? "ue8m0" : "fp32",
             f->weights == DSA_K_BF16 ? "bf16" : "f32", f->logits == DSA_K_BF16 ? "bf16" : "f32",
             f->heads);
}
