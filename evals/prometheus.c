/* Prometheus text exposition parser; see prometheus.h.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "evals/prometheus.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

struct dsa_prom {
    struct dsa_prom_sample *s;
    size_t n, cap;
};

/* A cursor over one line [p, end) plus where errors go. */
struct cur {
    const char *p, *end;
    long lineno;
    char *err;
    size_t err_size;
};

static int fail(struct cur *c, const char *fmt, ...) DSA_PRINTF(2, 3);
static int fail(struct cur *c, const char *fmt, ...)
{
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (c->err && c->err_size)
        snprintf(c->err, c->err_size, "line %ld: %s", c->lineno, msg);
    return -1;
}

static void skip_blanks(struct cur *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
        c->p++;
}

static bool name_start(char ch, bool metric)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' ||
           (metric && ch == ':');
}

static bool name_char(char ch, bool metric)
{
    return name_start(ch, metric) || (ch >= '0' && ch <= '9');
}

/* [a-zA-Z_:][a-zA-Z0-9_:]* (metric) or [a-zA-Z_][a-zA-Z0-9_]* (label); fresh string or NULL */
static char *read_ident(struct cur *c, bool metric)
{
    const char *s = c->p;
    if (c->p >= c->end || !name_start(*c->p, metric))
        return NULL;
    while (c->p < c->end && name_char(*c->p, metric))
        c->p++;
    return dsa_xstrndup(s, (size_t)(c->p - s));
}

/* A double-quoted string with the exposition escapes \\ \" \n; c->p is at the quote. */
static char *read_quoted(struct cur *c)
{
    struct dsa_buf b = DSA_BUF_INIT;
    dsa_buf_init(&b);
    c->p++;
    while (c->p < c->end && *c->p != '"') {
        char ch = *c->p++;
        if (ch == '\\') {
            if (c->p >= c->end)
                break;
            char e = *c->p++;
            if (e == '\\' || e == '"')
                dsa_buf_addch(&b, e);
            else if (e == 'n')
                dsa_buf_addch(&b, '\n');
            else {
                fail(c, "bad escape '\\%c' in a quoted string", e);
                dsa_buf_release(&b);
                return NULL;
            }
        } else {
            dsa_buf_addch(&b, ch);
        }
    }
    if (c->p >= c->end) {
        fail(c, "unterminated quoted string");
        dsa_buf_release(&b);
        return NULL;
    }
    c->p++; /* closing quote */
    return dsa_buf_detach(&b, NULL);
}

static void sample_release(struct dsa_prom_sample *s)
{
    free(s->name);
    for (size_t i = 0; i < s->n_labels; i++) {
        free(s->labels[i].name);
        free(s->labels[i].value);
    }
    free(s->labels);
    memset(s, 0, sizeof *s);
}

static const char *token_end(const struct cur *c)
{
    const char *q = c->p;
    while (q < c->end && *q != ' ' && *q != '\t')
        q++;
    return q;
}

/* Go's strconv.ParseFloat, as Prometheus uses it: decimal or hex floats, Inf/Infinity/NaN in
   any case with an optional sign. C's strtod reads the same set plus "nan(chars)", which we
   refuse; the whole token must be consumed. */
static int parse_value(struct cur *c, double *out)
{
    const char *e = token_end(c);
    size_t n = (size_t)(e - c->p);
    char tok[128];
    if (n == 0)
        return fail(c, "missing value");
    if (n >= sizeof tok || memchr(c->p, '(', n))
        return fail(c, "bad value '%.*s'", (int)(n < 40 ? n : 40), c->p);
    memcpy(tok, c->p, n);
    tok[n] = '\0';
    char *endp;
    errno = 0;
    double v = strtod(tok, &endp);
    if (endp != tok + n)
        return fail(c, "bad value '%s'", tok);
    *out = v; /* overflow gives ±HUGE_VAL = ±Inf, as ParseFloat's value (it also errors) */
    c->p = e;
    return 0;
}

static int parse_timestamp(struct cur *c, int64_t *out)
{
    const char *e = token_end(c);
    size_t n = (size_t)(e - c->p);
    char tok[32];
    if (n == 0 || n >= sizeof tok)
        return fail(c, "bad timestamp");
    memcpy(tok, c->p, n);
    tok[n] = '\0';
    char *endp;
    errno = 0;
    long long v = strtoll(tok, &endp, 10);
    if (endp != tok + n || errno)
        return fail(c, "bad timestamp '%s'", tok);
    *out = v;
    c->p = e;
    return 0;
}

static int add_label(struct cur *c, struct dsa_prom_sample *s, char *name, char *value)
{
    for (size_t i = 0; i < s->n_labels; i++)
        if (!strcmp(s->labels[i].name, name)) {
            fail(c, "duplicate label '%s'", name);
            free(name);
            free(value);
            return -1;
        }
    s->labels = dsa_xrealloc(s->labels, (s->n_labels + 1) * sizeof *s->labels);
    s->labels[s->n_labels].name = name;
    s->labels[s->n_labels].value = value;
    s->n_labels++;
    return 0;
}

/* The '{...}' part; c->p is at '{'. A quoted item with no '=' names the metric (only as the
   first item, and only when the name was not written before the brace). */
static int parse_labels(struct cur *c, struct dsa_prom_sample *s)
{
    c->p++;
    for (bool first = true;; first = false) {
        skip_blanks(c);
        if (c->p >= c->end)
            return fail(c, "unterminated label set");
        if (*c->p == '}') {
            c->p++;
            return 0;
        }
        char *lname;
        bool quoted = *c->p == '"';
        if (quoted) {
            if (!(lname = read_quoted(c)))
                return -1;
        } else if (!(lname = read_ident(c, false))) {
            return fail(c, "expected a label name");
        }
        skip_blanks(c);
        if (quoted && first && !s->name && c->p < c->end && (*c->p == ',' || *c->p == '}')) {
            s->name = lname;
        } else {
            if (c->p >= c->end || *c->p != '=') {
                free(lname);
                return fail(c, "expected '=' after label name");
            }
            c->p++;
            skip_blanks(c);
            if (c->p >= c->end || *c->p != '"') {
                free(lname);
                return fail(c, "expected '\"' to open a label value");
            }
            char *val = read_quoted(c);
            if (!val) {
                free(lname);
                return -1;
            }
            if (add_label(c, s, lname, val))
                return -1;
            skip_blanks(c);
        }
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        if (c->p < c->end && *c->p == '}')
            continue;
        return fail(c, "expected ',' or '}' in label set");
    }
}

static int parse_sample(struct cur *c, struct dsa_prom_sample *s)
{
    memset(s, 0, sizeof *s);
    if (*c->p != '{') {
        if (!(s->name = read_ident(c, true)))
            return fail(c, "expected a metric name");
        if (c->p >= c->end || (*c->p != ' ' && *c->p != '\t' && *c->p != '{'))
            return fail(c, "expected a blank or '{' after the metric name");
        skip_blanks(c); /* blanks may separate any two tokens, "name {" included */
    }
    if (c->p < c->end && *c->p == '{') {
        if (parse_labels(c, s))
            return -1;
        skip_blanks(c);
    }
    if (!s->name)
        return fail(c, "missing metric name");
    if (parse_value(c, &s->value))
        return -1;
    skip_blanks(c);
    if (c->p < c->end) {
        if (parse_timestamp(c, &s->timestamp_ms))
            return -1;
        s->has_timestamp = true;
        skip_blanks(c);
        if (c->p < c->end)
            return fail(c, "unexpected text after the timestamp");
    }
    return 0;
}

int dsa_prom_parse(const char *text, size_t len, dsa_prom **out, char *err, size_t err_size)
{
    *out = NULL;
    if (err && err_size)
        err[0] = '\0';
    dsa_prom *p = dsa_xcalloc(1, sizeof *p);
    const char *line = text, *end = text + len;
    long lineno = 0;
    while (line < end) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        const char *le = nl ? nl : end;
        struct cur c = {line, le, ++lineno, err, err_size};
        if (memchr(line, '\0', (size_t)(le - line))) {
            fail(&c, "NUL byte");
            goto fail;
        }
        if (c.end > c.p && c.end[-1] == '\r')
            c.end--;
        skip_blanks(&c);
        if (c.p < c.end && *c.p != '#') {
            if (p->n == p->cap) {
                p->cap = p->cap ? 2 * p->cap : 64;
                p->s = dsa_xrealloc(p->s, p->cap * sizeof *p->s);
            }
            if (parse_sample(&c, &p->s[p->n])) {
                sample_release(&p->s[p->n]);
                goto fail;
            }
            p->n++;
        }
        line = nl ? nl + 1 : end;
    }
    *out = p;
    return 0;
fail:
    dsa_prom_free(&p);
    return -1;
}

size_t dsa_prom_count(const dsa_prom *p)
{
    return p->n;
}

const struct dsa_prom_sample *dsa_prom_sample(const dsa_prom *p, size_t i)
{
    return i < p->n ? &p->s[i] : NULL;
}

const char *dsa_prom_label(const struct dsa_prom_sample *s, const char *name)
{
    for (size_t i = 0; i < s->n_labels; i++)
        if (!strcmp(s->labels[i].name, name))
            return s->labels[i].value;
    return NULL;
}

size_t dsa_prom_sum(const dsa_prom *p, const char *name, double *sum)
{
    size_t n = 0;
    *sum = 0;
    for (size_t i = 0; i < p->n; i++)
        if (!strcmp(p->s[i].name, name)) {
            *sum += p->s[i].value;
            n++;
        }
    return n;
}

void dsa_prom_free(dsa_prom **pp)
{
    dsa_prom *p = *pp;
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++)
        sample_release(&p->s[i]);
    free(p->s);
    free(p);
    *pp = NULL;
}
