/*
 * Run files: one append-only JSONL file per run (docs/design.md "Contracts"; docs/runfiles.md).
 *
 * Line 1 is the header, a JSON object:
 *   {"dsa_eval_run": 1,                     format version
 *    "tool": {"version", "git"},
 *    "command": [argv...],                  the command line (never an API key: callers pass
 *                                           the argv with secrets already removed)
 *    "eval": "mrcr" | "gsm8k",
 *    "run": 1,                              1-based run index within --runs N
 *    "created": "2026-11-30T12:00:00Z",
 *    "match": {...},                        everything that must be equal for a resume to be
 *                                           valid: dataset name/revision/sha256, model,
 *                                           backend kind, request parameters, seed, filters
 *    "dataset": {...}, "backend": {...}, "params": {...}}   free-form identity for reports
 *
 * Every further line is one finished sample's record, a JSON object with at least
 *   "id":     string, stable across runs and builds ("n8/r0123" for MRCR (needles, row);
 *             "q0017" for GSM8K test index 17)
 *   "bin":    string label ("≤8K" … "≤1M"; "all" when an eval has no bins)
 *   "bin_tokens": integer upper edge of the bin in tokens (8192 …), when binned
 *   "status": "ok" | "failed" | "excluded"
 *   "score":  number, or null unless status is "ok"
 *   "error":  null, or a one-line message (status "failed"), or the exclusion reason
 *             ("over_context: 270000 prompt tokens + 4096 > 262144")
 * plus eval-specific keys (prefix_hit, exact, output, finish_reason, usage, latency_ms, …).
 * Other tools can read runs knowing only these keys.
 *
 * Crash safety: each record is written with one write(2) of the whole line including its
 * '\n', and flushed (fdatasync) before dsa_run_append() returns, or by the next
 * dsa_run_sync() after dsa_run_append_unsynced(); nothing finished is lost. On open, a
 * torn last line (no '\n', or not a JSON object) is dropped by truncating the file to the
 * end of the last complete line, so a rerun rewrites that sample. A record whose id was
 * already written is never written twice.
 *
 * Ownership: dsa_run borrows nothing after dsa_run_open() returns (it copies the header);
 * json_t * arguments are borrowed; records returned by dsa_run_get() are borrowed from the
 * run and live until dsa_run_free().
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_STORE_STORE_H
#define DSA_STORE_STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct dsa_run dsa_run;

enum dsa_run_flags {
    DSA_RUN_FORCE_NEW = (1 << 0), /* existing file with another header: start it anew */
    /* skip the fdatasync after each line (fuzzing, scratch runs): a crash of the process
       still loses nothing, as the line is in the kernel; a power cut may */
    DSA_RUN_NO_SYNC = (1 << 1),
    /* --retry-failed: records with status "failed" are removed from the file at open (the
       file is rewritten beside itself and renamed over), so those samples run again */
    DSA_RUN_RETRY_FAILED = (1 << 2),
};

/*
 * Opens `path` for appending, creating it (and its directory) with `header` as line 1 if
 * it does not exist or is empty. If it exists, its header's "match" object must equal
 * header's "match" (compared as canonical JSON), else the call fails with
 * "run file 'P' was made by another command (different KEY: A vs B); use --force-new",
 * unless DSA_RUN_FORCE_NEW, which renames the old file to P.old-N and starts anew.
 * The file stays locked (flock, exclusive) until dsa_run_free(): a second writer, in this
 * process or another, gets -1 ("run file 'P' is in use by another dsa-eval process").
 * Returns 0, -1 (I/O error or locked, printed; exit DSA_EXIT_IO), -2 (header mismatch,
 * printed; exit DSA_EXIT_MISMATCH) or -3 (unreadable file, printed; exit DSA_EXIT_DATA).
 */
int dsa_run_open(dsa_run **out, const char *path, json_t *header, unsigned flags);
/* true if a record with this id is already in the file (finished in an earlier attempt) */
bool dsa_run_has(const dsa_run *r, const char *id);
/* the finished record with this id, or NULL (borrowed) */
json_t *dsa_run_get(const dsa_run *r, const char *id);
/* Appends one record (must have a string "id" not yet present, a string "bin" and a
   "score" that is a number or null; a missing "error" is set to null and a missing "status"
   to "ok"/"failed" from the score, in the caller's object). The run keeps a reference: do
   not modify the record afterwards. Returns 0, or -1 on a write error or a bad record
   (printed; after a failed write the file is cut back to its last whole line and further
   appends fail). Thread-safe, like every dsa_run_* call on an open run. */
int dsa_run_append(dsa_run *r, json_t *record);
/* As dsa_run_append(), except that the line's fdatasync is left to dsa_run_sync(): the line is
   written with its one write(2), so a crash or kill -9 of the process loses nothing (the
   kernel holds it), and the next dsa_run_sync() makes every line written so far durable with
   one fdatasync (a group commit: a loop that finishes many records in one turn syncs once per
   turn). A caller must not report a record finished before that sync returned 0. */
int dsa_run_append_unsynced(dsa_run *r, json_t *record);
/* fdatasync of the lines dsa_run_append_unsynced() wrote since the last call (nothing to do:
   0). Returns 0, or -1 (printed): the run is then broken, further appends fail. dsa_run_free()
   syncs what is left. */
int dsa_run_sync(dsa_run *r);
/* number of records (resumed + appended) */
size_t dsa_run_count(const dsa_run *r);
/* iterate over all records in file order: i in [0, count) */
json_t *dsa_run_record(const dsa_run *r, size_t i);
/* a snapshot of all records in file order: a new array (new reference) holding references
   to the run's records, e.g. for dsa_summary_new() at the end of a run */
json_t *dsa_run_records(const dsa_run *r);
/* the header on disk: the earlier one when resumed, else the caller's completed with
   "dsa_eval_run", "tool" and "created" when it left them out (borrowed) */
json_t *dsa_run_header(const dsa_run *r);
/* number of records found on disk at open time (i.e. resumed) */
size_t dsa_run_resumed(const dsa_run *r);
void dsa_run_free(dsa_run **r);
/* dsa_run_free(), and the file is removed when this open created it and no record was
   appended: for a run stopped by bad input before its first sample, which must not leave a
   header-only file behind (a resumed file is always kept) */
void dsa_run_discard_if_empty(dsa_run **r);

/*
 * Read-only loading for compare/report: the header (new reference) and all records (new
 * reference, a JSON array, file order). A torn last line is ignored with a warning. Plain
 * score files — lines {"id", "bin", "score"} with no header — load too: *header is then an
 * empty object. Returns 0 or -1 with a one-line error printed ("cannot parse line N of 'P'").
 */
int dsa_run_load(const char *path, json_t **header, json_t **records);

/*
 * The header's "command" array built from argv (new reference), with secrets replaced by
 * DSA_RUN_REDACTED: the values of --api-key, --api-key-file, --password and --token (both
 * "--opt V" and "--opt=V"), credential headers given with --header/-H ("Authorization: ...",
 * "X-Api-Key: ...", "Cookie: ..."), and the password of user:password@ in URLs
 * (dsa_url_redact: "http://alice:***@host"). Keys and header names stay.
 */
#define DSA_RUN_REDACTED "<redacted>"
json_t *dsa_run_command_json(int argc, char **argv);

/* NULL if the two "match" objects are equal, else the first difference (keys in sorted order,
   nested keys dotted) as "KEY: A vs B" with A and B compact JSON, "(absent)" for a missing
   key; caller frees. */
char *dsa_run_match_diff(json_t *a, json_t *b);

/* The header of the run file at path (line 1; a new reference), or NULL when there is no file,
   no header yet (a torn first line) or the line is not a run header. Quiet: dsa_run_open
   reports what is wrong with the file. */
json_t *dsa_run_read_header(const char *path);

/* A header to fill (new reference): "dsa_eval_run": 1, "tool", "command" (from argv through
   dsa_run_command_json), "eval", "run", "created" (now, UTC), and empty "match", "dataset",
   "backend" and "params" objects for the caller to fill before dsa_run_open(). */
json_t *dsa_run_header_new(const char *eval, int run_index, int argc, char **argv);

/* dsa_run_open() with its codes as an enum dsa_exit, the one place they are turned into exit
   statuses: DSA_EXIT_OK, DSA_EXIT_IO (write error or locked), DSA_EXIT_MISMATCH (another
   command's header), DSA_EXIT_DATA (unreadable). */
int dsa_run_open_status(dsa_run **run, const char *path, json_t *header, unsigned flags);
/* dsa_run_open()'s return value as an enum dsa_exit (0 -> DSA_EXIT_OK) */
int dsa_run_exit_status(int store_code);
/* Loads the records of `path` (dsa_run_load) and appends them, as one array, to `runs` (the
   per-run arrays a summary reads). Returns 0 or -1 (printed). */
int dsa_run_load_into(const char *path, json_t *runs);
/* "resuming: D of N samples already done in 'P'[: nothing left to do]" when resumed > 0 */
void dsa_run_note_resume(size_t resumed, size_t total, const char *path);

/* "DIR/run-001.jsonl" for run index 1; caller frees */
char *dsa_run_file_name(const char *dir, int run_index);

#endif
