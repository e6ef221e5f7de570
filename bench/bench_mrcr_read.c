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
    char *data; /* the file, each '\n' replaced by '\0', DSA_JSIMD_PADDING bytes after it */
    size_t bytes, n;
    size_t *off, *len;
};

static void load_lines(const char *path, struct mem_lines *m)
{
    FILE *f = fopen(path, "rb");
    if (!f || fseek(f, 0, SEEK_END) || (m->bytes = (size_t)ftell(f), fseek(f, 0, SEEK_SET)))
        exit(1);
    m->data = dsa_xcalloc(1, m->bytes + DSA_JSIMD_PADDING + 1);
    if (fread(m->data, 1, m->bytes, f) != m->bytes)
        exit(1);
    fclose(f);
    size_t cap = 1024;
    m->off = dsa_xmalloc(cap * sizeof *m->off);
    m->len = dsa_xmalloc(cap * sizeof *m->len);
    m->n = 0;
    for (size_t at = 0; at < m->bytes;) {
        char *nl = memchr(m->data + at, '\n', m->bytes - at);
        size_t end = nl ? (size_t)(nl - m->data) : m->bytes;
        if (m->n == cap) {
            cap *= 2;
            m->off = dsa_xrealloc(m->off, cap * sizeof *m->off);
            m->len = dsa_xrealloc(m->len, cap * sizeof *m->len);
        }
        m->data[end] = '\0';
        if (end > at) {
            m->off[m->n] = at;
            m->len[m->n++] = end - at;
        }
        at = end + 1;
    }
}

enum part { PART_SHA, PART_PICK, PART_DUMPED, PART_COPY, NPARTS };
static const char *const part_names[NPARTS] = {
    "sha256 of every byte (check pass)", "the check pass's parse (dsa_jsimd_pick)",
    "the row pass's parse (dsa_jsimd_load_dumped)", "memcpy of every line (a copy's floor)"};

static double time_part(const struct mem_lines *m, enum part p)
{
    static const char *const head[] = {"n_needles", "n_chars", "context_tokens", "bin", NULL};
    static const char *const required[] = {"role", "content", NULL};
    struct dsa_buf b = DSA_BUF_INIT;
    dsa_sha256 *h = dsa_sha256_new();
    char hex[65];
    double t0 = bench_cpu_seconds();
    for (size_t i = 0; i < m->n; i++) {
        const char *line = m->data + m->off[i];
        json_t *o = NULL;
        bool dumped = false;
        if (p == PART_SHA)
            dsa_sha256_update(h, line, m->len[i] + 1);
        else if (p == PART_PICK)
            o = dsa_jsimd_pick(line, m->len[i], true, head);
        else if (p == PART_DUMPED && (dsa_buf_reset(&b), 1))
            o = dsa_jsimd_load_dumped(line, m->len[i], true, "prompt", required, &b, &dumped);
        else if (p == PART_COPY && (dsa_buf_reset(&b), 1))
            dsa_buf_add(&b, line, m->len[i]);
        if ((p == PART_PICK || p == PART_DUMPED) && !o) {
            fprintf(stderr, "bench_mrcr_read: line %zu was declined by simdjson\n", i + 1);
            exit(1);
        }
        json_decref(o);
    }
    dsa_sha256_final_hex(h, hex);
    double t = bench_cpu_seconds() - t0;
    dsa_sha256_free(&h);
    dsa_buf_release(&b);
    return t;
}

static int cmp_double(const void *a, const void *b);

static void print_parts(const char *path, int rounds)
{
    struct mem_lines m;
    load_lines(path, &m);
    double *t = dsa_xcalloc((size_t)rounds * NPARTS, sizeof *t);
    for (int r = 0; r < rounds; r++)
        for (int p = 0; p < NPARTS; p++)
            t[p * rounds + r] = time_part(&m, (enum part)p);
    double mb = (double)m.bytes / 1e6;
    printf("parts, each alone over the %zu lines in memory (inner figures), CPU s min (median):\n",
           m.n);
    for (int p = 0; p < NPARTS; p++) {
        double *tp = t + p * rounds;
        qsort(tp, (size_t)rounds, sizeof *tp, cmp_double);
        printf("  %-46s %.3f s  %6.0f MB/s  (median %.3f s)\n", part_names[p], tp[0], mb / tp[0],
               tp[rounds / 2]);
    }
    free(t);
    free(m.data);
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
