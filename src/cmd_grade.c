/*
 * dsa-eval grade: regrade outputs offline. One sub-table row per evaluation; each row owns its
 * usage and options. Add a row (e.g. {"gsm8k", grade_gsm8k, ...}) to grade_subs[] to add one.
 *
 *   dsa-eval grade mrcr [--keep-going] [-q] [FILE]     (docs/grade.md)
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "evals/mrcr_grade.h"
#include "util/exitcode.h"
#include "util/json.h"
#include "util/lines.h"
#include "util/fs.h"
#include "util/msg.h"
#include "util/opt.h"

struct grade_sub {
    const char *name;
    dsa_command_fn *fn;
    const char *summary;
};

static dsa_command_fn grade_mrcr;

static const struct grade_sub grade_subs[] = {
    {"gsm8k", cmd_grade_gsm8k,
     "GSM8K answer of {output, gold?} JSONL lines (vllm, cot-strict, gsm8k-strict, flexible)"},
    {"mrcr", grade_mrcr,
     "official MRCR score of (response, answer, prefix) JSONL lines, bit-exact with CPython "
     "difflib"},
    {NULL, NULL, NULL},
};

/* Writes one record; the line number comes first so that `sort -n` and humans find it. */
static void write_record(json_t *ids, long lineno, const struct dsa_mrcr_line *ln,
                         enum dsa_mrcr_line_status st)
{
    json_t *rec = json_object();
    json_object_set_new(rec, "line", json_integer(lineno));
    json_object_update(rec, ids);
    if (st == DSA_MRCR_LINE_GRADED) {
        json_object_set_new(rec, "score", json_real(ln->grade.score));
        json_object_set_new(rec, "prefix_hit", json_boolean(ln->grade.prefix_hit));
        json_object_set_new(rec, "exact", json_boolean(ln->grade.exact));
    } else {
        json_object_set_new(rec, "skipped", json_string(ln->why));
    }
    char *s = dsa_json_dumps_line(rec);
    fputs(s, stdout);
    fputc('\n', stdout);
    free(s);
    json_decref(rec);
}

static int grade_mrcr(int argc, char **argv)
{
    /* one usage line (util/opt.h prints further lines as alternatives); the input and
       output formats are in docs/grade.md */
    static const char *const usage[] = {"dsa-eval grade mrcr [--keep-going] [-q] [FILE]", NULL};
    bool keep_going = false, quiet = false;
    struct dsa_option opts[] = {
        DSA_OPT_BOOL(0, "keep-going", &keep_going,
                     "report bad lines and continue (exit 1 at the end if any)"),
        DSA_OPT_BOOL('q', "quiet", &quiet, "no summary lines on stderr"),
        DSA_OPT_END(),
    };
    int n = dsa_opt_parse(&argc, argv, opts, usage);
    if (n < 0)
        return dsa_opt_exit(n);
    if (n > 1) {
        dsa_errorf("grade mrcr takes one input file, got %d", n);
        return DSA_EXIT_USAGE;
    }
    dsa_msg_quiet = dsa_msg_quiet || quiet;
    const char *path = n ? argv[0] : "-";
    const char *shown = strcmp(path, "-") ? path : "<stdin>";

    dsa_lines *in = dsa_lines_open(path);
    if (!in)
        return DSA_EXIT_DATA;
    long graded = 0, skipped = 0, badn = 0, hits = 0, exact = 0;
    double sum = 0.0;
    int ret = DSA_EXIT_OK;
    const char *line;
    size_t len;
    int got;
    while ((got = dsa_lines_next(in, &line, &len)) > 0) {
        long lineno = dsa_lines_lineno(in);
        struct dsa_mrcr_line ln;
        enum dsa_mrcr_line_status st = dsa_mrcr_grade_line(line, len, &ln);
        if (st == DSA_MRCR_LINE_BAD) {
            if (ln.parse_error)
                dsa_errorf("cannot parse line %ld of '%s': %s", lineno, shown, ln.why);
            else
                dsa_errorf("line %ld of '%s': %s", lineno, shown, ln.why);
            badn++;
            if (!keep_going) {
                ret = DSA_EXIT_DATA;
                goto cleanup;
            }
            continue;
        }
        write_record(ln.ids, lineno, &ln, st);
        json_decref(ln.ids);
        if (ferror(stdout))
            break; /* a closed pipe (| head): reported below, no use grading the rest */
        if (st == DSA_MRCR_LINE_SKIPPED) {
            skipped++;
            continue;
        }
        graded++;
        sum += ln.grade.score;
        hits += ln.grade.prefix_hit;
        exact += ln.grade.exact;
    }
    if (got < 0) {
        ret = DSA_EXIT_DATA;
        goto cleanup;
    }
    if (dsa_lines_lineno(in) == 0) {
        dsa_errorf("no input lines in '%s'", shown);
        ret = DSA_EXIT_DATA;
        goto cleanup;
    }
    /* a summary after records that never reached stdout would read as success */
    if (fflush(stdout) || ferror(stdout)) {
        if (!dsa_fd_reader_gone(STDOUT_FILENO)) /* | head: main() ends quietly */
            dsa_errorf("cannot write to standard output: %s", strerror(errno ? errno : EIO));
        ret = DSA_EXIT_IO;
        goto cleanup;
    }
    if (graded)
        dsa_notef("graded %ld lines of '%s': mean score %.6f, prefix hits %ld, exact %ld", graded,
                  shown, sum / (double)graded, hits, exact);
    if (skipped)
        dsa_notef("skipped %ld request-error lines of '%s' (no response, not scored)", skipped,
                  shown);
    if (badn) {
        dsa_errorf("%ld bad lines in '%s'", badn, shown);
        ret = DSA_EXIT_FAIL;
    }
cleanup:
    dsa_lines_free(&in);
    return ret;
}

static void grade_usage(FILE *out)
{
    fprintf(out,
            "usage: dsa-eval grade <eval> [options] [FILE]   (dsa-eval grade <eval> --help)\n\n"
            "Regrades recorded outputs offline. Reads JSON Lines from FILE (default: stdin),\n"
            "writes one JSON line per input line to stdout (docs/grade.md).\n\nevals:\n");
    for (const struct grade_sub *s = grade_subs; s->name; s++)
        fprintf(out, "    %-8s %s\n", s->name, s->summary);
}

int cmd_grade(int argc, char **argv)
{
    if (argc < 2) {
        grade_usage(stderr);
        return DSA_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        grade_usage(stdout);
        return DSA_EXIT_OK;
    }
    for (const struct grade_sub *s = grade_subs; s->name; s++)
        if (!strcmp(s->name, argv[1]))
            return s->fn(argc - 1, argv + 1);
    dsa_errorf("'%s' is not an eval of 'grade' (see 'dsa-eval grade --help')", argv[1]);
    return DSA_EXIT_USAGE;
}
