/*
 * The subcommands of dsa-eval.
 *
 * Adding a subcommand:
 *  1. write src/cmd_<name>.c exporting only `int cmd_<name>(int argc, char **argv)`; it owns
 *     its usage[] lines and its struct dsa_option table (util/opt.h) and returns an
 *     enum dsa_exit (util/exitcode.h);
 *  2. add its name to the dsa_command_fn list below and its row to commands[] in src/main.c (sorted
 * by name);
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

/* Every subcommand's entry: argv[0] is its name; returns an enum dsa_exit. */
typedef int dsa_command_fn(int argc, char **argv);

struct dsa_command {
    const char *name;
    dsa_command_fn *fn;
    unsigned flags;
    const char *summary;
};

/* Set by the signal handlers of DSA_CMD_INTERRUPTIBLE commands; long loops poll it, stop
   issuing work, flush what finished and return DSA_EXIT_INTERRUPTED. */
extern volatile int dsa_interrupted;

/* The table, for `dsa-eval help` and tests. Ends with a row whose name is NULL. */
extern const struct dsa_command dsa_commands[];

/* the subcommands, one src/cmd_<name>.c each (cmd_grade_gsm8k: a row of grade_subs[] in
   src/cmd_grade.c, `dsa-eval grade gsm8k`) */
dsa_command_fn cmd_compare, cmd_datasets, cmd_grade, cmd_grade_gsm8k, cmd_gsm8k, cmd_kernels,
    cmd_merge, cmd_mrcr, cmd_plan, cmd_report, cmd_ruler, cmd_version;

#endif
