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

/* GSM8K upstream: openai/grade-school-math at this commit (docs/gsm8k.md "Prompt test vectors") */
#define DSA_GSM8K_COMMIT       "3101c7d5072418e28b9008a6636bde82a006892c"
#define DSA_GSM8K_TEST_SHA256  "3730d312f6e3440559ace48831e51066acaca737f6eabec99bccb9e4b3c39d14"
#define DSA_GSM8K_TRAIN_SHA256 "17f347dc51477c50d4efb83959dbb7c56297aba886e5544ee2aaed3024813465"

/* true if the first line of PATH is a GSM8K row ({"question","answer"}, no "prompt") */
bool dsa_fetch_is_gsm8k(const char *path);
/* Prints rows, sha256 and whether it is a pinned upstream file; returns an exit status. */
int dsa_fetch_info_gsm8k(const char *path);

/* Where to download from. The defaults are the public services; each can be overridden for
   mirrors and for tests (file:// URLs; see docs/datasets.md for the file layout they map to). */
#define DSA_FETCH_HF_BASE    "https://datasets-server.huggingface.co" /* env DSA_EVAL_HF_BASE */
#define DSA_FETCH_HUB_BASE   "https://huggingface.co"                 /* env DSA_EVAL_HUB_BASE */
#define DSA_FETCH_GSM8K_BASE "https://raw.githubusercontent.com/openai/grade-school-math"
/* env DSA_EVAL_GSM8K_BASE */

struct dsa_fetch_opts {
    const char *base_url;      /* NULL: env, then the default above */
    const char *hub_url;       /* MRCR only: the Hub API that names the current revision */
    const char *revision;      /* MRCR: the revision the rows must come from (NULL: pinned) */
    unsigned needles_mask;     /* MRCR: bit n = fetch the n-needle rows */
    int page_rows;             /* MRCR: rows per /rows request, 1..100 */
    const char *split;         /* GSM8K: "test", "train" or "all" */
    volatile int *interrupted; /* polled during transfers; set by SIGINT (may be NULL) */
};

/* Download into the cache (resuming a .part file), verify, and print each cached file's
   path on stdout. Return an enum dsa_exit: 0, 3 (checksum, revision or layout mismatch),
   4 (network or server error), 5 (cannot write the cache), 130 (interrupted; the .part
   file is kept and the next fetch resumes it). */
int dsa_fetch_mrcr(const struct dsa_fetch_opts *o);
int dsa_fetch_gsm8k(const struct dsa_fetch_opts *o);

#endif
