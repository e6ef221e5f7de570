/*
 * dsa-eval grade gsm8k: offline GSM8K answer extraction (a row of `dsa-eval grade`'s
 * sub-table, src/cmd_grade.c). Reads JSONL lines {"output": "...", "gold": "18"?} (a GSM8K
 * run file works too: its header line is skipped) and writes one line per input:
 *     {"line": 3, "pred": "18", "correct": true}
 * pred is the string lm-eval's filter returns before normalisation (cot-strict, gsm8k-strict,
 * flexible) or the decimal integer of vLLM's rule (vllm), "[invalid]" when nothing is found;
 * "correct" only when the line has a gold answer; "id" and "idx" are copied when present.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "evals/gsm8k_extract.h"
#include "util/exitcode.h"
#include "util/json.h"
#include "util/lines.h"
#include "util/fs.h"
#include "util/msg.h"
#include "util/opt.h"

static void emit(json_t *rec)
{
    char *s = dsa_json_dumps_line(rec);
    fputs(s, stdout);
    fputc('\n', stdout);
    free(s);
}

/* The gold answer of a line as text: a string, or an integer written in decimal. */
static bool gold_of(json_t *obj, char *num, size_t num_size, const char **gold, size_t *len,
                    const struct dsa_json_where *w)
{
    json_t *g = json_object_get(obj, "gold");
    *gold = NULL;
    *len = 0;
    if (!g || json_is_null(g))
        return true;
    if (json_is_string(g)) {
        *gold = json_string_value(g);
        *len = json_string_length(g);
        return true;
    }
    if (json_is_integer(g)) {
        snprintf(num, num_size, "%" JSON_INTEGER_FORMAT, json_integer_value(g));
        *gold = num;
        *len = strlen(num);
        return true;
    }
    dsa_errorf("line %ld of '%s': \"gold\" must be a string or an integer", w->lineno, w->path);
    return false;
}

int cmd_grade_gsm8k(int argc, char **argv)
{
    static const char *const usage[] = {
        "dsa-eval grade gsm8k [--extract MODE] [--keep-going] [-q] [FILE]",
        "",
        "Extracts the GSM8K answer of each JSONL line {\"output\", \"gold\"?} (FILE or stdin)",
        "and writes {\"line\", \"pred\", \"correct\"?}. MODE: vllm (default; vLLM/SGLang's last",
        "integer), cot-strict ('The answer is N.'), gsm8k-strict ('#### N'), flexible (lm-eval",
        "flexible-extract). correct uses lm-eval's exact_match normalisation, or vLLM's rule.",
        NULL,
    };
    const char *mode_name = "vllm";
    bool keep_going = false, quiet = false;
    struct dsa_option opts[] = {
        DSA_OPT_STRING(0, "extract", &mode_name, "MODE",
                       "vllm, cot-strict, gsm8k-strict or flexible"),
        DSA_OPT_BOOL(0, "keep-going", &keep_going,
                     "report a bad line as {\"line\", \"skipped\"} and continue"),
        DSA_OPT_BOOL('q', "quiet", &quiet, "no summary note on stderr"),
        DSA_OPT_END(),
    };
    int npos = dsa_opt_parse(&argc, argv, opts, usage);
    if (npos < 0)
        return dsa_opt_exit(npos);
    if (npos > 1) {
        dsa_errorf("grade gsm8k reads one FILE (or stdin), not %d", npos);
        return DSA_EXIT_USAGE;
    }
    enum dsa_gsm8k_extract_mode mode;
    if (dsa_gsm8k_extract_parse(mode_name, &mode)) {
        dsa_errorf("unknown extraction '%s' (vllm, cot-strict, gsm8k-strict, flexible)", mode_name);
        return DSA_EXIT_USAGE;
    }
    dsa_msg_quiet = dsa_msg_quiet || quiet;
    const char *path = npos ? argv[0] : "-";
    dsa_lines *r = dsa_lines_open(path);
    if (!r)
        return DSA_EXIT_DATA; /* an unreadable input is bad input, like grade mrcr's */
    dsa_gsm8k_extractor *x = dsa_gsm8k_extractor_new();
    const char *line;
    size_t len;
    int rc, ret = DSA_EXIT_OK;
    size_t graded = 0, with_gold = 0, correct = 0, skipped = 0, nonblank = 0;
    const char *shown = strcmp(path, "-") ? path : "<stdin>";
    while ((rc = dsa_lines_next(r, &line, &len)) == 1) {
        long lineno = dsa_lines_lineno(r);
        struct dsa_json_where w = {shown, lineno};
        if (len == 0)
            continue;
        nonblank++;
        json_t *obj = dsa_json_parse_record(line, len, &w); /* outputs may hold U+0000 */
        const char *why = NULL;
        const char *text = NULL, *gold = NULL;
        size_t tlen = 0, glen = 0;
        char num[32];
        if (!obj) {
            why = "not a JSON object";
        } else if (json_object_get(obj, "dsa_eval_run")) {
            json_decref(obj); /* a run file's header line */
            continue;
        } else if (!json_object_get(obj, "output")) {
            const char *st = json_string_value(json_object_get(obj, "status"));
            if (st && strcmp(st, "ok")) {
                why = "no output (the request failed)"; /* a failed run record */
            } else {
                dsa_errorf("line %ld of '%s': missing \"output\"", lineno, shown);
                why = "missing \"output\"";
            }
        } else if (!dsa_json_get_str(obj, "output", false, &text, &tlen, &w)) {
            why = "\"output\" must be a string";
        } else if (!gold_of(obj, num, sizeof num, &gold, &glen, &w)) {
            why = "\"gold\" must be a string or an integer";
        }
        json_t *rec = json_pack("{s:I}", "line", (json_int_t)lineno);
        if (obj) {
            json_t *v;
            if ((v = json_object_get(obj, "id")))
                json_object_set(rec, "id", v);
            if ((v = json_object_get(obj, "idx")))
                json_object_set(rec, "idx", v);
        }
        bool hard = why && strncmp(why, "no output", 9);
        if (why) {
            json_object_set_new(rec, "skipped", json_string(why));
            skipped++;
            if (hard && !keep_going) {
                json_decref(rec);
                json_decref(obj);
                ret = DSA_EXIT_DATA;
                break;
            }
        } else {
            char *pred = dsa_gsm8k_extract(x, mode, text, tlen);
            json_object_set_new(rec, "pred", json_string(pred));
            if (gold) {
                bool ok = dsa_gsm8k_is_correct(x, mode, pred, gold, glen);
                json_object_set_new(rec, "correct", json_boolean(ok));
                with_gold++;
                correct += ok;
            }
            graded++;
            free(pred);
        }
        emit(rec);
        json_decref(rec);
        json_decref(obj);
        if (ferror(stdout))
            break; /* a closed pipe (| head): reported below, no use grading the rest */
    }
    if (rc < 0) {
        ret = DSA_EXIT_DATA; /* printed by the reader */
    } else if (ret == DSA_EXIT_OK && !nonblank) {
        dsa_errorf("no input lines in '%s'", shown);
        ret = DSA_EXIT_DATA;
    }
    if (ret == DSA_EXIT_OK && (fflush(stdout) || ferror(stdout))) {
        /* a summary after records that never reached stdout would read as success */
        if (!dsa_fd_reader_gone(STDOUT_FILENO)) /* | head: main() ends quietly */
            dsa_errorf("cannot write to standard output: %s", strerror(errno ? errno : EIO));
        ret = DSA_EXIT_IO;
    }
    if (ret == DSA_EXIT_OK) {
        if (with_gold)
            dsa_notef("%zu graded (%s): %zu/%zu correct (%.4f)%s", graded, mode_name, correct,
                      with_gold, (double)correct / (double)with_gold,
                      skipped ? ", some lines skipped" : "");
        else
            dsa_notef("%zu graded (%s), %zu skipped", graded, mode_name, skipped);
    }
    dsa_lines_free(&r);
    dsa_gsm8k_extractor_free(&x);
    return ret;
}
