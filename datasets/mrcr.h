/*
 * MRCR rows (openai/mrcr, HF schema) read as a stream: memory holds one row at a time.
 *
 * Inputs: JSONL with one HF row per line (prompt = JSON text of the message list, answer,
 * random_string_to_prepend, n_needles, desired_msg_index, total_messages, n_chars,
 * date_added?), or saved datasets-server /rows pages ({"rows":[{"row_idx","row":{...}}]}),
 * one page per file or one page per line. Synthetic or foreign files carry their bin
 * explicitly: "bin" (a label "8k"/"≤8K" or an upper edge in tokens) or "context_tokens".
 *
 * Ids: (n_needles, r) where r is the row's index among rows with that needle count in file
 * order (0..799 for the official data: {N}needle_0 rows then {N}needle_1 rows), printed
 * "n8/r0123". Official bins: BLOCK_TO_BIN[r/100] = {5,2,6,3,0,7,4,1} (docs/mrcr.md "Bins"),
 * with the load-time sanity check; bin k has upper edge 8192 << k tokens, label "≤8K".
 *
 * Ownership: a row filled by dsa_mrcr_next() owns its strings and json until
 * dsa_mrcr_row_release() (or the next dsa_mrcr_next() on the same row, which releases it).
 * Start with a zeroed row (struct dsa_mrcr_row row = {0};): dsa_mrcr_next() releases
 * whatever the row holds before filling it.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_DATASETS_MRCR_H
#define DSA_DATASETS_MRCR_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define DSA_MRCR_NBINS            8
#define DSA_MRCR_MAX_NEEDLES      16 /* n_needles accepted: 1..16 (official: 2, 4, 8) */
#define DSA_MRCR_DEFAULT_REVISION "f4c69fae7cf81f7ca26b9fee34b392a50f6b8a1d"

struct dsa_mrcr_row {
    char id[32];           /* "n8/r0123" */
    int n_needles;         /* 2, 4 or 8 */
    long r;                /* row index within its needle count */
    int bin;               /* 0..7: upper edge 8192 << bin */
    long bin_tokens;       /* 8192 << bin */
    const char *bin_label; /* "≤8K" … "≤1M" (static storage) */
    bool bin_explicit;     /* bin came from the file ("bin"/"context_tokens"), not the map */
    long context_tokens;   /* from the file when given, else -1 */
    json_t *messages;      /* parsed prompt: array of {"role","content"} (owned); NULL
                              after dsa_mrcr_set_messages_json() */
    /* after dsa_mrcr_set_messages_json(): the same list as compact JSON, the bytes
       dsa_json_dump_compact() (util/json_dump.h) writes of messages (owned), else NULL */
    char *messages_json;
    size_t messages_json_len;
    char *answer; /* UTF-8, starts with prefix */
    size_t answer_len;
    char prefix[64]; /* random_string_to_prepend */
    long desired_msg_index, total_messages, n_chars;
};

struct dsa_mrcr_filter {
    unsigned needles_mask; /* bit n set = keep n-needle rows (1<<2 | 1<<4 | 1<<8); 0 = all */
    unsigned bins_mask;    /* bit k set = keep bin k; 0 = all */
    long limit;            /* stop after this many kept rows per (needles, bin); 0 = none */
};

typedef struct dsa_mrcr_reader dsa_mrcr_reader;

/* Opens a JSONL or /rows-page file, or an embedded sample named "sample:<name>"
   (datasets/samples.h, e.g. DSA_SAMPLE_MRCR_DEFAULT). Runs the official-bin sanity check (a first
   streaming pass) unless every row carries an explicit bin. Prints the error and returns NULL on
   failure (caller exits DSA_EXIT_DATA). */
dsa_mrcr_reader *dsa_mrcr_open(const char *path, const struct dsa_mrcr_filter *filter);
/* 1 = a row that passed the filter, 0 = end, -1 = error (printed, names the line) */
int dsa_mrcr_next(dsa_mrcr_reader *rd, struct dsa_mrcr_row *row);
void dsa_mrcr_row_release(struct dsa_mrcr_row *row);
/* Rows from now on carry their messages as compact JSON only (messages_json, messages NULL):
   for request bodies that embed the list and read nothing of it, the list is checked and
   written from the parser's tape, never built as a tree (rows of another shape, and /rows
   pages, are built, checked and written as before, so the same rows are refused with the
   same errors). */
void dsa_mrcr_set_messages_json(dsa_mrcr_reader *rd);
/* Back to the first row, for another pass over the rows (--runs N): pass 2 only, on what
   pass 1 of dsa_mrcr_open() found (ids, bins, counts, sha256), so a file changed since is
   refused as in the first pass ("changed while being read"). 0, or -1 (printed). */
int dsa_mrcr_rewind(dsa_mrcr_reader *rd);

/* sha256 of the file (computed during open), and the revision if the file says so */
const char *dsa_mrcr_sha256(const dsa_mrcr_reader *rd);
void dsa_mrcr_free(dsa_mrcr_reader **rd);

/* Added by the datasets module. */
/* The dataset revision recorded next to the file by `datasets fetch` (PATH.meta.json,
   "revision"), or NULL when unknown (synthetic or hand-made files). */
const char *dsa_mrcr_revision(const dsa_mrcr_reader *rd);
/* Where the bins came from: every row explicit, every row by the official block map, or
   some needle counts each way. */
enum dsa_mrcr_bins_source { DSA_MRCR_BINS_OFFICIAL, DSA_MRCR_BINS_EXPLICIT, DSA_MRCR_BINS_MIXED };
enum dsa_mrcr_bins_source dsa_mrcr_bins_source(const dsa_mrcr_reader *rd);
/* Rows in the whole file (before the filter) with this needle count and bin, counted by the
   first pass of dsa_mrcr_open(); n_needles 1..DSA_MRCR_MAX_NEEDLES. For progress totals and
   `datasets info`. */
long dsa_mrcr_nrows(const dsa_mrcr_reader *rd, int n_needles, int bin);
/* Rows that pass the filter (the limit included): what dsa_mrcr_next() will return. */
long dsa_mrcr_nselected(const dsa_mrcr_reader *rd);
/* How many of those rows have an id that pred accepts (--shard: the rows of one shard). */
long dsa_mrcr_nselected_if(const dsa_mrcr_reader *rd, bool (*pred)(void *ud, const char *id),
                           void *ud);
/* "--max-bin 256k": mask of the bins whose upper edge is at most K; -1 on a bad value. */
int dsa_mrcr_parse_max_bin(const char *edge, unsigned *mask);
/* The official bin of row r of a needle count (the block map of docs/mrcr.md "Bins"):
   BLOCK_TO_BIN[r/100]; -1 unless 0 <= r < 800. */
int dsa_mrcr_official_bin(long r);
/* The bin holding a token count: ≤8192 -> 0 (rows below 4096 included), …, ≤1048576 -> 7;
   -1 if the count is not positive or above 1M. */
int dsa_mrcr_bin_of_tokens(long tokens);

/* Bins: parse "--bins 8k,16k,32k" into a mask of official bin indices (edges must be
   8k·2^k); returns -1 with a printed error on a bad list. --max-bin K keeps bins ≤ K. */
int dsa_mrcr_parse_bins(const char *list, unsigned *mask);
int dsa_mrcr_parse_needles(const char *list, unsigned *mask);
/* "≤8K" for bin 0 … "≤1M" for bin 7 */
const char *dsa_mrcr_bin_label(int bin);

#ifdef DSA_UNITTEST_BUILD
/* For the fuzz target: parses one JSONL row (all fields, prompt included) as pass 2 would;
   the bin comes from the row's explicit fields, else it is left -1. 0 or -1 (printed). */
int dsa_mrcr_parse_row_text(const char *text, size_t len, struct dsa_mrcr_row *row);
#endif

#endif
