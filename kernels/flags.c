/*
 * Variant flags of the indexer stack: defaults, "key=value" parsing, canonical string.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
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

static int onoff(const char *v, int *out)
{
    if (!strcmp(v, "on") || !strcmp(v, "1") || !strcmp(v, "true"))
        *out = 1;
    else if (!strcmp(v, "off") || !strcmp(v, "0") || !strcmp(v, "false"))
        *out = 0;
    else
        return -1;
    return 0;
}

static int dtype(const char *v, int *out)
{
    if (!strcmp(v, "f32") || !strcmp(v, "fp32"))
        *out = DSA_K_F32;
    else if (!strcmp(v, "bf16"))
        *out = DSA_K_BF16;
    else
        return -1;
    return 0;
}

int dsa_k_flags_set(struct dsa_k_flags *f, const char *kv)
{
    const char *eq = strchr(kv, '=');
    if (!eq)
        return -1;
    size_t kl = (size_t)(eq - kv);
    const char *v = eq + 1;
#define KEY(s) (kl == sizeof(s) - 1 && !strncmp(kv, s, kl))
    if (KEY("rope")) {
        if (!strcmp(v, "neox"))
            f->rope = DSA_K_ROPE_NEOX;
        else if (!strcmp(v, "interleaved"))
            f->rope = DSA_K_ROPE_INTERLEAVED;
        else
            return -1;
        return 0;
    }
    if (KEY("hadamard"))
        return onoff(v, &f->hadamard);
    if (KEY("bf16_round"))
        return onoff(v, &f->bf16_round);
    if (KEY("scale")) {
        if (!strcmp(v, "ue8m0"))
            f->scale = DSA_K_SCALE_UE8M0;
        else if (!strcmp(v, "fp32") || !strcmp(v, "f32"))
            f->scale = DSA_K_SCALE_FP32;
        else
            return -1;
        return 0;
    }
    if (KEY("weights"))
        return dtype(v, &f->weights);
    if (KEY("logits"))
        return dtype(v, &f->logits);
    if (KEY("heads")) {
        if (!strcmp(v, "64"))
            f->heads = 64;
        else if (!strcmp(v, "32"))
            f->heads = 32;
        else
            return -1;
        return 0;
    }
#undef KEY
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
