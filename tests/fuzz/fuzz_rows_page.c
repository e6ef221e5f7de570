/*
 * Fuzz target: a whole MRCR input file through the reader (datasets/mrcr.c): format
 * detection (JSONL rows, /rows pages one per line, one pretty-printed page), pass 1 (ids,
 * bins, official-layout check), pass 2 (full rows). The input is written to a temporary
 * file because the reader streams files by design.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "datasets/mrcr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[256];

static void remove_tmp(void)
{
    unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!path[0]) {
        /* tmpfs when there is one: 20k rewrites of a small file should not touch a disk */
        struct stat st;
        const char *dir = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm"
                          : getenv("TMPDIR")                                ? getenv("TMPDIR")
                                                                            : "/tmp";
        snprintf(path, sizeof path, "%s/fuzz-rows-page-XXXXXX", dir);
        int fd = mkstemp(path);
        if (fd < 0)
            abort();
        close(fd);
        atexit(remove_tmp);
    }
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f))
        abort();
    struct dsa_mrcr_filter filter = {0, 0, 0};
    dsa_mrcr_reader *rd = dsa_mrcr_open(path, &filter);
    if (rd) {
        struct dsa_mrcr_row row = {0};
        while (dsa_mrcr_next(rd, &row) > 0)
            ;
        dsa_mrcr_row_release(&row);
        dsa_mrcr_free(&rd);
    }
    return 0;
}
