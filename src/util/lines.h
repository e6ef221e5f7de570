/*
 * Streaming line reader for JSONL and other line formats. Memory grows with the longest line,
 * never with the file (MRCR rows of 1M tokens are ~5 MB; a 2,400-row file is ~2.5 GB).
 * Ownership: the reader owns the line buffer; a line returned by dsa_lines_next() is valid
 * until the next call, NUL-terminated, and followed by at least DSA_LINES_PADDING readable
 * bytes (a parser that reads past a text's end, util/json_simd.h, takes it in place).
 * "-" means standard input.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_UTIL_LINES_H
#define DSA_UTIL_LINES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define DSA_LINES_PADDING 64

typedef struct dsa_lines dsa_lines;

/* Returns NULL and prints "cannot open 'PATH': reason" on failure. */
dsa_lines *dsa_lines_open(const char *path);
/* 1 = a line (without its '\n' or "\r\n"), 0 = end of file, -1 = read error (printed). */
int dsa_lines_next(dsa_lines *r, const char **line, size_t *len);
/* 1-based number of the line last returned */
long dsa_lines_lineno(const dsa_lines *r);
/* true if the line last returned ended at EOF without a '\n' (a torn last line) */
bool dsa_lines_unterminated(const dsa_lines *r);
/* byte offset of the start of the line last returned, and of the next line */
off_t dsa_lines_offset(const dsa_lines *r);
off_t dsa_lines_next_offset(const dsa_lines *r);
/* Adds the line last returned (line, len) and the terminator the reader took off it ("\n",
   "\r\n", or a lone "\r" at the end of the file) to h: a hash of every line so is the sha256
   of the file's bytes, computed in the pass that reads it. */
struct dsa_sha256;
void dsa_lines_sha256_update(struct dsa_sha256 *h, const dsa_lines *r, const char *line,
                             size_t len);
void dsa_lines_free(dsa_lines **r);

#endif
