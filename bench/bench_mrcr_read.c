/*
 * bench_mrcr_read: the MRCR dataset reader as `dsa-eval mrcr --dataset FILE` uses it
 * (dsa_mrcr_open(): pass 1 with the sha256 and the bin check; dsa_mrcr_next() for every row
 * the filter keeps, each parsed in full, prompt messages included), on a file of your choice,
 * against the I/O floor measured in the same run (fread of the same file, 64 KiB at a time).
 * Timed: the whole file, and `--limit N` (at most N rows per (needles, bin)). CPU seconds
 * (getrusage of this process), best of --rounds; peak RSS of the process at the end.
 * Reference, same work in the same run: CPython (DSA_PYTHON, default python3) reading the
 * file line by line with hashlib.sha256 of every byte, json.loads of every row and of its
 * prompt (the message list), timed inside Python with time.process_time(), best of --rounds.
 *
 *   bench_mrcr_read [--rounds 3] [--limit 3] FILE
 *   e.g. dsa-eval datasets synth mrcr --needles 2,4,8 --bins 8k,16k,32k,64k --per-bin 25 -o F
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "datasets/mrcr.h"
#include "util/buf.h"

static double cpu_now(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
           (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

static double time_fread(const char *path, size_t *bytes)
{
    double t0 = cpu_now();
    FILE *f = fopen(path, "rb");
    if (!f)
        exit(1);
    static char chunk[1 << 16]; /* read and dropped: the peak RSS stays the reader's */
    size_t n;
    *bytes = 0;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        *bytes += n;
    fclose(f);
    return cpu_now() - t0;
}

static const char py_script[] = "import hashlib, json, sys, time\n"
                                "best = None\n"
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
                                "    best = t if best is None or t < best else best\n"
                                "print(best)\n";

/* CPU seconds of the CPython reference, best of `rounds` */
static double time_python(const char *path, int rounds)
{
    const char *py = getenv("DSA_PYTHON");
    char script[] = "/tmp/bench_mrcr_read_XXXXXX";
    int fd = mkstemp(script);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f || fputs(py_script, f) < 0 || fclose(f)) {
        fprintf(stderr, "bench_mrcr_read: cannot write the CPython script\n");
        exit(1);
    }
    struct dsa_buf cmd = DSA_BUF_INIT;
    dsa_buf_addf(&cmd, "'%s' '%s' '%s' %d", py ? py : "python3", script, path, rounds);
    FILE *p = popen(cmd.data, "r");
    double t = -1;
    if (!p || fscanf(p, "%lf", &t) != 1 || pclose(p) != 0) {
        fprintf(stderr, "bench_mrcr_read: the CPython side failed\n");
        exit(1);
    }
    remove(script);
    dsa_buf_release(&cmd);
    return t;
}

/* open + every kept row; returns CPU seconds, *rows = rows returned */
static double time_read(const char *path, long limit, long *rows)
{
    struct dsa_mrcr_filter flt = {0, 0, limit};
    double t0 = cpu_now();
    dsa_mrcr_reader *rd = dsa_mrcr_open(path, &flt);
    if (!rd)
        exit(1);
    struct dsa_mrcr_row row = {0};
    *rows = 0;
    int got;
    while ((got = dsa_mrcr_next(rd, &row)) > 0)
        (*rows)++;
    dsa_mrcr_row_release(&row);
    dsa_mrcr_free(&rd);
    if (got < 0)
        exit(1);
    return cpu_now() - t0;
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
    double tf = 1e30, ta = 1e30, tl = 1e30;
    size_t bytes = 0;
    long all_rows = 0, lim_rows = 0;
    for (int r = 0; r < rounds; r++) {
        double t = time_fread(path, &bytes);
        tf = t < tf ? t : tf;
        t = time_read(path, 0, &all_rows);
        ta = t < ta ? t : ta;
        t = time_read(path, limit, &lim_rows);
        tl = t < tl ? t : tl;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru); /* the peak is the reader's (CPython is a child) */
    double tp = time_python(path, rounds);
    double mb = (double)bytes / 1e6;
    printf("MRCR reader on %.1f MB, CPU seconds, best of %d rounds\n", mb, rounds);
    printf("  fread floor             %.3f s  %7.0f MB/s\n", tf, mb / tf);
    printf("  whole file (%5ld rows)  %.3f s  %7.0f MB/s  (%.1fx the floor)\n", all_rows, ta,
           mb / ta, ta / tf);
    printf("  --limit %ld (%5ld rows)   %.3f s  %7.0f MB/s of the file\n", limit, lim_rows, tl,
           mb / tl);
    printf("  CPython (sha256 + json.loads of each row and its prompt)  %.3f s  %7.0f MB/s\n", tp,
           mb / tp);
    printf("  ratio CPython / whole file: %.2fx\n", tp / ta);
    printf("  peak RSS %.1f MB\n", (double)ru.ru_maxrss / 1024.0);
    return 0;
}
