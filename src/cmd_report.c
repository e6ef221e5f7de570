/*
 * dsa-eval report: renders a comparison (two run sets, or a document saved by
 * `compare --json`) as Markdown, a self-contained HTML page with SVG plots, CSV or JSON.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "evals/evals.h"
#include "reports/report.h"
#include "stats/compare.h"
#include "util/buf.h"
#include "util/exitcode.h"
#include "util/fs.h"
#include "util/msg.h"
#include "util/opt.h"

static const char *const usage[] = {
    "dsa-eval report BASELINE CANDIDATE [--format md|html|csv|json] [-o FILE]",
    "dsa-eval report CMP.json [--format ...]   (a document saved by 'compare --json')",
    "dsa-eval report MRCR_BASE MRCR_CAND GSM8K_BASE GSM8K_CAND ... | CMP.json CMP2.json ...",
    "",
    "Several comparisons (pairs of run sets and saved documents, in any mix) make one md or",
    "html document: one verdict line per comparison, then each one's tables.",
    NULL,
};

static json_t *load_doc(const char *path)
{
    json_error_t err;
    struct stat st;
    /* jansson's own open error reads "unable to open X: … (line -1)": say it plainly */
    if (stat(path, &st)) {
        dsa_errorf("cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    if (S_ISDIR(st.st_mode)) {
        dsa_errorf("'%s' is a directory: give a document saved by 'compare --json', or "
                   "BASELINE CANDIDATE",
                   path);
        return NULL;
    }
    json_t *doc = json_load_file(path, JSON_DECODE_ANY, &err);
    if (!doc) {
        dsa_errorf("cannot parse '%s': %s (line %d)", path, err.text, err.line);
        return NULL;
    }
    if (!json_is_object(doc) || !json_is_array(json_object_get(doc, "bins")) ||
        !json_is_object(json_object_get(doc, "method"))) {
        dsa_errorf("'%s' is not a comparison document (from 'dsa-eval compare --json')", path);
        json_decref(doc);
        return NULL;
    }
    return doc;
}

/* A saved comparison document, told from a run set without parsing the whole file: a
   regular file whose first non-blank bytes open an object with the key "dsa_eval_compare"
   (compare --json writes it first). Run files and score files start with other keys. */
static bool is_doc(const char *path)
{
    struct stat st;
    if (stat(path, &st) || !S_ISREG(st.st_mode))
        return false;
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    char head[256];
    size_t n = fread(head, 1, sizeof head - 1, f);
    fclose(f);
    head[n] = 0;
    const char *p = head;
    while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
        p++;
    if (*p++ != '{')
        return false;
    while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
        p++;
    return !strncmp(p, "\"dsa_eval_compare\"", 18);
}

/* The comparisons named by the arguments, in order: each a saved document, or a pair of
   run sets (BASELINE CANDIDATE). Returns the count, or -1 after printing why. */
static int load_all(int n, char **argv, const struct dsa_cmp_opts *o, const char *aa, json_t ***out,
                    int *status)
{
    json_t **docs = dsa_xcalloc((size_t)n + 1, sizeof *docs);
    int nd = 0;
    *status = DSA_EXIT_OK;
    for (int k = 0; k < n && !*status;) {
        if (is_doc(argv[k]) || (n == 1 && k == 0)) {
            docs[nd] = load_doc(argv[k++]);
            *status = docs[nd] ? DSA_EXIT_OK : DSA_EXIT_DATA;
        } else if (k + 1 < n && !is_doc(argv[k + 1])) {
            *status = dsa_cmp_load_build(argv[k], argv[k + 1], aa, o, &docs[nd]);
            k += 2;
        } else {
            dsa_errorf("'%s' has no CANDIDATE run set beside it (give run sets in pairs, "
                       "BASELINE CANDIDATE)",
                       argv[k]);
            *status = DSA_EXIT_USAGE;
        }
        if (!*status)
            nd++;
    }
    if (*status) {
        for (int k = 0; k < nd; k++)
            json_decref(docs[k]);
        free(docs);
        return -1;
    }
    *out = docs;
    return nd;
}

static int render_all(const char *format, json_t **docs, int nd, FILE *out)
{
    const json_t *const *cd = (const json_t *const *)docs;
    if (!strcmp(format, "md"))
        return dsa_report_md_many(cd, (size_t)nd, out);
    if (!strcmp(format, "html"))
        return dsa_report_html_many(cd, (size_t)nd, out);
    return !strcmp(format, "csv") ? dsa_report_csv(docs[0], out) : dsa_report_json(docs[0], out);
}

int cmd_report(int argc, char **argv)
{
    const char *format = "md", *out_path = NULL;
    struct dsa_cmp_cli cli = DSA_CMP_CLI_INIT;
    struct dsa_option opts[] = {
        DSA_OPT_STRING(0, "format", &format, "FMT", "md (default), html, csv or json"),
        DSA_OPT_STRING('o', "output", &out_path, "FILE", "write here instead of stdout"),
        DSA_CMP_CLI_OPTIONS(&cli),
        DSA_OPT_END(),
    };
    int n = dsa_opt_parse(&argc, argv, opts, usage);
    if (n < 0)
        return dsa_opt_exit(n);
    bool known = !strcmp(format, "md") || !strcmp(format, "html") || !strcmp(format, "csv") ||
                 !strcmp(format, "json");
    if (!known) {
        dsa_errorf("--format must be md, html, csv or json, not '%s'", format);
        return DSA_EXIT_USAGE;
    }
    if (n < 1) {
        dsa_errorf("report needs BASELINE and CANDIDATE run sets, or one comparison document");
        return DSA_EXIT_USAGE;
    }
    struct dsa_cmp_opts o;
    if (dsa_cmp_cli_apply(&cli, &o) < 0)
        return DSA_EXIT_USAGE;
    dsa_eval_cmp_hooks(&o);
    json_t **docs = NULL;
    int status, nd = load_all(n, argv, &o, cli.baseline_aa, &docs, &status);
    if (nd < 0)
        return status;
    if (nd > 1 && (!strcmp(format, "csv") || !strcmp(format, "json"))) {
        dsa_errorf("--format %s takes one comparison (got %d): use md or html for several", format,
                   nd);
        for (int k = 0; k < nd; k++)
            json_decref(docs[k]);
        free(docs);
        return DSA_EXIT_USAGE;
    }
    int ret = DSA_EXIT_OK;
    if (out_path) {
        /* whole or not at all: a kill or a full disk leaves the previous report in place */
        struct dsa_atomic a;
        if (dsa_atomic_open(&a, out_path) < 0) {
            ret = DSA_EXIT_IO;
        } else if (render_all(format, docs, nd, a.f) < 0) {
            dsa_errorf("cannot write '%s': %s", out_path, strerror(errno ? errno : EIO));
            dsa_atomic_abort(&a);
            ret = DSA_EXIT_IO;
        } else if (dsa_atomic_commit(&a) < 0) {
            ret = DSA_EXIT_IO;
        }
    } else if (render_all(format, docs, nd, stdout) < 0) {
        ret = DSA_EXIT_IO; /* main.c reports the failed write */
    }
    for (int k = 0; k < nd; k++)
        json_decref(docs[k]);
    free(docs);
    return ret;
}
