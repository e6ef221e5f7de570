/*
 * The RULER task table and the parsers of --tasks / --lengths lists (see ruler.h and
 * docs/ruler.md "Tasks" for where each row's numbers come from).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "evals/ruler_int.h"

#include <stdlib.h>
#include <string.h>

#include "util/common.h"

/* RULER's synthetic.yaml rows, one per task (docs/ruler.md "Tasks"). */
const struct dsa_ruler_task_cfg dsa_ruler_tasks[DSA_RULER_NTASKS] = {
    [DSA_RULER_NIAH_SINGLE_1] = {"niah_single_1", DSA_RULER_KIND_NIAH, DSA_RULER_HAY_REPEAT,
                                 DSA_RULER_VAL_WORDS, DSA_RULER_VAL_NUMBERS, 1, 1, 1, 128},
    [DSA_RULER_NIAH_SINGLE_2] = {"niah_single_2", DSA_RULER_KIND_NIAH, DSA_RULER_HAY_ESSAY,
                                 DSA_RULER_VAL_WORDS, DSA_RULER_VAL_NUMBERS, 1, 1, 1, 128},
    [DSA_RULER_NIAH_SINGLE_3] = {"niah_single_3", DSA_RULER_KIND_NIAH, DSA_RULER_HAY_ESSAY,
                                 DSA_RULER_VAL_WORDS, DSA_RULER_VAL_UUIDS, 1, 1, 1, 128},
    [DSA_RULER_NIAH_MULTIKEY_1] = {"niah_multikey_1", DSA_RULER_KIND_NIAH, DSA_RULER_HAY_ESSAY,
                                   DSA_RULER_VAL_WORDS, DSA_RULER_VAL_NUMBERS, 4, 1, 1, 128},
    [DSA_RULER_NIAH_MULTIKEY_2] = {"niah_multikey_2", DSA_RULER_KIND_NIAH, DSA_RULER_HAY_NEEDLE,
                                   DSA_RULER_VAL_WORDS, DSA_RULER_VAL_NUMBERS, 1, 1, 1, 128},
    [DSA_RULER_NIAH_MULTIKEY_3] = {"niah_multikey_3", DSA_RULER_KIND_NIAH, DSA_RULER_HAY_NEEDLE,
                                   DSA_RULER_VAL_UUIDS, DSA_RULER_VAL_UUIDS, 1, 1, 1, 128},
    [DSA_RULER_NIAH_MULTIVALUE] = {"niah_multivalue", DSA_RULER_KIND_NIAH, DSA_RULER_HAY_ESSAY,
                                   DSA_RULER_VAL_WORDS, DSA_RULER_VAL_NUMBERS, 1, 4, 1, 128},
    [DSA_RULER_NIAH_MULTIQUERY] = {"niah_multiquery", DSA_RULER_KIND_NIAH, DSA_RULER_HAY_ESSAY,
                                   DSA_RULER_VAL_WORDS, DSA_RULER_VAL_NUMBERS, 1, 1, 4, 128},
    /* variable tracking: num_chains 1, num_hops 4 */
    [DSA_RULER_VT] = {"vt", DSA_RULER_KIND_VT, DSA_RULER_HAY_REPEAT, 0, 0, 1, 4, 0, 30},
    /* common words extraction: freq_cw 30, freq_ucw 3, num_cw 10 */
    [DSA_RULER_CWE] = {"cwe", DSA_RULER_KIND_CWE, 0, 0, 0, 30, 3, 10, 120},
};

static const char *const length_names[DSA_RULER_NLENGTHS] = {"4k",   "8k",   "16k",  "32k", "64k",
                                                             "128k", "256k", "512k", "1m"};

const char *dsa_ruler_task_name(enum dsa_ruler_task t)
{
    return (unsigned)t < DSA_RULER_NTASKS ? dsa_ruler_tasks[t].name : "?";
}

const char *dsa_ruler_length_name(int k)
{
    return k >= 0 && k < DSA_RULER_NLENGTHS ? length_names[k] : "?";
}

long dsa_ruler_length_tokens(int k)
{
    return 4096L << k;
}

/* RULER scores every synthetic task with string_match_all; string_match_part is its metric
   for the qa tasks only, which need SQuAD/HotpotQA and are not generated here. */
enum dsa_ruler_metric dsa_ruler_task_metric(enum dsa_ruler_task t)
{
    (void)t;
    return DSA_RULER_MATCH_ALL;
}

int dsa_ruler_tokens_to_generate(enum dsa_ruler_task t)
{
    return (unsigned)t < DSA_RULER_NTASKS ? dsa_ruler_tasks[t].tokens_to_generate : 0;
}

/* Splits list at commas; lookup(item, len) gives the bit or -1; "all" sets every bit < n. */
static int parse_list(const char *list, unsigned *mask, const char **bad, int n,
                      int (*lookup)(const char *, size_t))
{
    unsigned m = 0;
    const char *p = list;
    if (!list || !*list)
        goto fail;
    while (1) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        int bit = len == 3 && !strncmp(p, "all", 3) ? n : lookup(p, len);
        if (bit < 0)
            goto fail;
        m |= bit == n ? (1u << n) - 1 : 1u << bit;
        if (!end)
            break;
        p = end + 1;
    }
    *mask = m;
    return 0;
fail:
    if (bad)
        *bad = list ? p : "";
    return DSA_RULER_EINVAL;
}

static int task_lookup(const char *s, size_t len)
{
    for (int t = 0; t < DSA_RULER_NTASKS; t++)
        if (strlen(dsa_ruler_tasks[t].name) == len && !strncmp(dsa_ruler_tasks[t].name, s, len))
            return t;
    return -1;
}

static int length_lookup(const char *s, size_t len)
{
    for (int k = 0; k < DSA_RULER_NLENGTHS; k++)
        if (strlen(length_names[k]) == len && !strncmp(length_names[k], s, len))
            return k;
    return -1;
}

int dsa_ruler_parse_tasks(const char *list, unsigned *mask, const char **bad)
{
    return parse_list(list, mask, bad, DSA_RULER_NTASKS, task_lookup);
}

int dsa_ruler_parse_lengths(const char *list, unsigned *mask, const char **bad)
{
    return parse_list(list, mask, bad, DSA_RULER_NLENGTHS, length_lookup);
}

int dsa_ruler_parse_id(const char *id, enum dsa_ruler_task *t, int *length, int *index)
{
    const char *a = id ? strchr(id, '/') : NULL, *b = a ? strchr(a + 1, '/') : NULL;
    if (!b || b[1] < '0' || b[1] > '9')
        return DSA_RULER_EINVAL;
    int task = task_lookup(id, (size_t)(a - id)), k = length_lookup(a + 1, (size_t)(b - a - 1));
    char *end;
    long i = strtol(b + 1, &end, 10);
    if (task < 0 || k < 0 || *end || i < 0 || i > 999999999)
        return DSA_RULER_EINVAL;
    *t = (enum dsa_ruler_task)task;
    *length = k;
    *index = (int)i;
    return 0;
}

const char *dsa_ruler_strerror(int code)
{
    switch (code) {
    case DSA_RULER_OK:
        return "";
    case DSA_RULER_EINVAL:
        return "invalid argument";
    case DSA_RULER_EIO:
        return "cannot read the file";
    case DSA_RULER_EHAYSTACK:
        return "no text (empty, not UTF-8, or a JSON document without \"text\" strings)";
    case DSA_RULER_ETOOLONG:
        return "the prompt without haystack does not fit the length";
    case DSA_RULER_EINTR:
        return "interrupted";
    case DSA_RULER_ESTOP:
        return "stopped by the caller";
    default:
        return "unknown error";
    }
}
