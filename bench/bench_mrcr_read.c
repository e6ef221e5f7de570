/*
 * bench_mrcr_read: the MRCR dataset reader as `dsa-eval mrcr --dataset FILE` uses it
 * (dsa_mrcr_open(): pass 1 with the sha256 and the bin check; dsa_mrcr_next() for every row
 * the filter keeps, each parsed in full, prompt messages included), on a file of your choice,
 * against the I/O floor measured in the same run (fread of the same file, 64 KiB at a time).
 * Timed: the whole file with the messages as a jansson tree (in-process runs), the whole file
 * with the messages as compact JSON (dsa_mrcr_set_messages_json: endpoint runs), and
 * `--limit N` (at most N rows per (needles, bin), tree). CPU seconds
 * (getrusage of this process), min and median of --rounds; peak RSS of the process at the end.
 * Reference, same work in the same run: CPython (DSA_PYTHON, default python3) reading the
 * file line by line with hashlib.sha256 of every byte, json.loads of every row and of its
 * prompt (the message list), timed inside Python with time.process_time(), min and median of
 * --rounds.
 * --parts adds the reader's pieces, each timed alone over the file held in memory (inner
 * figures, labelled so): the sha256 of every byte, the check pass's parse of each line, the row
 * pass's parse of each line with its prompt written as compact JSON, and a memcpy of each line.
 *
 *   bench_mrcr_read [--rounds 3] [--limit 3] [--parts] FILE
 *   e.g. dsa-eval datasets synth mrcr --needles 2,4,8 --bins 8k,16k,32k,64k --per-bin 25 -o F
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "common.h"
#include "datasets/mrcr.h"
#include "util/buf.h"
#include "util/hash.h"
#include "util/json_simd.h"
#include "util/lines.h"

static double time_fread(const char *path, size_t *bytes)
{
    double t0 = bench_cpu_seconds();
    FILE *f = fopen(path, "rb");
    if (!f)
        exit(1);
    static char chunk[1 << 16]; /* read and dropped: the peak RSS stays the reader's */
    size_t n;
    *bytes = 0;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        *bytes += n;
    fclose(f);
    return bench_cpu_seconds() - t0;
}

static const char py_script[] = "import hashlib, json, sys, time\n"
                                "ts = []\n"
                                "for _ in range(int(sys.argv[2])):\n"
                                "    t = time.process_time()\n"
                                "    h = hashlib.sha256()\n"
                                "    with open(sys.argv[1], 'rb') as f:\n"
                                "        for line in f:\n"
                                "            h.update(line)\n"
                                "            if line.strip():\n"
                                "                json.loads(json.loads(line)['prompt'])\n"
                                "    h.hexdigest()\n"
                                "    t = time.process_time() - t\n"
                                "    ts.append(t)\n"
                                "ts.sort()\n"
                                "print(ts[0], ts[len(ts) // 2])\n";

/* CPU seconds of the CPython reference over `rounds`: min and median */
static void time_python(const char *path, int rounds, double *min, double *median)
{
    double t[2];
    bench_python("bench_mrcr_read", py_script, path, rounds, t, 2);
    *min = t[0];
    *median = t[1];
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* --parts: the reader's pieces, each timed alone over the file's lines held in memory (inner
   figures: no read(2), no line search), to tell which costs any two-pass reader keeps. */
struct mem_lines {
    struct dsa_buf data; /* the lines as dsa_lines returns them, each NUL-terminated */
    size_t n, cap;
    size_t *off, *len;
};

/* the non-empty lines of path, read with the reader's own line splitter; DSA_JSIMD_PADDING
   readable bytes follow the last one */
static void load_lines(const char *path, struct mem_lines *m)
{
    dsa_lines *l = dsa_lines_open(path);
    if (!l)
        exit(1);
    memset(m, 0, sizeof *m);
    const char *line;
    size_t len;
    int got;
    while ((got = dsa_lines_next(l, &line, &len)) > 0) {
        if (!len)
            continue;
        if (m->n == m->cap) {
            m->cap = m->cap ? 2 * m->cap : 1024;
            m->off = dsa_xrealloc(m->off, m->cap * sizeof *m->off);
            m->len = dsa_xrealloc(m->len, m->cap * sizeof *m->len);
        }
        m->off[m->n] = m->data.len;
        m->len[m->n++] = len;
        dsa_buf_add(&m->data, line, len + 1); /* its NUL too */
    }
    dsa_lines_free(&l);
    if (got < 0)
        exit(1);
    static const char pad[DSA_JSIMD_PADDING];
    dsa_buf_add(&m->data, pad, sizeof pad);
}

enum part { PART_SHA, PART_PICK, PART_DUMPED, PART_COPY, NPARTS };
static const char *const part_names[NPARTS] = {
    "sha256 of every byte (check pass)", "the check pass's parse (dsa_jsimd_pick)",
    "the row pass's parse (dsa_jsimd_load_dumped)", "memcpy of every line (a copy's floor)"};

/* one piece over every line; the hash takes len + 1 bytes a line, as many as the file's */
static void run_part(const char *line, size_t len, enum part p, dsa_sha256 *h, struct dsa_buf *b)
{
    static const char *const head[] = {"n_needles", "n_chars", "context_tokens", "bin", NULL};
    static const char *const required[] = {"role", "content", NULL};
    json_t *o = NULL;
    bool dumped = false;
    dsa_buf_reset(b);
    switch (p) {
    case PART_SHA:
        dsa_sha256_update(h, line, len + 1);
        return;
    case PART_PICK:
        o = dsa_jsimd_pick(line, len, true, head);
        break;
    case PART_DUMPED:
        o = dsa_jsimd_load_dumped(line, len, true, "prompt", required, b, &dumped);
        break;
    default:
        dsa_buf_add(b, line, len);
        return;
    }
    if (!o) {
        fprintf(stderr, "bench_mrcr_read: a line was declined by simdjson\n");
        exit(1);
    }
    json_decref(o);
}

static double time_part(const struct mem_lines *m, enum part p)
{
    struct dsa_buf b = DSA_BUF_INIT;
    dsa_sha256 *h = dsa_sha256_new();
    char hex[65];
    double t0 = bench_cpu_seconds();
    for (size_t i = 0; i < m->n; i++)
        run_part(m->data.data + m->off[i], m->len[i], p, h, &b);
    dsa_sha256_final_hex(h, hex);
    double t = bench_cpu_seconds() - t0;
    dsa_sha256_free(&h);
    dsa_buf_release(&b);
    return t;
}

static void print_parts(const char *path, int rounds)
{
    struct mem_lines m;
    load_lines(path, &m);
    double *t = dsa_xcalloc((size_t)rounds * NPARTS, sizeof *t);
    for (int r = 0; r < rounds; r++)
        for (int p = 0; p < NPARTS; p++)
            t[p * rounds + r] = time_part(&m, (enum part)p);
    double mb = (double)(m.data.len - DSA_JSIMD_PADDING) / 1e6; /* lines and their ends */
    printf("parts, each alone over the %zu lines in memory (inner figures), CPU s min (median):\n",
           m.n);
    for (int p = 0; p < NPARTS; p++) {
        double *tp = t + p * rounds;
        qsort(tp, (size_t)rounds, sizeof *tp, cmp_double);
        printf("  %-46s %.3f s  %6.0f MB/s  (median %.3f s)\n", part_names[p], tp[0], mb / tp[0],
               tp[rounds / 2]);
    }
    free(t);
    dsa_buf_release(&m.data);
    free(m.off);
    free(m.len);
}

/* open + every kept row (json: as endpoint runs read them); returns CPU seconds, *rows =
   rows returned */
static double time_read(const char *path, long limit, bool json, long *rows)
{
    struct dsa_mrcr_filter flt = {0, 0, limit};
    double t0 = bench_cpu_seconds();
    dsa_mrcr_reader *rd = dsa_mrcr_open(path, &flt);
    if (!rd)
        exit(1);
    if (json)
        dsa_mrcr_set_messages_json(rd);
    struct dsa_mrcr_row row = {0};
    *rows = 0;
    int got;
    while ((got = dsa_mrcr_next(rd, &row)) > 0)
        (*rows)++;
    dsa_mrcr_row_release(&row);
    dsa_mrcr_free(&rd);
    if (got < 0)
        exit(1);
    return bench_cpu_seconds() - t0;
}

int main(int argc, char **argv)
{
    int rounds = 3;
    long limit = 3;
    bool parts = false;
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--limit") && i + 1 < argc)
            limit = atol(argv[++i]);
        else if (!strcmp(argv[i], "--parts"))
            parts = true;
        else
            path = argv[i];
    }
    if (!path || rounds < 1 || limit < 1) {
        fprintf(stderr, "usage: bench_mrcr_read [--rounds N] [--limit N] [--parts] FILE\n");
        return 2;
    }
    double *tf = dsa_xcalloc((size_t)rounds, sizeof *tf),
           *ta = dsa_xcalloc((size_t)rounds, sizeof *ta),
           *tl = dsa_xcalloc((size_t)rounds, sizeof *tl),
           *tj = dsa_xcalloc((size_t)rounds, sizeof *tj);
    size_t bytes = 0;
    long all_rows = 0, lim_rows = 0;
    for (int r = 0; r < rounds; r++) {
        tf[r] = time_fread(path, &bytes);
        ta[r] = time_read(path, 0, false, &all_rows);
        tj[r] = time_read(path, 0, true, &all_rows);
        tl[r] = time_read(path, limit, false, &lim_rows);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru); /* the peak is the reader's (CPython is a child) */
    double pmin, pmed;
    time_python(path, rounds, &pmin, &pmed);
    qsort(tf, (size_t)rounds, sizeof *tf, cmp_double);
    qsort(ta, (size_t)rounds, sizeof *ta, cmp_double);
    qsort(tl, (size_t)rounds, sizeof *tl, cmp_double);
    qsort(tj, (size_t)rounds, sizeof *tj, cmp_double);
    double mb = (double)bytes / 1e6, amed = ta[rounds / 2], lmed = tl[rounds / 2],
           jmed = tj[rounds / 2];
    printf("MRCR reader on %.1f MB, CPU seconds over %d rounds: min (median)\n", mb, rounds);
    printf("  fread floor             %.3f s  %7.0f MB/s\n", tf[0], mb / tf[0]);
    printf("  whole file (%5ld rows)  %.3f s  %7.0f MB/s  (median %.3f s  %4.0f MB/s)\n", all_rows,
           ta[0], mb / ta[0], amed, mb / amed);
    printf("  whole file, as JSON     %.3f s  %7.0f MB/s  (median %.3f s  %4.0f MB/s)\n", tj[0],
           mb / tj[0], jmed, mb / jmed);
    printf("  --limit %ld (%5ld rows)   %.3f s  %7.0f MB/s of the file  (median %.3f s)\n", limit,
           lim_rows, tl[0], mb / tl[0], lmed);
    printf("  CPython, same work      %.3f s  %7.0f MB/s  (median %.3f s  %4.0f MB/s)\n", pmin,
           mb / pmin, pmed, mb / pmed);
    printf("  ratio CPython / whole file: min %.2fx median %.2fx\n", pmin / ta[0], pmed / amed);
    printf("  peak RSS %.1f MB\n", (double)ru.ru_maxrss / 1024.0);
    if (parts)
        print_parts(path, rounds);
    free(tf);
    free(ta);
    free(tl);
    free(tj);
    return 0;
}
