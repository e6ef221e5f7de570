/*
 * What the benchmarks share (common.h).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/opt.h"

double bench_cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void bench_args(int argc, char **argv, const char *usage, const struct bench_arg *args)
{
    struct dsa_option opts[16];
    size_t n = 0;
    for (; args[n].name && n + 1 < sizeof opts / sizeof opts[0]; n++)
        opts[n] = (struct dsa_option)DSA_OPT_LONG(0, args[n].name, args[n].value, "N", "");
    opts[n] = (struct dsa_option)DSA_OPT_END();
    const char *const lines[] = {usage, NULL};
    int npos = dsa_opt_parse(&argc, argv, opts, lines);
    if (npos < 0)
        exit(dsa_opt_exit(npos));
}

void bench_python(const char *bench, const char *script, const char *path, int rounds, double *out,
                  int nout)
{
    const char *py = getenv("DSA_PYTHON");
    char file[] = "/tmp/bench_python_XXXXXX";
    int fd = mkstemp(file);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f || fputs(script, f) < 0 || fclose(f)) {
        fprintf(stderr, "%s: cannot write the CPython script\n", bench);
        exit(1);
    }
    struct dsa_buf cmd = DSA_BUF_INIT;
    dsa_buf_addf(&cmd, "'%s' '%s' '%s' %d", py ? py : "python3", file, path, rounds);
    FILE *p = popen(cmd.data, "r");
    int got = 0;
    while (p && got < nout && fscanf(p, "%lf", &out[got]) == 1)
        got++;
    if (!p || pclose(p) != 0 || got != nout) {
        fprintf(stderr, "%s: the CPython side failed\n", bench);
        exit(1);
    }
    remove(file);
    dsa_buf_release(&cmd);
}
