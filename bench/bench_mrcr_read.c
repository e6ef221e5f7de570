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
 *
 *   bench_mrcr_read [--rounds 3] [--limit 3] FILE
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
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--limit") && i + 1 < argc)
            limit = atol(argv[++i]);
        else
            path = argv[i];
    }
    if (!path || rounds < 1 || limit < 1) {
        fprintf(stderr, "usage: bench_mrcr_read [--rounds N] [--limit N] FILE\n");
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
    free(tf);
    free(ta);
    free(tl);
    free(tj);
    return 0;
}
