/*
 * dsa-eval: the dispatcher. Finds the subcommand in commands[], prepares what its flags ask
 * for, runs it, and checks once that stdout was flushed and closed cleanly.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "kernels/kutil.h"
#include "util/exitcode.h"
#include "util/fs.h"
#include "util/msg.h"
#include "util/opt.h"

volatile int dsa_interrupted;

const struct dsa_command dsa_commands[] = {
    {"compare", cmd_compare, 0,
     "paired per-bin differences with bootstrap CIs between two sets of runs"},
    {"datasets", cmd_datasets, DSA_CMD_INTERRUPTIBLE,
     "make, fetch and describe datasets (MRCR, GSM8K)"},
    {"grade", cmd_grade, 0, "regrade outputs offline: official MRCR score (and GSM8K extraction)"},
    {"gsm8k", cmd_gsm8k, DSA_CMD_INTERRUPTIBLE,
     "GSM8K greedy (with MTP acceptance length) against an endpoint or in-process"},
    {"kernels", cmd_kernels, 0,
     "check the DSA indexer kernels against the C reference and its fp64 golden"},
    {"merge", cmd_merge, 0, "merge shard run files (--shard i/n) into one run file"},
    {"mrcr", cmd_mrcr, DSA_CMD_INTERRUPTIBLE,
     "run MRCR multi-needle against an endpoint (or in-process), binned by context length"},
    {"plan", cmd_plan, 0, "runs needed per side to detect a given change"},
    {"report", cmd_report, 0, "markdown, HTML (SVG plots), CSV or JSON report of a comparison"},
    {"ruler", cmd_ruler, DSA_CMD_INTERRUPTIBLE,
     "NVIDIA RULER synthetic tasks (niah, vt, cwe) at 4k..1m against endpoints or in-process"},
    {"version", cmd_version, 0, "print version, build and library information"},
    {NULL, NULL, 0, NULL},
};

static void on_signal(int sig)
{
    (void)sig;
    dsa_interrupted = 1;
}

/* As git does (check_pipe()): a reader that stopped reading is not an error to report; die
   of the SIGPIPE that was ignored while writing, so the shell sees status 141 and says
   nothing. Run files were flushed record by record: nothing written is lost. */
static void quiet_pipe_exit(void)
{
    signal(SIGPIPE, SIG_DFL);
    raise(SIGPIPE);
    _exit(128 + SIGPIPE); /* not reached unless SIGPIPE is blocked */
}

/* kernels/ builds alone and prints its few messages through this sink, so that they share
   src/util/msg.c's path (one lock, the progress meter cleared first) */
static void kernel_msg(int level, const char *msg)
{
    if (level == DSA_KUTIL_WARNING)
        dsa_warnf("%s", msg);
    else
        dsa_errorf("%s", msg);
}

static void print_help(FILE *out)
{
    fprintf(out, "usage: dsa-eval <command> [options]   (dsa-eval <command> --help for more)\n\n"
                 "Accuracy evidence for DeepSeek-Sparse-Attention serving stacks: MRCR and\n"
                 "GSM8K+MTP runs, paired comparisons with bootstrap CIs, PR-ready reports.\n\n"
                 "commands:\n");
    for (const struct dsa_command *c = dsa_commands; c->name; c++)
        fprintf(out, "    %-10s %s\n", c->name, c->summary);
}

static const struct dsa_command *find_command(const char *name)
{
    for (const struct dsa_command *c = dsa_commands; c->name; c++)
        if (!strcmp(c->name, name))
            return c;
    return NULL;
}

static int run_command(const struct dsa_command *c, int argc, char **argv)
{
    if (c->flags & DSA_CMD_INTERRUPTIBLE) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
    }
    /* a closed pipe (dsa-eval report | head) is reported as a write error, not a signal */
    signal(SIGPIPE, SIG_IGN);
    int ret = c->fn(argc, argv);

    /* one place checks that everything reached stdout (git's run_builtin) */
    if (fflush(stdout) || ferror(stdout)) {
        if (dsa_fd_reader_gone(STDOUT_FILENO))
            quiet_pipe_exit();
        /* a command that failed has said why in its one line; a second line would repeat it */
        if (ret == DSA_EXIT_OK)
            dsa_errorf("cannot write to standard output: %s", strerror(errno ? errno : EIO));
        return ret ? ret : DSA_EXIT_IO;
    }
    if (fclose(stdout) && ret == DSA_EXIT_OK) {
        dsa_errorf("cannot close standard output: %s", strerror(errno));
        return DSA_EXIT_IO;
    }
    return ret;
}

int main(int argc, char **argv)
{
    dsa_kutil_set_sink(kernel_msg);
    if (argc < 2) {
        print_help(stderr);
        return DSA_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (!strcmp(name, "--version") || !strcmp(name, "-V"))
        name = "version";
    if (!strcmp(name, "help") || !strcmp(name, "--help") || !strcmp(name, "-h")) {
        if (argc > 2 && find_command(argv[2])) {
            char *hargv[] = {argv[2], "--help", NULL};
            return run_command(find_command(argv[2]), 2, hargv);
        }
        print_help(stdout);
        if (fflush(stdout) || ferror(stdout)) {
            if (dsa_fd_reader_gone(STDOUT_FILENO))
                quiet_pipe_exit();
            dsa_errorf("cannot write to standard output: %s", strerror(errno ? errno : EIO));
            return DSA_EXIT_IO;
        }
        return DSA_EXIT_OK;
    }
    const struct dsa_command *c = find_command(name);
    if (!c) {
        const char *names[32];
        size_t n = 0;
        for (const struct dsa_command *k = dsa_commands; k->name && n < 32; k++)
            names[n++] = k->name;
        const char *pick = dsa_did_you_mean(name, names, n);
        if (pick)
            dsa_errorf("'%s' is not a dsa-eval command; did you mean '%s'?", name, pick);
        else
            dsa_errorf("'%s' is not a dsa-eval command (see 'dsa-eval --help')", name);
        return DSA_EXIT_USAGE;
    }
    return run_command(c, argc - 1, argv + 1);
}
