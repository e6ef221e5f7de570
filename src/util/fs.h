/*
 * File-system helpers. Paths are borrowed; returned paths are fresh strings the caller frees.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_UTIL_FS_H
#define DSA_UTIL_FS_H

#include <stdbool.h>

/* mkdir -p; returns 0 or -1 with the error printed */
int dsa_mkdirs(const char *path);
bool dsa_is_dir(const char *path);
bool dsa_is_file(const char *path);
char *dsa_path_join(const char *a, const char *b);
/* $DSA_EVAL_CACHE, else $XDG_CACHE_HOME/dsa-eval, else ~/.cache/dsa-eval */
char *dsa_cache_dir(void);

#endif
