/*
 * File-system helpers. Paths are borrowed; returned paths are fresh strings the caller frees.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_UTIL_FS_H
#define DSA_UTIL_FS_H

#include <stdbool.h>
#include <stdio.h>

/* mkdir -p; returns 0 or -1 with the error printed */
int dsa_mkdirs(const char *path);
/* Is `fd` a pipe whose reader has gone (dsa-eval compare a b | head)? Writers say nothing
   then: main() ends quietly with SIGPIPE, as git does. errno == EPIPE counts too. */
bool dsa_fd_reader_gone(int fd);
bool dsa_is_dir(const char *path);
bool dsa_is_file(const char *path);
char *dsa_path_join(const char *a, const char *b);
/* $DSA_EVAL_CACHE, else $XDG_CACHE_HOME/dsa-eval, else ~/.cache/dsa-eval */
char *dsa_cache_dir(void);

/*
 * The name of a temporary file beside PATH for this process, "PATH.tmp-PID" (fresh string,
 * caller frees). It first removes the "PATH.tmp-N" files that killed processes left behind:
 * those whose N names no live process (kill(N, 0) fails with ESRCH); a live writer's file is
 * never touched.
 */
char *dsa_tmp_path(const char *path);
/* only the removal of dsa_tmp_path(): for writers that open PATH itself (run files) */
void dsa_tmp_sweep(const char *path);

/*
 * A file written whole or not at all: dsa_atomic_open() creates "PATH.tmp-PID" beside PATH
 * (same file system, and two writers never share one) and the caller writes to `f`;
 * dsa_atomic_commit() flushes it to disk, closes it and renames it over PATH, so a crash or
 * an error leaves the old PATH (or none), never a partial one; dsa_atomic_abort() closes and
 * removes it. Errors are printed ("cannot create 'T': …", "cannot write 'T': …", "cannot
 * rename 'T' to 'PATH': …"). A PATH that exists and is not a regular file (a device such
 * as /dev/stdout, a FIFO) is written in place; a directory is refused. Commit and abort release
 * everything, also on failure; `path` is borrowed until then.
 */
struct dsa_atomic {
    FILE *f;
    char *tmp;
    const char *path;
};
/* 0, or -1 (printed; nothing to release) */
int dsa_atomic_open(struct dsa_atomic *a, const char *path);
/* 0, or -1 (printed; the temporary file is removed and PATH untouched) */
int dsa_atomic_commit(struct dsa_atomic *a);
void dsa_atomic_abort(struct dsa_atomic *a);

#endif
