/*
 * What every fuzz target shares: the libFuzzer entry point (defined by each fuzz_*.c, called
 * by driver.c under ctest or by libFuzzer), copies of the input that make overreads show,
 * and the input as a file.
 * The input `data` is not NUL-terminated and may hold NULs; a parser given a copy from here
 * reads past its `size` only into bytes AddressSanitizer guards.
 * Ownership: the copies are the caller's to free(); NULL when out of memory (return 0).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_TESTS_FUZZ_H
#define DSA_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* exactly `size` bytes (a 1-byte block when empty): any read past the end is caught */
static inline void *fuzz_copy(const uint8_t *data, size_t size)
{
    void *p = malloc(size ? size : 1);
    if (p && size)
        memcpy(p, data, size);
    return p;
}

/* `size` bytes and a NUL, for parsers that take C strings: they must not rely on the NUL
   (there may be NULs before it) nor read beyond it */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
    char *p = malloc(size + 1);
    if (p) {
        if (size)
            memcpy(p, data, size);
        p[size] = '\0';
    }
    return p;
}

static inline char *fuzz_path_slot_(void)
{
    static char path[256];
    return path;
}

static inline void fuzz_remove_file_(void)
{
    unlink(fuzz_path_slot_());
}

/* The input written to a file, for readers that stream files by design. One file per process
   (on tmpfs when there is one: 20k rewrites stay off the disk), made at first use with
   `suffix` ending its name, removed at exit. Returns its path; aborts if it cannot write. */
static inline const char *fuzz_input_file(const uint8_t *data, size_t size, const char *suffix)
{
    char *path = fuzz_path_slot_();
    if (!path[0]) {
        const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm"
                          : getenv("TMPDIR")            ? getenv("TMPDIR")
                                                        : "/tmp";
        snprintf(path, 256, "%s/dsa-fuzz-XXXXXX%s", dir, suffix);
        int fd = mkstemps(path, (int)strlen(suffix));
        if (fd < 0)
            abort();
        close(fd);
        atexit(fuzz_remove_file_);
    }
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f))
        abort();
    return path;
}

#endif
