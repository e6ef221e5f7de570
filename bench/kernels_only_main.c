/*
 * The DSA_KERNELS_ONLY binary: `dsa-eval kernels check …` and `kernels bench …`, nothing else.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "util/exitcode.h"
#include "util/msg.h"

volatile int dsa_interrupted;

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "kernels")) {
        dsa_errorf("this is a kernels-only build: use 'dsa-eval kernels check|bench …'");
        return DSA_EXIT_USAGE;
    }
    int rc = cmd_kernels(argc - 1, argv + 1);
    if (fflush(stdout) || ferror(stdout))
        return rc ? rc : DSA_EXIT_IO;
    return rc;
}
