/*
 * The RULER haystack object (ruler.h): the essay text as RULER's word list (whitespace
 * collapsed, split at spaces) with each word's token count, and the word lists for keys and
 * for common words extraction, from the embedded data (datasets/ruler/) or a caller's file.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datasets/tokenize.h"
#include "evals/ruler_data.h"
#include "evals/ruler_int.h"
#include "util/hash.h"
#include "util/utf8.h"

const struct dsa_ruler_blob *dsa_ruler_blob(const char *name)
{
    for (const struct dsa_ruler_blob *b = dsa_ruler_blobs; b->name; b++)
        if (!strcmp(b->name, name))
            return b;
    return NULL;
}

/* Bytes of the Python whitespace character (str.isspace(), which is also what re's \s
   matches in a str pattern) at s[0..n), or 0. */
size_t dsa_ruler_space_len(const unsigned char *s, size_t n)
{
    if (s[0] < 0x80)
        return (s[0] >= 0x09 && s[0] <= 0x0d) || (s[0] >= 0x1c && s[0] <= 0x20);
    uint32_t cp;
    size_t bad;
    size_t len = (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3 : 0;
    if (!len || len > n || dsa_utf8_decode((const char *)s, len, &cp, &bad) != 1)
        return 0;
    bool sp = cp == 0x85 || cp == 0xa0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) ||
              cp == 0x2028 || cp == 0x2029 || cp == 0x202f || cp == 0x205f || cp == 0x3000;
    return sp ? len : 0;
}

/* RULER: re.sub(r"\s+", " ", essay).split(" "), here also trimmed at both ends. */
static void collapse_spaces(char *s, size_t *len)
{
    size_t o = 0, n = *len;
    bool pending = false;
    for (size_t i = 0; i < n;) {
        size_t sp = dsa_ruler_space_len((const unsigned char *)s + i, n - i);
        if (sp) {
            pending = o > 0;
            i += sp;
            continue;
        }
        if (pending)
            s[o++] = ' ';
        pending = false;
        s[o++] = s[i++];
    }
    s[o] = '\0';
    *len = o;
}

static int split_words(dsa_ruler_haystack *h)
{
    size_t n = 0;
    for (size_t i = 0; i < h->len; i++)
        n += h->text[i] == ' ';
    n += h->len > 0;
    if (!n)
        return DSA_RULER_EHAYSTACK;
    h->words.w = dsa_xmalloc(n * sizeof *h->words.w);
    h->word_off = dsa_xmalloc(n * sizeof *h->word_off);
    h->words.n = n;
    size_t k = 0;
    h->word_off[k++] = 0;
    for (size_t i = 0; i < h->len; i++)
        if (h->text[i] == ' ')
            h->word_off[k++] = i + 1;
    h->tokens = dsa_tok_count(h->text, h->len); /* the fitter's tokens per word */
    /* the word pointers need NUL-terminated words: a copy of the text with spaces -> NUL */
    char *copy = dsa_xmalloc(h->len + 1);
    memcpy(copy, h->text, h->len + 1);
    for (size_t i = 0; i < h->len; i++)
        if (copy[i] == ' ')
            copy[i] = '\0';
    for (size_t i = 0; i < n; i++)
        h->words.w[i] = copy + h->word_off[i];
    return 0;
}

/* PaulGrahamEssays.json: {"text": "..."} or [{"text": "..."}, ...] -> the texts joined by
   spaces. Anything else is plain text. */
static int essays_from_json(const char *data, size_t len, char **text, size_t *tlen)
{
    json_error_t e;
    json_t *root = json_loadb(data, len, 0, &e);
    if (!root)
        return DSA_RULER_EHAYSTACK;
    struct dsa_buf b = DSA_BUF_INIT;
    size_t n = json_is_array(root) ? json_array_size(root) : 1;
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_is_array(root) ? json_array_get(root, i) : root;
        json_t *t = json_object_get(o, "text");
        if (!json_is_string(t))
            continue;
        if (b.len)
            dsa_buf_addch(&b, ' ');
        dsa_buf_add(&b, json_string_value(t), json_string_length(t));
    }
    json_decref(root);
    *text = dsa_buf_detach(&b, tlen);
    if (*tlen)
        return 0;
    free(*text);
    return DSA_RULER_EHAYSTACK;
}

static int read_file(const char *path, char **data, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return DSA_RULER_EIO;
    struct dsa_buf b = DSA_BUF_INIT;
    char chunk[65536];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0)
        dsa_buf_add(&b, chunk, got);
    int bad = ferror(f);
    int saved = errno;
    fclose(f);
    if (bad) {
        dsa_buf_release(&b);
        errno = saved;
        return DSA_RULER_EIO;
    }
    *data = dsa_buf_detach(&b, len);
    return 0;
}

static int load_text(dsa_ruler_haystack *h, const char *path)
{
    char *data = NULL;
    size_t len = 0;
    int rc;
    if (!path) {
        const struct dsa_ruler_blob *b = dsa_ruler_blob(DSA_RULER_HAYSTACK_DEFAULT);
        data = dsa_xstrndup(b->data, b->len);
        len = b->len;
        snprintf(h->name, sizeof h->name, "%s", b->name);
        snprintf(h->sha256, sizeof h->sha256, "%s", b->sha256);
    } else {
        if ((rc = read_file(path, &data, &len)))
            return rc;
        const char *base = strrchr(path, '/');
        snprintf(h->name, sizeof h->name, "%s", base ? base + 1 : path);
        dsa_sha256_hex(data, len, h->sha256);
    }
    size_t i = 0;
    while (i < len && dsa_ruler_space_len((const unsigned char *)data + i, len - i))
        i++;
    if (i < len && (data[i] == '[' || data[i] == '{')) {
        char *text;
        rc = essays_from_json(data, len, &text, &len);
        free(data);
        if (rc)
            return rc;
        data = text;
    } else if (memchr(data, '\0', len) || !dsa_utf8_valid(data, len)) {
        free(data);
        return DSA_RULER_EHAYSTACK;
    }
    collapse_spaces(data, &len);
    h->text = data;
    h->len = len;
    return len ? 0 : DSA_RULER_EHAYSTACK;
}

/* Lines of the embedded word list name into *out (the lines are a copy that lives as long
   as the process, like the word lists). */
static void load_list(const char *name, struct dsa_ruler_words *out)
{
    const struct dsa_ruler_blob *b = dsa_ruler_blob(name);
    size_t n = 0;
    for (size_t i = 0; i < b->len; i++)
        n += b->data[i] == '\n';
    out->w = dsa_xmalloc((n ? n : 1) * sizeof *out->w);
    out->n = 0;
    char *copy = dsa_xstrndup(b->data, b->len);
    for (char *p = copy, *nl; (nl = strchr(p, '\n')); p = nl + 1) {
        *nl = '\0';
        if (nl > p)
            out->w[out->n++] = p;
    }
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* RULER's cwe vocabulary: sorted(set(nouns + adjectives + verbs)). */
static void union_lists(struct dsa_ruler_lists *h)
{
    size_t n = h->nouns.n + h->adjs.n + h->verbs.n;
    const char **all = dsa_xmalloc(n * sizeof *all);
    memcpy(all, h->nouns.w, h->nouns.n * sizeof *all);
    memcpy(all + h->nouns.n, h->adjs.w, h->adjs.n * sizeof *all);
    memcpy(all + h->nouns.n + h->adjs.n, h->verbs.w, h->verbs.n * sizeof *all);
    qsort(all, n, sizeof *all, cmp_str);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (!u || strcmp(all[u - 1], all[i]))
            all[u++] = all[i];
    h->cwe.w = all;
    h->cwe.n = u;
}

/* The word lists are the same for every haystack: made once per process, read-only after. */
static struct dsa_ruler_lists lists;
static pthread_once_t lists_once = PTHREAD_ONCE_INIT;

static void lists_load(void)
{
    load_list("nouns.txt", &lists.nouns);
    load_list("adjectives.txt", &lists.adjs);
    load_list("verbs.txt", &lists.verbs);
    union_lists(&lists);
}

dsa_ruler_haystack *dsa_ruler_haystack_new(const char *path, int *err)
{
    dsa_ruler_haystack *h = dsa_xcalloc(1, sizeof *h);
    int rc = load_text(h, path);
    if (!rc)
        rc = split_words(h);
    if (rc) {
        int saved = errno;
        dsa_ruler_haystack_free(&h);
        errno = saved;
        if (err)
            *err = rc;
        return NULL;
    }
    pthread_once(&lists_once, lists_load);
    h->nouns = lists.nouns;
    h->adjs = lists.adjs;
    h->verbs = lists.verbs;
    h->cwe = lists.cwe;
    return h;
}

void dsa_ruler_haystack_free(dsa_ruler_haystack **hp)
{
    dsa_ruler_haystack *h = *hp;
    if (!h)
        return;
    if (h->words.w)
        free((void *)h->words.w[0]);
    free(h->words.w);
    free(h->word_off);
    free(h->text);
    free(h);
    *hp = NULL;
}

const char *dsa_ruler_haystack_name(const dsa_ruler_haystack *h)
{
    return h->name;
}

const char *dsa_ruler_haystack_sha256(const dsa_ruler_haystack *h)
{
    return h->sha256;
}

size_t dsa_ruler_haystack_words(const dsa_ruler_haystack *h)
{
    return h->words.n;
}
