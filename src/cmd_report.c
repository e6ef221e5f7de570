/*
 * dsa-eval report: renders a comparison (two run sets, or a document saved by
 * `compare --json`) as Markdown, a self-contained HTML page with SVG plots, CSV or JSON.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "reports/report.h"
#include "stats/compare.h"
#include "util/exitcode.h"
#include "util/fs.h"
#include "util/msg.h"
#include "util/opt.h"

static const char *const usage[] = {
    "dsa-eval report BASELINE CANDIDATE [--format md|html|csv|json] [-o FILE]",
    "dsa-eval report CMP.json [--format ...]   (a document saved by 'compare --json')",
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
    int (*render)(const json_t *, FILE *) = !strcmp(format, "md")     ? dsa_report_md
                                            : !strcmp(format, "html") ? dsa_report_html
                                            : !strcmp(format, "csv")  ? dsa_report_csv
                                            : !strcmp(format, "json") ? dsa_report_json
                                                                      : NULL;
    if (!render) {
        dsa_errorf("--format must be md, html, csv or json, not '%s'", format);
        return DSA_EXIT_USAGE;
    }
    if (n != 1 && n != 2) {
        dsa_errorf("report needs BASELINE and CANDIDATE run sets, or one comparison document");
        return DSA_EXIT_USAGE;
    }
    struct dsa_cmp_opts o;
    if (dsa_cmp_cli_apply(&cli, &o) < 0)
        return DSA_EXIT_USAGE;
    json_t *doc = NULL;
    if (n == 1) {
        doc = load_doc(argv[0]);
        if (!doc)
            return DSA_EXIT_DATA;
    } else {
        int ret = dsa_cmp_load_build(argv[0], argv[1], cli.baseline_aa, &o, &doc);
        if (ret)
            return ret;
    }
    int ret = DSA_EXIT_OK;
    if (out_path) {
        /* whole or not at all: a kill or a full disk leaves the previous report in place */
        struct dsa_atomic a;
        if (dsa_atomic_open(&a, out_path) < 0) {
            ret = DSA_EXIT_IO;
        } else if (render(doc, a.f) < 0) {
            dsa_errorf("cannot write '%s': %s", out_path, strerror(errno ? errno : EIO));
            dsa_atomic_abort(&a);
            ret = DSA_EXIT_IO;
        } else if (dsa_atomic_commit(&a) < 0) {
            ret = DSA_EXIT_IO;
        }
    } else if (render(doc, stdout) < 0) {
        ret = DSA_EXIT_IO; /* main.c reports the failed write */
    }
    json_decref(doc);
    return ret;
}
