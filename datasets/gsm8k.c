/* GSM8K JSONL loader; see gsm8k.h.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "datasets/gsm8k.h"

#include <string.h>

#include "util/buf.h"
#include "util/exitcode.h"
#include "util/hash.h"
#include "util/lines.h"
#include "util/msg.h"

struct dsa_gsm8k {
    struct dsa_gsm8k_row *rows;
    size_t n, cap;
    char *path;
    char sha256[65];
};

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

char *dsa_gsm8k_gold_of(const char *answer, size_t len)
{
    static const char mark[] = "#### ";
    const size_t mlen = sizeof mark - 1;
    const char *last = NULL;
    /* the LAST mark: a solution may quote "####" earlier (none in GSM8K, but cheap to honour) */
    for (size_t i = 0; i + mlen <= len; i++)
        if (!memcmp(answer + i, mark, mlen))
            last = answer + i;
    if (!last)
        return NULL;
    const char *s = last + mlen, *e = answer + len;
    while (s < e && is_space(*s))
        s++;
    while (e > s && is_space(e[-1]))
        e--;
    struct dsa_buf b = DSA_BUF_INIT;
    dsa_buf_init(&b);
    for (const char *p = s; p < e; p++)
        if (*p != ',')
            dsa_buf_addch(&b, *p);
    return dsa_buf_detach(&b, NULL);
}

void dsa_gsm8k_row_release(struct dsa_gsm8k_row *row)
{
    free(row->question);
    free(row->answer);
    free(row->gold);
    memset(row, 0, sizeof *row);
}

int dsa_gsm8k_parse_line(const char *text, size_t len, const struct dsa_json_where *w,
                         struct dsa_gsm8k_row *row)
{
    int ret = -1;
    const char *q, *a;
    size_t qlen, alen;
    memset(row, 0, sizeof *row);
    json_t *obj = dsa_json_parse_object(text, len, w);
    if (!obj)
        return -1;
    if (!dsa_json_get_str(obj, "question", false, &q, &qlen, w) ||
        !dsa_json_get_str(obj, "answer", false, &a, &alen, w))
        goto cleanup;
    row->gold = dsa_gsm8k_gold_of(a, alen);
    if (!row->gold) {
        dsa_errorf("line %ld of '%s': no \"#### \" in \"answer\"", w ? w->lineno : 0L,
                   w && w->path ? w->path : "<input>");
        goto cleanup;
    }
    row->question = dsa_xstrndup(q, qlen);
    row->question_len = qlen;
    row->answer = dsa_xstrndup(a, alen);
    row->answer_len = alen;
    ret = 0;
cleanup:
    json_decref(obj);
    if (ret)
        dsa_gsm8k_row_release(row);
    return ret;
}

int dsa_gsm8k_load(const char *path, dsa_gsm8k **out)
{
    int ret = DSA_EXIT_IO;
    const char *line;
    size_t len;
    int rc;
    *out = NULL;
    dsa_lines *r = dsa_lines_open(path);
    if (!r)
        return DSA_EXIT_IO;
    dsa_gsm8k *d = dsa_xcalloc(1, sizeof *d);
    d->path = dsa_xstrdup(path);
    /* the file's sha256 from the pass that reads it (standard input has none) */
    dsa_sha256 *sha = strcmp(path, "-") ? dsa_sha256_new() : NULL;
    while ((rc = dsa_lines_next(r, &line, &len)) == 1) {
        if (sha)
            dsa_lines_sha256_update(sha, r, line, len);
        if (len == 0)
            continue; /* a blank line (e.g. a trailing one) carries no row */
        struct dsa_json_where w = {path, dsa_lines_lineno(r)};
        if (d->n == d->cap) {
            d->cap = d->cap ? 2 * d->cap : 1024;
            d->rows = dsa_xrealloc(d->rows, d->cap * sizeof *d->rows);
        }
        if (dsa_gsm8k_parse_line(line, len, &w, &d->rows[d->n])) {
            ret = DSA_EXIT_DATA;
            goto cleanup;
        }
        d->n++;
    }
    if (rc < 0)
        goto cleanup;
    if (d->n == 0) {
        dsa_errorf("'%s' holds no GSM8K rows", path);
        ret = DSA_EXIT_DATA;
        goto cleanup;
    }
    if (sha)
        dsa_sha256_final_hex(sha, d->sha256);
    *out = d;
    d = NULL;
    ret = 0;
cleanup:
    dsa_sha256_free(&sha);
    dsa_lines_free(&r);
    dsa_gsm8k_free(&d);
    return ret;
}

size_t dsa_gsm8k_count(const dsa_gsm8k *d)
{
    return d->n;
}

const struct dsa_gsm8k_row *dsa_gsm8k_row(const dsa_gsm8k *d, size_t i)
{
    return i < d->n ? &d->rows[i] : NULL;
}

const char *dsa_gsm8k_sha256(const dsa_gsm8k *d)
{
    return d->sha256;
}

const char *dsa_gsm8k_path(const dsa_gsm8k *d)
{
    return d->path;
}

void dsa_gsm8k_free(dsa_gsm8k **dp)
{
    dsa_gsm8k *d = *dp;
    if (!d)
        return;
    for (size_t i = 0; i < d->n; i++)
        dsa_gsm8k_row_release(&d->rows[i]);
    free(d->rows);
    free(d->path);
    free(d);
    *dp = NULL;
}
