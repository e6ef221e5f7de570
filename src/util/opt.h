/*
 * Command-line options: each subcommand owns a table of rows {type, short, long, value, argh,
 * help}, ended by DSA_OPT_END(). dsa_opt_parse() fills the values, compacts the positional
 * arguments to the front of argv and returns their count. Parse errors are an enum turned
 * into text by one function, opt_strerror() in opt.c.
 *
 *   static const char *const usage[] = {"dsa-eval grade mrcr [--keep-going] < pairs.jsonl", NULL};
 *   struct dsa_option opts[] = {
 *       DSA_OPT_BOOL(0, "keep-going", &keep_going, "report bad lines and continue"),
 *       DSA_OPT_END(),
 *   };
 *   int n = dsa_opt_parse(&argc, argv, opts, usage);
 *   if (n < 0)
 *       return dsa_opt_exit(n);   // usage error (2) or --help (0)
 *
 * Ownership: string values point into argv (never freed); DSA_OPT_STRLIST values are arrays
 * the caller releases with dsa_strlist_release().
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_UTIL_OPT_H
#define DSA_UTIL_OPT_H

#include <stdbool.h>
#include <stddef.h>

enum dsa_opt_type {
    DSA_OPT_TYPE_END = 0,
    DSA_OPT_TYPE_BOOL,    /* bool *; --no-<name> sets false */
    DSA_OPT_TYPE_INT,     /* int * */
    DSA_OPT_TYPE_LONG,    /* long * */
    DSA_OPT_TYPE_DOUBLE,  /* double * */
    DSA_OPT_TYPE_STRING,  /* const char ** */
    DSA_OPT_TYPE_STRLIST, /* struct dsa_strlist *; repeatable, and comma lists stay whole */
    DSA_OPT_TYPE_COUNT,   /* int *, incremented (e.g. -v -v) */
};

struct dsa_option;
/* Callback for values that need parsing beyond the basic types; return 0 or an error text's
   dsa_opt_err code (DSA_OPT_ERR_BAD_VALUE). */
typedef int (*dsa_opt_cb)(const struct dsa_option *opt, const char *arg);

struct dsa_option {
    enum dsa_opt_type type;
    char short_name; /* 0 if none */
    const char *long_name;
    void *value;
    const char *argh; /* argument name in --help, NULL for flags */
    const char *help;
    dsa_opt_cb cb; /* optional: called after the value is stored */
};

struct dsa_strlist {
    const char **v;
    size_t n;
};

/* one row of a table: the type, the names, where the value goes, the argument's name (NULL for
   flags) and the help line; the shorthands below name the type */
#define DSA_OPT_ROW(t, s, l, v, a, h)                                                              \
    {                                                                                              \
        (t), (s), (l), (v), (a), (h), NULL                                                         \
    }
#define DSA_OPT_END()                  DSA_OPT_ROW(DSA_OPT_TYPE_END, 0, NULL, NULL, NULL, NULL)
#define DSA_OPT_BOOL(s, l, v, h)       DSA_OPT_ROW(DSA_OPT_TYPE_BOOL, s, l, v, NULL, h)
#define DSA_OPT_COUNT(s, l, v, h)      DSA_OPT_ROW(DSA_OPT_TYPE_COUNT, s, l, v, NULL, h)
#define DSA_OPT_INT(s, l, v, a, h)     DSA_OPT_ROW(DSA_OPT_TYPE_INT, s, l, v, a, h)
#define DSA_OPT_LONG(s, l, v, a, h)    DSA_OPT_ROW(DSA_OPT_TYPE_LONG, s, l, v, a, h)
#define DSA_OPT_DOUBLE(s, l, v, a, h)  DSA_OPT_ROW(DSA_OPT_TYPE_DOUBLE, s, l, v, a, h)
#define DSA_OPT_STRING(s, l, v, a, h)  DSA_OPT_ROW(DSA_OPT_TYPE_STRING, s, l, v, a, h)
#define DSA_OPT_STRLIST(s, l, v, a, h) DSA_OPT_ROW(DSA_OPT_TYPE_STRLIST, s, l, v, a, h)

enum dsa_opt_err {
    DSA_OPT_OK = 0,
    DSA_OPT_HELP = -1,          /* --help printed; exit 0 */
    DSA_OPT_ERR_UNKNOWN = -2,   /* unknown option */
    DSA_OPT_ERR_MISSING = -3,   /* option needs an argument */
    DSA_OPT_ERR_NUMBER = -4,    /* not a number */
    DSA_OPT_ERR_RANGE = -5,     /* number out of range */
    DSA_OPT_ERR_BAD_VALUE = -6, /* callback rejected the value */
    DSA_OPT_ERR_NO_ARG = -7,    /* flag given a value (--flag=x) */
};

/* Parses argv[1..*argc); argv[0] is the subcommand name. On success returns the number of
   positional arguments, moved to argv[0..n). On error prints one line (plus the usage hint)
   to stderr and returns an enum dsa_opt_err (< 0). */
int dsa_opt_parse(int *argc, char **argv, const struct dsa_option *opts, const char *const *usage);
/* Maps a negative dsa_opt_parse result to an exit status: 0 for --help, 2 otherwise. */
int dsa_opt_exit(int err);
/* dsa_opt_parse() for a command that takes no positional argument. Returns 0 to go on, or 1
   to end with *status: 0 after --help, 2 after a usage error (printed; a leftover argument
   is one: "unexpected argument 'x' (see 'dsa-eval mrcr --help')"). */
int dsa_opt_parse_no_args(int *argc, char **argv, const struct dsa_option *opts,
                          const char *const *usage, int *status);

void dsa_strlist_push(struct dsa_strlist *l, const char *s);
void dsa_strlist_release(struct dsa_strlist *l);

/* Splits "8k,16k,32k" into items (each trimmed of spaces); returns a list of fresh strings
   that the caller frees with dsa_strlist_free_items(). */
void dsa_split_commas(const char *s, struct dsa_strlist *out);
void dsa_strlist_free_items(struct dsa_strlist *l);

/* Parses "512M", "2G", "64MiB", "1048576" as bytes (K, M, G, T = powers of 1024; "iB" or "B"
   may follow). Returns -1 if invalid or not above 0. */
long long dsa_parse_bytes(const char *s);
/* The one of `candidates` a mistyped `word` most likely meant (at most 2 edits, counting an
   adjacent transposition as one, and a unique best), or NULL: "did you mean 'compare'?". */
const char *dsa_did_you_mean(const char *word, const char *const *candidates, size_t n);

/* Parses "8k", "256K", "1M", "131072" as token counts (k = 1024). Returns -1 if invalid. */
long dsa_parse_tokens(const char *s);

#endif
