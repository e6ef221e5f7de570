/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "util/opt.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/exitcode.h"
#include "util/msg.h"

static const char *opt_strerror(int err)
{
    switch (err) {
    case DSA_OPT_OK:
        return "ok";
    case DSA_OPT_HELP:
        return "help requested";
    case DSA_OPT_ERR_UNKNOWN:
        return "unknown option";
    case DSA_OPT_ERR_MISSING:
        return "option requires an argument";
    case DSA_OPT_ERR_NUMBER:
        return "expected a number";
    case DSA_OPT_ERR_RANGE:
        return "number out of range";
    case DSA_OPT_ERR_BAD_VALUE:
        return "invalid value";
    case DSA_OPT_ERR_NO_ARG:
        return "option takes no argument";
    }
    return "unknown error";
}

int dsa_opt_exit(int err)
{
    return err == DSA_OPT_HELP ? DSA_EXIT_OK : DSA_EXIT_USAGE;
}

int dsa_opt_parse_no_args(int *argc, char **argv, const struct dsa_option *opts,
                          const char *const *usage, int *status)
{
    const char *name = argv[0]; /* the subcommand: positionals move over it */
    int n = dsa_opt_parse(argc, argv, opts, usage);
    if (n < 0) {
        *status = dsa_opt_exit(n);
        return 1;
    }
    if (n > 0) {
        dsa_errorf("unexpected argument '%s' (see 'dsa-eval %s --help')", argv[0], name);
        *status = DSA_EXIT_USAGE;
        return 1;
    }
    return 0;
}

void dsa_strlist_push(struct dsa_strlist *l, const char *s)
{
    l->v = dsa_xrealloc(l->v, (l->n + 1) * sizeof *l->v);
    l->v[l->n++] = s;
}

void dsa_strlist_release(struct dsa_strlist *l)
{
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

void dsa_strlist_free_items(struct dsa_strlist *l)
{
    for (size_t i = 0; i < l->n; i++)
        free((char *)l->v[i]);
    dsa_strlist_release(l);
}

void dsa_split_commas(const char *s, struct dsa_strlist *out)
{
    while (s && *s) {
        const char *end = strchr(s, ',');
        size_t n = end ? (size_t)(end - s) : strlen(s);
        const char *a = s, *b = s + n;
        while (a < b && isspace((unsigned char)*a))
            a++;
        while (b > a && isspace((unsigned char)b[-1]))
            b--;
        if (b > a)
            dsa_strlist_push(out, dsa_xstrndup(a, (size_t)(b - a)));
        s = end ? end + 1 : NULL;
    }
}

long long dsa_parse_bytes(const char *s)
{
    if (!s || *s < '0' || *s > '9')
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || v <= 0)
        return -1;
    static const char units[] = "KMGT";
    const char *u = *end ? strchr(units, *end & ~0x20) : NULL;
    int shift = 0;
    if (u) {
        shift = 10 * (int)(u - units + 1);
        end++;
        if (*end == 'i')
            end++;
    }
    if (*end == 'B')
        end++;
    if (*end || v > (LLONG_MAX >> shift))
        return -1;
    return v << shift;
}

long dsa_parse_tokens(const char *s)
{
    if (!s || !*s)
        return -1;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || v < 0)
        return -1;
    long mult = 1;
    if (*end == 'k' || *end == 'K')
        mult = 1024, end++;
    else if (*end == 'm' || *end == 'M')
        mult = 1024L * 1024, end++;
    if (*end)
        return -1;
    if (v > LONG_MAX / mult)
        return -1;
    return v * mult;
}

static const struct dsa_option *find_long(const struct dsa_option *opts, const char *name,
                                          size_t len, bool *negated)
{
    *negated = false;
    for (const struct dsa_option *o = opts; o->type != DSA_OPT_TYPE_END; o++)
        if (o->long_name && strlen(o->long_name) == len && !strncmp(o->long_name, name, len))
            return o;
    /* --no-<flag> */
    if (len > 3 && !strncmp(name, "no-", 3)) {
        for (const struct dsa_option *o = opts; o->type != DSA_OPT_TYPE_END; o++)
            if (o->type == DSA_OPT_TYPE_BOOL && o->long_name && strlen(o->long_name) == len - 3 &&
                !strncmp(o->long_name, name + 3, len - 3)) {
                *negated = true;
                return o;
            }
    }
    return NULL;
}

static const struct dsa_option *find_short(const struct dsa_option *opts, char c)
{
    for (const struct dsa_option *o = opts; o->type != DSA_OPT_TYPE_END; o++)
        if (o->short_name == c)
            return o;
    return NULL;
}

static bool takes_arg(const struct dsa_option *o)
{
    return o->type != DSA_OPT_TYPE_BOOL && o->type != DSA_OPT_TYPE_COUNT;
}

static int store(const struct dsa_option *o, const char *arg, bool negated)
{
    char *end;
    switch (o->type) {
    case DSA_OPT_TYPE_BOOL:
        *(bool *)o->value = !negated;
        break;
    case DSA_OPT_TYPE_COUNT:
        (*(int *)o->value)++;
        break;
    case DSA_OPT_TYPE_INT:
    case DSA_OPT_TYPE_LONG: {
        errno = 0;
        long v = strtol(arg, &end, 10);
        if (end == arg || *end)
            return DSA_OPT_ERR_NUMBER;
        if (errno || (o->type == DSA_OPT_TYPE_INT && (v < INT_MIN || v > INT_MAX)))
            return DSA_OPT_ERR_RANGE;
        if (o->type == DSA_OPT_TYPE_INT)
            *(int *)o->value = (int)v;
        else
            *(long *)o->value = v;
        break;
    }
    case DSA_OPT_TYPE_DOUBLE: {
        errno = 0;
        double v = strtod(arg, &end);
        if (end == arg || *end)
            return DSA_OPT_ERR_NUMBER;
        if (errno || !isfinite(v)) /* nan/inf would slip through every range check */
            return DSA_OPT_ERR_RANGE;
        *(double *)o->value = v;
        break;
    }
    case DSA_OPT_TYPE_STRING:
        *(const char **)o->value = arg;
        break;
    case DSA_OPT_TYPE_STRLIST:
        dsa_strlist_push(o->value, arg);
        break;
    case DSA_OPT_TYPE_END:
        break;
    }
    if (o->cb)
        return o->cb(o, arg);
    return DSA_OPT_OK;
}

/* Prints the usage lines and the option table to `out` (stdout for --help). */
static void print_usage(void *outp, const char *const *usage, const struct dsa_option *opts)
{
    FILE *out = outp;
    /* synopsis lines, then (after an empty line) free text printed as it is */
    bool text = false;
    for (size_t i = 0; usage && usage[i]; i++) {
        text = text || !usage[i][0];
        if (text)
            fprintf(out, "%s\n", usage[i]);
        else
            fprintf(out, "%s %s\n", i ? "   or:" : "usage:", usage[i]);
    }
    fputc('\n', out);
    for (const struct dsa_option *o = opts; o->type != DSA_OPT_TYPE_END; o++) {
        struct dsa_buf left = DSA_BUF_INIT;
        dsa_buf_adds(&left, "    ");
        if (o->short_name)
            dsa_buf_addf(&left, "-%c%s", o->short_name, o->long_name ? ", " : "");
        if (o->long_name)
            dsa_buf_addf(&left, "--%s", o->long_name);
        if (takes_arg(o))
            dsa_buf_addf(&left, " %s", o->argh ? o->argh : "ARG");
        if (left.len < 30)
            fprintf(out, "%-30s%s\n", left.data, o->help ? o->help : "");
        else
            fprintf(out, "%s\n%30s%s\n", left.data, "", o->help ? o->help : "");
        dsa_buf_release(&left);
    }
    fprintf(out, "    %-26s%s\n", "-h, --help", "show this help");
}

/* Optimal string alignment distance (Levenshtein plus adjacent transpositions, as git's
   "did you mean"): "comapre" is 1 from "compare", not 2. Words longer than 63 bytes are far. */
static size_t osa_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return SIZE_MAX;
    size_t d[64][64];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = a[i - 1] != b[j - 1];
            size_t v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v)
                v = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < v)
                v = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[la][lb];
}

const char *dsa_did_you_mean(const char *word, const char *const *candidates, size_t n)
{
    /* close enough to be a typo: at most 2 edits, and fewer than half the word's length */
    size_t best = SIZE_MAX, limit = strlen(word) / 2;
    const char *pick = NULL;
    bool tie = false;
    if (limit > 2)
        limit = 2;
    for (size_t k = 0; k < n; k++) {
        size_t dist = osa_distance(word, candidates[k]);
        if (dist < best) {
            best = dist;
            pick = candidates[k];
            tie = false;
        } else if (dist == best) {
            tie = true;
        }
    }
    return pick && best <= limit && !tie ? pick : NULL;
}

/* the long option closest to `name` (without its dashes), or NULL */
static const char *closest_long(const struct dsa_option *opts, const char *name, size_t len)
{
    const char *cands[256];
    size_t n = 0;
    for (const struct dsa_option *o = opts; o->type != DSA_OPT_TYPE_END && n < 256; o++)
        if (o->long_name)
            cands[n++] = o->long_name;
    cands[n++] = "help";
    char *word = dsa_xstrndup(name, len);
    const char *pick = dsa_did_you_mean(word, cands, n);
    free(word);
    return pick;
}

static void usage_hint(const char *const *usage)
{
    if (usage && usage[0])
        fprintf(stderr, "usage: %s\n", usage[0]);
}

static int fail(int err, const char *what, const char *const *usage)
{
    dsa_errorf("%s: '%s'", opt_strerror(err), what);
    usage_hint(usage);
    return err;
}

static int fail_unknown(const struct dsa_option *opts, const char *a, const char *const *usage)
{
    const char *name = a + 2, *eq = strchr(name, '=');
    const char *pick = closest_long(opts, name, eq ? (size_t)(eq - name) : strlen(name));
    if (pick)
        dsa_errorf("unknown option: '%s'; did you mean '--%s'?", a, pick);
    else
        dsa_errorf("unknown option: '%s'", a);
    usage_hint(usage);
    return DSA_OPT_ERR_UNKNOWN;
}

/* a value the option could not take: the message names the option ("--runs: expected a
   number: 'three'"), so a long command line needs no guessing */
static int fail_value(int err, const struct dsa_option *o, const char *arg,
                      const char *const *usage)
{
    if (o->long_name)
        dsa_errorf("--%s: %s: '%s'", o->long_name, opt_strerror(err), arg);
    else
        dsa_errorf("-%c: %s: '%s'", o->short_name, opt_strerror(err), arg);
    usage_hint(usage);
    return err;
}

int dsa_opt_parse(int *argc, char **argv, const struct dsa_option *opts, const char *const *usage)
{
    int npos = 0;
    int n = *argc;
    bool only_pos = false;
    for (int i = 1; i < n; i++) {
        char *a = argv[i];
        if (only_pos || a[0] != '-' || a[1] == '\0') {
            argv[npos++] = a;
            continue;
        }
        if (!strcmp(a, "--")) {
            only_pos = true;
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            print_usage(stdout, usage, opts);
            return DSA_OPT_HELP;
        }
        if (a[1] == '-') {
            const char *name = a + 2;
            const char *eq = strchr(name, '=');
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            bool neg;
            const struct dsa_option *o = find_long(opts, name, len, &neg);
            if (!o)
                return fail_unknown(opts, a, usage);
            const char *arg = NULL;
            if (takes_arg(o)) {
                if (eq)
                    arg = eq + 1;
                else if (i + 1 < n)
                    arg = argv[++i];
                else
                    return fail(DSA_OPT_ERR_MISSING, a, usage);
            } else if (eq) {
                return fail(DSA_OPT_ERR_NO_ARG, a, usage);
            }
            int r = store(o, arg, neg);
            if (r)
                return arg ? fail_value(r, o, arg, usage) : fail(r, a, usage);
            continue;
        }
        /* short options, possibly bundled: -qv, -o FILE, -oFILE */
        for (const char *p = a + 1; *p; p++) {
            const struct dsa_option *o = find_short(opts, *p);
            if (!o) {
                char s[3] = {'-', *p, 0};
                return fail(DSA_OPT_ERR_UNKNOWN, s, usage);
            }
            if (takes_arg(o)) {
                const char *arg;
                if (p[1])
                    arg = p + 1;
                else if (i + 1 < n)
                    arg = argv[++i];
                else
                    return fail(DSA_OPT_ERR_MISSING, a, usage);
                int r = store(o, arg, false);
                if (r)
                    return fail_value(r, o, arg, usage);
                break;
            }
            int r = store(o, NULL, false);
            if (r)
                return fail(r, a, usage);
        }
    }
    argv[npos] = NULL;
    *argc = npos;
    return npos;
}
