/*
 * bench_grade: MRCR grading throughput of the C grader vs CPython's difflib on the same
 * pairs, both timed in this run. The pairs are the real (response, answer, prefix) rows of
 * the MRCR logs (default: the four log subsets of tests/data/mrcr, 291 lines, 269 graded
 * pairs; $DSA_DATA overrides tests/data). CPython runs the official grade() of docs/mrcr.md
 * "Grading" in a
 * subprocess ($DSA_PYTHON, else python3 on PATH) that times only its grading loop; both
 * sides are timed in CPU seconds, one thread each; the scores of both sides are also
 * compared bit for bit (exit 1 if any differs).
 *
 *   bench_grade [--reps N] [--py-reps N] [LOG.jsonl ...]   (rounds: C 10, CPython 3)
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "common.h"
#include "evals/mrcr_grade.h"
#include "util/buf.h"
#include "util/lines.h"

struct pair {
    char *resp, *ans, *prefix;
    size_t nresp, nans, nprefix;
};

static char *dup_str(json_t *s, size_t *n)
{
    *n = json_string_length(s);
    char *p = dsa_xmalloc(*n + 1);
    memcpy(p, json_string_value(s), *n + 1);
    return p;
}

/* The graded rows of one log: model_response, ground_truth, prefix from the question. */
static void load_log(const char *path, struct pair **pairs, size_t *n, size_t *cap)
{
    dsa_lines *in = dsa_lines_open(path);
    if (!in)
        exit(1);
    const char *line;
    size_t len;
    while (dsa_lines_next(in, &line, &len) > 0) {
        json_error_t err;
        json_t *row = json_loadb(line, len, 0, &err);
        json_t *r = json_object_get(row, "model_response");
        json_t *a = json_object_get(row, "ground_truth");
        json_t *q = json_object_get(json_object_get(row, "input"), "content");
        if (json_is_string(r) && json_is_string(a) && json_is_string(q) &&
            !strncmp(json_string_value(q), "Prepend ", 8)) {
            if (*n == *cap) {
                *cap = *cap ? 2 * *cap : 1024;
                *pairs = dsa_xrealloc(*pairs, *cap * sizeof **pairs);
            }
            struct pair *p = &(*pairs)[(*n)++];
            p->resp = dup_str(r, &p->nresp);
            p->ans = dup_str(a, &p->nans);
            const char *qs = json_string_value(q) + 8;
            p->nprefix = strcspn(qs, " ");
            p->prefix = dsa_xstrndup(qs, p->nprefix);
        }
        json_decref(row);
    }
    dsa_lines_free(&in);
}

static const char py_bench[] =
    "import json, sys, time, platform\n"
    "from difflib import SequenceMatcher\n"
    "def grade(response, answer, random_string_to_prepend) -> float:\n"
    "    if not response.startswith(random_string_to_prepend):\n"
    "        return 0\n"
    "    response = response.removeprefix(random_string_to_prepend)\n"
    "    answer = answer.removeprefix(random_string_to_prepend)\n"
    "    return float(SequenceMatcher(None, response, answer).ratio())\n"
    "rows = [json.loads(l) for l in open(sys.argv[1], encoding='utf-8')]\n"
    "reps = int(sys.argv[3])\n"
    "t = 1e300\n"
    "for _ in range(reps):\n"
    "    t0 = time.process_time()\n"
    "    scores = [float(grade(d['response'], d['answer'], d['prefix'])) for d in rows]\n"
    "    t = min(t, time.process_time() - t0)\n"
    "with open(sys.argv[2], 'w') as out:\n"
    "    out.write('%r %s\\n' % (t, platform.python_version()))\n"
    "    for s in scores:\n"
    "        out.write(s.hex() + '\\n')\n";

int main(int argc, char **argv)
{
    int reps = 10, py_reps = 3;
    struct pair *pairs = NULL;
    size_t n = 0, cap = 0;
    int nfiles = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
            reps = atoi(argv[++i]);
            continue;
        }
        if (!strcmp(argv[i], "--py-reps") && i + 1 < argc) {
            py_reps = atoi(argv[++i]);
            continue;
        }
        load_log(argv[i], &pairs, &n, &cap);
        nfiles++;
    }
    if (!nfiles) {
        static const char *const logs[] = {"evaluation_log_gemini_3_pro_8needle.jsonl",
                                           "evaluation_log_gemini_3_pro_2needle.jsonl",
                                           "evaluation_log_gemini_3_flash_8needle.jsonl",
                                           "evaluation_log_gemini_3_flash_2needle.jsonl"};
        const char *data = getenv("DSA_DATA");
        if (!data || !*data)
            data = DSA_SOURCE_DIR "/tests/data";
        for (size_t k = 0; k < sizeof logs / sizeof logs[0]; k++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/mrcr/%s", data, logs[k]);
            load_log(path, &pairs, &n, &cap);
        }
    }
    if (!n) {
        fprintf(stderr, "bench_grade: no pairs\n");
        return 1;
    }
    size_t chars = 0;
    for (size_t i = 0; i < n; i++)
        chars += pairs[i].nresp + pairs[i].nans;

    /* C: `reps` rounds over all pairs; the fastest round counts (the least disturbed by
       other processes on a shared machine), as for CPython below */
    double *scores = dsa_xmalloc(n * sizeof *scores);
    double tc = 1e300;
    for (int r = 0; r < reps; r++) {
        double t0 = bench_cpu_seconds();
        for (size_t i = 0; i < n; i++) {
            struct dsa_mrcr_grade g;
            if (dsa_mrcr_grade(pairs[i].resp, pairs[i].nresp, pairs[i].ans, pairs[i].nans,
                               pairs[i].prefix, pairs[i].nprefix, &g) < 0) {
                fprintf(stderr, "bench_grade: pair %zu is not UTF-8\n", i);
                return 1;
            }
            scores[i] = g.score;
        }
        double t = bench_cpu_seconds() - t0;
        if (t < tc)
            tc = t;
    }
    double c_rate = (double)n / tc;
    printf("pairs: %zu (%.1f MB of response+answer)\n", n, (double)chars / 1e6);
    printf("C grader:      %8.3f s CPU per round of %zu pairs (best of %d) = %10.0f pairs/s\n", tc,
           n, reps, c_rate);

    /* CPython, same pairs, timed inside the subprocess */
    const char *py = getenv("DSA_PYTHON");
    if (!py || !*py)
        py = "python3";
    char dir[] = "/tmp/dsa-bench-grade.XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char in[256], out[256], script[256], cmd[1200];
    snprintf(in, sizeof in, "%s/pairs.jsonl", dir);
    snprintf(out, sizeof out, "%s/scores.txt", dir);
    snprintf(script, sizeof script, "%s/bench.py", dir);
    FILE *f = fopen(in, "w");
    for (size_t i = 0; i < n; i++) {
        json_t *o =
            json_pack("{s:s%,s:s%,s:s%}", "response", pairs[i].resp, pairs[i].nresp, "answer",
                      pairs[i].ans, pairs[i].nans, "prefix", pairs[i].prefix, pairs[i].nprefix);
        json_dumpf(o, f, JSON_COMPACT);
        fputc('\n', f);
        json_decref(o);
    }
    fclose(f);
    f = fopen(script, "w");
    fputs(py_bench, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' '%s' %d", py, script, in, out, py_reps);
    int rc = system(cmd);
    int ret = 0;
    f = rc == 0 ? fopen(out, "r") : NULL;
    if (!f) {
        printf("CPython: not run (%s failed)\n", py);
        ret = 1;
    } else {
        double tp;
        char ver[64];
        if (fscanf(f, "%lf %63s", &tp, ver) != 2)
            return 1;
        size_t same = 0;
        char hex[64];
        for (size_t i = 0; i < n && fscanf(f, "%63s", hex) == 1; i++)
            same += strtod(hex, NULL) == scores[i] &&
                    memcmp(&(double){strtod(hex, NULL)}, &scores[i], sizeof(double)) == 0;
        fclose(f);
        double py_rate = (double)n / tp;
        printf("CPython %-7s %8.3f s CPU per round of %zu pairs (best of %d) = %10.0f pairs/s\n",
               ver, tp, n, py_reps, py_rate);
        printf("speedup: %.1fx (C / CPython, one thread each)\n", c_rate / py_rate);
        printf("identical scores: %zu / %zu\n", same, n);
        if (same != n)
            ret = 1;
    }
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        ret = 1;
    for (size_t i = 0; i < n; i++) {
        free(pairs[i].resp);
        free(pairs[i].ans);
        free(pairs[i].prefix);
    }
    free(pairs);
    free(scores);
    return ret;
}
