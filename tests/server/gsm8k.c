/* GSM8K answerer of the test server; see gsm8k.h.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "gsm8k.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datasets/gsm8k.h"

static dsa_gsm8k *data;

int srv_gsm8k_load(const char *path)
{
    return dsa_gsm8k_load(path, &data);
}

void srv_gsm8k_unload(void)
{
    dsa_gsm8k_free(&data);
}

static bool ends_with(const char *s, size_t len, const char *suffix, size_t *at)
{
    size_t n = strlen(suffix);
    if (len < n || memcmp(s + len - n, suffix, n))
        return false;
    *at = len - n;
    return true;
}

/* The start of the last "<marker>" that begins the prompt or follows "\n\n", before `end`. */
static const char *last_block(const char *s, size_t end, const char *marker)
{
    size_t n = strlen(marker);
    for (size_t i = end >= n ? end - n + 1 : 0; i-- > 0;)
        if (!memcmp(s + i, marker, n) &&
            (i == 0 || (i >= 2 && s[i - 1] == '\n' && s[i - 2] == '\n')))
            return s + i + n;
    return NULL;
}

static long find_question(const char *q, size_t len)
{
    for (size_t i = 0; i < dsa_gsm8k_count(data); i++) {
        const struct dsa_gsm8k_row *r = dsa_gsm8k_row(data, i);
        if (r->question_len == len && !memcmp(r->question, q, len))
            return (long)i;
    }
    return -1;
}

/* The final answer text after the last "#### " of a solution, as written ("2,125"). */
static const char *final_of(const char *answer, size_t len, size_t *at)
{
    const char *last = NULL;
    for (size_t i = 0; i + 5 <= len; i++)
        if (!memcmp(answer + i, "#### ", 5))
            last = answer + i;
    if (!last)
        return NULL;
    *at = (size_t)(last - answer);
    return last + 5;
}

/* The solution with its final answer replaced by `final` (vllm5 form). */
static void solution(struct dsa_buf *out, const struct dsa_gsm8k_row *r, const char *final)
{
    size_t at;
    if (!final || !final_of(r->answer, r->answer_len, &at)) {
        dsa_buf_add(out, r->answer, r->answer_len);
        return;
    }
    dsa_buf_add(out, r->answer, at);
    dsa_buf_adds(out, "#### ");
    dsa_buf_adds(out, final);
}

/* Chain-of-thought form: annotations dropped, lines joined, "The answer is N." (cot8). */
static void cot_solution(struct dsa_buf *out, const struct dsa_gsm8k_row *r, const char *final)
{
    size_t at = r->answer_len;
    const char *fin = final_of(r->answer, r->answer_len, &at);
    bool in_calc = false;
    for (size_t i = 0; i < at; i++) {
        const char *p = r->answer + i;
        if (!in_calc && i + 1 < at && p[0] == '<' && p[1] == '<') {
            in_calc = true;
            i++;
        } else if (in_calc && i + 1 < at && p[0] == '>' && p[1] == '>') {
            in_calc = false;
            i++;
        } else if (!in_calc) {
            dsa_buf_addch(out, *p == '\n' ? ' ' : *p);
        }
    }
    while (out->len && out->data[out->len - 1] == ' ')
        out->len--;
    dsa_buf_adds(out, " The answer is ");
    if (final)
        dsa_buf_adds(out, final);
    else if (fin)
        dsa_buf_add(out, fin, r->answer_len - (size_t)(fin - r->answer));
    dsa_buf_adds(out, ".");
}

bool srv_answer_gsm8k(const struct srv_answer_in *in, const struct srv_answer_cfg *cfg,
                      struct dsa_buf *out, struct srv_answer_info *info)
{
    if (!data)
        return false;
    const char *p = in->prompt;
    size_t len = in->prompt_len;
    if (in->messages) {
        /* chat: the last user message holds the prompt */
        size_t n = json_array_size(in->messages);
        const json_t *last = n ? json_array_get(in->messages, n - 1) : NULL;
        const json_t *c = json_object_get(last, "content");
        if (!json_is_string(c))
            return false;
        p = json_string_value(c);
        len = json_string_length(c);
    }
    if (!p)
        return false;
    size_t end;
    bool cot;
    if (ends_with(p, len, "\nAnswer:", &end))
        cot = false;
    else if (ends_with(p, len, "\nA:", &end))
        cot = true;
    else
        return false;
    const char *q = last_block(p, end, cot ? "Q: " : "Question: ");
    if (!q)
        return false;
    long idx = find_question(q, (size_t)(p + end - q));
    if (idx < 0)
        return false;
    const struct dsa_gsm8k_row *r = dsa_gsm8k_row(data, (size_t)idx);

    /* another build answers one chosen question differently: its final number plus one */
    char changed[64];
    const char *final = NULL;
    if (cfg->build && *cfg->build && idx == cfg->gsm8k_build_question) {
        snprintf(changed, sizeof changed, "%lld", strtoll(r->gold, NULL, 10) + 1);
        final = changed;
        info->build_changed = true;
    }
    dsa_buf_addch(out, ' ');
    if (cot) {
        cot_solution(out, r, final);
        dsa_buf_adds(out, "\n\nQ: ");
    } else {
        solution(out, r, final);
        dsa_buf_adds(out, "\n\nQuestion: ");
    }
    return true;
}
