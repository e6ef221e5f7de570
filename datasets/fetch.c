/*
 * Dataset downloads through libcurl (easy interface: one transfer at a time is all a cache
 * fill needs), and GSM8K file descriptions.
 *
 * Every download goes to FILE.part first and is renamed when complete and verified, so the
 * cache never holds a half file under its final name; an interrupted fetch resumes the
 * .part (byte ranges for GSM8K, whole rows for MRCR).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "datasets/fetch.h"

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "datasets/mrcr.h"
#include "util/buf.h"
#include "util/exitcode.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/lines.h"
#include "util/msg.h"
#include "util/url.h"
#include "util/utc.h"
#include "version.h"

/* ------------------------------------------------------------------ GSM8K info */

bool dsa_fetch_is_gsm8k(const char *path)
{
    /* a quiet sniff: a file it cannot read is reported once, by the reader that follows */
    if (!strcmp(path, "-"))
        return false; /* stdin cannot be read twice */
    json_t *o = dsa_json_first_line(path, false);
    bool yes = json_is_object(o) && json_object_get(o, "question") &&
               json_object_get(o, "answer") && !json_object_get(o, "prompt");
    json_decref(o);
    return yes;
}

int dsa_fetch_info_gsm8k(const char *path)
{
    dsa_lines *l = dsa_lines_open(path);
    if (!l)
        return DSA_EXIT_DATA;
    const char *line;
    size_t len;
    long rows = 0;
    int got, ret = DSA_EXIT_OK;
    struct dsa_json_where w = {path, 0};
    while ((got = dsa_lines_next(l, &line, &len)) > 0) {
        w.lineno = dsa_lines_lineno(l);
        json_t *o = dsa_json_parse_object(line, len, &w);
        const char *q, *a;
        bool good = o && dsa_json_get_str(o, "question", false, &q, NULL, &w) &&
                    dsa_json_get_str(o, "answer", false, &a, NULL, &w);
        json_decref(o);
        if (!good) {
            ret = DSA_EXIT_DATA;
            break;
        }
        rows++;
    }
    dsa_lines_free(&l);
    if (got < 0)
        ret = DSA_EXIT_DATA;
    if (ret)
        return ret;
    char hex[65];
    if (dsa_sha256_file(path, hex))
        return DSA_EXIT_DATA;
    const char *pinned = !strcmp(hex, DSA_GSM8K_TEST_SHA256)    ? "test.jsonl"
                         : !strcmp(hex, DSA_GSM8K_TRAIN_SHA256) ? "train.jsonl"
                                                                : NULL;
    printf("file      %s\n", path);
    printf("dataset   GSM8K\n");
    printf("sha256    %s\n", hex);
    if (pinned)
        printf("revision  openai/grade-school-math@%s %s\n", DSA_GSM8K_COMMIT, pinned);
    else
        printf("revision  unknown (not a pinned upstream file)\n");
    printf("rows      %ld\n", rows);
    return DSA_EXIT_OK;
}

/* ------------------------------------------------------------------ transfers */

enum get_result {
    GET_OK = 0,
    GET_NO_NETWORK,  /* cannot resolve or connect: fail fast, no retry */
    GET_TRANSIENT,   /* 5xx, 429, timeout, cut transfer: retry */
    GET_FAILED,      /* 4xx, missing file: no retry */
    GET_INTERRUPTED, /* SIGINT */
    GET_WRITE_ERROR, /* the sink could not be written */
    GET_NO_RANGE,    /* a resume asked for a byte range and the server sent the whole file */
};

struct xfer {
    FILE *f;             /* file sink (resumable), or NULL */
    struct dsa_buf *mem; /* memory sink */
    curl_off_t resume;   /* bytes already in f */
    volatile int *interrupted;
    bool write_error;
    char errbuf[CURL_ERROR_SIZE];
};

static size_t on_write(char *data, size_t size, size_t n, void *user)
{
    struct xfer *x = user;
    size_t len = size * n;
    if (x->f) {
        if (fwrite(data, 1, len, x->f) != len) {
            x->write_error = true;
            return 0;
        }
    } else {
        dsa_buf_add(x->mem, data, len);
    }
    return len;
}

static int on_progress(void *user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    const struct xfer *x = user;
    return x->interrupted && *x->interrupted; /* nonzero aborts the transfer */
}

static bool is_file_url(const char *url)
{
    return !strncmp(url, "file://", 7);
}

/* One GET into x's sink. The error line is printed by the caller (it knows the retries). */
static enum get_result get_once(const char *url, struct xfer *x, long *code)
{
    CURL *c = curl_easy_init();
    if (!c) {
        snprintf(x->errbuf, sizeof x->errbuf, "cannot initialise libcurl");
        return GET_FAILED;
    }
    x->errbuf[0] = '\0';
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L); /* GitHub raw and HF resolve redirect */
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "dsa-eval/" DSA_VERSION);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, x->errbuf);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, x);
    /* fail fast without a network; a stalled transfer (under 1 KB/s for 60 s) is retried */
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 15L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https,file");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    if (x->f && x->resume > 0)
        curl_easy_setopt(c, CURLOPT_RESUME_FROM_LARGE, x->resume);
    CURLcode rc = curl_easy_perform(c);
    *code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, code);
    if (!x->errbuf[0])
        snprintf(x->errbuf, sizeof x->errbuf, "%s", curl_easy_strerror(rc));
    curl_easy_cleanup(c);
    if (x->write_error)
        return GET_WRITE_ERROR;
    switch (rc) {
    case CURLE_OK:
        break;
    case CURLE_ABORTED_BY_CALLBACK:
        return x->interrupted && *x->interrupted ? GET_INTERRUPTED : GET_FAILED;
    case CURLE_RANGE_ERROR: /* libcurl refuses a 200 answer to a range request */
        return GET_NO_RANGE;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
        return GET_NO_NETWORK;
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        return GET_TRANSIENT;
    default:
        return GET_FAILED;
    }
    if (*code == 429 || *code >= 500) {
        snprintf(x->errbuf, sizeof x->errbuf, "HTTP %ld", *code);
        return GET_TRANSIENT;
    }
    if (*code >= 400) {
        snprintf(x->errbuf, sizeof x->errbuf, "HTTP %ld", *code);
        return GET_FAILED;
    }
    return GET_OK;
}

static void sleep_interruptibly(int seconds, volatile int *interrupted)
{
    for (int i = 0; i < seconds * 10 && !(interrupted && *interrupted); i++) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* GET with retries (1, 2, 4, 8 s) for transient failures. Returns an exit status, the
   error printed. A file sink resumes from its current size on each attempt. */
static int get_shown(const char *real_url, const char *url, FILE *f, struct dsa_buf *mem,
                     volatile int *interrupted);

/* `url` is requested as given; messages show it with a password masked (dsa_url_redact) */
static int get(const char *url, FILE *f, struct dsa_buf *mem, volatile int *interrupted)
{
    char *shown = dsa_url_redact(url);
    int ret = get_shown(url, shown, f, mem, interrupted);
    free(shown);
    return ret;
}

static int get_shown(const char *real_url, const char *url, FILE *f, struct dsa_buf *mem,
                     volatile int *interrupted)
{
    enum { ATTEMPTS = 5 };
    struct xfer x = {0};
    x.f = f;
    x.mem = mem;
    x.interrupted = interrupted;
    for (int attempt = 1;; attempt++) {
        if (f) {
            if (fflush(f)) {
                dsa_errorf("cannot write the download of '%s': %s", url, strerror(errno));
                return DSA_EXIT_IO;
            }
            x.resume = ftello(f);
        } else {
            dsa_buf_reset(mem);
        }
        long code;
        enum get_result r = get_once(real_url, &x, &code);
        switch (r) {
        case GET_OK:
            return DSA_EXIT_OK;
        case GET_INTERRUPTED:
            dsa_errorf("interrupted while fetching '%s'; run the same command to resume", url);
            return DSA_EXIT_INTERRUPTED;
        case GET_WRITE_ERROR:
            dsa_errorf("cannot write the download of '%s': %s", url, strerror(errno ? errno : EIO));
            return DSA_EXIT_IO;
        case GET_NO_NETWORK:
            dsa_errorf("cannot fetch '%s': %s (no network? --base-url or the DSA_EVAL_*_BASE "
                       "variables select a mirror)",
                       url, x.errbuf);
            return DSA_EXIT_BACKEND;
        case GET_FAILED:
            dsa_errorf("cannot fetch '%s': %s", url, x.errbuf);
            return DSA_EXIT_BACKEND;
        case GET_NO_RANGE:
            if (f && x.resume > 0) {
                /* the bytes we have cannot be completed from here: start over, once */
                dsa_warnf("'%s' does not serve byte ranges; downloading it from the start", url);
                if (fflush(f) || ftruncate(fileno(f), 0) || fseeko(f, 0, SEEK_SET)) {
                    dsa_errorf("cannot truncate the download of '%s': %s", url, strerror(errno));
                    return DSA_EXIT_IO;
                }
                attempt--;
                break;
            }
            dsa_errorf("cannot fetch '%s': %s", url, x.errbuf);
            return DSA_EXIT_BACKEND;
        case GET_TRANSIENT:
            if (attempt == ATTEMPTS) {
                dsa_errorf("cannot fetch '%s': %s (gave up after %d attempts)", url, x.errbuf,
                           ATTEMPTS);
                return DSA_EXIT_BACKEND;
            }
            dsa_warnf("fetching '%s': %s; retrying in %d s", url, x.errbuf, 1 << (attempt - 1));
            sleep_interruptibly(1 << (attempt - 1), interrupted);
            if (interrupted && *interrupted)
                return DSA_EXIT_INTERRUPTED;
            break;
        }
    }
}

/* ------------------------------------------------------------------ cache files */

static char *strf(const char *fmt, ...) DSA_PRINTF(1, 2);
static char *strf(const char *fmt, ...)
{
    struct dsa_buf b = DSA_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    dsa_buf_vaddf(&b, fmt, ap);
    va_end(ap);
    return dsa_buf_detach(&b, NULL);
}

static const char *base_or(const char *given, const char *env, const char *dflt)
{
    if (given && *given)
        return given;
    const char *e = getenv(env);
    return e && *e ? e : dflt;
}

/* strips one trailing '/' so URLs join cleanly */
static char *url_base(const char *b)
{
    size_t n = strlen(b);
    return dsa_xstrndup(b, n && b[n - 1] == '/' ? n - 1 : n);
}

/* Writes PATH.meta.json (through a temporary file and rename). Consumes meta. */
static int write_meta(const char *path, json_t *meta)
{
    char *mp = strf("%s.meta.json", path);
    struct dsa_atomic a;
    int ret = dsa_atomic_open(&a, mp);
    if (!ret && json_dumpf(meta, a.f, JSON_INDENT(2) | JSON_PRESERVE_ORDER)) {
        ret = dsa_errorf("cannot write '%s': %s", a.tmp, strerror(errno ? errno : EIO));
        dsa_atomic_abort(&a);
    } else if (!ret) {
        ret = dsa_atomic_commit(&a);
    }
    json_decref(meta);
    free(mp);
    return ret;
}

/* A complete, verified download takes its final name, then PATH.meta.json records where it
   came from, with "fetched_at" added. Consumes meta. Returns 0 or DSA_EXIT_IO (printed). */
static int install_download(const char *part, const char *path, json_t *meta)
{
    if (rename(part, path)) {
        dsa_errorf("cannot rename '%s': %s", part, strerror(errno));
        json_decref(meta);
        return DSA_EXIT_IO;
    }
    char when[DSA_UTC_SIZE];
    json_object_set_new(meta, "fetched_at", json_string(dsa_utc_now(when)));
    return write_meta(path, meta) ? DSA_EXIT_IO : DSA_EXIT_OK;
}

/* A cached file is reused only if its sha256 equals the recorded one. 1 = verified,
   0 = absent, -1 = mismatch or no record (printed). */
static int verify_cached(const char *path, const char *want_sha)
{
    if (!dsa_is_file(path))
        return 0;
    char hex[65];
    if (dsa_sha256_file(path, hex))
        return -1;
    if (!want_sha)
        return dsa_errorf("cached '%s' has no recorded sha256 ('%s.meta.json' is missing or "
                          "unreadable); delete it and fetch again",
                          path, path);
    if (strcmp(hex, want_sha))
        return dsa_errorf("cached '%s' does not match its recorded sha256 (%s, recorded %s); "
                          "delete it and fetch again",
                          path, hex, want_sha);
    return 1;
}

static char *recorded_sha(const char *path)
{
    char *mp = strf("%s.meta.json", path);
    json_t *m = json_load_file(mp, 0, NULL);
    free(mp);
    const char *s = json_string_value(json_object_get(m, "sha256"));
    char *out = s ? dsa_xstrdup(s) : NULL;
    json_decref(m);
    return out;
}

/* Progress on stderr: redrawn in place on a terminal (at most every 500 ms); otherwise the
   first and the final line only; off with -q.
 *   dsa-eval: openai/mrcr 8needle: 120/800 rows, 96.4 MB
 */
struct progress {
    bool tty;
    struct timespec last;
    bool drawn;
};

static void progress(struct progress *p, bool final, const char *fmt, ...) DSA_PRINTF(3, 4);
static void progress(struct progress *p, bool final, const char *fmt, ...)
{
    if (dsa_msg_quiet)
        return;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double dt =
        (double)(now.tv_sec - p->last.tv_sec) + 1e-9 * (double)(now.tv_nsec - p->last.tv_nsec);
    if (!final && p->drawn && dt < 0.5)
        return;
    p->last = now;
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (p->tty)
        fprintf(stderr, "\rdsa-eval: %-70s%s", line, final ? "\n" : "");
    else if (final || !p->drawn)
        fprintf(stderr, "dsa-eval: %s\n", line);
    p->drawn = !final;
}

/* ------------------------------------------------------------------ GSM8K */

static int fetch_gsm8k_split(const struct dsa_fetch_opts *o, const char *dir, const char *split,
                             const char *want_sha)
{
    char *base = url_base(base_or(o->base_url, "DSA_EVAL_GSM8K_BASE", DSA_FETCH_GSM8K_BASE));
    char *url = strf("%s/%s/grade_school_math/data/%s.jsonl", base, DSA_GSM8K_COMMIT, split);
    char *path = strf("%s/%s.jsonl", dir, split), *part = strf("%s.part", path);
    int ret = DSA_EXIT_OK;
    FILE *f = NULL;

    int have = verify_cached(path, want_sha);
    if (have < 0) {
        ret = DSA_EXIT_DATA;
        goto cleanup;
    }
    if (have == 0) {
        struct stat st;
        off_t had = stat(part, &st) == 0 ? st.st_size : 0;
        f = fopen(part, "ab");
        if (!f) {
            ret = DSA_EXIT_IO;
            dsa_errorf("cannot create '%s': %s", part, strerror(errno));
            goto cleanup;
        }
        if (had > 0)
            dsa_notef("resuming '%s' at byte %lld", part, (long long)had);
        else {
            char *shown = dsa_url_redact(url);
            dsa_notef("fetching %s", shown);
            free(shown);
        }
        ret = get(url, f, NULL, o->interrupted);
        if (fclose(f) && !ret) {
            ret = DSA_EXIT_IO;
            dsa_errorf("cannot write '%s': %s", part, strerror(errno));
        }
        f = NULL;
        if (ret) {
            if (had == 0 && stat(part, &st) == 0 && st.st_size == 0)
                unlink(part); /* nothing to resume: leave no litter */
            goto cleanup;     /* else the .part stays for the next attempt */
        }
        char hex[65];
        if (dsa_sha256_file(part, hex)) {
            ret = DSA_EXIT_IO;
            goto cleanup;
        }
        if (strcmp(hex, want_sha)) {
            /* a wrong file cannot be resumed into a right one: start over next time */
            dsa_errorf("'%s' downloaded with sha256 %s, expected %s (openai/grade-school-math@%s "
                       "%s.jsonl); the download was removed",
                       url, hex, want_sha, DSA_GSM8K_COMMIT, split);
            unlink(part);
            ret = DSA_EXIT_DATA;
            goto cleanup;
        }
        json_t *meta = json_object();
        json_object_set_new(meta, "dataset", json_string("openai/grade-school-math"));
        json_object_set_new(meta, "revision", json_string(DSA_GSM8K_COMMIT));
        json_object_set_new(meta, "file", json_sprintf("grade_school_math/data/%s.jsonl", split));
        char *shown = dsa_url_redact(url); /* the cache's metadata is a file like any other */
        json_object_set_new(meta, "url", json_string(shown));
        free(shown);
        json_object_set_new(meta, "sha256", json_string(hex));
        if ((ret = install_download(part, path, meta)))
            goto cleanup;
    } else {
        dsa_notef("'%s' is up to date (sha256 verified)", path);
    }
    printf("%s\n", path);
cleanup:
    if (f)
        fclose(f);
    free(base);
    free(url);
    free(path);
    free(part);
    return ret;
}

int dsa_fetch_gsm8k(const struct dsa_fetch_opts *o)
{
    const char *split = o->split ? o->split : "all";
    bool test = !strcmp(split, "test") || !strcmp(split, "all");
    bool train = !strcmp(split, "train") || !strcmp(split, "all");
    if (!test && !train) {
        dsa_errorf("'%s' is not a GSM8K split: use test, train or all", split);
        return DSA_EXIT_USAGE;
    }
    char *cache = dsa_cache_dir();
    char *dir = strf("%s/gsm8k/%s", cache, DSA_GSM8K_COMMIT);
    int ret = dsa_mkdirs(dir) ? DSA_EXIT_IO : DSA_EXIT_OK;
    if (!ret && test)
        ret = fetch_gsm8k_split(o, dir, "test", DSA_GSM8K_TEST_SHA256);
    if (!ret && train)
        ret = fetch_gsm8k_split(o, dir, "train", DSA_GSM8K_TRAIN_SHA256);
    free(dir);
    free(cache);
    return ret;
}

/* ------------------------------------------------------------------ MRCR */

/* docs/mrcr.md "The dataset": the merged train split of openai/mrcr holds 2needle rows 0-799,
   4needle 800-1599, 8needle 1600-2399 */
#define MRCR_ROWS_TOTAL      2400
#define MRCR_ROWS_PER_NEEDLE 800

static long mrcr_split_offset(int n)
{
    return n == 2 ? 0 : n == 4 ? 800 : 1600;
}

/* The revision the rows API serves now: the Hub's sha of main. */
static int hub_revision(const struct dsa_fetch_opts *o, char **sha)
{
    char *base = url_base(base_or(o->hub_url, "DSA_EVAL_HUB_BASE", DSA_FETCH_HUB_BASE));
    char *url = strf("%s/api/datasets/openai/mrcr", base);
    struct dsa_buf body = DSA_BUF_INIT;
    int ret = get(url, NULL, &body, o->interrupted);
    if (!ret) {
        json_error_t err;
        json_t *j = json_loadb(body.data, body.len, 0, &err);
        const char *s = json_string_value(json_object_get(j, "sha"));
        if (s) {
            *sha = dsa_xstrdup(s);
        } else {
            char *shown = dsa_url_redact(url);
            dsa_errorf("cannot read the revision from '%s': no \"sha\" in the answer", shown);
            free(shown);
            ret = DSA_EXIT_BACKEND;
        }
        json_decref(j);
    }
    dsa_buf_release(&body);
    free(url);
    free(base);
    return ret;
}

/* Rows already in the .part file: complete lines of n-needle rows. A torn last line (an
   interrupted write) is cut off. Returns the count, or -1 (printed). */
static long resume_rows(const char *part, int n)
{
    if (!dsa_is_file(part))
        return 0;
    dsa_lines *l = dsa_lines_open(part);
    if (!l)
        return -1;
    const char *line;
    size_t len;
    long rows = 0;
    off_t good = 0;
    int got;
    struct dsa_json_where w = {part, 0};
    while ((got = dsa_lines_next(l, &line, &len)) > 0) {
        if (dsa_lines_unterminated(l))
            break;
        w.lineno = dsa_lines_lineno(l);
        json_t *row = dsa_json_parse_object(line, len, &w);
        long long nn = 0;
        bool ok = row && dsa_json_get_int(row, "n_needles", false, &nn, &w) && nn == n;
        json_decref(row);
        if (!ok) {
            dsa_lines_free(&l);
            return dsa_errorf("'%s' does not hold %d-needle rows; delete it and fetch again", part,
                              n);
        }
        rows++;
        good = dsa_lines_next_offset(l);
    }
    dsa_lines_free(&l);
    if (got < 0)
        return -1;
    if (truncate(part, good))
        return dsa_errorf("cannot truncate '%s': %s", part, strerror(errno));
    return rows;
}

/* Checks one /rows page and appends its rows but the first `skip` (already in the .part)
   to f. Returns an exit status (printed). */
static int write_page(const char *url, const struct dsa_buf *body, long first, long len, long skip,
                      int n, FILE *f, const char *part)
{
    json_error_t err;
    json_t *page = json_loadb(body->data, body->len, 0, &err);
    int ret = DSA_EXIT_DATA;
    json_t *rows = json_object_get(page, "rows");
    if (!page) {
        dsa_errorf("cannot parse the answer of '%s': %s", url, err.text);
        goto cleanup;
    }
    if (json_is_string(json_object_get(page, "error"))) {
        dsa_errorf("'%s' answered: %s", url, json_string_value(json_object_get(page, "error")));
        ret = DSA_EXIT_BACKEND;
        goto cleanup;
    }
    json_t *total = json_object_get(page, "num_rows_total");
    if (!json_is_array(rows) || (total && json_integer_value(total) != MRCR_ROWS_TOTAL) ||
        json_is_true(json_object_get(page, "partial"))) {
        dsa_errorf("'%s' is not a page of the 2,400-row openai/mrcr train split "
                   "(num_rows_total, partial or rows differ): the dataset layout changed",
                   url);
        goto cleanup;
    }
    if ((long)json_array_size(rows) != len) {
        dsa_errorf("'%s' returned %zu rows, expected %ld", url, json_array_size(rows), len);
        goto cleanup;
    }
    for (long i = 0; i < len; i++) {
        json_t *e = json_array_get(rows, (size_t)i);
        json_t *row = json_object_get(e, "row"), *tc = json_object_get(e, "truncated_cells");
        long long idx = json_integer_value(json_object_get(e, "row_idx"));
        long long nn = json_integer_value(json_object_get(row, "n_needles"));
        if (!json_is_object(row) || idx != first + i || nn != n ||
            (json_is_array(tc) && json_array_size(tc))) {
            dsa_errorf("'%s': row %ld is not the complete %d-needle row_idx %ld (row_idx %lld, "
                       "n_needles %lld): the dataset layout changed",
                       url, i, n, first + i, idx, nn);
            goto cleanup;
        }
        if (i < skip)
            continue;
        /* the HF row as the page has it, column order kept, one line */
        char *line = json_dumps(row, JSON_COMPACT | JSON_PRESERVE_ORDER);
        errno = 0;
        bool bad = !line || fputs(line, f) == EOF || fputc('\n', f) == EOF;
        free(line);
        if (bad) {
            dsa_errorf("cannot write '%s': %s", part, strerror(errno ? errno : EIO));
            ret = DSA_EXIT_IO;
            goto cleanup;
        }
    }
    ret = DSA_EXIT_OK;
    if (fflush(f)) {
        dsa_errorf("cannot write '%s': %s", part, strerror(errno));
        ret = DSA_EXIT_IO;
    }
cleanup:
    json_decref(page);
    return ret;
}

static int fetch_mrcr_needles(const struct dsa_fetch_opts *o, const char *dir, int n,
                              const char *revision, char **hub_sha)
{
    char *path = strf("%s/%dneedle.jsonl", dir, n), *part = strf("%s.part", path);
    char *base = url_base(base_or(o->base_url, "DSA_EVAL_HF_BASE", DSA_FETCH_HF_BASE));
    char *want = recorded_sha(path);
    struct dsa_buf body = DSA_BUF_INIT;
    FILE *f = NULL;
    dsa_mrcr_reader *rd = NULL;
    int ret = DSA_EXIT_OK;

    int have = verify_cached(path, want);
    if (have < 0) {
        ret = DSA_EXIT_DATA;
        goto cleanup;
    }
    if (have > 0) {
        dsa_notef("'%s' is up to date (sha256 verified)", path);
        printf("%s\n", path);
        goto cleanup;
    }
    /* the rows API serves only the current main: it must be the revision asked for */
    if (!*hub_sha && (ret = hub_revision(o, hub_sha)))
        goto cleanup;
    if (strcmp(*hub_sha, revision)) {
        dsa_errorf("openai/mrcr is now at revision %s, not %s; the rows API serves only the "
                   "current revision: pass --revision %s to fetch and record it",
                   *hub_sha, revision, *hub_sha);
        ret = DSA_EXIT_DATA;
        goto cleanup;
    }
    long done = resume_rows(part, n);
    if (done < 0 || done > MRCR_ROWS_PER_NEEDLE) {
        ret = DSA_EXIT_DATA;
        if (done > MRCR_ROWS_PER_NEEDLE)
            dsa_errorf("'%s' holds %ld rows, more than %d; delete it", part, done,
                       MRCR_ROWS_PER_NEEDLE);
        goto cleanup;
    }
    if (done)
        dsa_notef("resuming '%s' at row %ld", part, done);
    f = fopen(part, "ab");
    if (!f) {
        ret = DSA_EXIT_IO;
        dsa_errorf("cannot create '%s': %s", part, strerror(errno));
        goto cleanup;
    }
    struct progress pr = {isatty(2), {0, 0}, false};
    double mb = 0;
    long first_idx = mrcr_split_offset(n);
    /* pages start at multiples of page_rows from the needle count's first row, also after
       a resume (the rows before the resume point are fetched again, checked and skipped), so
       every request names the same pages and a file:// mirror needs one page size only */
    for (long r = done; r < MRCR_ROWS_PER_NEEDLE;) {
        long start = r - r % o->page_rows;
        long len = MRCR_ROWS_PER_NEEDLE - start < o->page_rows ? MRCR_ROWS_PER_NEEDLE - start
                                                               : o->page_rows;
        long offset = first_idx + start;
        /* file:// mirrors cannot answer a query string: pages are files named by offset */
        char *url = is_file_url(base)
                        ? strf("%s/rows/%ld-%ld.json", base, offset, len)
                        : strf("%s/rows?dataset=openai%%2Fmrcr&config=default&split=train"
                               "&offset=%ld&length=%ld",
                               base, offset, len);
        progress(&pr, false, "openai/mrcr %dneedle: %ld/%d rows, %.1f MB", n, r,
                 MRCR_ROWS_PER_NEEDLE, mb);
        ret = get(url, NULL, &body, o->interrupted);
        if (!ret) {
            char *shown = dsa_url_redact(url); /* write_page names the URL in messages only */
            ret = write_page(shown, &body, offset, len, r - start, n, f, part);
            free(shown);
        }
        mb += (double)body.len / 1e6;
        free(url);
        if (ret)
            goto cleanup; /* the .part keeps every complete row: the next fetch resumes */
        r = start + len;
    }
    progress(&pr, true, "openai/mrcr %dneedle: %d/%d rows, %.1f MB", n, MRCR_ROWS_PER_NEEDLE,
             MRCR_ROWS_PER_NEEDLE, mb);
    if (fclose(f)) {
        f = NULL;
        ret = DSA_EXIT_IO;
        dsa_errorf("cannot write '%s': %s", part, strerror(errno));
        goto cleanup;
    }
    f = NULL;
    /* the official-bin sanity check, before the file takes its final name */
    if (!(rd = dsa_mrcr_open(part, NULL))) {
        dsa_errorf("the fetched rows in '%s' do not read as official openai/mrcr rows", part);
        ret = DSA_EXIT_DATA;
        goto cleanup;
    }
    json_t *meta = json_object();
    json_object_set_new(meta, "dataset", json_string("openai/mrcr"));
    json_object_set_new(meta, "revision", json_string(revision));
    json_object_set_new(meta, "revision_source",
                        json_string("Hub API sha of main when the rows were fetched; the "
                                    "datasets-server rows API serves main only"));
    json_object_set_new(meta, "n_needles", json_integer(n));
    json_object_set_new(meta, "rows", json_integer(MRCR_ROWS_PER_NEEDLE));
    char *shown = dsa_url_redact(base);
    json_object_set_new(meta, "source",
                        json_sprintf("%s/rows?dataset=openai/mrcr&config=default&split=train, "
                                     "row_idx %ld-%ld",
                                     shown, first_idx, first_idx + MRCR_ROWS_PER_NEEDLE - 1));
    free(shown);
    json_object_set_new(meta, "sha256", json_string(dsa_mrcr_sha256(rd)));
    if ((ret = install_download(part, path, meta)))
        goto cleanup;
    printf("%s\n", path);
cleanup:
    if (f)
        fclose(f);
    dsa_mrcr_free(&rd);
    dsa_buf_release(&body);
    free(want);
    free(base);
    free(path);
    free(part);
    return ret;
}

int dsa_fetch_mrcr(const struct dsa_fetch_opts *o)
{
    if (o->page_rows < 1 || o->page_rows > 100) {
        dsa_errorf("--page-rows must be 1..100 (the rows API's limit), not %d", o->page_rows);
        return DSA_EXIT_USAGE;
    }
    unsigned mask = o->needles_mask ? o->needles_mask : 1u << 8;
    if (mask & ~((1u << 2) | (1u << 4) | (1u << 8))) {
        dsa_errorf("openai/mrcr has 2, 4 and 8 needles only");
        return DSA_EXIT_USAGE;
    }
    const char *revision = o->revision ? o->revision : DSA_MRCR_DEFAULT_REVISION;
    if (strlen(revision) != 40 || strspn(revision, "0123456789abcdef") != 40) {
        dsa_errorf("'%s' is not a revision: give the 40-hex-digit commit sha", revision);
        return DSA_EXIT_USAGE;
    }
    char *cache = dsa_cache_dir();
    char *dir = strf("%s/mrcr/%s", cache, revision);
    char *hub_sha = NULL;
    int ret = dsa_mkdirs(dir) ? DSA_EXIT_IO : DSA_EXIT_OK;
    for (int n = 2; n <= 8 && !ret; n *= 2)
        if (mask & (1u << n))
            ret = fetch_mrcr_needles(o, dir, n, revision, &hub_sha);
    free(hub_sha);
    free(dir);
    free(cache);
    return ret;
}
