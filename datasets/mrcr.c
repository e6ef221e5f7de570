/*
 * MRCR reader: JSONL rows or saved datasets-server /rows pages, streamed twice.
 *
 * Pass 1 (in dsa_mrcr_open) reads every line once: it hashes the file, checks the row
 * fields (but not the prompt), assigns ids and bins, and runs the official-bin sanity check
 * on the n_chars of each 100-row block. Pass 2 (dsa_mrcr_next) reads the file again and
 * parses one full row at a time, prompt included. Memory holds one line (one page for
 * /rows files), plus 16 bytes per row for the check, never the file.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "datasets/mrcr.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datasets/samples.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/json_dump.h"
#include "util/json_pick.h"
#include "util/json_simd.h"
#include "util/lines.h"
#include "util/msg.h"
#include "util/opt.h"

/* docs/mrcr.md "Bins": block b of 100 rows (in file order per needle count) is bin
   BLOCK_TO_BIN[b] in the Dec-2025 openai/mrcr files */
static const int block_to_bin[8] = {5, 2, 6, 3, 0, 7, 4, 1};
#define ROWS_PER_BLOCK 100
/* n_chars per o200k token measured on row 0 of 2needle (docs/mrcr.md "Bins"); the sanity check
   only asks a block's median to land within a factor 2 of its bin, so the exact value does
   not matter */
#define CHARS_PER_TOKEN 4.85

static const char *const bin_labels[DSA_MRCR_NBINS] = {"≤8K",   "≤16K",  "≤32K",  "≤64K",
                                                       "≤128K", "≤256K", "≤512K", "≤1M"};

enum file_format {
    FMT_JSONL,      /* one HF row per line */
    FMT_PAGE_LINES, /* one /rows page per line */
    FMT_PAGE_WHOLE, /* one (possibly pretty-printed) /rows page in the whole file */
};

struct needle_state {
    long rows;          /* rows seen so far with this needle count */
    long explicit_rows; /* of which carry their bin */
    long *n_chars;      /* pass 1: n_chars per row (official-bin check) */
    size_t n_chars_cap;
    long long last_row_idx; /* /rows pages: row_idx contiguity */
    bool official;          /* bins from the block map */
};

struct dsa_mrcr_reader {
    char *path;
    enum file_format fmt;
    struct dsa_mrcr_filter filter;
    char sha256[65];
    char *revision;
    enum dsa_mrcr_bins_source source;
    struct needle_state ns[DSA_MRCR_MAX_NEEDLES + 1];
    long nrows[DSA_MRCR_MAX_NEEDLES + 1][DSA_MRCR_NBINS];
    long kept[DSA_MRCR_MAX_NEEDLES + 1][DSA_MRCR_NBINS];
    long nselected;
    long returned; /* rows dsa_mrcr_next() has returned */
    /* pass 2 */
    dsa_lines *lines;
    json_t *page;     /* current page (FMT_PAGE_*) */
    size_t page_i;    /* next row in page */
    long page_lineno; /* line of the page */
    long r2[DSA_MRCR_MAX_NEEDLES + 1];
    /* per row in file order, from pass 1: needle count and explicit bin (-1 = block map), so
       pass 2 can skip filtered-out JSONL lines without parsing them (2 bytes per row) */
    uint8_t *seq_n;
    int8_t *seq_bin;
    long nseq, seq_cap, seq2;
    json_t *messages; /* pass 2: the prompt of the row just read, parsed with it (or NULL) */
    /* dsa_mrcr_set_messages_json(): rows carry their messages as compact JSON; dumped holds
       the row just read's, written from simdjson's tape (has_dumped), handed to the row */
    bool want_json, has_dumped;
    struct dsa_buf dumped;
    bool pass2;
    bool done;
};

/* What pass 1 and pass 2 both need from a row. */
struct row_head {
    int n_needles;
    int bin;             /* explicit bin, or -1 */
    long context_tokens; /* -1 if absent */
    long long n_chars;
    long long row_idx; /* /rows pages, else -1 */
};

const char *dsa_mrcr_bin_label(int bin)
{
    return bin >= 0 && bin < DSA_MRCR_NBINS ? bin_labels[bin] : "?";
}

int dsa_mrcr_official_bin(long r)
{
    return r >= 0 && r < 8 * ROWS_PER_BLOCK ? block_to_bin[r / ROWS_PER_BLOCK] : -1;
}

int dsa_mrcr_bin_of_tokens(long tokens)
{
    if (tokens <= 0)
        return -1;
    for (int k = 0; k < DSA_MRCR_NBINS; k++)
        if (tokens <= (8192L << k))
            return k;
    return -1;
}

/* "8k", "8K", "≤8K", "<=8K", "8192" -> bin index, or -1 */
static int bin_of_edge_text(const char *s)
{
    if (!strncmp(s, "\xe2\x89\xa4", 3)) /* ≤ */
        s += 3;
    else if (!strncmp(s, "<=", 2))
        s += 2;
    long v = dsa_parse_tokens(s);
    for (int k = 0; k < DSA_MRCR_NBINS; k++)
        if (v == (8192L << k))
            return k;
    return -1;
}

/* a bin edge -> bin index, or -1 with the error printed */
static int bin_item(const char *item)
{
    int k = bin_of_edge_text(item);
    if (k < 0)
        dsa_errorf("'%s' is not an MRCR bin edge: use 8k, 16k, 32k, 64k, 128k, 256k, 512k or 1m",
                   item);
    return k;
}

/* a needle count -> its bit, or -1 with the error printed */
static int needles_item(const char *item)
{
    char *end;
    long n = strtol(item, &end, 10);
    if (end == item || *end || n < 1 || n > DSA_MRCR_MAX_NEEDLES)
        return dsa_errorf("'%s' is not a needle count: use 2, 4 or 8", item);
    return (int)n;
}

/* "a,b,c" -> the mask of the bits item() gives each; `what` names the list when empty */
static int parse_list(const char *list, const char *what, int (*item)(const char *), unsigned *mask)
{
    struct dsa_strlist items = {0};
    dsa_split_commas(list, &items);
    unsigned m = 0;
    int ret = 0;
    if (!items.n)
        ret = dsa_errorf("empty %s list '%s'", what, list);
    for (size_t i = 0; i < items.n && !ret; i++) {
        int bit = item(items.v[i]);
        if (bit < 0)
            ret = -1;
        else
            m |= 1u << bit;
    }
    dsa_strlist_free_items(&items);
    if (!ret)
        *mask = m;
    return ret;
}

int dsa_mrcr_parse_bins(const char *list, unsigned *mask)
{
    return parse_list(list, "bin", bin_item, mask);
}

int dsa_mrcr_parse_max_bin(const char *edge, unsigned *mask)
{
    int k = bin_item(edge);
    if (k < 0)
        return -1;
    *mask = (1u << (k + 1)) - 1;
    return 0;
}

int dsa_mrcr_parse_needles(const char *list, unsigned *mask)
{
    return parse_list(list, "needle", needles_item, mask);
}

static int where_errorf(const struct dsa_json_where *w, const char *what)
{
    return dsa_errorf("line %ld of '%s': %s", w->lineno, w->path, what);
}

/* The fields pass 1 needs, with their types checked. 0 or -1 (printed). */
static int parse_head(json_t *row, const struct dsa_json_where *w, struct row_head *h)
{
    long long v;
    const char *s;
    char msg[256];
    if (!dsa_json_get_int(row, "n_needles", false, &v, w))
        return -1;
    if (v < 1 || v > DSA_MRCR_MAX_NEEDLES) {
        snprintf(msg, sizeof msg, "\"n_needles\" is %lld, expected 1..%d (2, 4 or 8)", v,
                 DSA_MRCR_MAX_NEEDLES);
        return where_errorf(w, msg);
    }
    h->n_needles = (int)v;
    if (!dsa_json_get_int(row, "n_chars", false, &h->n_chars, w))
        return -1;
    if (h->n_chars < 0)
        return where_errorf(w, "\"n_chars\" is negative");
    h->bin = -1;
    h->context_tokens = -1;
    long long ct = 0;
    json_t *ctv = json_object_get(row, "context_tokens");
    if (!dsa_json_get_int(row, "context_tokens", true, &ct, w))
        return -1;
    if (ctv && !json_is_null(ctv)) {
        h->context_tokens = (long)ct;
        h->bin = dsa_mrcr_bin_of_tokens(h->context_tokens);
        if (h->bin < 0) {
            snprintf(msg, sizeof msg, "\"context_tokens\" %lld is outside the MRCR bins (1..1M)",
                     ct);
            return where_errorf(w, msg);
        }
    }
    json_t *b = json_object_get(row, "bin");
    if (b && !json_is_null(b)) {
        int k = -1;
        if (json_is_string(b)) {
            s = json_string_value(b);
            k = bin_of_edge_text(s);
        } else if (json_is_integer(b)) {
            for (int j = 0; j < DSA_MRCR_NBINS; j++)
                if (json_integer_value(b) == (8192LL << j))
                    k = j;
        } else {
            return where_errorf(w, "\"bin\" must be a string such as \"8k\" or an upper edge "
                                   "in tokens");
        }
        if (k < 0)
            return where_errorf(w, "\"bin\" is not an MRCR bin (8k, 16k, … 1m)");
        if (h->bin >= 0 && h->bin != k) {
            snprintf(msg, sizeof msg, "\"context_tokens\" %ld is not in \"bin\" %s",
                     h->context_tokens, bin_labels[k]);
            return where_errorf(w, msg);
        }
        h->bin = k;
    }
    return 0;
}

/* The prompt's message list, checked: messages when the row's parse built it (taken over),
   else parsed from the prompt text. NULL when it is not one (printed). */
static json_t *checked_messages(const char *prompt, size_t prompt_len, json_t *messages,
                                const struct dsa_json_where *w)
{
    json_error_t err;
    char msg[400];
    if (!messages)
        messages = dsa_json_load_fast(prompt, prompt_len);
    if (!messages) /* declined: jansson reads it or says why not */
        messages = json_loadb(prompt, prompt_len, 0, &err);
    if (!messages) {
        snprintf(msg, sizeof msg, "\"prompt\" is not a JSON message list: %s", err.text);
        where_errorf(w, msg);
        return NULL;
    }
    if (!json_is_array(messages) || json_array_size(messages) == 0) {
        json_decref(messages);
        where_errorf(w, "\"prompt\" is not a JSON message list: expected a non-empty array");
        return NULL;
    }
    size_t i;
    json_t *m;
    json_array_foreach(messages, i, m)
    {
        json_t *role = json_object_get(m, "role"), *content = json_object_get(m, "content");
        if (!json_is_object(m) || !json_is_string(role) || !json_is_string(content)) {
            snprintf(msg, sizeof msg,
                     "\"prompt\" is not a JSON message list: message %zu needs string \"role\" "
                     "and \"content\"",
                     i);
            json_decref(messages);
            where_errorf(w, msg);
            return NULL;
        }
    }
    return messages;
}

/* The message list as the row hands it over: the tree, or (want_json) its compact JSON, the
   tree released. 0 or -1 (printed). */
static int hand_over(json_t *messages, bool want_json, const struct dsa_json_where *w,
                     struct dsa_mrcr_row *out)
{
    if (!want_json) {
        out->messages = messages;
        return 0;
    }
    struct dsa_buf b = DSA_BUF_INIT;
    int bad = dsa_json_dump_compact(messages, &b);
    json_decref(messages);
    if (bad) {
        dsa_buf_release(&b);
        return where_errorf(w, "\"prompt\" cannot be written as JSON");
    }
    out->messages_json = dsa_buf_detach(&b, &out->messages_json_len);
    return 0;
}

/* Checks the rest of the row, prompt included, and fills *out. messages: the prompt already
   parsed where the row was (dsa_json_load_fast_inner()), taken over; NULL = parse the
   "prompt" string here. dumped: the prompt already checked as a message list and written as
   compact JSON (dsa_jsimd_load_dumped()), taken over; NULL = none. want_json: the row carries
   its messages as compact JSON (dsa_mrcr_set_messages_json). 0 or -1 (printed). */
static int parse_full(json_t *row, const struct dsa_json_where *w, json_t *messages,
                      struct dsa_buf *dumped, bool want_json, struct dsa_mrcr_row *out)
{
    const char *prompt, *answer, *prefix, *date;
    size_t prompt_len, answer_len, prefix_len;
    long long dmi, tm;
    if (!dsa_json_get_str(row, "prompt", false, &prompt, &prompt_len, w) ||
        !dsa_json_get_str(row, "answer", false, &answer, &answer_len, w) ||
        !dsa_json_get_str(row, "random_string_to_prepend", false, &prefix, &prefix_len, w) ||
        !dsa_json_get_int(row, "desired_msg_index", false, &dmi, w) ||
        !dsa_json_get_int(row, "total_messages", false, &tm, w) ||
        !dsa_json_get_str(row, "date_added", true, &date, NULL, w)) {
        json_decref(messages);
        return -1;
    }
    if (prefix_len == 0 || prefix_len >= sizeof out->prefix) {
        json_decref(messages);
        return where_errorf(w, "\"random_string_to_prepend\" must be 1 to 63 bytes");
    }
    if (dmi < 0 || tm < 0) {
        json_decref(messages);
        return where_errorf(w, "\"desired_msg_index\" and \"total_messages\" must not be negative");
    }

    if (dumped)
        out->messages_json = dsa_buf_detach(dumped, &out->messages_json_len);
    else if (!(messages = checked_messages(prompt, prompt_len, messages, w)) ||
             hand_over(messages, want_json, w, out))
        return -1;
    out->answer = dsa_xstrndup(answer, answer_len);
    out->answer_len = answer_len;
    memcpy(out->prefix, prefix, prefix_len);
    out->prefix[prefix_len] = '\0';
    out->desired_msg_index = (long)dmi;
    out->total_messages = (long)tm;
    return 0;
}

/* The row object inside a /rows page entry; checks row_idx and truncation. */
static json_t *page_entry_row(json_t *entry, const struct dsa_json_where *w, long long *row_idx)
{
    long long idx;
    if (!json_is_object(entry)) {
        where_errorf(w, "\"rows\" entries must be objects");
        return NULL;
    }
    if (!dsa_json_get_int(entry, "row_idx", false, &idx, w))
        return NULL;
    json_t *row = json_object_get(entry, "row");
    if (!json_is_object(row)) {
        where_errorf(w, "\"row\" must be an object");
        return NULL;
    }
    json_t *tc = json_object_get(entry, "truncated_cells");
    if (tc && json_is_array(tc) && json_array_size(tc) > 0) {
        char msg[128];
        snprintf(msg, sizeof msg, "row_idx %lld has truncated cells: the page is incomplete", idx);
        where_errorf(w, msg);
        return NULL;
    }
    *row_idx = idx;
    return row;
}

static bool blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return false;
    return true;
}

/* Pass 1 bookkeeping of one row: its r and its bin class. */
static int note_row(dsa_mrcr_reader *rd, const struct row_head *h, const struct dsa_json_where *w)
{
    struct needle_state *ns = &rd->ns[h->n_needles];
    if (h->row_idx >= 0) {
        if (ns->rows > 0 && h->row_idx != ns->last_row_idx + 1) {
            char msg[200];
            snprintf(msg, sizeof msg,
                     "row_idx %lld follows %lld for %d-needle rows: a gap or reordering in "
                     "the pages would shift row ids",
                     h->row_idx, ns->last_row_idx, h->n_needles);
            return where_errorf(w, msg);
        }
        ns->last_row_idx = h->row_idx;
    }
    if ((size_t)ns->rows == ns->n_chars_cap) {
        ns->n_chars_cap = ns->n_chars_cap ? 2 * ns->n_chars_cap : 1024;
        ns->n_chars = dsa_xrealloc(ns->n_chars, ns->n_chars_cap * sizeof *ns->n_chars);
    }
    ns->n_chars[ns->rows] = (long)h->n_chars;
    if (rd->nseq == rd->seq_cap) {
        rd->seq_cap = rd->seq_cap ? 2 * rd->seq_cap : 1024;
        rd->seq_n = dsa_xrealloc(rd->seq_n, (size_t)rd->seq_cap);
        rd->seq_bin = dsa_xrealloc(rd->seq_bin, (size_t)rd->seq_cap);
    }
    rd->seq_n[rd->nseq] = (uint8_t)h->n_needles;
    rd->seq_bin[rd->nseq++] = (int8_t)h->bin;
    if (h->bin >= 0) {
        ns->explicit_rows++;
        rd->nrows[h->n_needles][h->bin]++;
    }
    ns->rows++;
    return 0;
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* docs/mrcr.md "Bins" sanity check of the official layout for one needle count. */
static int check_official(dsa_mrcr_reader *rd, int n)
{
    struct needle_state *ns = &rd->ns[n];
    if (ns->rows % ROWS_PER_BLOCK || ns->rows > 8 * ROWS_PER_BLOCK)
        return dsa_errorf("'%s': %ld %d-needle rows without a \"bin\" field: official bins need "
                          "whole 100-row blocks of the openai/mrcr file order (at most 800 "
                          "rows); give each row an explicit \"bin\" or \"context_tokens\"",
                          rd->path, ns->rows, n);
    long nblocks = ns->rows / ROWS_PER_BLOCK;
    double median[8];
    long tmp[ROWS_PER_BLOCK];
    for (long b = 0; b < nblocks; b++) {
        memcpy(tmp, ns->n_chars + b * ROWS_PER_BLOCK, sizeof tmp);
        qsort(tmp, ROWS_PER_BLOCK, sizeof tmp[0], cmp_long);
        median[b] = 0.5 * ((double)tmp[49] + (double)tmp[50]);
        int k = block_to_bin[b];
        double lo = k ? (double)(4096L << k) : 4096.0, hi = (double)(8192L << k);
        double tokens = median[b] / CHARS_PER_TOKEN;
        if (tokens < lo / 2 || tokens > hi * 2)
            return dsa_errorf("'%s': %d-needle rows %ld-%ld are not in the official openai/mrcr "
                              "layout: median n_chars %.0f (~%.0f tokens) does not fit their "
                              "block's bin %s; give each row an explicit \"bin\" or use the "
                              "official file order",
                              rd->path, n, b * ROWS_PER_BLOCK, b * ROWS_PER_BLOCK + 99, median[b],
                              tokens, bin_labels[k]);
    }
    /* medians must rise with the bin across the blocks present */
    for (long a = 0; a < nblocks; a++)
        for (long b = 0; b < nblocks; b++)
            if (block_to_bin[a] < block_to_bin[b] && !(median[a] < median[b]))
                return dsa_errorf("'%s': %d-needle rows are not in the official openai/mrcr "
                                  "layout: block %ld (bin %s) has median n_chars %.0f, not "
                                  "below block %ld (bin %s, %.0f); give each row an explicit "
                                  "\"bin\" or use the official file order",
                                  rd->path, n, a, bin_labels[block_to_bin[a]], median[a], b,
                                  bin_labels[block_to_bin[b]], median[b]);
    for (long r = 0; r < ns->rows; r++)
        rd->nrows[n][block_to_bin[r / ROWS_PER_BLOCK]]++;
    ns->official = true;
    return 0;
}

static bool keep(dsa_mrcr_reader *rd, int n, int bin, bool count)
{
    const struct dsa_mrcr_filter *f = &rd->filter;
    if (f->needles_mask && !(f->needles_mask & (1u << n)))
        return false;
    if (f->bins_mask && !(f->bins_mask & (1u << bin)))
        return false;
    if (f->limit > 0 && rd->kept[n][bin] >= f->limit)
        return false;
    if (count)
        rd->kept[n][bin]++;
    return true;
}

/* One line's object, parsed by simdjson where the line reader left it (util/json_simd.h).
   Pass 1 counts rows by their head: the whole line is checked, but of the prompt, most of each
   line, no jansson string is built. Pass 2 builds JSONL rows and parses the prompt's messages
   from the bytes simdjson decoded (rd->messages); jansson reads the pages and words every
   refusal (util/json_pick.h). */
static json_t *read_line_object(dsa_mrcr_reader *rd, const char *line, size_t len,
                                const struct dsa_json_where *w)
{
    static const char *const head[] = {"n_needles", "n_chars", "context_tokens", "bin", NULL};
    if (rd->fmt != FMT_JSONL)
        return dsa_json_parse_object(line, len, w);
    _Static_assert(DSA_LINES_PADDING >= DSA_JSIMD_PADDING, "lines are padded for simdjson");
    if (!rd->pass2) {
        json_t *obj = dsa_jsimd_pick(line, len, true, head);
        return obj ? obj : dsa_json_parse_object(line, len, w);
    }
    json_decref(rd->messages);
    rd->messages = NULL;
    if (rd->want_json) {
        /* the messages as the request bodies will hold them, without a tree */
        static const char *const required[] = {"role", "content", NULL};
        dsa_buf_reset(&rd->dumped);
        json_t *obj = dsa_jsimd_load_dumped(line, len, true, "prompt", required, &rd->dumped,
                                            &rd->has_dumped);
        if (obj && json_is_object(obj))
            return obj;
        json_decref(obj);
        rd->has_dumped = false;
        return dsa_json_parse_object(line, len, w);
    }
    json_t *obj = dsa_jsimd_load(line, len, true, "prompt", &rd->messages);
    if (obj && json_is_object(obj))
        return obj;
    json_decref(obj);
    json_decref(rd->messages);
    rd->messages = NULL;
    return dsa_json_parse_object(line, len, w);
}

/* Reads the next row object of the file (either format). 1 = row, 0 = end, -1 = error.
 *owner is the reference to drop when done with *row. */
static int next_row_object(dsa_mrcr_reader *rd, json_t **row, json_t **owner,
                           struct dsa_json_where *w, long long *row_idx, dsa_sha256 *sha)
{
    *row_idx = -1;
    for (;;) {
        if (rd->page) {
            json_t *rows = json_object_get(rd->page, "rows");
            w->lineno = rd->page_lineno;
            if (rd->page_i < json_array_size(rows)) {
                json_t *r = page_entry_row(json_array_get(rows, rd->page_i++), w, row_idx);
                if (!r)
                    return -1;
                *row = r;
                *owner = json_incref(rd->page);
                return 1;
            }
            json_decref(rd->page);
            rd->page = NULL;
            if (rd->fmt == FMT_PAGE_WHOLE)
                return 0;
        }
        if (rd->fmt == FMT_PAGE_WHOLE) {
            if (rd->done)
                return 0;
            rd->done = true;
            json_error_t err;
            json_t *p = json_load_file(rd->path, JSON_REJECT_DUPLICATES, &err);
            if (!p)
                return dsa_errorf("cannot parse line %d of '%s': %s", err.line, rd->path, err.text);
            if (!json_is_object(p) || !json_is_array(json_object_get(p, "rows"))) {
                json_decref(p);
                return dsa_errorf("cannot parse '%s': expected a /rows page with a \"rows\" "
                                  "array",
                                  rd->path);
            }
            rd->page = p;
            rd->page_i = 0;
            rd->page_lineno = 1;
            continue;
        }
        const char *line;
        size_t len;
        int got = dsa_lines_next(rd->lines, &line, &len);
        if (got <= 0)
            return got;
        if (sha)
            dsa_lines_sha256_update(sha, rd->lines, line, len);
        if (blank(line, len))
            continue;
        if (rd->pass2 && rd->fmt == FMT_JSONL && rd->seq2 < rd->nseq) {
            /* a row the filter drops is counted (its r) but not parsed */
            int n = rd->seq_n[rd->seq2], bin = rd->seq_bin[rd->seq2];
            if (bin < 0)
                bin = block_to_bin[(rd->r2[n] / ROWS_PER_BLOCK) % 8];
            if (!keep(rd, n, bin, false)) {
                rd->r2[n]++;
                rd->seq2++;
                continue;
            }
        }
        w->lineno = dsa_lines_lineno(rd->lines);
        json_t *obj = read_line_object(rd, line, len, w);
        if (!obj)
            return -1;
        if (rd->fmt == FMT_PAGE_LINES) {
            if (!json_is_array(json_object_get(obj, "rows"))) {
                json_decref(obj);
                return where_errorf(w, "expected a /rows page with a \"rows\" array");
            }
            rd->page = obj;
            rd->page_i = 0;
            rd->page_lineno = w->lineno;
            continue;
        }
        *row = obj;
        *owner = obj;
        return 1;
    }
}

/* Looks at the first non-blank line to tell the formats apart. */
static int detect_format(dsa_mrcr_reader *rd)
{
    dsa_lines *l = dsa_lines_open(rd->path);
    if (!l)
        return -1;
    const char *line;
    size_t len;
    int got;
    while ((got = dsa_lines_next(l, &line, &len)) > 0 && blank(line, len))
        ;
    int ret = 0;
    if (got < 0) {
        ret = -1;
    } else if (got == 0) {
        ret = dsa_errorf("'%s' is empty: no MRCR rows", rd->path);
    } else {
        json_t *obj = json_loadb(line, len, 0, NULL);
        if (obj && json_is_object(obj))
            rd->fmt = json_object_get(obj, "rows") ? FMT_PAGE_LINES : FMT_JSONL;
        else if (!obj && len > 0 && line[0] == '{')
            rd->fmt = FMT_PAGE_WHOLE; /* a pretty-printed page; a bad row fails in pass 1 */
        else
            rd->fmt = FMT_JSONL; /* pass 1 reports the parse error with its line */
        json_decref(obj);
    }
    dsa_lines_free(&l);
    return ret;
}

static void load_revision(dsa_mrcr_reader *rd)
{
    char *meta = NULL;
    struct dsa_buf b = DSA_BUF_INIT;
    dsa_buf_addf(&b, "%s.meta.json", rd->path);
    meta = dsa_buf_detach(&b, NULL);
    if (dsa_is_file(meta)) {
        json_t *m = json_load_file(meta, 0, NULL);
        const char *rev = json_string_value(json_object_get(m, "revision"));
        const char *sha = json_string_value(json_object_get(m, "sha256"));
        /* the sidecar describes this file only if the checksums agree */
        if (rev && sha && !strcmp(sha, rd->sha256))
            rd->revision = dsa_xstrdup(rev);
        else if (rev)
            dsa_warnf("'%s' does not match the sha256 recorded in '%s'; revision unknown", rd->path,
                      meta);
        json_decref(m);
    }
    free(meta);
}

static int pass1(dsa_mrcr_reader *rd)
{
    int ret = -1;
    dsa_sha256 *sha = dsa_sha256_new();
    struct dsa_json_where w = {rd->path, 0};
    long nrows = 0;
    if (rd->fmt != FMT_PAGE_WHOLE && !(rd->lines = dsa_lines_open(rd->path)))
        goto cleanup;
    for (;;) {
        json_t *row, *owner;
        long long row_idx;
        int got = next_row_object(rd, &row, &owner, &w, &row_idx, sha);
        if (got < 0)
            goto cleanup;
        if (got == 0)
            break;
        struct row_head h;
        int bad = parse_head(row, &w, &h);
        h.row_idx = row_idx;
        if (!bad)
            bad = note_row(rd, &h, &w);
        json_decref(owner);
        if (bad)
            goto cleanup;
        nrows++;
    }
    if (!nrows) {
        dsa_errorf("'%s' holds no MRCR rows", rd->path);
        goto cleanup;
    }
    if (rd->fmt == FMT_PAGE_WHOLE) {
        if (dsa_sha256_file(rd->path, rd->sha256))
            goto cleanup;
    } else {
        dsa_sha256_final_hex(sha, rd->sha256);
    }
    int n_official = 0, n_explicit = 0;
    for (int n = 1; n <= DSA_MRCR_MAX_NEEDLES; n++) {
        struct needle_state *ns = &rd->ns[n];
        if (!ns->rows)
            continue;
        if (ns->explicit_rows == ns->rows) {
            n_explicit++;
            continue;
        }
        if (ns->explicit_rows) {
            dsa_errorf("'%s': %ld of %ld %d-needle rows carry a \"bin\" or \"context_tokens\", "
                       "the others do not; give every row of a needle count its bin, or none",
                       rd->path, ns->explicit_rows, ns->rows, n);
            goto cleanup;
        }
        if (check_official(rd, n))
            goto cleanup;
        n_official++;
    }
    rd->source = !n_official   ? DSA_MRCR_BINS_EXPLICIT
                 : !n_explicit ? DSA_MRCR_BINS_OFFICIAL
                               : DSA_MRCR_BINS_MIXED;
    /* what the filter will keep, for progress totals: the limit counts the first rows */
    for (int n = 1; n <= DSA_MRCR_MAX_NEEDLES; n++)
        for (int k = 0; k < DSA_MRCR_NBINS; k++) {
            long c = rd->nrows[n][k];
            if (!keep(rd, n, k, false))
                continue;
            rd->nselected += rd->filter.limit > 0 && c > rd->filter.limit ? rd->filter.limit : c;
        }
    ret = 0;
cleanup:
    dsa_sha256_free(&sha);
    dsa_lines_free(&rd->lines);
    json_decref(rd->page);
    rd->page = NULL;
    for (int n = 1; n <= DSA_MRCR_MAX_NEEDLES; n++) {
        free(rd->ns[n].n_chars);
        rd->ns[n].n_chars = NULL;
    }
    return ret;
}

dsa_mrcr_reader *dsa_mrcr_open(const char *path, const struct dsa_mrcr_filter *filter)
{
    if (!strcmp(path, "-")) {
        dsa_errorf("cannot read MRCR rows from standard input: the reader passes over the file "
                   "twice; give a file name");
        return NULL;
    }
    dsa_mrcr_reader *rd = dsa_xcalloc(1, sizeof *rd);
    if (!strncmp(path, DSA_SAMPLE_PREFIX, strlen(DSA_SAMPLE_PREFIX))) {
        /* an embedded sample, read from its verified copy in the cache */
        if (!(rd->path = dsa_sample_path(path))) {
            free(rd);
            return NULL;
        }
        path = rd->path;
    } else {
        rd->path = dsa_xstrdup(path);
    }
    if (filter)
        rd->filter = *filter;
    if (detect_format(rd) || pass1(rd)) {
        dsa_mrcr_free(&rd);
        return NULL;
    }
    load_revision(rd);
    rd->done = false;
    rd->pass2 = true;
    if (rd->fmt != FMT_PAGE_WHOLE && !(rd->lines = dsa_lines_open(path))) {
        dsa_mrcr_free(&rd);
        return NULL;
    }
    return rd;
}

void dsa_mrcr_set_messages_json(dsa_mrcr_reader *rd)
{
    rd->want_json = true;
}

void dsa_mrcr_row_release(struct dsa_mrcr_row *row)
{
    json_decref(row->messages);
    free(row->messages_json);
    free(row->answer);
    memset(row, 0, sizeof *row);
}

int dsa_mrcr_next(dsa_mrcr_reader *rd, struct dsa_mrcr_row *row)
{
    struct dsa_json_where w = {rd->path, 0};
    dsa_mrcr_row_release(row);
    /* every row the filter selects has been returned (pass 1 counted them): with --limit,
       the rest of the file is not read */
    if (rd->returned >= rd->nselected)
        return 0;
    for (;;) {
        json_t *obj, *owner;
        long long row_idx;
        int got = next_row_object(rd, &obj, &owner, &w, &row_idx, NULL);
        if (got <= 0)
            return got;
        struct row_head h;
        if (parse_head(obj, &w, &h)) {
            json_decref(owner);
            return -1;
        }
        int n = h.n_needles;
        long r = rd->r2[n]++;
        int bin = h.bin >= 0 ? h.bin : block_to_bin[(r / ROWS_PER_BLOCK) % 8];
        long seq = rd->seq2++;
        if (seq >= rd->nseq || rd->seq_n[seq] != n || rd->seq_bin[seq] != h.bin ||
            (h.bin < 0 && !rd->ns[n].official)) {
            /* the file changed between the passes */
            json_decref(owner);
            return dsa_errorf("'%s' changed while being read", rd->path);
        }
        json_t *messages = rd->messages; /* taken over by parse_full() */
        rd->messages = NULL;
        struct dsa_buf *dumped = rd->has_dumped ? &rd->dumped : NULL;
        rd->has_dumped = false;
        if (!keep(rd, n, bin, true)) {
            json_decref(messages);
            json_decref(owner);
            continue;
        }
        int bad = parse_full(obj, &w, messages, dumped, rd->want_json, row);
        json_decref(owner);
        if (bad) {
            dsa_mrcr_row_release(row);
            return -1;
        }
        snprintf(row->id, sizeof row->id, "n%d/r%04ld", n, r);
        row->n_needles = n;
        row->r = r;
        row->bin = bin;
        row->bin_tokens = 8192L << bin;
        row->bin_label = bin_labels[bin];
        row->bin_explicit = h.bin >= 0;
        row->context_tokens = h.context_tokens;
        row->n_chars = (long)h.n_chars;
        rd->returned++;
        return 1;
    }
}

#ifdef DSA_UNITTEST_BUILD
int dsa_mrcr_parse_row_text(const char *text, size_t len, struct dsa_mrcr_row *row)
{
    struct dsa_json_where w = {"<row>", 1};
    struct row_head h;
    dsa_mrcr_row_release(row);
    json_t *obj = dsa_json_parse_object(text, len, &w);
    if (!obj)
        return -1;
    int bad = parse_head(obj, &w, &h) || parse_full(obj, &w, NULL, NULL, false, row);
    json_decref(obj);
    if (bad) {
        dsa_mrcr_row_release(row);
        return -1;
    }
    row->n_needles = h.n_needles;
    row->bin = h.bin;
    row->bin_explicit = h.bin >= 0;
    row->context_tokens = h.context_tokens;
    row->n_chars = (long)h.n_chars;
    return 0;
}
#endif

const char *dsa_mrcr_sha256(const dsa_mrcr_reader *rd)
{
    return rd->sha256;
}

const char *dsa_mrcr_revision(const dsa_mrcr_reader *rd)
{
    return rd->revision;
}

enum dsa_mrcr_bins_source dsa_mrcr_bins_source(const dsa_mrcr_reader *rd)
{
    return rd->source;
}

long dsa_mrcr_nrows(const dsa_mrcr_reader *rd, int n_needles, int bin)
{
    if (n_needles < 1 || n_needles > DSA_MRCR_MAX_NEEDLES || bin < 0 || bin >= DSA_MRCR_NBINS)
        return 0;
    return rd->nrows[n_needles][bin];
}

long dsa_mrcr_nselected(const dsa_mrcr_reader *rd)
{
    return rd->nselected;
}

int dsa_mrcr_rewind(dsa_mrcr_reader *rd)
{
    /* pass 1's findings (sha256, ids, bins, counts) stand; pass 2 starts over */
    dsa_lines_free(&rd->lines);
    json_decref(rd->page);
    rd->page = NULL;
    json_decref(rd->messages);
    rd->messages = NULL;
    rd->has_dumped = false;
    memset(rd->r2, 0, sizeof rd->r2);
    memset(rd->kept, 0, sizeof rd->kept);
    rd->seq2 = 0;
    rd->returned = 0;
    rd->done = false;
    if (rd->fmt != FMT_PAGE_WHOLE && !(rd->lines = dsa_lines_open(rd->path)))
        return -1;
    return 0;
}

long dsa_mrcr_nselected_if(const dsa_mrcr_reader *rd, bool (*pred)(void *ud, const char *id),
                           void *ud)
{
    /* pass 1's row heads in file order, numbered and filtered as dsa_mrcr_next() will */
    long r[DSA_MRCR_MAX_NEEDLES + 1] = {0}, kept[DSA_MRCR_MAX_NEEDLES + 1][DSA_MRCR_NBINS];
    const struct dsa_mrcr_filter *f = &rd->filter;
    long count = 0;
    memset(kept, 0, sizeof kept);
    for (long s = 0; s < rd->nseq; s++) {
        int n = rd->seq_n[s];
        long ri = r[n]++;
        int bin = rd->seq_bin[s] >= 0 ? rd->seq_bin[s] : block_to_bin[(ri / ROWS_PER_BLOCK) % 8];
        if ((f->needles_mask && !(f->needles_mask & (1u << n))) ||
            (f->bins_mask && !(f->bins_mask & (1u << bin))) ||
            (f->limit > 0 && kept[n][bin] >= f->limit))
            continue;
        kept[n][bin]++;
        char id[32];
        snprintf(id, sizeof id, "n%d/r%04ld", n, ri);
        count += pred(ud, id);
    }
    return count;
}

void dsa_mrcr_free(dsa_mrcr_reader **rdp)
{
    dsa_mrcr_reader *rd = *rdp;
    if (!rd)
        return;
    dsa_lines_free(&rd->lines);
    json_decref(rd->page);
    json_decref(rd->messages);
    dsa_buf_release(&rd->dumped);
    for (int n = 1; n <= DSA_MRCR_MAX_NEEDLES; n++)
        free(rd->ns[n].n_chars);
    free(rd->seq_n);
    free(rd->seq_bin);
    free(rd->revision);
    free(rd->path);
    free(rd);
    *rdp = NULL;
}
