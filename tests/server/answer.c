/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "answer.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gsm8k.h"
#include "util/hash.h"
#include "util/opt.h"

/* Tried in order; the last one accepts every prompt. */
static const struct {
    const char *name;
    srv_answer_fn fn;
} answerers[] = {
    {"gsm8k", srv_answer_gsm8k},
    {"mrcr", srv_answer_mrcr},
    {"hash", srv_answer_hash},
};

void srv_answer(const struct srv_answer_in *in, const struct srv_answer_cfg *cfg,
                struct dsa_buf *out, struct srv_answer_info *info)
{
    memset(info, 0, sizeof *info);
    for (size_t i = 0; i < sizeof answerers / sizeof answerers[0]; i++) {
        dsa_buf_reset(out);
        if (answerers[i].fn(in, cfg, out, info)) {
            info->answerer = answerers[i].name;
            return;
        }
    }
}

uint64_t srv_decide_bits(uint64_t seed, uint64_t h, const char *tag)
{
    return dsa_splitmix64(dsa_splitmix64(seed) ^ h ^ dsa_fnv1a64(tag, strlen(tag)));
}

double srv_decide_u(uint64_t seed, uint64_t h, const char *tag)
{
    return (double)(srv_decide_bits(seed, h, tag) >> 11) * 0x1p-53;
}

/* Words for non-MRCR answers: a fixed list so answers read like text and tokenize stably. */
static const char *const words[] = {
    "the",    "model",  "answers", "with",    "a",      "short",  "and",   "stable",
    "text",   "that",   "depends", "only",    "on",     "its",    "input", "prompt",
    "so",     "tests",  "can",     "compare", "bytes",  "across", "runs",  "of",
    "server", "builds", "tokens",  "flow",    "steady", "river",  "stone", "light",
};

bool srv_answer_hash(const struct srv_answer_in *in, const struct srv_answer_cfg *cfg,
                     struct dsa_buf *out, struct srv_answer_info *info)
{
    (void)info;
    uint64_t h;
    if (in->messages) {
        char *s = json_dumps(in->messages, JSON_COMPACT | JSON_ENCODE_ANY);
        h = dsa_fnv1a64(s, strlen(s));
        free(s);
    } else {
        h = dsa_fnv1a64(in->prompt, in->prompt_len);
    }
    uint64_t x = srv_decide_bits(cfg->seed, h, "hash");
    int nwords = 8 + (int)(x % 25);
    for (int i = 0; i < nwords; i++) {
        x = dsa_splitmix64(x);
        dsa_buf_adds(out, i ? " " : "");
        dsa_buf_adds(out, words[x % (sizeof words / sizeof words[0])]);
    }
    dsa_buf_addch(out, '.');
    return true;
}

int srv_ptable_parse(const char *s, struct srv_ptable *t, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    struct dsa_strlist items = {0};
    dsa_split_commas(s, &items);
    int rc = -1;
    if (items.n == 0 || items.n > SRV_PTABLE_MAX) {
        snprintf(err, errlen, "expected 1 to %d entries", SRV_PTABLE_MAX);
        goto cleanup;
    }
    for (size_t i = 0; i < items.n; i++) {
        const char *item = items.v[i];
        const char *colon = strchr(item, ':');
        long upto = LONG_MAX;
        const char *pstr = item;
        if (colon) {
            char lim[64];
            size_t ln = (size_t)(colon - item);
            if (ln == 0 || ln >= sizeof lim) {
                snprintf(err, errlen, "bad limit in '%s'", item);
                goto cleanup;
            }
            memcpy(lim, item, ln);
            lim[ln] = '\0';
            if (strcmp(lim, "inf") != 0 && strcmp(lim, "max") != 0) {
                upto = dsa_parse_tokens(lim);
                if (upto < 0) {
                    snprintf(err, errlen, "bad token limit '%s'", lim);
                    goto cleanup;
                }
            }
            pstr = colon + 1;
        } else if (items.n > 1) {
            snprintf(err, errlen, "'%s' needs a LIMIT: prefix in a list", item);
            goto cleanup;
        }
        char *end;
        errno = 0;
        double p = strtod(pstr, &end);
        if (errno || end == pstr || *end || !(p >= 0.0 && p <= 1.0)) {
            snprintf(err, errlen, "bad probability '%s' (want 0..1)", pstr);
            goto cleanup;
        }
        if (t->n > 0 && upto <= t->upto[t->n - 1]) {
            snprintf(err, errlen, "limits must increase ('%s')", item);
            goto cleanup;
        }
        t->upto[t->n] = upto;
        t->p[t->n] = p;
        t->n++;
    }
    rc = 0;
cleanup:
    dsa_strlist_free_items(&items);
    return rc;
}

double srv_ptable_get(const struct srv_ptable *t, long tokens)
{
    for (int i = 0; i < t->n; i++)
        if (tokens <= t->upto[i])
            return t->p[i];
    return 0.0;
}
