/*
 * Stand-alone driver for the fuzz targets when libFuzzer is not linked (gcc builds, CI).
 * It replays every file of the corpus folders given on the command line through
 * LLVMFuzzerTestOneInput, then runs --iterations seeded mutations of them (byte flips,
 * truncations, insertions, splices), so the parsers' error paths run under the sanitizers
 * on every CI build. A crash or sanitizer report fails the ctest case.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

struct input {
    uint8_t *data;
    size_t size;
};

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;

/* splitmix64: tiny, seeded, and the same sequence on every platform */
static uint64_t next_rand(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static int load_file(const char *path, struct input *in)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t cap = 4096, len = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            uint8_t *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf)
        return -1;
    in->data = buf;
    in->size = len;
    return 0;
}

static void mutate(const struct input *a, const struct input *b, struct input *out)
{
    size_t cap = a->size + b->size + 64;
    out->data = malloc(cap);
    memcpy(out->data, a->data, a->size);
    out->size = a->size;
    int rounds = 1 + (int)(next_rand() % 4);
    for (int r = 0; r < rounds; r++) {
        switch (next_rand() % 6) {
        case 0: /* flip a byte */
            if (out->size)
                out->data[next_rand() % out->size] ^= (uint8_t)(1u << (next_rand() % 8));
            break;
        case 1: /* truncate */
            if (out->size)
                out->size = next_rand() % out->size;
            break;
        case 2: /* insert an interesting byte */
            if (out->size + 1 < cap) {
                static const uint8_t interesting[] = {'"',  '\\', '{',  '}',  '[',  ']', ',', ':',
                                                      '\n', 0,    0xff, 0xc3, 0xed, '0', '-', 'e'};
                size_t at = out->size ? next_rand() % (out->size + 1) : 0;
                memmove(out->data + at + 1, out->data + at, out->size - at);
                out->data[at] = interesting[next_rand() % sizeof interesting];
                out->size++;
            }
            break;
        case 3: /* delete a span */
            if (out->size > 1) {
                size_t at = next_rand() % out->size;
                size_t n = 1 + next_rand() % (out->size - at);
                memmove(out->data + at, out->data + at + n, out->size - at - n);
                out->size -= n;
            }
            break;
        case 4: /* splice in a piece of the other input */
            if (b->size) {
                size_t from = next_rand() % b->size;
                size_t n = 1 + next_rand() % (b->size - from);
                if (out->size + n > cap)
                    n = cap - out->size;
                size_t at = out->size ? next_rand() % (out->size + 1) : 0;
                memmove(out->data + at + n, out->data + at, out->size - at);
                memcpy(out->data + at, b->data + from, n);
                out->size += n;
            }
            break;
        default: /* duplicate a byte run */
            if (out->size && out->size < cap - 8) {
                size_t at = next_rand() % out->size;
                size_t n = 1 + next_rand() % 8;
                if (at + n > out->size)
                    n = out->size - at;
                memmove(out->data + at + n, out->data + at, out->size - at);
                out->size += n;
            }
            break;
        }
    }
}

int main(int argc, char **argv)
{
    long iterations = 0;
    struct input *inputs = NULL;
    size_t n = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--iterations") && i + 1 < argc) {
            iterations = strtol(argv[++i], NULL, 10);
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (!d) {
            struct input in;
            if (load_file(argv[i], &in) == 0) {
                inputs = realloc(inputs, (n + 1) * sizeof *inputs);
                inputs[n++] = in;
            }
            continue;
        }
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
            struct input in;
            if (load_file(path, &in) == 0) {
                inputs = realloc(inputs, (n + 1) * sizeof *inputs);
                inputs[n++] = in;
            }
        }
        closedir(d);
    }
    static const uint8_t empty[1];
    LLVMFuzzerTestOneInput(empty, 0);
    for (size_t i = 0; i < n; i++)
        LLVMFuzzerTestOneInput(inputs[i].data, inputs[i].size);
    for (long it = 0; it < iterations && n; it++) {
        struct input m;
        mutate(&inputs[next_rand() % n], &inputs[next_rand() % n], &m);
        LLVMFuzzerTestOneInput(m.data, m.size);
        free(m.data);
    }
    printf("fuzz driver: %zu corpus inputs, %ld mutations, no crash\n", n, iterations);
    for (size_t i = 0; i < n; i++)
        free(inputs[i].data);
    free(inputs);
    return 0;
}
