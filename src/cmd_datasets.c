/*
 * dsa-eval datasets: make, fetch and describe the datasets the evaluations read.
 *   synth mrcr   synthetic MRCR rows in the real schema (datasets/synth.h)
 *   synth ruler  the RULER samples `dsa-eval ruler` sends, with their needles' positions
 *                (evals/ruler_json.h)
 *   fetch X      download MRCR rows or GSM8K files into the cache (datasets/fetch.h)
 *   info FILE    rows per needle count and bin, sha256, revision, bin source
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "datasets/fetch.h"
#include "datasets/mrcr.h"
#include "datasets/samples.h"
#include "datasets/synth.h"
#include "evals/ruler.h"
#include "evals/ruler_json.h"
#include "util/buf.h"
#include "util/exitcode.h"
#include "util/fs.h"
#include "util/msg.h"
#include "util/opt.h"

static const char *const datasets_usage[] = {
    "dsa-eval datasets synth mrcr [--needles N,..] [--bins 8k,16k,..|--max-bin K] "
    "[--per-bin N] [--seed S] -o FILE",
    "dsa-eval datasets synth ruler [--tasks LIST] [--lengths LIST] [--limit N] [--seed N] "
    "[--haystack FILE] -o FILE",
    "dsa-eval datasets fetch mrcr [--needles 2,4,8] [--revision SHA] [--base-url URL] "
    "[--hub-url URL] [--page-rows L]",
    "dsa-eval datasets fetch gsm8k [--split test|train|all] [--base-url URL]",
    "dsa-eval datasets info [--verify] FILE...",
    NULL,
};

static int usage_error(const char *fmt, const char *arg)
{
    char msg[256];
    snprintf(msg, sizeof msg, fmt, arg);
    dsa_errorf("%s", msg);
    fprintf(stderr, "usage: %s\n", datasets_usage[0]);
    for (const char *const *u = datasets_usage + 1; *u; u++)
        fprintf(stderr, "   or: %s\n", *u);
    return DSA_EXIT_USAGE;
}

/* The options of a synth subcommand `what` ("synth mrcr"): no arguments, and -o FILE given.
   Returns 0 to go on, or 1 to end with *status: 0 after --help, else a usage error (printed). */
static int synth_parse(int argc, char **argv, struct dsa_option *opts, const char *const *usage,
                       const char *what, const char *const *out, int *status)
{
    int n = dsa_opt_parse(&argc, argv, opts, usage);
    if (n < 0)
        *status = dsa_opt_exit(n);
    else if (n > 0)
        *status = usage_error("unexpected argument '%s'", argv[0]);
    else if (!*out)
        *status = usage_error("%s: -o FILE is required", what);
    else
        return 0;
    return 1;
}

static int synth_mrcr(int argc, char **argv)
{
    static const char *const usage[] = {
        "dsa-eval datasets synth mrcr [--needles N,..] [--bins 8k,16k,..|--max-bin K] "
        "[--per-bin N] [--seed S] -o FILE",
        NULL};
    const char *needles = "8", *bins = NULL, *max_bin = NULL, *out = NULL;
    int per_bin = 5;
    long seed = 1;
    struct dsa_option opts[] = {
        DSA_OPT_STRING(0, "needles", &needles, "N,..", "needle counts to make (default 8)"),
        DSA_OPT_STRING(0, "bins", &bins, "EDGES", "bins by upper edge: 8k,16k,..,1m (default 8k)"),
        DSA_OPT_STRING(0, "max-bin", &max_bin, "K", "all bins up to edge K instead of --bins"),
        DSA_OPT_INT(0, "per-bin", &per_bin, "N", "rows per needle count and bin (default 5)"),
        DSA_OPT_LONG(0, "seed", &seed, "S", "seed of the generator (default 1)"),
        DSA_OPT_STRING('o', "output", &out, "FILE", "write the JSONL here ('-' = stdout)"),
        DSA_OPT_END(),
    };
    int status;
    if (synth_parse(argc, argv, opts, usage, "synth mrcr", &out, &status))
        return status;
    if (bins && max_bin)
        return usage_error("%s: give --bins or --max-bin, not both", "synth mrcr");
    if (per_bin < 1 || per_bin > 100000) {
        char got[24];
        snprintf(got, sizeof got, "%d", per_bin);
        return usage_error("--per-bin must be 1..100000, not %s", got);
    }
    if (seed < 0)
        return usage_error("--seed must not be negative%s", "");
    struct dsa_synth_mrcr_opts o = {0, 0, per_bin, (unsigned long)seed, &dsa_interrupted};
    if (dsa_mrcr_parse_needles(needles, &o.needles_mask))
        return DSA_EXIT_USAGE;
    if (max_bin ? dsa_mrcr_parse_max_bin(max_bin, &o.bins_mask)
                : dsa_mrcr_parse_bins(bins ? bins : "8k", &o.bins_mask))
        return DSA_EXIT_USAGE;

    if (!strcmp(out, "-")) {
        int r = dsa_synth_mrcr_write(stdout, &o, "<stdout>");
        return r > 0 ? DSA_EXIT_INTERRUPTED : r ? DSA_EXIT_IO : DSA_EXIT_OK;
    }
    /* write beside the target and rename, so a failed run never leaves a partial file */
    struct dsa_atomic a;
    if (dsa_atomic_open(&a, out))
        return DSA_EXIT_IO;
    int bad = dsa_synth_mrcr_write(a.f, &o, out);
    if (bad) {
        dsa_atomic_abort(&a);
        if (bad < 0)
            return DSA_EXIT_IO;
        dsa_errorf("interrupted; '%s' was not written", out);
        return DSA_EXIT_INTERRUPTED;
    }
    return dsa_atomic_commit(&a) ? DSA_EXIT_IO : DSA_EXIT_OK;
}

/* writes the samples beside the target and renames, as synth mrcr: a failed run leaves none */
static int write_ruler(const char *out, const struct dsa_ruler_opts *o)
{
    struct dsa_atomic a;
    FILE *f = stdout;
    bool to_stdout = !strcmp(out, "-");
    if (!to_stdout) {
        if (dsa_atomic_open(&a, out))
            return DSA_EXIT_IO;
        f = a.f;
    }
    int rc = dsa_ruler_samples_write(f, o);
    if (!rc)
        return to_stdout || !dsa_atomic_commit(&a) ? DSA_EXIT_OK : DSA_EXIT_IO;
    if (!to_stdout)
        dsa_atomic_abort(&a);
    if (rc == DSA_RULER_EINTR) {
        dsa_errorf("interrupted; '%s' was not written", out);
        return DSA_EXIT_INTERRUPTED;
    }
    if (rc == DSA_RULER_ESTOP) {
        dsa_errorf("cannot write '%s': %s", out, strerror(errno));
        return DSA_EXIT_IO;
    }
    dsa_errorf("cannot make a RULER sample: %s", dsa_ruler_strerror(rc));
    return DSA_EXIT_DATA;
}

static int synth_ruler(int argc, char **argv)
{
    static const char *const usage[] = {
        "dsa-eval datasets synth ruler [--tasks LIST] [--lengths LIST] [--limit N] [--seed N] "
        "[--haystack FILE] -o FILE",
        NULL};
    const char *tasks = "all", *lengths = "4k,8k,16k", *haystack = NULL, *out = NULL;
    int limit = 10;
    long seed = 0;
    struct dsa_option opts[] = {
        DSA_OPT_STRING(0, "tasks", &tasks, "LIST", "niah_single_1,…,vt,cwe or all (default all)"),
        DSA_OPT_STRING(0, "lengths", &lengths, "LIST", "4k,8k,16k,…,1m or all (default 4k,8k,16k)"),
        DSA_OPT_INT(0, "limit", &limit, "N", "samples per task and length (default 10)"),
        DSA_OPT_LONG(0, "seed", &seed, "N", "sample seed (default 0), as dsa-eval ruler's"),
        DSA_OPT_STRING(0, "haystack", &haystack, "FILE",
                       "essay text or PaulGrahamEssays.json (default: the shipped substitute)"),
        DSA_OPT_STRING('o', "output", &out, "FILE", "write the JSONL here ('-' = stdout)"),
        DSA_OPT_END(),
    };
    int status;
    if (synth_parse(argc, argv, opts, usage, "synth ruler", &out, &status))
        return status;
    if (limit < 1 || seed < 0)
        return usage_error("--limit must be >= 1 and --seed >= 0%s", "");
    struct dsa_ruler_opts o = {0, 0, limit, (unsigned long)seed, NULL, &dsa_interrupted};
    const char *bad = NULL;
    if (dsa_ruler_parse_tasks(tasks, &o.tasks_mask, &bad)) {
        dsa_errorf("unknown RULER task '%s' (see docs/ruler.md \"Tasks\")", bad ? bad : tasks);
        return DSA_EXIT_USAGE;
    }
    if (dsa_ruler_parse_lengths(lengths, &o.lengths_mask, &bad)) {
        dsa_errorf("unknown RULER length '%s' (4k, 8k, …, 1m)", bad ? bad : lengths);
        return DSA_EXIT_USAGE;
    }
    int herr = 0;
    dsa_ruler_haystack *h = dsa_ruler_haystack_new(haystack, &herr);
    if (!h) {
        dsa_errorf("cannot use haystack '%s': %s", haystack ? haystack : "(shipped)",
                   dsa_ruler_strerror(herr));
        return DSA_EXIT_DATA;
    }
    o.haystack = h;
    int ret = write_ruler(out, &o);
    dsa_ruler_haystack_free(&h);
    return ret;
}

/*
 * file      mrcr-small.jsonl
 * sha256    3f2a…
 * revision  unknown
 * bins      explicit ("bin"/"context_tokens" in every row)
 * rows      15
 *
 * needles    ≤8K   ≤16K   ≤32K  total
 *       8      5      5      5     15
 */
/* --verify: every row read in full (prompt parsed), and the invariants of docs/mrcr.md "The
 dataset" counted; the real data may break an invariant on some rows, so they are reported, not
 fatal.
 *   verified  15 rows read in full
 *             answer starts with random_string_to_prepend: 15/15
 *             total_messages = len(messages): 15/15
 *             answer = prefix + messages[desired_msg_index+1]: 15/15
 */
static int verify_mrcr(dsa_mrcr_reader *rd)
{
    struct dsa_mrcr_row row = {0};
    long rows = 0, n_total = 0, n_needle = 0, n_prefix = 0;
    int got;
    while ((got = dsa_mrcr_next(rd, &row)) > 0) {
        rows++;
        size_t nm = json_array_size(row.messages);
        n_total += row.total_messages == (long)nm;
        size_t pl = strlen(row.prefix);
        bool prefixed = row.answer_len >= pl && !memcmp(row.answer, row.prefix, pl);
        n_prefix += prefixed;
        if (prefixed && row.desired_msg_index >= 0 && (size_t)row.desired_msg_index + 1 < nm) {
            json_t *c = json_object_get(
                json_array_get(row.messages, (size_t)row.desired_msg_index + 1), "content");
            n_needle += json_string_length(c) == row.answer_len - pl &&
                        !memcmp(json_string_value(c), row.answer + pl, row.answer_len - pl);
        }
        if (dsa_interrupted)
            break;
    }
    dsa_mrcr_row_release(&row);
    if (got < 0)
        return DSA_EXIT_DATA;
    if (dsa_interrupted)
        return DSA_EXIT_INTERRUPTED;
    printf("verified  %ld rows read in full\n", rows);
    printf("          answer starts with random_string_to_prepend: %ld/%ld\n", n_prefix, rows);
    printf("          total_messages = len(messages): %ld/%ld\n", n_total, rows);
    printf("          answer = prefix + messages[desired_msg_index+1]: %ld/%ld\n", n_needle, rows);
    return DSA_EXIT_OK;
}

static int info_mrcr(const char *path, bool verify)
{
    dsa_mrcr_reader *rd = dsa_mrcr_open(path, NULL);
    if (!rd)
        return DSA_EXIT_DATA;
    const char *rev = dsa_mrcr_revision(rd);
    static const char *const source[] = {
        [DSA_MRCR_BINS_OFFICIAL] = "official (openai/mrcr block map, sanity check passed)",
        [DSA_MRCR_BINS_EXPLICIT] = "explicit (\"bin\"/\"context_tokens\" in every row)",
        /* parenthesised: clang's -Wstring-concatenation flags a split literal in an array */
        [DSA_MRCR_BINS_MIXED] = ("mixed (official block map for some needle counts, explicit "
                                 "for others)"),
    };
    long total = 0, col[DSA_MRCR_NBINS] = {0};
    for (int n = 1; n <= DSA_MRCR_MAX_NEEDLES; n++)
        for (int k = 0; k < DSA_MRCR_NBINS; k++) {
            total += dsa_mrcr_nrows(rd, n, k);
            col[k] += dsa_mrcr_nrows(rd, n, k);
        }
    printf("file      %s\n", path);
    printf("dataset   MRCR\n");
    printf("sha256    %s\n", dsa_mrcr_sha256(rd));
    printf("revision  %s\n", rev ? rev : "unknown (not fetched by dsa-eval)");
    printf("bins      %s\n", source[dsa_mrcr_bins_source(rd)]);
    printf("rows      %ld\n\n", total);
    printf("needles");
    for (int k = 0; k < DSA_MRCR_NBINS; k++)
        if (col[k]) /* labels hold one 3-byte '≤': pad by display width */
            printf(" %*s", 6 + 2, dsa_mrcr_bin_label(k));
    printf("  total\n");
    for (int n = 1; n <= DSA_MRCR_MAX_NEEDLES; n++) {
        long row = 0;
        for (int k = 0; k < DSA_MRCR_NBINS; k++)
            row += dsa_mrcr_nrows(rd, n, k);
        if (!row)
            continue;
        printf("%7d", n);
        for (int k = 0; k < DSA_MRCR_NBINS; k++)
            if (col[k])
                printf(" %6ld", dsa_mrcr_nrows(rd, n, k));
        printf(" %6ld\n", row);
    }
    int ret = DSA_EXIT_OK;
    if (verify) {
        printf("\n");
        ret = verify_mrcr(rd);
    }
    dsa_mrcr_free(&rd);
    return ret;
}

static int info(int argc, char **argv)
{
    static const char *const usage[] = {"dsa-eval datasets info [--verify] FILE...", NULL};
    bool verify = false;
    struct dsa_option opts[] = {
        DSA_OPT_BOOL(0, "verify", &verify,
                     "mrcr: read every row in full and count the message-layout invariants"),
        DSA_OPT_END(),
    };
    int n = dsa_opt_parse(&argc, argv, opts, usage);
    if (n < 0)
        return dsa_opt_exit(n);
    if (n == 0)
        return usage_error("%s: give at least one FILE", "info");
    /* info only reads: the reader's first pass does not poll the flag, so let SIGINT end
       the process at once rather than be deferred until the file is read */
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    int ret = DSA_EXIT_OK;
    for (int i = 0; i < n; i++) {
        if (i)
            printf("\n");
        bool sample = !strncmp(argv[i], DSA_SAMPLE_PREFIX, strlen(DSA_SAMPLE_PREFIX));
        int r = !sample && dsa_fetch_is_gsm8k(argv[i]) ? dsa_fetch_info_gsm8k(argv[i])
                                                       : info_mrcr(argv[i], verify);
        if (r && !ret)
            ret = r;
    }
    return ret;
}

static int fetch(int argc, char **argv)
{
    static const char *const usage[] = {
        "dsa-eval datasets fetch mrcr [--needles 2,4,8] [--revision SHA] [--base-url URL] "
        "[--hub-url URL] [--page-rows L]",
        "dsa-eval datasets fetch gsm8k [--split test|train|all] [--base-url URL]", NULL};
    const char *needles = "8";
    bool quiet = false;
    struct dsa_fetch_opts o = {0};
    o.page_rows = 4; /* rows are up to ~5 MB each: small pages keep each answer small */
    o.split = "all";
    o.interrupted = &dsa_interrupted;
    struct dsa_option opts[] = {
        DSA_OPT_STRING(0, "needles", &needles, "N,..", "mrcr: needle counts (default 8)"),
        DSA_OPT_STRING(0, "revision", &o.revision, "SHA",
                       "mrcr: revision the rows must come from (default " DSA_MRCR_DEFAULT_REVISION
                       ")"),
        DSA_OPT_STRING(0, "base-url", &o.base_url, "URL",
                       "mirror of the rows API (mrcr; env DSA_EVAL_HF_BASE) or of the GSM8K "
                       "repository (gsm8k; env DSA_EVAL_GSM8K_BASE); file:// works"),
        DSA_OPT_STRING(0, "hub-url", &o.hub_url, "URL",
                       "mrcr: the Hub API that names the current revision (env "
                       "DSA_EVAL_HUB_BASE)"),
        DSA_OPT_INT(0, "page-rows", &o.page_rows, "L",
                    "mrcr: rows per request, 1..100 (default 4)"),
        DSA_OPT_STRING(0, "split", &o.split, "S", "gsm8k: test, train or all (default all)"),
        DSA_OPT_BOOL('q', "quiet", &quiet, "no progress on stderr"),
        DSA_OPT_END(),
    };
    int n = dsa_opt_parse(&argc, argv, opts, usage);
    if (n < 0)
        return dsa_opt_exit(n);
    if (n != 1)
        return usage_error("%s: name one dataset: mrcr or gsm8k", "fetch");
    if (quiet)
        dsa_msg_quiet = true;
    if (!strcmp(argv[0], "mrcr")) {
        if (dsa_mrcr_parse_needles(needles, &o.needles_mask))
            return DSA_EXIT_USAGE;
        return dsa_fetch_mrcr(&o);
    }
    if (!strcmp(argv[0], "gsm8k"))
        return dsa_fetch_gsm8k(&o);
    return usage_error("'%s' is not a dataset dsa-eval fetches (mrcr, gsm8k)", argv[0]);
}

int cmd_datasets(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        FILE *out = argc < 2 ? stderr : stdout;
        fprintf(out, "usage: %s\n", datasets_usage[0]);
        for (const char *const *u = datasets_usage + 1; *u; u++)
            fprintf(out, "   or: %s\n", *u);
        fprintf(out, "\nsee docs/datasets.md for the row schema, the cache and the tokenizer\n");
        return argc < 2 ? DSA_EXIT_USAGE : DSA_EXIT_OK;
    }
    const char *sub = argv[1];
    if (!strcmp(sub, "synth")) {
        if (argc >= 3 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h"))) {
            printf("usage: %s\n", datasets_usage[0]);
            return DSA_EXIT_OK;
        }
        if (argc >= 3 && !strcmp(argv[2], "ruler"))
            return synth_ruler(argc - 2, argv + 2);
        if (argc < 3 || strcmp(argv[2], "mrcr"))
            return usage_error("%s: 'synth mrcr' or 'synth ruler'", "synth");
        return synth_mrcr(argc - 2, argv + 2);
    }
    if (!strcmp(sub, "fetch"))
        return fetch(argc - 1, argv + 1);
    if (!strcmp(sub, "info"))
        return info(argc - 1, argv + 1);
    return usage_error("'%s' is not a datasets subcommand (synth, fetch, info)", sub);
}
