/*
 * What the benchmarks share: the CPU clock both sides of a ratio are timed with, and the run
 * of a CPython reference script. Linked into every bench_*.c (bench/CMakeLists.txt).
 * Ownership: the strings passed are borrowed.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_BENCH_COMMON_H
#define DSA_BENCH_COMMON_H

/* CPU seconds (user + system) of this process: the build machine is shared, and CPU time is
   what both sides are charged for (the CPython side uses time.process_time()). */
double bench_cpu_seconds(void);

/* Writes script to a temporary file, runs it as `$DSA_PYTHON script path rounds` (python3
   without $DSA_PYTHON) and reads nout numbers from its output into out[]. A failure ends the
   benchmark (exit 1) with one line naming bench. */
void bench_python(const char *bench, const char *script, const char *path, int rounds, double *out,
                  int nout);

/* One long option of a benchmark: "--name N" sets *value. */
struct bench_arg {
    const char *name; /* without the dashes */
    long *value;
};

/* Reads argv's --name N options (args ends with {NULL, NULL}) through dsa_opt_parse; --help
   prints usage and ends with 0, a bad option ends with 2 (printed). */
void bench_args(int argc, char **argv, const char *usage, const struct bench_arg *args);

#endif
