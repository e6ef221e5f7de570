/*
 * Downloads of the real datasets into the cache ($DSA_EVAL_CACHE, else
 * $XDG_CACHE_HOME/dsa-eval, else ~/.cache/dsa-eval; util/fs.h dsa_cache_dir), and the
 * description of GSM8K files for `datasets info`. See docs/datasets.md "fetch".
 * Ownership: paths are borrowed.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_DATASETS_FETCH_H
#define DSA_DATASETS_FETCH_H

#include <stdbool.h>

/* GSM8K upstream: openai/grade-school-math at this commit (specs/gsm8k_mtp.md §1) */
#define DSA_GSM8K_COMMIT       "3101c7d5072418e28b9008a6636bde82a006892c"
#define DSA_GSM8K_TEST_SHA256  "3730d312f6e3440559ace48831e51066acaca737f6eabec99bccb9e4b3c39d14"
#define DSA_GSM8K_TRAIN_SHA256 "17f347dc51477c50d4efb83959dbb7c56297aba886e5544ee2aaed3024813465"

/* true if the first line of PATH is a GSM8K row ({"question","answer"}, no "prompt") */
bool dsa_fetch_is_gsm8k(const char *path);
/* Prints rows, sha256 and whether it is a pinned upstream file; returns an exit status. */
int dsa_fetch_info_gsm8k(const char *path);

/* `datasets fetch mrcr|gsm8k` with argv[0] = "mrcr"/"gsm8k"; return an exit status. */
int dsa_fetch_mrcr_main(int argc, char **argv);
int dsa_fetch_gsm8k_main(int argc, char **argv);

#endif
