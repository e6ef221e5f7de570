/*
 * bench_grade_json: the JSON reading of `grade mrcr` alone, against CPython's json module on
 * the same bytes in the same run. The C side is the reader the command uses on every line
 * (dsa_mrcr_fields_stream(): yajl's event parser keeping the members grading needs); also
 * timed, for comparison, jansson's json_loadb of the whole line (the reader before). The
 * CPython side is json.loads of every line, in a subprocess that times only that loop. All
 * sides: the lines already in memory, one thread, CPU time (CLOCK_PROCESS_CPUTIME_ID /
 * time.process_time()), best of several rounds.
 *
 *   bench_grade_json [--rounds N] FILE.jsonl     (e.g. bench/make_grade_pairs.py's output)
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "common.h"
#include "evals/mrcr_grade_fields.h"
#include "util/buf.h"
#include "util/lines.h"

struct lines {
    char **text;
    size_t *len, n, bytes;
};

static void load(const char *path, struct lines *ls)
{
    dsa_lines *in = dsa_lines_open(path);
    if (!in)
        exit(1);
    const char *line;
    size_t len, cap = 0;
    while (dsa_lines_next(in, &line, &len) > 0) {
        if (ls->n == cap) {
            cap = cap ? 2 * cap : 1024;
            ls->text = dsa_xrealloc(ls->text, cap * sizeof *ls->text);
            ls->len = dsa_xrealloc(ls->len, cap * sizeof *ls->len);
        }
        ls->text[ls->n] = dsa_xstrndup(line, len);
        ls->len[ls->n++] = len;
        ls->bytes += len + 1;
    }
    dsa_lines_free(&in);
}

static double round_stream(const struct lines *ls)
{
    double t0 = bench_cpu_seconds();
    for (size_t i = 0; i < ls->n; i++) {
        struct dsa_mrcr_fields mf;
        dsa_mrcr_fields_init(&mf);
        if (dsa_mrcr_fields_stream(ls->text[i], ls->len[i], &mf) < 0) {
            fprintf(stderr, "bench_grade_json: line %zu declined by the stream reader\n", i + 1);
            exit(1);
        }
        dsa_mrcr_fields_release(&mf);
    }
    return bench_cpu_seconds() - t0;
}

static double round_jansson(const struct lines *ls)
{
    double t0 = bench_cpu_seconds();
    for (size_t i = 0; i < ls->n; i++) {
        json_t *root =
            json_loadb(ls->text[i], ls->len[i], JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);
        json_decref(root);
    }
    return bench_cpu_seconds() - t0;
}

static const char py_script[] = "import json, sys, time\n"
                                "lines = open(sys.argv[1], encoding='utf-8').read().splitlines()\n"
                                "best = None\n"
                                "for _ in range(int(sys.argv[2])):\n"
                                "    t = time.process_time()\n"
                                "    for l in lines:\n"
                                "        json.loads(l)\n"
                                "    t = time.process_time() - t\n"
                                "    best = t if best is None or t < best else best\n"
                                "print(best)\n";

static double round_python(const char *path, int rounds)
{
    double t;
    bench_python("bench_grade_json", py_script, path, rounds, &t, 1);
    return t;
}

int main(int argc, char **argv)
{
    int rounds = 5;
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else
            path = argv[i];
    }
    if (!path || rounds < 1) {
        fprintf(stderr, "usage: bench_grade_json [--rounds N] FILE.jsonl\n");
        return 2;
    }
    struct lines ls = {0};
    load(path, &ls);
    double s = 1e30, j = 1e30;
    for (int r = 0; r < rounds; r++) {
        double t = round_stream(&ls);
        s = t < s ? t : s;
        t = round_jansson(&ls);
        j = t < j ? t : j;
    }
    double py = round_python(path, rounds);
    double mb = (double)ls.bytes / 1e6;
    printf("JSON reading of %zu lines (%.1f MB), CPU seconds, best of %d rounds\n", ls.n, mb,
           rounds);
    printf("  dsa-eval (yajl, members kept)  %.3f s  %6.0f MB/s\n", s, mb / s);
    printf("  jansson json_loadb (a tree)    %.3f s  %6.0f MB/s\n", j, mb / j);
    printf("  CPython json.loads             %.3f s  %6.0f MB/s\n", py, mb / py);
    printf("  ratio CPython / dsa-eval: %.2fx\n", py / s);
    for (size_t i = 0; i < ls.n; i++)
        free(ls.text[i]);
    free(ls.text);
    free(ls.len);
    return 0;
}
