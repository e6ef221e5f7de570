/*
 * Benchmark of datasets/: the built-in tokenizer and the MRCR reader on synthetic rows of
 * the largest bin (~5 MB, ~1M tokens each), each against a floor measured in the same run:
 *   tokenizer  vs a byte loop that counts whitespace-delimited words (no regex, no hashing)
 *   reader     vs fread of the same file into a buffer (the I/O floor)
 * Usage: bench_datasets [ROWS]   (default 3 rows; the file goes to $TMPDIR or /tmp)
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "datasets/mrcr.h"
#include "datasets/synth.h"
#include "datasets/tokenize.h"
#include "util/buf.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* the floor: one pass over the bytes, counting word starts */
static size_t count_words(const char *s, size_t n)
{
    size_t w = 0;
    int in = 0;
    for (size_t i = 0; i < n; i++) {
        int sp = s[i] == ' ' || s[i] == '\n' || s[i] == '\t';
        w += !sp && !in;
        in = !sp;
    }
    return w;
}

int main(int argc, char **argv)
{
    int rows = argc > 1 ? atoi(argv[1]) : 3;
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char path[512];
    snprintf(path, sizeof path, "%s/bench-datasets-%ld.jsonl", dir, (long)getpid());

    double t0 = now();
    FILE *f = fopen(path, "wb");
    struct dsa_synth_mrcr_opts o = {1u << 8, 1u << 7, rows, 1, NULL};
    if (!f || dsa_synth_mrcr_write(f, &o, path) || fclose(f))
        return 1;
    double t_synth = now() - t0;

    /* raw read floor */
    t0 = now();
    f = fopen(path, "rb");
    struct dsa_buf all = DSA_BUF_INIT;
    char chunk[1 << 16];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        dsa_buf_add(&all, chunk, n);
    fclose(f);
    double t_fread = now() - t0;

    /* the reader: both passes, every row parsed in full */
    t0 = now();
    dsa_mrcr_reader *rd = dsa_mrcr_open(path, NULL);
    struct dsa_mrcr_row row = {0};
    struct dsa_buf text = DSA_BUF_INIT;
    long got = 0;
    while (rd && dsa_mrcr_next(rd, &row) > 0) {
        got++;
        size_t i;
        json_t *m;
        if (got == 1) /* keep the first row's contents for the tokenizer runs */
            json_array_foreach(row.messages, i, m)
            {
                dsa_buf_add(&text, json_string_value(json_object_get(m, "content")),
                            json_string_length(json_object_get(m, "content")));
                dsa_buf_addch(&text, '\n');
            }
    }
    double t_read = now() - t0;
    dsa_mrcr_row_release(&row);
    dsa_mrcr_free(&rd);

    t0 = now();
    size_t words = count_words(text.data, text.len);
    double t_words = now() - t0;
    t0 = now();
    size_t toks = dsa_tok_count(text.data, text.len);
    double t_tok = now() - t0;

    double mb = (double)all.len / 1e6, tmb = (double)text.len / 1e6;
    printf("synth     %d rows of bin <=1M, %.1f MB in %.2f s (%.1f MB/s)\n", rows, mb, t_synth,
           mb / t_synth);
    printf("reader    %ld rows, %.1f MB in %.3f s: %.1f MB/s; fread floor %.1f MB/s; ratio %.1fx\n",
           got, mb, t_read, mb / t_read, mb / t_fread, t_read / t_fread);
    printf("tokenizer %.1f MB, %zu tokens in %.3f s: %.1f MB/s, %.2f Mtok/s; word-count floor "
           "%.0f MB/s (%zu words); ratio %.1fx\n",
           tmb, toks, t_tok, tmb / t_tok, (double)toks / t_tok / 1e6, tmb / t_words, words,
           t_tok / t_words);
    if (!words)
        return 1; /* keeps the floor loop from being optimised away */
    dsa_buf_release(&all);
    dsa_buf_release(&text);
    unlink(path);
    return got == rows ? 0 : 1;
}
