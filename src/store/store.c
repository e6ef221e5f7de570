/*
 * Run files (store.h has the format contract). One writer per file: the records, the id
 * index and the file size live in one struct behind one mutex, so appends from several
 * worker threads serialize and each line is written by a single write(2).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/exitcode.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/json_simd.h"
#include "util/lines.h"
#include "util/msg.h"
#include "util/url.h"
#include "util/utc.h"
#include "version.h"

struct dsa_run {
    char *path;
    int fd;
    json_t *header;  /* the header on disk (the old one when resumed) */
    json_t *records; /* array, file order */
    json_t *index;   /* object: id -> record (borrowed from records) */
    size_t resumed;
    off_t size;    /* bytes on disk that are whole lines; a failed write is cut back to it */
    bool sync;     /* fdatasync after each line */
    bool unsynced; /* lines written by dsa_run_append_unsynced() since the last fdatasync */
    bool broken;   /* a write failed: refuse further appends rather than tear the file */
    bool fresh;    /* this open wrote the file's header: nothing in it came before */
    long long crash_budget; /* test builds: bytes left before SIGKILL; -1 = no hook */
    pthread_mutex_t mu;
};

/* ------------------------------------------------------------------------------------- */
/* Reading                                                                               */

/* The header is recognised by its "dsa_eval_run" key; anything else on line 1 means a
   plain score file (only for loading, never for appending). */
static bool is_header(json_t *obj)
{
    return json_object_get(obj, "dsa_eval_run") != NULL;
}

static int check_header(json_t *h, const char *path)
{
    json_t *v = json_object_get(h, "dsa_eval_run");
    if (!json_is_integer(v) || json_integer_value(v) < 1)
        return dsa_errorf("line 1 of '%s': \"dsa_eval_run\" must be a positive integer", path);
    if (json_integer_value(v) > 1)
        return dsa_errorf("'%s' has run-file format %lld; this dsa-eval reads format 1", path,
                          (long long)json_integer_value(v));
    if (!json_is_object(json_object_get(h, "match")))
        return dsa_errorf("line 1 of '%s': \"match\" must be an object", path);
    return 0;
}

static bool blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return false;
    return true;
}

/* Checks the keys every consumer relies on. */
static int check_record(json_t *rec, const struct dsa_json_where *w)
{
    const char *s;
    size_t len;
    json_t *v;
    if (!dsa_json_get_str(rec, "id", false, &s, &len, w))
        return -1;
    /* ids and bins are keys of C-string maps; outputs may hold U+0000, these may not */
    if (strlen(s) != len)
        return dsa_errorf("line %ld of '%s': \"id\" contains U+0000", w->lineno, w->path);
    if (!dsa_json_get_str(rec, "bin", true, &s, &len, w))
        return -1;
    if (s && strlen(s) != len)
        return dsa_errorf("line %ld of '%s': \"bin\" contains U+0000", w->lineno, w->path);
    v = json_object_get(rec, "score");
    if (v && !json_is_null(v) && !json_is_number(v))
        return dsa_errorf("line %ld of '%s': \"score\" must be a number or null", w->lineno,
                          w->path);
    /* every eval scores in [0, 1] (MRCR ratio, recall@k, GSM8K 0/1): anything else is not a
       score of any run, and ±1e308 would turn every mean and CI after it into noise */
    if (json_is_number(v) && !(json_number_value(v) >= 0 && json_number_value(v) <= 1))
        return dsa_errorf("line %ld of '%s': \"score\" %.17g is outside 0..1, the range of "
                          "every dsa-eval score (MRCR ratio, recall@k, GSM8K 0/1)",
                          w->lineno, w->path, json_number_value(v));
    return 0;
}

/*
 * One line's value. Records go through simdjson first (util/json_simd.h: where it takes a text,
 * the tree is exactly the one jansson reads), which is several times faster than jansson's lexer
 * on the tens of thousands of short records a comparison reads; a text it declines (a duplicate
 * key, "\u0000", anything not JSON) is jansson's to read or refuse with its own message, so
 * what loads and every error are those of jansson alone. Line 1, the header, is always jansson's:
 * one line per file, and its strings are changed in place later (URL redaction), which the
 * simdjson trees' shared short strings do not allow. `line` is padded (util/lines.h).
 */
static json_t *load_line(const char *line, size_t len, bool first, json_error_t *err)
{
    _Static_assert(DSA_LINES_PADDING >= DSA_JSIMD_PADDING, "lines are padded for simdjson");
    json_t *obj = first ? NULL : dsa_jsimd_load(line, len, true, NULL, NULL);
    /* JSON_ALLOW_NUL: a model may say U+0000; the writer escapes it, the reader must take
       it back, or the file could never be resumed or compared */
    return obj ? obj : json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, err);
}

struct scan {
    json_t *header;  /* NULL for a plain score file */
    json_t *records; /* array */
    json_t *index;   /* id -> record */
    off_t good_end;  /* end of the last whole line kept */
    bool torn;       /* a torn last line was dropped */
    long torn_line;
};

static void scan_release(struct scan *s)
{
    json_decref(s->header);
    json_decref(s->records);
    json_decref(s->index);
    memset(s, 0, sizeof *s);
}

/*
 * Reads a run file or plain score file. `plain_ok`: a file without header is accepted.
 * A last line without its '\n' is torn: dropped, with s->torn set (for a plain score file,
 * an unterminated last line that parses is kept: such files are made by hand or by other
 * tools, and an editor may omit the final newline). A whole line that does not parse is an
 * error wherever it is.
 * Returns 0, -1 (I/O error, printed) or -3 (bad data, printed).
 */
static int scan_file(const char *path, bool plain_ok, struct scan *s)
{
    memset(s, 0, sizeof *s);
    s->records = json_array();
    s->index = json_object();
    dsa_lines *lr = dsa_lines_open(path);
    if (!lr) {
        scan_release(s);
        return -1;
    }
    int ret = -3, rc;
    const char *line;
    size_t len;
    while ((rc = dsa_lines_next(lr, &line, &len)) == 1) {
        long lineno = dsa_lines_lineno(lr);
        struct dsa_json_where w = {path, lineno};
        bool unterminated = dsa_lines_unterminated(lr);
        if (blank(line, len)) {
            if (!unterminated)
                s->good_end = dsa_lines_next_offset(lr);
            continue;
        }
        json_error_t err;
        json_t *obj = load_line(line, len, lineno == 1, &err);
        if (obj && !json_is_object(obj)) {
            json_decref(obj);
            obj = NULL;
            snprintf(err.text, sizeof err.text, "expected a JSON object");
        }
        bool header_line = lineno == 1 && obj && is_header(obj);
        if (unterminated && (s->header || header_line || !obj)) {
            /* Run files are written a whole line per write(2), so no '\n' means the write
               was cut short. A plain score file may lack the final '\n' of a whole line. */
            json_decref(obj);
            if (lineno == 1 && !obj && line[0] != '{') {
                dsa_errorf("'%s' is not a dsa-eval run file", path);
                goto cleanup;
            }
            s->torn = true;
            s->torn_line = lineno;
            break;
        }
        if (!obj) {
            /* a whole line (with its '\n') is written by one write(2): a crash cannot leave
               one that does not parse, and dropping it would resend its sample on every run */
            dsa_errorf("cannot parse line %ld of '%s': %s", lineno, path, err.text);
            goto cleanup;
        }
        if (header_line) {
            if (check_header(obj, path) < 0) {
                json_decref(obj);
                goto cleanup;
            }
            s->header = obj;
            s->good_end = dsa_lines_next_offset(lr);
            continue;
        }
        if (!s->header && !plain_ok) {
            json_decref(obj);
            dsa_errorf("'%s' is not a dsa-eval run file (line 1 has no \"dsa_eval_run\")", path);
            goto cleanup;
        }
        if (check_record(obj, &w) < 0) {
            json_decref(obj);
            goto cleanup;
        }
        const char *id = json_string_value(json_object_get(obj, "id"));
        if (json_object_get(s->index, id)) {
            dsa_errorf("line %ld of '%s': duplicate id '%s'", lineno, path, id);
            json_decref(obj);
            goto cleanup;
        }
        json_object_set(s->index, id, obj);
        json_array_append_new(s->records, obj);
        s->good_end = dsa_lines_next_offset(lr);
    }
    if (rc < 0) {
        ret = -1;
        goto cleanup;
    }
    ret = 0;
cleanup:
    dsa_lines_free(&lr);
    if (ret != 0)
        scan_release(s);
    return ret;
}

int dsa_run_load(const char *path, json_t **header, json_t **records)
{
    struct scan s;
    *header = *records = NULL;
    if (scan_file(path, true, &s) < 0)
        return -1;
    if (s.torn)
        dsa_warnf("ignoring the torn last line %ld of '%s' (interrupted write)", s.torn_line, path);
    *header = s.header ? json_incref(s.header) : json_object();
    *records = json_incref(s.records);
    scan_release(&s);
    return 0;
}

/* ------------------------------------------------------------------------------------- */
/* Header matching                                                                       */

static char *short_json(json_t *v)
{
    if (!v)
        return dsa_xstrdup("(absent)");
    char *s = dsa_json_dumps_line(v);
    if (strlen(s) > 80)
        strcpy(s + 77, "...");
    return s;
}

/* First difference between two match objects as a dotted key path, or NULL if equal. */
static bool first_diff(json_t *a, json_t *b, struct dsa_buf *key, json_t **da, json_t **db)
{
    if (json_equal(a, b))
        return false;
    if (json_is_object(a) && json_is_object(b)) {
        /* walk the union of keys in sorted order so the message is deterministic */
        json_t *keys = json_array();
        const char *k;
        json_t *v;
        json_object_foreach(a, k, v) json_array_append_new(keys, json_string(k));
        json_object_foreach(b, k, v) if (!json_object_get(a, k))
            json_array_append_new(keys, json_string(k));
        const char *best = NULL;
        size_t i;
        json_t *kv;
        json_array_foreach(keys, i, kv)
        {
            const char *kk = json_string_value(kv);
            if (json_equal(json_object_get(a, kk), json_object_get(b, kk)))
                continue;
            if (!best || strcmp(kk, best) < 0)
                best = kk;
        }
        if (key->len)
            dsa_buf_addch(key, '.');
        dsa_buf_adds(key, best);
        json_t *va = json_object_get(a, best), *vb = json_object_get(b, best);
        if (va && vb && json_is_object(va) && json_is_object(vb)) {
            bool r = first_diff(va, vb, key, da, db);
            json_decref(keys);
            return r;
        }
        *da = va;
        *db = vb;
        json_decref(keys);
        return true;
    }
    *da = a;
    *db = b;
    return true;
}

char *dsa_run_match_diff(json_t *a, json_t *b)
{
    if (json_equal(a, b))
        return NULL;
    struct dsa_buf key = DSA_BUF_INIT;
    json_t *da = NULL, *db = NULL;
    first_diff(a, b, &key, &da, &db);
    char *sa = short_json(da), *sb = short_json(db);
    struct dsa_buf out = DSA_BUF_INIT;
    dsa_buf_addf(&out, "%s: %s vs %s", key.len ? key.data : "match", sa, sb);
    free(sa);
    free(sb);
    dsa_buf_release(&key);
    return dsa_buf_detach(&out, NULL);
}

static int refuse_mismatch(const char *path, json_t *old, json_t *new)
{
    char *d = dsa_run_match_diff(old, new);
    dsa_errorf("run file '%s' was made by another command (different %s); use --force-new", path,
               d);
    free(d);
    return -2;
}

/* ------------------------------------------------------------------------------------- */
/* Writing                                                                               */

/*
 * Test builds honour DSA_STORE_CRASH_AFTER_BYTES=N: after N bytes written through run files
 * in this process (the partial line included) the process kills itself with SIGKILL, which
 * is exactly what a crash, an OOM kill or kill -9 mid-write leaves on disk.
 */
static long long crash_budget_from_env(void)
{
#ifdef DSA_UNITTEST_BUILD
    const char *e = getenv("DSA_STORE_CRASH_AFTER_BYTES");
    if (e && *e) {
        char *end;
        long long n = strtoll(e, &end, 10);
        if (*end == '\0' && n >= 0)
            return n;
    }
#endif
    return -1;
}

static ssize_t write_full(int fd, const char *p, size_t n)
{
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(fd, p + done, n - done);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        done += (size_t)w;
    }
    return (ssize_t)done;
}

/* Writes one whole line and (now) makes it durable, or leaves the fdatasync to dsa_run_sync();
   on failure cuts the file back to the last whole line so a later append can never follow a
   fragment. Caller holds r->mu. */
static int write_line(dsa_run *r, const char *line, size_t n, bool now)
{
    if (r->broken)
        return dsa_errorf("cannot append to '%s': an earlier write failed", r->path);
    if (r->crash_budget >= 0 && (long long)n > r->crash_budget) {
        (void)write_full(r->fd, line, (size_t)r->crash_budget);
        raise(SIGKILL);
    }
    if (r->crash_budget >= 0)
        r->crash_budget -= (long long)n;
    if (write_full(r->fd, line, n) < 0 || (r->sync && now && fdatasync(r->fd) < 0)) {
        int e = errno;
        if (ftruncate(r->fd, r->size) < 0)
            r->broken = true;
        dsa_errorf("cannot write '%s': %s", r->path, strerror(e));
        return -1;
    }
    r->size += (off_t)n;
    r->unsynced |= !now;
    return 0;
}

static int open_locked(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0)
        return dsa_errorf("cannot open '%s': %s", path, strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        int e = errno;
        close(fd);
        if (e == EWOULDBLOCK)
            return dsa_errorf("run file '%s' is in use by another dsa-eval process", path);
        return dsa_errorf("cannot lock '%s': %s", path, strerror(e));
    }
    return fd;
}

static bool is_failed(json_t *rec)
{
    const char *st = json_string_value(json_object_get(rec, "status"));
    if (st)
        return !strcmp(st, "failed");
    return !json_is_number(json_object_get(rec, "score"));
}

/*
 * --retry-failed: rewrites the file without its failed records so that those samples run
 * again. The new file is written beside the old one and renamed over it: a crash leaves
 * either file whole, never a mix. Returns 0 (nothing failed), 1 (rewritten) or -1.
 */
static int drop_failed(const char *path, struct scan *s)
{
    size_t n_failed = 0, i;
    json_t *rec;
    json_array_foreach(s->records, i, rec) n_failed += is_failed(rec);
    if (!n_failed)
        return 0;
    struct dsa_buf tmp = DSA_BUF_INIT, text = DSA_BUF_INIT;
    char *tmp_name = dsa_tmp_path(path);
    dsa_buf_adds(&tmp, tmp_name);
    free(tmp_name);
    json_t *kept = json_array();
    char *line = dsa_json_dumps_line(s->header);
    dsa_buf_adds(&text, line);
    dsa_buf_addch(&text, '\n');
    free(line);
    json_array_foreach(s->records, i, rec)
    {
        if (is_failed(rec)) {
            json_object_del(s->index, json_string_value(json_object_get(rec, "id")));
            continue;
        }
        json_array_append(kept, rec);
        line = dsa_json_dumps_line(rec);
        dsa_buf_adds(&text, line);
        dsa_buf_addch(&text, '\n');
        free(line);
    }
    int ret = -1;
    int fd = open(tmp.data, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0 || write_full(fd, text.data, text.len) < 0 || fsync(fd) < 0) {
        dsa_errorf("cannot write '%s': %s", tmp.data, strerror(errno));
        if (fd >= 0)
            close(fd);
        unlink(tmp.data);
        goto cleanup;
    }
    close(fd);
    if (rename(tmp.data, path) < 0) {
        dsa_errorf("cannot rename '%s' to '%s': %s", tmp.data, path, strerror(errno));
        unlink(tmp.data);
        goto cleanup;
    }
    dsa_notef("'%s': %zu failed sample%s will run again (--retry-failed)", path, n_failed,
              n_failed == 1 ? "" : "s");
    ret = 1;
    json_decref(s->records);
    s->records = json_incref(kept);
    s->good_end = (off_t)text.len;
cleanup:
    json_decref(kept);
    dsa_buf_release(&tmp);
    dsa_buf_release(&text);
    return ret;
}

/* The header as written: the caller's, plus the format version, tool and creation time
   when the caller left them out. */
static json_t *complete_header(json_t *header)
{
    json_t *h = json_deep_copy(header);
    json_object_set_new(h, "dsa_eval_run", json_integer(1));
    if (!json_object_get(h, "tool"))
        json_object_set_new(h, "tool",
                            json_pack("{s:s,s:s}", "version", DSA_VERSION, "git", DSA_GIT_HASH));
    if (!json_object_get(h, "created")) {
        char now[DSA_UTC_SIZE];
        json_object_set_new(h, "created", json_string(dsa_utc_now(now)));
    }
    return h;
}

static char *dirname_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return NULL;
    if (slash == path)
        return dsa_xstrdup("/");
    return dsa_xstrndup(path, (size_t)(slash - path));
}

/* P.old-1, P.old-2, ...: never overwrite an earlier run the user may still want */
static int move_aside(const char *path)
{
    struct dsa_buf b = DSA_BUF_INIT;
    for (int n = 1;; n++) {
        dsa_buf_reset(&b);
        dsa_buf_addf(&b, "%s.old-%d", path, n);
        struct stat st;
        if (lstat(b.data, &st) < 0 && errno == ENOENT)
            break;
    }
    int ret = 0;
    if (rename(path, b.data) < 0)
        ret = dsa_errorf("cannot rename '%s' to '%s': %s", path, b.data, strerror(errno));
    else
        dsa_notef("moved the old run file '%s' to '%s' (--force-new)", path, b.data);
    dsa_buf_release(&b);
    return ret;
}

int dsa_run_open(dsa_run **out, const char *path, json_t *header, unsigned flags)
{
    *out = NULL;
    if (!json_is_object(header) || !json_is_object(json_object_get(header, "match")))
        return dsa_errorf("internal: run header for '%s' lacks a \"match\" object", path);
    int ret = -1;
    struct scan s = {0};
    dsa_run *r = dsa_xcalloc(1, sizeof *r);
    r->fd = -1;
    r->path = dsa_xstrdup(path);
    r->crash_budget = crash_budget_from_env();
    r->sync = !(flags & DSA_RUN_NO_SYNC);
    pthread_mutex_init(&r->mu, NULL);

    char *dir = dirname_of(path);
    if (dir && dsa_mkdirs(dir) < 0) {
        free(dir);
        goto cleanup;
    }
    free(dir);

    /* the lock keeps a second dsa-eval (the same command started twice) from interleaving
       its records with ours; it goes away with the process, kill -9 included */
    r->fd = open_locked(path);
    if (r->fd < 0)
        goto cleanup;
    dsa_tmp_sweep(path); /* a --retry-failed rewrite that a kill interrupted */
    struct stat st;
    bool exists = fstat(r->fd, &st) == 0 && st.st_size > 0;
    bool replaced = false; /* path now names another inode than r->fd */
    if (exists) {
        int rc = scan_file(path, false, &s);
        if (rc < 0) {
            ret = rc;
            goto cleanup;
        }
        if (s.header &&
            !json_equal(json_object_get(s.header, "match"), json_object_get(header, "match"))) {
            if (!(flags & DSA_RUN_FORCE_NEW)) {
                ret = refuse_mismatch(path, json_object_get(s.header, "match"),
                                      json_object_get(header, "match"));
                goto cleanup;
            }
            if (move_aside(path) < 0)
                goto cleanup;
            scan_release(&s);
            exists = false;
            replaced = true;
        } else if (!s.header) {
            /* only a torn header: the crash came before any record; start the file anew */
            exists = false;
        } else if (flags & DSA_RUN_RETRY_FAILED) {
            int rc = drop_failed(path, &s);
            if (rc < 0)
                goto cleanup;
            replaced = rc > 0;
        }
    }
    if (replaced) {
        close(r->fd);
        r->fd = open_locked(path);
        if (r->fd < 0)
            goto cleanup;
    }
    if (exists) {
        if (s.torn) {
            dsa_warnf("dropped the torn last line %ld of '%s' (interrupted write); its sample "
                      "runs again",
                      s.torn_line, path);
        }
        if (ftruncate(r->fd, s.good_end) < 0) {
            dsa_errorf("cannot truncate '%s': %s", path, strerror(errno));
            goto cleanup;
        }
        if (lseek(r->fd, s.good_end, SEEK_SET) < 0) {
            dsa_errorf("cannot seek '%s': %s", path, strerror(errno));
            goto cleanup;
        }
        r->size = s.good_end;
        r->header = json_incref(s.header);
        r->records = json_incref(s.records);
        r->index = json_incref(s.index);
        r->resumed = json_array_size(s.records);
    } else {
        if (ftruncate(r->fd, 0) < 0) {
            dsa_errorf("cannot truncate '%s': %s", path, strerror(errno));
            goto cleanup;
        }
        r->header = complete_header(header);
        r->records = json_array();
        r->index = json_object();
        char *line = dsa_json_dumps_line(r->header);
        struct dsa_buf b = DSA_BUF_INIT;
        dsa_buf_adds(&b, line);
        dsa_buf_addch(&b, '\n');
        free(line);
        int wr = write_line(r, b.data, b.len, true);
        dsa_buf_release(&b);
        if (wr < 0)
            goto cleanup;
        r->fresh = true;
    }
    ret = 0;
    *out = r;
    r = NULL;
cleanup:
    scan_release(&s);
    dsa_run_free(&r);
    return ret;
}

void dsa_run_discard_if_empty(dsa_run **rp)
{
    dsa_run *r = *rp;
    /* unlinked while the lock is still held: no second writer can have appended meanwhile */
    if (r && r->fresh && json_array_size(r->records) == 0)
        unlink(r->path);
    dsa_run_free(rp);
}

bool dsa_run_has(const dsa_run *r, const char *id)
{
    return dsa_run_get(r, id) != NULL;
}

json_t *dsa_run_get(const dsa_run *r, const char *id)
{
    /* the mutex is the only mutable part of a const run */
    pthread_mutex_t *mu = (pthread_mutex_t *)&r->mu;
    pthread_mutex_lock(mu);
    json_t *v = json_object_get(r->index, id);
    pthread_mutex_unlock(mu);
    return v;
}

static int append(dsa_run *r, json_t *record, bool sync_now);

int dsa_run_append(dsa_run *r, json_t *record)
{
    return append(r, record, true);
}

int dsa_run_append_unsynced(dsa_run *r, json_t *record)
{
    return append(r, record, false);
}

int dsa_run_sync(dsa_run *r)
{
    int ret = 0;
    pthread_mutex_lock(&r->mu);
    if (r->unsynced && r->sync && fdatasync(r->fd) < 0) {
        /* what reached the disk is unknown: no more appends, the run stops */
        r->broken = true;
        ret = dsa_errorf("cannot write '%s': %s", r->path, strerror(errno));
    }
    r->unsynced = false;
    pthread_mutex_unlock(&r->mu);
    return ret;
}

static int append(dsa_run *r, json_t *record, bool sync_now)
{
    const char *id = json_string_value(json_object_get(record, "id"));
    if (!json_is_object(record) || !id)
        return dsa_errorf("internal: record for '%s' has no string \"id\"", r->path);
    if (!json_is_string(json_object_get(record, "bin")))
        return dsa_errorf("internal: record '%s' has no string \"bin\"", id);
    json_t *score = json_object_get(record, "score");
    if (!score || !(json_is_null(score) || json_is_number(score)))
        return dsa_errorf("internal: record '%s' has no \"score\" (number or null)", id);
    if (!json_object_get(record, "error"))
        json_object_set_new(record, "error", json_null());
    if (!json_object_get(record, "status"))
        json_object_set_new(record, "status", json_string(json_is_null(score) ? "failed" : "ok"));

    char *line = dsa_json_dumps_line(record);
    if (!line)
        return dsa_errorf("internal: cannot serialize record '%s'", id);
    size_t n = strlen(line);
    line = dsa_xrealloc(line, n + 2);
    line[n++] = '\n';
    line[n] = '\0';

    int ret = -1;
    pthread_mutex_lock(&r->mu);
    if (json_object_get(r->index, id)) {
        dsa_errorf("internal: record '%s' is already in '%s'", id, r->path);
        goto unlock;
    }
    if (write_line(r, line, n, sync_now) < 0)
        goto unlock;
    json_object_set(r->index, id, record);
    json_array_append(r->records, record);
    ret = 0;
unlock:
    pthread_mutex_unlock(&r->mu);
    free(line);
    return ret;
}

size_t dsa_run_count(const dsa_run *r)
{
    pthread_mutex_t *mu = (pthread_mutex_t *)&r->mu;
    pthread_mutex_lock(mu);
    size_t n = json_array_size(r->records);
    pthread_mutex_unlock(mu);
    return n;
}

json_t *dsa_run_record(const dsa_run *r, size_t i)
{
    pthread_mutex_t *mu = (pthread_mutex_t *)&r->mu;
    pthread_mutex_lock(mu);
    json_t *v = json_array_get(r->records, i);
    pthread_mutex_unlock(mu);
    return v;
}

json_t *dsa_run_records(const dsa_run *r)
{
    pthread_mutex_t *mu = (pthread_mutex_t *)&r->mu;
    pthread_mutex_lock(mu);
    json_t *a = json_copy(r->records); /* shallow: the records themselves are shared */
    pthread_mutex_unlock(mu);
    return a;
}

size_t dsa_run_resumed(const dsa_run *r)
{
    return r->resumed;
}

json_t *dsa_run_header(const dsa_run *r)
{
    return r->header;
}

void dsa_run_free(dsa_run **rp)
{
    dsa_run *r = *rp;
    if (!r)
        return;
    if (r->fd >= 0) {
        (void)dsa_run_sync(r); /* a failure is printed; the caller has reported what it synced */
        close(r->fd);
    }
    json_decref(r->header);
    json_decref(r->records);
    json_decref(r->index);
    pthread_mutex_destroy(&r->mu);
    free(r->path);
    free(r);
    *rp = NULL;
}

char *dsa_run_file_name(const char *dir, int run_index)
{
    char name[32];
    snprintf(name, sizeof name, "run-%03d.jsonl", run_index);
    return dsa_path_join(dir && *dir ? dir : ".", name);
}

/* ------------------------------------------------------------------------------------- */
/* The header's "command": argv without secrets                                          */

/* options whose value is a secret or names where one is kept */
static const char *const secret_opts[] = {"--api-key", "--api-key-file", "--password", "--token"};

static bool is_secret_opt(const char *arg, size_t n)
{
    for (size_t i = 0; i < sizeof secret_opts / sizeof *secret_opts; i++)
        if (strlen(secret_opts[i]) == n && !strncmp(arg, secret_opts[i], n))
            return true;
    return false;
}

/* "Authorization: Bearer x" -> "Authorization: <redacted>" for credential headers */
static bool redact_header(const char *v, struct dsa_buf *out)
{
    static const char *const names[] = {"authorization", "proxy-authorization", "x-api-key",
                                        "api-key", "cookie"};
    const char *colon = strchr(v, ':');
    if (!colon)
        return false;
    size_t n = (size_t)(colon - v);
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        if (strlen(names[i]) == n && !strncasecmp(v, names[i], n)) {
            dsa_buf_add(out, v, n);
            dsa_buf_adds(out, ": " DSA_RUN_REDACTED);
            return true;
        }
    }
    return false;
}

static json_t *redacted_value(const char *v, bool secret, bool header)
{
    struct dsa_buf b = DSA_BUF_INIT;
    json_t *s;
    if (secret)
        s = json_string(DSA_RUN_REDACTED);
    else if (header && redact_header(v, &b))
        s = json_string(b.data);
    else if (dsa_url_has_userinfo(v)) {
        char *shown = dsa_url_redact(v);
        s = json_string(shown);
        free(shown);
    } else
        s = json_string(v);
    dsa_buf_release(&b);
    /* json_string refuses invalid UTF-8; argv is bytes */
    return s ? s : json_string("<not utf-8>");
}

json_t *dsa_run_command_json(int argc, char **argv)
{
    json_t *a = json_array();
    bool next_secret = false, next_header = false;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (next_secret || next_header) {
            json_array_append_new(a, redacted_value(arg, next_secret, next_header));
            next_secret = next_header = false;
            continue;
        }
        if (!strcmp(arg, "--")) {
            json_array_append_new(a, json_string(arg));
            continue;
        }
        if (!strncmp(arg, "--", 2)) {
            const char *eq = strchr(arg, '=');
            size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
            bool secret = is_secret_opt(arg, n);
            bool header = n == 8 && !strncmp(arg, "--header", 8);
            if (eq && (secret || header)) {
                struct dsa_buf b = DSA_BUF_INIT;
                dsa_buf_add(&b, arg, n + 1);
                json_t *v = redacted_value(eq + 1, secret, header);
                dsa_buf_adds(&b, json_string_value(v));
                json_decref(v);
                json_array_append_new(a, json_string(b.data));
                dsa_buf_release(&b);
                continue;
            }
            next_secret = secret;
            next_header = header;
        } else if (!strcmp(arg, "-H")) {
            next_header = true;
        }
        json_array_append_new(a, redacted_value(arg, false, false));
    }
    return a;
}

json_t *dsa_run_header_new(const char *eval, int run_index, int argc, char **argv)
{
    char now[DSA_UTC_SIZE];
    dsa_utc_now(now);
    json_t *h = json_pack("{s:i,s:{s:s,s:s},s:o,s:s,s:i,s:s,s:{},s:{},s:{},s:{}}", "dsa_eval_run",
                          1, "tool", "version", DSA_VERSION, "git", DSA_GIT_HASH, "command",
                          dsa_run_command_json(argc, argv), "eval", eval, "run", run_index,
                          "created", now, "match", "dataset", "backend", "params");
    return h;
}

json_t *dsa_run_read_header(const char *path)
{
    json_t *h = dsa_json_first_line(path, true);
    if (!is_header(h)) {
        json_decref(h);
        return NULL;
    }
    return h;
}

int dsa_run_exit_status(int store_code)
{
    switch (store_code) {
    case 0:
        return DSA_EXIT_OK;
    case -2:
        return DSA_EXIT_MISMATCH;
    case -3:
        return DSA_EXIT_DATA;
    default:
        return DSA_EXIT_IO;
    }
}

int dsa_run_open_status(dsa_run **run, const char *path, json_t *header, unsigned flags)
{
    return dsa_run_exit_status(dsa_run_open(run, path, header, flags));
}

void dsa_run_note_resume(size_t resumed, size_t total, const char *path)
{
    /* a rerun says what it found (README: "Run it again and it resumes") */
    size_t done = resumed < total ? resumed : total;
    if (resumed)
        dsa_notef("resuming: %zu of %zu samples already done in '%s'%s", done, total, path,
                  done == total ? ": nothing left to do" : "");
}

int dsa_run_load_into(const char *path, json_t *runs)
{
    json_t *h = NULL, *recs = NULL;
    if (dsa_run_load(path, &h, &recs) < 0)
        return -1;
    json_array_append_new(runs, recs);
    json_decref(h);
    return 0;
}
