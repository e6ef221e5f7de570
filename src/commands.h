/*
 * The subcommands of dsa-eval.
 *
 * Adding a subcommand:
 *  1. write src/cmd_<name>.c exporting only `int cmd_<name>(int argc, char **argv)`; it owns
 *     its usage[] lines and its struct dsa_option table (util/opt.h) and returns an
 *     enum dsa_exit (util/exitcode.h);
 *  2. declare it below and add its row to commands[] in src/main.c (sorted by name);
 *  3. document it in README.md (usage, options, output, exit codes);
 *  4. add tests: tests/unit/test_<module>.c for its machinery and tests/cli/tNNNN-<name>.sh
 *     for the command line (the help test tests/cli/t0001-help.sh runs `<name> --help` for
 *     every row of the table automatically).
 * The dispatcher (main.c) checks once that stdout was written and closed without error, so a
 * command never has to handle a failed write to stdout itself.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_COMMANDS_H
#define DSA_COMMANDS_H

enum dsa_command_flags {
    /* the command may run long: install SIGINT/SIGTERM handlers that set dsa_interrupted */
    DSA_CMD_INTERRUPTIBLE = (1 << 0),
};

struct dsa_command {
    const char *name;
    int (*fn)(int argc, char **argv);
    unsigned flags;
    const char *summary;
};

/* Set by the signal handlers of DSA_CMD_INTERRUPTIBLE commands; long loops poll it, stop
   issuing work, flush what finished and return DSA_EXIT_INTERRUPTED. */
extern volatile int dsa_interrupted;

/* The table, for `dsa-eval help` and tests. Ends with a row whose name is NULL. */
extern const struct dsa_command dsa_commands[];

int cmd_compare(int argc, char **argv);
int cmd_datasets(int argc, char **argv);
int cmd_grade(int argc, char **argv);
int cmd_grade_gsm8k(int argc, char **argv);
int cmd_gsm8k(int argc, char **argv);
int cmd_kernels(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_mrcr(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_ruler(int argc, char **argv);
int cmd_version(int argc, char **argv);

/* sub-commands of `dsa-eval grade` (rows of grade_subs[] in src/cmd_grade.c) */

#endif
