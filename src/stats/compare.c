/*
 * The comparison document: loading, pairing, exclusion, per-bin statistics. See compare.h;
 * the schema is documented in docs/compare.md.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "stats/compare.h"

#include "store/store.h"
#include "util/buf.h"
#include "util/exitcode.h"
#include "util/fmt.h"
#include "util/hash.h"
#include "util/msg.h"
#include "util/opt.h"
#include "util/url.h"

/* ---- loading --------------------------------------------------------------------------- */

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* the "line N" of record k for messages: run files have their header on line 1 */
static long record_line(const struct dsa_cmp_run *run, size_t k)
{
    return (long)k + (json_object_size(run->header) ? 2 : 1);
}

/* Checks the keys every reader relies on: "id" string, "bin" string (default "all"),
   "status" one of ok/failed/excluded (default: ok when "score" is a number), "score" a
   finite number when ok, "latency_ms" a number when present. */
struct id_at {
    const char *id;
    size_t k;
};

static int id_at_cmp(const void *a, const void *b)
{
    const struct id_at *x = a, *y = b;
    int c = strcmp(x->id, y->id);
    return c ? c : (x->k > y->k) - (x->k < y->k);
}

/* The record at which a scan in file order first meets an id seen before (SIZE_MAX: none):
   one sort of the ids instead of a hash table of every id (the latter was a tenth of reading
   a run). Records without a string id are skipped; validate_run() reports them first. */
static size_t first_duplicate(const json_t *records)
{
    size_t n = json_array_size(records), m = 0, first = SIZE_MAX;
    struct id_at *v = dsa_xmalloc((n + 1) * sizeof *v);
    for (size_t k = 0; k < n; k++) {
        const char *id = json_string_value(json_object_get(json_array_get(records, k), "id"));
        if (id)
            v[m++] = (struct id_at){id, k};
    }
    if (m)
        qsort(v, m, sizeof *v, id_at_cmp);
    /* within a run of equal ids (sorted by k) the second one is where the scan stops */
    for (size_t i = 1; i < m; i++)
        if (!strcmp(v[i].id, v[i - 1].id) && (i < 2 || strcmp(v[i - 1].id, v[i - 2].id)) &&
            v[i].k < first)
            first = v[i].k;
    free(v);
    return first;
}

static int validate_run(const struct dsa_cmp_run *run)
{
    size_t dup = first_duplicate(run->records);
    for (size_t k = 0; k < json_array_size(run->records); k++) {
        json_t *r = json_array_get(run->records, k);
        long line = record_line(run, k);
        json_t *id = json_object_get(r, "id"), *bin = json_object_get(r, "bin");
        json_t *st = json_object_get(r, "status"), *score = json_object_get(r, "score");
        json_t *lat = json_object_get(r, "latency_ms");
        if (!json_is_string(id) || !json_string_length(id))
            return dsa_errorf("line %ld of '%s': \"id\" must be a non-empty string", line,
                              run->path);
        if (bin && !json_is_string(bin))
            return dsa_errorf("line %ld of '%s': \"bin\" must be a string", line, run->path);
        const char *status = "ok";
        if (st && !json_is_null(st)) {
            if (!json_is_string(st) ||
                (strcmp(json_string_value(st), "ok") && strcmp(json_string_value(st), "failed") &&
                 strcmp(json_string_value(st), "excluded")))
                return dsa_errorf("line %ld of '%s': \"status\" must be \"ok\", \"failed\" or "
                                  "\"excluded\"",
                                  line, run->path);
            status = json_string_value(st);
        }
        if (!strcmp(status, "ok") &&
            (!json_is_number(score) || !isfinite(json_number_value(score))))
            return dsa_errorf("line %ld of '%s': \"score\" must be a number", line, run->path);
        if (lat && !json_is_null(lat) &&
            (!json_is_number(lat) || !(json_number_value(lat) >= 0) ||
             !isfinite(json_number_value(lat))))
            return dsa_errorf("line %ld of '%s': \"latency_ms\" must be a number >= 0", line,
                              run->path);
        if (k == dup)
            return dsa_errorf("line %ld of '%s': duplicate id '%s'", line, run->path,
                              json_string_value(id));
    }
    return 0;
}

/* The checks of dsa_cmp_side_add() on one run, before it joins a side; prints the first
   failure. Borrows everything. */
static int run_check(const char *path, json_t *header, json_t *records)
{
    if (!json_is_object(header) || !json_is_array(records))
        return dsa_errorf("cannot load '%s'", path);
    for (size_t k = 0; k < json_array_size(records); k++)
        if (!json_is_object(json_array_get(records, k)))
            return dsa_errorf("line %zu of '%s': a record must be a JSON object", k + 1, path);
    struct dsa_cmp_run run = {(char *)path, header, records};
    return validate_run(&run);
}

/* Appends a checked run to the side (steals header and records). */
static void side_append(struct dsa_cmp_side *side, const char *path, json_t *header,
                        json_t *records)
{
    side->runs = dsa_xrealloc(side->runs, (side->n_runs + 1) * sizeof *side->runs);
    struct dsa_cmp_run *run = &side->runs[side->n_runs++];
    run->path = dsa_xstrdup(path);
    dsa_url_redact_json(header); /* a file written before URLs were masked */
    run->header = header;
    run->records = records;
}

int dsa_cmp_side_add(struct dsa_cmp_side *side, const char *path, json_t *header, json_t *records)
{
    if (run_check(path, header, records) < 0) {
        json_decref(header);
        json_decref(records);
        return -1;
    }
    side_append(side, path, header, records);
    return 0;
}

static int load_run(struct dsa_cmp_side *side, const char *path)
{
    json_t *header = NULL, *records = NULL;
    if (dsa_run_load(path, &header, &records) < 0)
        return -1;
    return dsa_cmp_side_add(side, path, header, records);
}

/* The run files of a side: `path` itself, or the *.jsonl files in it in name order
   (run-001.jsonl, run-002.jsonl, ...; never readdir order). Returns 0, or -1 with one line. */
static int side_files(const char *path, char ***files, size_t *n_files)
{
    *files = NULL;
    *n_files = 0;
    struct stat sb;
    if (stat(path, &sb) < 0)
        return dsa_errorf("cannot open '%s': %s", path, strerror(errno));
    if (!S_ISDIR(sb.st_mode)) {
        *files = dsa_xmalloc(sizeof **files);
        (*files)[(*n_files)++] = dsa_xstrdup(path);
        return 0;
    }
    DIR *d = opendir(path);
    if (!d)
        return dsa_errorf("cannot open '%s': %s", path, strerror(errno));
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || len < 7 || strcmp(e->d_name + len - 6, ".jsonl"))
            continue;
        struct dsa_buf p = DSA_BUF_INIT;
        dsa_buf_addf(&p, "%s%s%s", path, path[strlen(path) - 1] == '/' ? "" : "/", e->d_name);
        names = dsa_xrealloc(names, (n + 1) * sizeof *names);
        names[n++] = p.data;
    }
    closedir(d);
    if (!n)
        return dsa_errorf("no run files (*.jsonl) in '%s'", path);
    qsort(names, n, sizeof *names, cmp_names);
    *files = names;
    *n_files = n;
    return 0;
}

static void free_files(char **files, size_t n)
{
    for (size_t k = 0; k < n; k++)
        free(files[k]);
    free(files);
}

int dsa_cmp_side_load(struct dsa_cmp_side *side, const char *path)
{
    memset(side, 0, sizeof *side);
    side->path = dsa_xstrdup(path);
    char **files;
    size_t n;
    int ret = side_files(path, &files, &n);
    for (size_t k = 0; k < n && !ret; k++)
        ret = load_run(side, files[k]);
    free_files(files, n);
    return ret;
}

/* ---- reading the sides on several threads ---------------------------------------------- */

/* One run file of a comparison, read by any thread; its messages are held back so that the
   main thread prints them, and checks the records, in file order: whatever the thread count,
   what is printed and which file stops the comparison are those of reading one by one. */
struct pending_run {
    const char *path;
    json_t *header, *records;
    int rc;
    struct dsa_buf msgs;
};

/* Runs fn(ud, k) for k in [0, n) on up to `threads` threads, the calling one included; items
   go out in order, each to the first free thread. */
struct par_for {
    void (*fn)(void *ud, size_t k);
    void *ud;
    size_t n, next;
    pthread_mutex_t mu;
};

static void *par_for_worker(void *arg)
{
    struct par_for *pf = arg;
    for (;;) {
        pthread_mutex_lock(&pf->mu);
        size_t k = pf->next++;
        pthread_mutex_unlock(&pf->mu);
        if (k >= pf->n)
            return NULL;
        pf->fn(pf->ud, k);
    }
}

static void par_for(size_t n, int threads, void (*fn)(void *ud, size_t k), void *ud)
{
    struct par_for pf = {fn, ud, n, 0, PTHREAD_MUTEX_INITIALIZER};
    size_t extra = threads > 1 ? (size_t)threads - 1 : 0;
    if (extra >= n)
        extra = n ? n - 1 : 0;
    pthread_t *t = dsa_xmalloc((extra ? extra : 1) * sizeof *t);
    size_t started = 0;
    while (started < extra && pthread_create(&t[started], NULL, par_for_worker, &pf) == 0)
        started++;
    par_for_worker(&pf);
    for (size_t k = 0; k < started; k++)
        pthread_join(t[k], NULL);
    free(t);
}

/* reads and checks one run file (dsa_cmp_side_add()'s checks: per run, so on any thread) */
static void prefetch_one(void *ud, size_t k)
{
    struct pending_run *r = (struct pending_run *)ud + k;
    dsa_msg_capture(&r->msgs);
    r->rc = dsa_run_load(r->path, &r->header, &r->records);
    if (r->rc == 0)
        r->rc = run_check(r->path, r->header, r->records);
    dsa_msg_capture(NULL);
}

/* Loads the `n` sides at `paths` (NULL: left empty) as dsa_cmp_side_load() would one after
   the other, reading their files on `threads` threads. Returns 0, or -1 with its line printed. */
static int sides_load(struct dsa_cmp_side *sides, const char *const *paths, int n, int threads)
{
    char **files[3] = {NULL, NULL, NULL};
    size_t nf[3] = {0, 0, 0}, total = 0;
    int list_rc[3] = {0, 0, 0};
    struct dsa_buf list_msgs[3] = {DSA_BUF_INIT, DSA_BUF_INIT, DSA_BUF_INIT};
    for (int s = 0; s < n && s < 3; s++) {
        if (!paths[s])
            continue;
        dsa_msg_capture(&list_msgs[s]);
        list_rc[s] = side_files(paths[s], &files[s], &nf[s]);
        dsa_msg_capture(NULL);
        total += nf[s];
    }
    struct pending_run *runs = dsa_xcalloc(total ? total : 1, sizeof *runs);
    for (int s = 0, k = 0; s < n && s < 3; s++)
        for (size_t j = 0; j < nf[s]; j++, k++) {
            runs[k].path = files[s][j];
            runs[k].msgs = (struct dsa_buf)DSA_BUF_INIT;
        }
    par_for(total, threads, prefetch_one, runs);
    int ret = 0;
    size_t k = 0;
    for (int s = 0; s < n && s < 3; s++) {
        if (!paths[s])
            continue;
        if (!ret) {
            memset(&sides[s], 0, sizeof sides[s]);
            sides[s].path = dsa_xstrdup(paths[s]);
            dsa_msg_replay(list_msgs[s].data, list_msgs[s].len);
            ret = list_rc[s];
        }
        for (size_t j = 0; j < nf[s]; j++, k++) {
            struct pending_run *r = &runs[k];
            if (!ret) {
                dsa_msg_replay(r->msgs.data, r->msgs.len);
                ret = r->rc < 0 ? -1 : 0;
            }
            if (!ret) {
                side_append(&sides[s], r->path, r->header, r->records);
            } else {
                json_decref(r->header);
                json_decref(r->records);
            }
            dsa_buf_release(&r->msgs);
        }
        dsa_buf_release(&list_msgs[s]);
        free_files(files[s], nf[s]);
    }
    free(runs);
    return ret;
}

static void release_one(void *ud, size_t k)
{
    struct dsa_cmp_run *r = ((struct dsa_cmp_run **)ud)[k];
    json_decref(r->header);
    json_decref(r->records);
    r->header = r->records = NULL;
}

/* dsa_cmp_side_release() of each side, the runs' trees freed on `threads` threads (tens of
   thousands of small objects: a sizeable share of a short comparison) */
static void sides_release(struct dsa_cmp_side *sides, int n, int threads)
{
    size_t total = 0, k = 0;
    for (int s = 0; s < n; s++)
        total += sides[s].n_runs;
    struct dsa_cmp_run **runs = dsa_xmalloc((total ? total : 1) * sizeof *runs);
    for (int s = 0; s < n; s++)
        for (size_t j = 0; j < sides[s].n_runs; j++)
            runs[k++] = &sides[s].runs[j];
    par_for(total, threads, release_one, runs);
    free(runs);
    for (int s = 0; s < n; s++)
        dsa_cmp_side_release(&sides[s]);
}

void dsa_cmp_side_release(struct dsa_cmp_side *side)
{
    for (size_t k = 0; k < side->n_runs; k++) {
        free(side->runs[k].path);
        json_decref(side->runs[k].header);
        json_decref(side->runs[k].records);
    }
    free(side->runs);
    free(side->path);
    memset(side, 0, sizeof *side);
}

/* ---- helpers --------------------------------------------------------------------------- */

/* Bin ordering key: bin_tokens if given, else the label parsed ("≤8K", "<=8k", "8k"), else
   -1 (such labels sort after numeric ones, by name). */
static long bin_key(const char *label, long bin_tokens)
{
    if (bin_tokens > 0)
        return bin_tokens;
    const char *s = label;
    if (!strncmp(s, "\xe2\x89\xa4", 3)) /* "≤" */
        s += 3;
    else if (!strncmp(s, "<=", 2))
        s += 2;
    else if (*s == '<')
        s++;
    return dsa_parse_tokens(s);
}

/* The method sentence of every output: "Difference is the paired per-sample mean with a 95%
   bootstrap CI (percentile, B=10000, seed=1, taus2)." Caller frees. */
static char *method_text(const struct dsa_boot_cfg *cfg)
{
    struct dsa_buf b = DSA_BUF_INIT;
    dsa_buf_addf(&b,
                 "Difference is the paired per-sample mean with a %g%% bootstrap CI (%s, "
                 "B=%ld, seed=%llu, %s).",
                 cfg->confidence * 100, dsa_stats_ci_name(cfg->ci), cfg->resamples,
                 (unsigned long long)cfg->seed, dsa_stats_rng_name(cfg->rng));
    return dsa_buf_detach(&b, NULL);
}

/* a real, or null for NaN/inf (JSON has neither) */
static json_t *jreal(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

json_t *dsa_cmp_json_ci(double lo, double hi)
{
    if (!isfinite(lo) || !isfinite(hi))
        return json_null();
    return json_pack("[oo]", json_real(lo), json_real(hi));
}

enum { ST_MISSING = 0, ST_OK = 1, ST_FAILED = 2, ST_EXCLUDED = 3 };

struct bin_info {
    char *label;
    long key;
    long tokens;
};

/* id -> sample index k: open addressing over FNV-1a of the id's bytes (the ids are borrowed
   from the records). A jansson object did this before at several times the cost, which was
   most of the single-threaded part of a comparison between reading and the bootstraps. */
struct id_map {
    size_t cap, n; /* cap a power of two, at least twice n */
    const char **key;
    size_t *len, *val;
};

static void id_map_grow(struct id_map *m)
{
    struct id_map g = {m->cap ? 2 * m->cap : 1024, 0, NULL, NULL, NULL};
    g.key = dsa_xcalloc(g.cap, sizeof *g.key);
    g.len = dsa_xmalloc(g.cap * sizeof *g.len);
    g.val = dsa_xmalloc(g.cap * sizeof *g.val);
    for (size_t i = 0; i < m->cap; i++)
        if (m->key[i]) {
            size_t h = (size_t)dsa_fnv1a64(m->key[i], m->len[i]) & (g.cap - 1);
            while (g.key[h])
                h = (h + 1) & (g.cap - 1);
            g.key[h] = m->key[i];
            g.len[h] = m->len[i];
            g.val[h] = m->val[i];
        }
    g.n = m->n;
    free(m->key);
    free(m->len);
    free(m->val);
    *m = g;
}

/* the slot of id: where it is, or the empty one where it would go */
static size_t id_map_slot(const struct id_map *m, const char *id, size_t len)
{
    size_t h = (size_t)dsa_fnv1a64(id, len) & (m->cap - 1);
    while (m->key[h] && (m->len[h] != len || memcmp(m->key[h], id, len)))
        h = (h + 1) & (m->cap - 1);
    return h;
}

/* k of id, or SIZE_MAX */
static size_t id_map_get(const struct id_map *m, const char *id, size_t len)
{
    if (!m->cap)
        return SIZE_MAX;
    size_t h = id_map_slot(m, id, len);
    return m->key[h] ? m->val[h] : SIZE_MAX;
}

/* adds id (not in the map) with value k */
static void id_map_put(struct id_map *m, const char *id, size_t len, size_t k)
{
    if (2 * (m->n + 1) > m->cap)
        id_map_grow(m);
    size_t h = id_map_slot(m, id, len);
    m->key[h] = id;
    m->len[h] = len;
    m->val[h] = k;
    m->n++;
}

static void id_map_release(struct id_map *m)
{
    free(m->key);
    free(m->len);
    free(m->val);
    memset(m, 0, sizeof *m);
}

/* All samples of all sides, indexed once: id -> k, bin of each sample, and per side and run
   the state, score and latency of each sample. */
struct universe {
    struct id_map index; /* id -> k */
    size_t n;
    const char **ids; /* borrowed from the records */
    size_t *bin;      /* bin index of each sample */
    const char **why; /* first exclusion reason seen (borrowed), or NULL */
    size_t n_bins;
    struct bin_info *bins; /* sorted */
};

struct side_data {
    size_t R;
    unsigned char *state; /* R x n */
    double *score;        /* R x n, NAN unless ok */
    double *lat;          /* R x n, NAN when absent */
    const char **sel;     /* R x n, "selection_sha256" of in-process runs (borrowed), or NULL */
};

static int bin_cmp(const void *a, const void *b)
{
    const struct bin_info *x = a, *y = b;
    if (x->key >= 0 && y->key >= 0 && x->key != y->key)
        return x->key < y->key ? -1 : 1;
    if ((x->key >= 0) != (y->key >= 0))
        return x->key >= 0 ? -1 : 1;
    return strcmp(x->label, y->label);
}

static const char *rec_bin(json_t *r)
{
    json_t *b = json_object_get(r, "bin");
    return json_is_string(b) ? json_string_value(b) : "all";
}

static int universe_build(struct universe *u, const struct dsa_cmp_side *const *sides,
                          size_t n_sides)
{
    memset(u, 0, sizeof *u);
    json_t *bin_index = json_object();
    size_t cap = 0;
    size_t *bin_of = NULL;
    int ret = -1;
    const char *last_bl = NULL;
    json_t *last_bi = NULL;
    for (size_t s = 0; s < n_sides; s++)
        for (size_t q = 0; q < sides[s]->n_runs; q++) {
            const struct dsa_cmp_run *run = &sides[s]->runs[q];
            for (size_t k = 0; k < json_array_size(run->records); k++) {
                json_t *r = json_array_get(run->records, k);
                /* ids are C strings, as everywhere else here (first_duplicate, the docs) */
                const char *id = json_string_value(json_object_get(r, "id"));
                size_t id_len = strlen(id);
                const char *bl = rec_bin(r);
                /* runs are written bin by bin: most records have the bin of the one before */
                json_t *bi =
                    last_bl && !strcmp(bl, last_bl) ? last_bi : json_object_get(bin_index, bl);
                if (!bi) {
                    u->bins = dsa_xrealloc(u->bins, (u->n_bins + 1) * sizeof *u->bins);
                    json_t *bt = json_object_get(r, "bin_tokens");
                    long tok = json_is_integer(bt) ? (long)json_integer_value(bt) : -1;
                    u->bins[u->n_bins] = (struct bin_info){dsa_xstrdup(bl), bin_key(bl, tok), tok};
                    bi = json_integer((json_int_t)u->n_bins++);
                    json_object_set_new(bin_index, bl, bi);
                }
                last_bl = bl;
                last_bi = bi;
                size_t k0 = id_map_get(&u->index, id, id_len);
                if (k0 != SIZE_MAX) {
                    if (bin_of[k0] != (size_t)json_integer_value(bi)) {
                        dsa_errorf("line %ld of '%s': sample '%s' is in bin '%s' here but in "
                                   "bin '%s' elsewhere",
                                   record_line(run, k), run->path, id, bl,
                                   u->bins[bin_of[k0]].label);
                        goto cleanup;
                    }
                    continue;
                }
                if (u->n == cap) {
                    cap = cap ? 2 * cap : 256;
                    u->ids = dsa_xrealloc(u->ids, cap * sizeof *u->ids);
                    bin_of = dsa_xrealloc(bin_of, cap * sizeof *bin_of);
                }
                u->ids[u->n] = id;
                bin_of[u->n] = (size_t)json_integer_value(bi);
                id_map_put(&u->index, id, id_len, u->n);
                u->n++;
            }
        }
    if (u->n_bins > 1)
        for (size_t b = 0; b < u->n_bins; b++)
            if (!strcmp(u->bins[b].label, "all")) {
                dsa_errorf("bin label 'all' is reserved for the overall row; the runs use it "
                           "beside other bins");
                goto cleanup;
            }
    /* sort the bins, then renumber the samples' bins */
    size_t *order = dsa_xmalloc((u->n_bins ? u->n_bins : 1) * sizeof *order);
    struct bin_info *sorted = dsa_xmalloc((u->n_bins ? u->n_bins : 1) * sizeof *sorted);
    if (u->n_bins)
        memcpy(sorted, u->bins, u->n_bins * sizeof *sorted);
    if (u->n_bins)
        qsort(sorted, u->n_bins, sizeof *sorted, bin_cmp);
    for (size_t b = 0; b < u->n_bins; b++)
        for (size_t c = 0; c < u->n_bins; c++)
            if (sorted[c].label == u->bins[b].label)
                order[b] = c;
    free(u->bins);
    u->bins = sorted;
    u->bin = dsa_xmalloc((u->n ? u->n : 1) * sizeof *u->bin);
    for (size_t k = 0; k < u->n; k++)
        u->bin[k] = order[bin_of[k]];
    free(order);
    u->why = dsa_xcalloc(u->n ? u->n : 1, sizeof *u->why);
    ret = 0;
cleanup:
    free(bin_of);
    json_decref(bin_index);
    return ret;
}

static void universe_release(struct universe *u)
{
    id_map_release(&u->index);
    for (size_t b = 0; b < u->n_bins; b++)
        free(u->bins[b].label);
    free(u->bins);
    free(u->ids);
    free(u->bin);
    free(u->why);
}

/* One side's arrays; the first exclusion reason of each sample this side has goes to why[k]
   when why[k] is NULL. Reads u and the side only, so sides can be built on several threads,
   each with its own why. */
static void side_data_fill(struct side_data *sd, const struct dsa_cmp_side *side,
                           const struct universe *u, const char **why)
{
    size_t n = u->n, R = side->n_runs;
    sd->R = R;
    sd->state = dsa_xcalloc(R * n + 1, 1);
    sd->score = dsa_xmalloc((R * n + 1) * sizeof *sd->score);
    sd->lat = dsa_xmalloc((R * n + 1) * sizeof *sd->lat);
    sd->sel = dsa_xcalloc(R * n + 1, sizeof *sd->sel);
    for (size_t k = 0; k < R * n; k++)
        sd->score[k] = sd->lat[k] = NAN;
    for (size_t q = 0; q < R; q++) {
        json_t *recs = side->runs[q].records;
        for (size_t j = 0; j < json_array_size(recs); j++) {
            json_t *r = json_array_get(recs, j);
            const char *id = json_string_value(json_object_get(r, "id"));
            size_t k = id_map_get(&u->index, id, strlen(id));
            json_t *st = json_object_get(r, "status");
            const char *s = json_is_string(st) ? json_string_value(st) : "ok";
            size_t at = q * n + k;
            if (!strcmp(s, "ok")) {
                sd->state[at] = ST_OK;
                sd->score[at] = json_number_value(json_object_get(r, "score"));
                json_t *lat = json_object_get(r, "latency_ms");
                /* 0 ms (a clock too coarse for a local server) has no ratio: left out */
                if (json_is_number(lat) && json_number_value(lat) > 0)
                    sd->lat[at] = json_number_value(lat);
                json_t *sel = json_object_get(r, "selection_sha256");
                if (json_is_string(sel))
                    sd->sel[at] = json_string_value(sel);
            } else if (!strcmp(s, "failed")) {
                sd->state[at] = ST_FAILED;
            } else {
                sd->state[at] = ST_EXCLUDED;
                json_t *e = json_object_get(r, "error");
                if (!why[k])
                    why[k] = json_is_string(e) ? json_string_value(e) : "excluded";
            }
        }
    }
}

static void side_data_build(struct side_data *sd, const struct dsa_cmp_side *side,
                            struct universe *u)
{
    side_data_fill(sd, side, u, u->why);
}

struct side_task {
    struct side_data *sd;
    const struct dsa_cmp_side *side;
    const struct universe *u;
    const char **why; /* this side's own first reasons */
};

static void side_task_run(void *ud, size_t k)
{
    struct side_task *t = (struct side_task *)ud + k;
    side_data_fill(t->sd, t->side, t->u, t->why);
}

/* side_data_build() of each of the n sides in turn, the sides on up to `threads` threads: each
   side notes its own exclusion reasons, and u->why takes the first in side order, as one
   side after the other would have left it. */
static void sides_data_build(struct side_data *sd, const struct dsa_cmp_side *const *sides,
                             size_t n, struct universe *u, int threads)
{
    struct side_task t[3];
    for (size_t s = 0; s < n && s < 3; s++)
        t[s] =
            (struct side_task){&sd[s], sides[s], u, dsa_xcalloc(u->n ? u->n : 1, sizeof(char *))};
    par_for(n < 3 ? n : 3, threads, side_task_run, t);
    for (size_t s = 0; s < n && s < 3; s++) {
        for (size_t k = 0; k < u->n; k++)
            if (!u->why[k])
                u->why[k] = t[s].why[k];
        free(t[s].why);
    }
}

static void side_data_release(struct side_data *sd)
{
    free(sd->state);
    free(sd->score);
    free(sd->lat);
    free(sd->sel);
}

/*
 * In-process runs record a hash of the selected top-k index sets per sample. A numerical
 * change can move a score by less than the printed precision while changing which keys
 * are selected, so the bit-identity of the selections is counted beside the scores: a
 * sample is identical when every run of both sides has the same hash. Returns NULL when
 * no used sample of the bin carries a hash on both sides.
 */
static json_t *selection_identity(const struct side_data *a, const struct side_data *b, size_t n,
                                  const size_t *ks, size_t m)
{
    size_t with = 0, same = 0;
    for (size_t j = 0; j < m; j++) {
        const char *ref = NULL;
        bool all = true, eq = true;
        for (int s = 0; s < 2 && all; s++) {
            const struct side_data *sd = s ? b : a;
            for (size_t q = 0; q < sd->R; q++) {
                size_t at = q * n + ks[j];
                if (sd->state[at] != ST_OK)
                    continue;
                if (!sd->sel[at]) {
                    all = false;
                    break;
                }
                if (!ref)
                    ref = sd->sel[at];
                else if (strcmp(ref, sd->sel[at]))
                    eq = false;
            }
        }
        if (!all || !ref)
            continue;
        with++;
        same += eq;
    }
    if (!with)
        return NULL;
    return json_pack("{s:s,s:I,s:I}", "key", "selection_sha256", "identical", (json_int_t)same, "n",
                     (json_int_t)with);
}

/* ---- one pair of sides ------------------------------------------------------------------ */

enum { USE_OK = 0, USE_EXCLUDED, USE_FAILED, USE_UNPAIRED };

/* Per sample: used, excluded (over context or excluded in any run of either side), failed
   (no finished run on a side that has failed records for it) or unpaired (absent from a
   side). One set for both sides: a sample dropped on one side is dropped on the other. */
static unsigned char *classify(const struct universe *u, const struct side_data *a,
                               const struct side_data *b)
{
    size_t n = u->n;
    unsigned char *use = dsa_xcalloc(n ? n : 1, 1);
    for (size_t k = 0; k < n; k++) {
        bool excl = false, ok_a = false, ok_b = false, seen_a = false, seen_b = false;
        for (size_t q = 0; q < a->R; q++) {
            unsigned char s = a->state[q * n + k];
            excl |= s == ST_EXCLUDED;
            ok_a |= s == ST_OK;
            seen_a |= s != ST_MISSING;
        }
        for (size_t q = 0; q < b->R; q++) {
            unsigned char s = b->state[q * n + k];
            excl |= s == ST_EXCLUDED;
            ok_b |= s == ST_OK;
            seen_b |= s != ST_MISSING;
        }
        if (excl)
            use[k] = USE_EXCLUDED;
        else if (!seen_a || !seen_b)
            use[k] = USE_UNPAIRED;
        else if (!ok_a || !ok_b)
            use[k] = USE_FAILED;
        else
            use[k] = USE_OK;
    }
    return use;
}

static json_t *perm_json(const struct dsa_perm_result *p)
{
    return json_pack("{s:o,s:I,s:I,s:o,s:b}", "t", jreal(p->t_obs), "k", (json_int_t)p->k, "N",
                     (json_int_t)p->n_total, "p", jreal(p->p), "cannot_reach_5pct",
                     p->cannot_reach_5pct);
}

static void stream_label(struct dsa_buf *b, const char *cmp, const char *what)
{
    dsa_buf_reset(b);
    dsa_buf_addf(b, "%s/%s", cmp, what);
}

/* One bin's statistics, prepared on the main thread, computed on any thread (every job has
   its own generator, so the thread count never changes a number), turned into JSON on the
   main thread again. */
struct bin_job {
    size_t m, ra, rb;
    double *B, *C;   /* ra x m and rb x m score matrices */
    size_t *stratum; /* owned copy, or NULL */
    size_t n_strata;
    uint32_t seed, seed2;
    const struct dsa_boot_cfg *cfg;
    bool full;
    bool split; /* the two-level CI runs as a second work item beside the rest */
    int rc;
    struct dsa_paired_result res;
    struct dsa_paired_result tl; /* the second item's result (two-level fields only) */
};

/* one work item: a job's pooled part (everything but a split-off two-level CI), or its
   two-level part; each has its own stream */
struct job_item {
    struct bin_job *job;
    bool two_level;
};

static unsigned job_flags(const struct bin_job *j)
{
    return j->full ? 0 : DSA_PAIRED_NO_TWO_LEVEL;
}

static void job_prepare(struct bin_job *j, const size_t *ks, size_t m, const size_t *stratum,
                        size_t n_strata, const struct side_data *a, const struct side_data *b,
                        size_t n, const struct dsa_boot_cfg *cfg, const char *cmp,
                        const char *label, bool full)
{
    memset(j, 0, sizeof *j);
    j->m = m;
    j->ra = a->R;
    j->rb = b->R;
    j->B = dsa_xmalloc((a->R * m + 1) * sizeof *j->B);
    j->C = dsa_xmalloc((b->R * m + 1) * sizeof *j->C);
    for (size_t q = 0; q < a->R; q++)
        for (size_t k = 0; k < m; k++)
            j->B[q * m + k] = a->score[q * n + ks[k]];
    for (size_t q = 0; q < b->R; q++)
        for (size_t k = 0; k < m; k++)
            j->C[q * m + k] = b->score[q * n + ks[k]];
    if (stratum) {
        j->stratum = dsa_xmalloc((m + 1) * sizeof *j->stratum);
        memcpy(j->stratum, stratum, m * sizeof *j->stratum);
        j->n_strata = n_strata;
    }
    struct dsa_buf sl = DSA_BUF_INIT;
    stream_label(&sl, cmp, label);
    j->seed = dsa_stats_stream_seed(cfg->seed, sl.data);
    dsa_buf_adds(&sl, "/two-level");
    j->seed2 = dsa_stats_stream_seed(cfg->seed, sl.data);
    dsa_buf_release(&sl);
    j->cfg = cfg;
    j->full = full;
    j->rc = -1;
    struct dsa_paired_input in = {j->m, j->ra, j->rb, j->B, j->C, j->stratum, j->n_strata};
    j->split = dsa_stats_paired_wants_two_level(&in, job_flags(j));
}

static void item_run(const struct job_item *it)
{
    struct bin_job *j = it->job;
    struct dsa_paired_input in = {j->m, j->ra, j->rb, j->B, j->C, j->stratum, j->n_strata};
    if (it->two_level)
        dsa_stats_paired_two_level(&in, j->cfg, j->seed2, job_flags(j), &j->tl);
    else
        j->rc = dsa_stats_paired(&in, j->cfg, j->seed, j->seed2,
                                 job_flags(j) | (j->split ? DSA_PAIRED_NO_TWO_LEVEL : 0), &j->res);
}

/* after both items: the two-level fields into the job's result */
static void job_merge(struct bin_job *j)
{
    if (!j->split || j->rc != 0)
        return;
    j->res.has_two_level = j->tl.has_two_level;
    j->res.two_level_n = j->tl.two_level_n;
    j->res.tl_lo = j->tl.tl_lo;
    j->res.tl_hi = j->tl.tl_hi;
}

/* the items in the order they are handed out (par_for's k-th item) */
struct job_order {
    const struct job_item *items;
    const size_t *order; /* the items, largest first */
};

static void job_one(void *ud, size_t k)
{
    const struct job_order *o = ud;
    item_run(&o->items[o->order[k]]);
}

/* An item's work: B x m index draws, each feeding a few sums (pooled: the statistic and each
   run's; two-level: two table look-ups), so both parts weigh m. */
static size_t item_cost(const struct job_item *it)
{
    return it->job->m;
}

/* order[] = the items largest first, then in bin order: a stable order that the thread count
   does not change (an insertion sort: a comparison has a few dozen bins at most). */
static void order_by_cost(const struct job_item *items, size_t n, size_t *order)
{
    for (size_t k = 0; k < n; k++) {
        size_t i = k;
        while (i > 0 && item_cost(&items[order[i - 1]]) < item_cost(&items[k])) {
            order[i] = order[i - 1];
            i--;
        }
        order[i] = k;
    }
}

/* Runs the jobs on `threads` threads (the calling one included). A job's two-level CI, when
   it has one, is a second item on its own stream, so one row ("all", as large as every bin
   together) keeps two threads busy; items go out largest first, else "all" would start last
   and run alone. Each item writes only its own result, so the order of running changes no
   number. */
static void jobs_run(struct bin_job *jobs, size_t n, int threads)
{
    struct job_item *items = dsa_xmalloc((2 * n + 1) * sizeof *items);
    size_t ni = 0;
    for (size_t k = 0; k < n; k++) {
        items[ni++] = (struct job_item){&jobs[k], false};
        if (jobs[k].split)
            items[ni++] = (struct job_item){&jobs[k], true};
    }
    size_t *order = dsa_xmalloc((ni + 1) * sizeof *order);
    order_by_cost(items, ni, order);
    struct job_order jo = {items, order};
    par_for(ni, threads, job_one, &jo);
    for (size_t k = 0; k < n; k++)
        job_merge(&jobs[k]);
    free(order);
    free(items);
}

static void job_release(struct bin_job *j)
{
    if (j->rc == 0)
        dsa_paired_result_release(&j->res);
    free(j->B);
    free(j->C);
    free(j->stratum);
}

/*
 * The CI of one side's mean, for the plots and the CSV: Wilson's score interval when every
 * per-sample value is 0 or 1 (a normal interval of a proportion near 0 or 1 leaves [0, 1]);
 * else the normal interval, clipped to [0, 1] when every value lies there (MRCR scores,
 * recall). null for n < 2.
 */
static json_t *mean_ci(const double *x, size_t n, double confidence)
{
    if (n < 2)
        return json_null();
    bool binary = true, unit = true;
    double sum = 0;
    for (size_t k = 0; k < n; k++) {
        binary &= x[k] == 0 || x[k] == 1;
        unit &= x[k] >= 0 && x[k] <= 1;
        sum += x[k];
    }
    double z = gsl_cdf_ugaussian_Pinv(0.5 + confidence / 2), nn = (double)n, mu = sum / nn;
    double lo, hi;
    if (binary) {
        double den = 1 + z * z / nn, centre = (mu + z * z / (2 * nn)) / den;
        double half = z / den * sqrt(mu * (1 - mu) / nn + z * z / (4 * nn * nn));
        lo = centre - half;
        hi = centre + half;
    } else {
        double se = gsl_stats_sd(x, 1, n) / sqrt(nn);
        lo = mu - z * se;
        hi = mu + z * se;
    }
    if (unit) {
        lo = lo < 0 ? 0 : lo;
        hi = hi > 1 ? 1 : hi;
    }
    return dsa_cmp_json_ci(lo, hi);
}

/* the bin's JSON object (statistics part) */
static json_t *job_json(const struct bin_job *j)
{
    json_t *o = json_object();
    if (j->rc < 0)
        return o;
    const struct dsa_paired_result r = j->res;
    size_t m = j->m;
    const double *B = j->B, *C = j->C;
    json_object_set_new(o, "base", jreal(r.base_mean));
    json_object_set_new(o, "cand", jreal(r.cand_mean));
    json_object_set_new(o, "diff", jreal(r.diff));
    json_object_set_new(o, "ci", dsa_cmp_json_ci(r.lo, r.hi));
    if (!j->full)
        return o;
    json_object_set_new(o, "se", jreal(r.se));
    json_object_set_new(o, "mde80", jreal(r.mde80));
    json_object_set_new(o, "sd_diff", jreal(r.sd_d));
    json_object_set_new(o, "rho", jreal(r.rho));
    json_object_set_new(o, "boot_sd", jreal(r.boot_sd));
    /* per-side 95 % normal CIs of the means, for the plot's bars */
    double *bm = dsa_xmalloc((m + 1) * sizeof *bm), *cm = dsa_xmalloc((m + 1) * sizeof *cm);
    for (size_t t = 0; t < m; t++) {
        double sb = 0, sc = 0;
        size_t nb = 0, nc = 0;
        for (size_t q = 0; q < j->ra; q++)
            if (!isnan(B[q * m + t]))
                sb += B[q * m + t], nb++;
        for (size_t q = 0; q < j->rb; q++)
            if (!isnan(C[q * m + t]))
                sc += C[q * m + t], nc++;
        bm[t] = sb / (double)nb;
        cm[t] = sc / (double)nc;
    }
    json_object_set_new(o, "base_se",
                        jreal(m >= 2 ? gsl_stats_sd(bm, 1, m) / sqrt((double)m) : NAN));
    json_object_set_new(o, "cand_se",
                        jreal(m >= 2 ? gsl_stats_sd(cm, 1, m) / sqrt((double)m) : NAN));
    json_object_set_new(o, "base_ci", mean_ci(bm, m, j->cfg->confidence));
    json_object_set_new(o, "cand_ci", mean_ci(cm, m, j->cfg->confidence));
    free(bm);
    free(cm);
    json_object_set_new(o, "small_n", json_boolean(r.small_n));
    json_object_set_new(o, "degenerate", json_boolean(r.degenerate));
    json_object_set_new(o, "runs_base", json_integer((json_int_t)r.rb_used));
    json_object_set_new(o, "runs_cand", json_integer((json_int_t)r.rc_used));
    if (r.n_runs) {
        json_t *runs = json_array();
        for (size_t p = 0; p < r.n_runs; p++) {
            const struct dsa_paired_run *pr = &r.runs[p];
            json_array_append_new(
                runs,
                json_pack("{s:I,s:I,s:I,s:o,s:o,s:o,s:o}", "base_run", (json_int_t)pr->base_run + 1,
                          "cand_run", (json_int_t)pr->cand_run + 1, "n", (json_int_t)pr->n, "base",
                          jreal(pr->base_mean), "cand", jreal(pr->cand_mean), "diff",
                          jreal(pr->diff), "ci", dsa_cmp_json_ci(pr->lo, pr->hi)));
        }
        json_object_set_new(o, "runs", runs);
        json_object_set_new(o, "run_effect",
                            json_pack("{s:{s:o,s:o},s:{s:o,s:o},s:b}", "base", "F", jreal(r.f_base),
                                      "p", jreal(r.p_base), "cand", "F", jreal(r.f_cand), "p",
                                      jreal(r.p_cand), "disagree", r.runs_disagree));
    }
    if (r.has_two_level)
        json_object_set_new(o, "two_level",
                            json_pack("{s:I,s:o}", "n", (json_int_t)r.two_level_n, "ci",
                                      dsa_cmp_json_ci(r.tl_lo, r.tl_hi)));
    if (r.has_perm)
        json_object_set_new(o, "permutation", perm_json(&r.perm));
    if (r.binary)
        json_object_set_new(o, "mcnemar",
                            json_pack("{s:I,s:I,s:o}", "b", (json_int_t)r.mc_b, "c",
                                      (json_int_t)r.mc_c, "p", jreal(r.mc_p)));
    return o;
}

/* median of an arm's latencies of sample k over its runs (NAN if none) */
static double lat_median(const struct side_data *s, size_t n, size_t k, double *tmp)
{
    size_t c = 0;
    for (size_t q = 0; q < s->R; q++)
        if (s->state[q * n + k] == ST_OK && !isnan(s->lat[q * n + k]))
            tmp[c++] = s->lat[q * n + k];
    return c ? gsl_stats_median(tmp, 1, c) : NAN;
}

/* latency: median over requests of cand/base (per-request median over runs first), with a
   percentile bootstrap CI; run-level permutation on log median latency per run */
static json_t *latency_stats(const struct universe *u, const unsigned char *use,
                             const struct side_data *a, const struct side_data *b,
                             const struct dsa_boot_cfg *cfg, const char *cmp)
{
    size_t n = u->n, m = 0;
    size_t R = a->R > b->R ? a->R : b->R;
    double *tmp = dsa_xmalloc((R + 1) * sizeof *tmp);
    double *lb = dsa_xmalloc((n + 1) * sizeof *lb), *lc = dsa_xmalloc((n + 1) * sizeof *lc);
    size_t *ks = dsa_xmalloc((n + 1) * sizeof *ks);
    for (size_t k = 0; k < n; k++) {
        if (use[k] != USE_OK)
            continue;
        double x = lat_median(a, n, k, tmp), y = lat_median(b, n, k, tmp);
        if (isnan(x) || isnan(y))
            continue;
        lb[m] = x;
        lc[m] = y;
        ks[m++] = k;
    }
    json_t *o = NULL;
    if (m > 0) {
        struct dsa_buf sl = DSA_BUF_INIT;
        stream_label(&sl, cmp, "latency");
        double med, lo, hi;
        dsa_stats_median_ratio(lb, lc, m, cfg, dsa_stats_stream_seed(cfg->seed, sl.data), &med, &lo,
                               &hi);
        dsa_buf_release(&sl);
        o = json_pack("{s:I,s:o,s:o}", "n", (json_int_t)m, "ratio", jreal(med), "ci",
                      dsa_cmp_json_ci(lo, hi));
        if (a->R >= 2 && b->R >= 2) {
            /* run summaries: log of each run's median latency over the paired requests */
            double *sa = dsa_xmalloc(a->R * sizeof *sa), *sb = dsa_xmalloc(b->R * sizeof *sb);
            double *buf = dsa_xmalloc((m + 1) * sizeof *buf);
            bool ok = true;
            for (int side = 0; side < 2 && ok; side++) {
                const struct side_data *s = side ? b : a;
                for (size_t q = 0; q < s->R && ok; q++) {
                    size_t c = 0;
                    for (size_t j = 0; j < m; j++) {
                        double x = s->lat[q * n + ks[j]];
                        if (s->state[q * n + ks[j]] == ST_OK && !isnan(x))
                            buf[c++] = x;
                    }
                    ok = c > 0;
                    if (ok)
                        (side ? sb : sa)[q] = log(gsl_stats_median(buf, 1, c));
                }
            }
            struct dsa_perm_result p;
            if (ok && dsa_stats_perm_exact(sa, a->R, sb, b->R, &p) == 0)
                json_object_set_new(o, "permutation", perm_json(&p));
            free(sa);
            free(sb);
            free(buf);
        }
    }
    free(tmp);
    free(lb);
    free(lc);
    free(ks);
    return o;
}

struct lat_job {
    const struct universe *u;
    const unsigned char *use;
    const struct side_data *a, *b;
    const struct dsa_boot_cfg *cfg;
    const char *cmp;
    json_t *out;
};

/* jansson objects are built here on another thread: they belong to this job only */
static void *lat_worker(void *arg)
{
    struct lat_job *j = arg;
    j->out = latency_stats(j->u, j->use, j->a, j->b, j->cfg, j->cmp);
    return NULL;
}

/* One comparison (a = baseline, b = candidate or A/A runs): per-bin objects in bin order,
   "all" last. full = everything; otherwise only n, means, diff and CI (the A/A rows). */
static json_t *pair_bins(const struct universe *u, const unsigned char *use,
                         const struct side_data *a, const struct side_data *b,
                         const struct dsa_boot_cfg *cfg, const char *cmp, bool full, int threads)
{
    size_t n = u->n;
    json_t *bins = json_array();
    size_t *ks = dsa_xmalloc((n + 1) * sizeof *ks);
    size_t *stratum = dsa_xmalloc((n + 1) * sizeof *stratum);
    size_t *remap = dsa_xmalloc((u->n_bins + 1) * sizeof *remap);
    size_t tot_excl = 0, tot_drop = 0, strata = 0;
    bool single_all = u->n_bins == 1 && !strcmp(u->bins[0].label, "all");
    size_t nb = single_all ? 0 : u->n_bins;
    struct bin_job *jobs = dsa_xcalloc(nb + 1, sizeof *jobs);
    json_t **heads = dsa_xcalloc(nb + 1, sizeof *heads);
    for (size_t bi = 0; bi < u->n_bins; bi++) {
        size_t m = 0, excl = 0, drop = 0;
        for (size_t k = 0; k < n; k++) {
            if (u->bin[k] != bi)
                continue;
            if (use[k] == USE_OK)
                ks[m++] = k;
            else if (use[k] == USE_EXCLUDED)
                excl++;
            else
                drop++;
        }
        remap[bi] = m ? strata++ : (size_t)-1;
        tot_excl += excl;
        tot_drop += drop;
        if (single_all)
            break;
        job_prepare(&jobs[bi], ks, m, NULL, 0, a, b, n, cfg, cmp, u->bins[bi].label, full);
        heads[bi] = json_pack("{s:s,s:I,s:I,s:I}", "bin", u->bins[bi].label, "n", (json_int_t)m,
                              "n_excluded", (json_int_t)excl, "n_dropped", (json_int_t)drop);
        if (u->bins[bi].tokens > 0)
            json_object_set_new(heads[bi], "bin_tokens", json_integer(u->bins[bi].tokens));
        json_t *ident = selection_identity(a, b, n, ks, m);
        if (ident)
            json_object_set_new(heads[bi], "selections", ident);
    }
    /* "all": stratified by bin (resample within each bin, keep the bin sizes) */
    size_t m = 0;
    for (size_t k = 0; k < n; k++)
        if (use[k] == USE_OK) {
            ks[m] = k;
            stratum[m++] = single_all ? 0 : remap[u->bin[k]];
        }
    job_prepare(&jobs[nb], ks, m, single_all ? NULL : stratum, single_all ? 0 : strata, a, b, n,
                cfg, cmp, "all", full);
    heads[nb] = json_pack("{s:s,s:I,s:I,s:I}", "bin", "all", "n", (json_int_t)m, "n_excluded",
                          (json_int_t)tot_excl, "n_dropped", (json_int_t)tot_drop);
    json_t *ident = selection_identity(a, b, n, ks, m);
    if (ident)
        json_object_set_new(heads[nb], "selections", ident);
    jobs_run(jobs, nb + 1, threads);
    for (size_t k = 0; k <= nb; k++) {
        json_t *o = job_json(&jobs[k]);
        json_object_update(heads[k], o);
        json_decref(o);
        json_array_append_new(bins, heads[k]);
        job_release(&jobs[k]);
    }
    free(jobs);
    free(heads);
    free(ks);
    free(stratum);
    free(remap);
    return bins;
}

static json_t *side_json(const struct dsa_cmp_side *s, const char *label)
{
    json_t *runs = json_array();
    for (size_t q = 0; q < s->n_runs; q++)
        json_array_append_new(runs, json_pack("{s:s,s:I,s:O}", "file", s->runs[q].path, "records",
                                              (json_int_t)json_array_size(s->runs[q].records),
                                              "header", s->runs[q].header));
    return json_pack("{s:s,s:s,s:o}", "label", label, "path", s->path, "runs", runs);
}

static void add_verdicts(json_t *doc, double tolerance);

static const char *side_eval(const struct dsa_cmp_side *s)
{
    for (size_t q = 0; q < s->n_runs; q++) {
        json_t *e = json_object_get(s->runs[q].header, "eval");
        if (json_is_string(e))
            return json_string_value(e);
    }
    return NULL;
}

/* "inprocess" or "endpoint" from the run headers ("backend": {"kind": …}), or NULL */
static const char *side_backend(const struct dsa_cmp_side *s)
{
    for (size_t q = 0; q < s->n_runs; q++) {
        json_t *k = json_object_get(json_object_get(s->runs[q].header, "backend"), "kind");
        if (json_is_string(k))
            return json_string_value(k);
    }
    return NULL;
}

static json_t *method_json(const struct dsa_boot_cfg *cfg)
{
    char *text = method_text(cfg);
    json_t *m = json_pack(
        "{s:s,s:s,s:s,s:f,s:I,s:I,s:s,s:s,s:s,s:s,s:s}", "statistic",
        "paired per-sample mean difference (candidate - baseline)", "ci",
        dsa_stats_ci_name(cfg->ci), "ci_method",
        cfg->ci == DSA_CI_BCA ? "paired BCa bootstrap over samples"
                              : "paired percentile bootstrap over samples",
        "confidence", cfg->confidence, "resamples", (json_int_t)cfg->resamples, "seed",
        (json_int_t)cfg->seed, "rng", dsa_stats_rng_name(cfg->rng), "runs",
        "per-sample mean over each side's finished runs (Miller), then the paired bootstrap",
        "overall", "\"all\" resamples within each bin, keeping the bin sizes", "streams",
        "seed of each (comparison, bin) stream = low32(splitmix64(S ^ fnv1a64(label))), label "
        "= \"main..cand/<bin>\" (A/A: \"main..main-aa/<bin>\")",
        "text", text);
    free(text);
    return m;
}

/* false (printed: "'A' holds X runs but 'B' holds Y runs: why") when kind names two different
   things of a and b; a side whose kind is NULL matches any */
static bool same_kind(const struct dsa_cmp_side *a, const struct dsa_cmp_side *b,
                      const char *(*kind)(const struct dsa_cmp_side *), const char *why)
{
    const char *ka = kind(a), *kb = kind(b);
    if (ka && kb && strcmp(ka, kb)) {
        dsa_errorf("'%s' holds %s runs but '%s' holds %s runs: %s", a->path, ka, b->path, kb, why);
        return false;
    }
    return true;
}

/* the identity check of runs that name no eval (compare.h "Eval-specific identity checks") */
static json_t *identity_builtin(const struct dsa_cmp_side *base, const struct dsa_cmp_side *cand);

json_t *dsa_cmp_build(const struct dsa_cmp_side *base, const struct dsa_cmp_side *cand,
                      const struct dsa_cmp_side *aa, const struct dsa_cmp_opts *opts)
{
    const struct dsa_cmp_side *sides[3] = {base, cand, aa};
    /* runs of two evals share no sample worth pairing: say so, before the bins (an eval
       without bins has the one bin "all") produce a puzzling message */
    for (int k = 1; k < (aa ? 3 : 2); k++)
        if (!same_kind(base, sides[k], side_eval, "runs of different evals cannot be compared") ||
            /* an in-process MRCR score is recall@k of the indexer's selection, an endpoint
               score is the official grader's ratio: the same ids, but not the same quantity */
            !same_kind(base, sides[k], side_backend,
                       "their scores measure different things and cannot be compared"))
            return NULL;
    struct universe u;
    if (universe_build(&u, sides, aa ? 3 : 2) < 0) {
        universe_release(&u);
        return NULL;
    }
    struct side_data sd3[3];
    memset(sd3, 0, sizeof sd3);
    const struct dsa_cmp_side *in3[3] = {base, cand, aa};
    sides_data_build(sd3, in3, aa ? 3 : 2, &u, opts->threads);
    struct side_data sb = sd3[0], sc = sd3[1], sa = sd3[2];
    const struct dsa_boot_cfg *cfg = &opts->boot;
    unsigned char *use = classify(&u, &sb, &sc);

    json_t *doc = json_object();
    json_object_set_new(doc, "dsa_eval_compare", json_integer(1));
    const char *ev = side_eval(base) ? side_eval(base) : side_eval(cand);
    json_object_set_new(doc, "eval", ev ? json_string(ev) : json_null());
    json_object_set_new(doc, "method", method_json(cfg));
    json_object_set_new(doc, "base", side_json(base, opts->label_base));
    json_object_set_new(doc, "cand", side_json(cand, opts->label_cand));
    /* the latency bootstrap (a median per replicate) runs beside the bins when threads allow */
    struct lat_job lj = {&u, use, &sb, &sc, cfg, "main..cand", NULL};
    pthread_t lt;
    bool lat_thread = opts->threads > 1 && pthread_create(&lt, NULL, lat_worker, &lj) == 0;
    json_t *bins = pair_bins(&u, use, &sb, &sc, cfg, "main..cand", true, opts->threads);
    if (lat_thread)
        pthread_join(lt, NULL);
    else
        lat_worker(&lj);
    json_t *lat = lj.out;

    if (aa) {
        json_object_set_new(doc, "aa", side_json(aa, "A/A"));
        unsigned char *use_aa = classify(&u, &sb, &sa);
        json_t *abins = pair_bins(&u, use_aa, &sb, &sa, cfg, "main..main-aa", false, opts->threads);
        for (size_t k = 0; k < json_array_size(bins); k++) {
            json_t *src = json_array_get(abins, k);
            json_t *row = json_pack("{s:O,s:O,s:O,s:O}", "n", json_object_get(src, "n"), "diff",
                                    json_object_get(src, "diff"), "ci", json_object_get(src, "ci"),
                                    "base", json_object_get(src, "cand"));
            json_object_set_new(json_array_get(bins, k), "aa", row);
        }
        json_decref(abins);
        json_t *alat = latency_stats(&u, use_aa, &sb, &sa, cfg, "main..main-aa");
        if (lat && alat)
            json_object_set_new(lat, "aa", alat);
        else
            json_decref(alat);
        free(use_aa);
    }
    json_object_set_new(doc, "bins", bins);
    json_object_set_new(doc, "latency", lat ? lat : json_null());

    /* the exclusion set, listed: one entry per sample not used, in bin then id order */
    json_t *excl = json_array();
    for (size_t bi = 0; bi < u.n_bins; bi++)
        for (size_t k = 0; k < u.n; k++) {
            if (u.bin[k] != bi || use[k] == USE_OK)
                continue;
            const char *reason = use[k] == USE_EXCLUDED ? "excluded"
                                 : use[k] == USE_FAILED ? "failed"
                                                        : "unpaired";
            json_t *e = json_pack("{s:s,s:s,s:s}", "id", u.ids[k], "bin", u.bins[bi].label,
                                  "reason", reason);
            if (use[k] == USE_EXCLUDED && u.why[k])
                json_object_set_new(e, "detail", json_string(u.why[k]));
            json_array_append_new(excl, e);
        }
    json_object_set_new(doc, "excluded", excl);

    /* the eval's own identity (its hook, through opts: stats name no eval), or the built-in
       check for runs that name no eval (plain score files) */
    json_t *ident = NULL;
    dsa_cmp_identity_fn fn = !ev                  ? identity_builtin
                             : opts->identity_for ? opts->identity_for(ev)
                                                  : NULL;
    if (fn)
        ident = fn(base, cand);
    json_object_set_new(doc, "identity", ident ? ident : json_null());
    /* the eval's own speculative-decoding statistic (its hook: stats compute none); runs
       that name no eval are looked up by NULL */
    dsa_cmp_acceptance_fn afn = opts->acceptance_for ? opts->acceptance_for(ev) : NULL;
    json_t *al = afn ? afn(base, cand, cfg) : NULL;
    json_object_set_new(doc, "acceptance", al ? al : json_null());
    if (al && !isnan(opts->fail_if_al_drops)) {
        /* the drop is relative: the ratio's CI (or, from counters, the ratio) below 1 - X */
        json_t *rci = json_object_get(al, "ratio_ci");
        double top = json_is_array(rci) ? json_real_value(json_array_get(rci, 1))
                                        : json_real_value(json_object_get(al, "ratio"));
        json_object_set_new(doc, "fail_if_al_drops",
                            json_pack("{s:f,s:b}", "threshold", opts->fail_if_al_drops, "dropped",
                                      top < 1 - opts->fail_if_al_drops));
    }
    add_verdicts(doc, opts->fail_if_worse);

    if (!isnan(opts->fail_if_worse)) {
        json_t *worse = json_array();
        for (size_t k = 0; k < json_array_size(bins); k++) {
            json_t *ci = json_object_get(json_array_get(bins, k), "ci");
            if (json_is_array(ci) && json_real_value(json_array_get(ci, 1)) < -opts->fail_if_worse)
                json_array_append_new(worse, json_string(json_string_value(
                                                 json_object_get(json_array_get(bins, k), "bin"))));
        }
        json_object_set_new(
            doc, "fail_if_worse",
            json_pack("{s:f,s:o}", "threshold", opts->fail_if_worse, "bins", worse));
    }

    free(use);
    side_data_release(&sb);
    side_data_release(&sc);
    if (aa)
        side_data_release(&sa);
    universe_release(&u);
    return doc;
}

/* ---- verdicts ---------------------------------------------------------------------------- */

/* n below which a CI that covers zero says too little to call "no change" (docs/compare.md
   "Verdicts"); the same n the outputs mark "small n" */
#define VERDICT_SMALL_N 30

static bool ci_pair(json_t *ci, double *lo, double *hi)
{
    if (!json_is_array(ci) || json_array_size(ci) != 2 || !json_is_number(json_array_get(ci, 0)))
        return false;
    *lo = json_number_value(json_array_get(ci, 0));
    *hi = json_number_value(json_array_get(ci, 1));
    return true;
}

static double jnum(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/*
 * One bin's verdict from its CI and MDE80 (the rule of docs/compare.md "Verdicts"):
 *   identical (every paired difference 0)                 -> no change detected (identical)
 *   n = 0                                                  -> inconclusive (no paired samples)
 *   no CI (n < 2)                                          -> inconclusive (n too small)
 *   runs disagree: the two-level CI is the interval that counts
 *   CI wholly below 0 / above 0                            -> worse / better
 *   CI covers 0 and the runs disagree                      -> inconclusive (runs disagree)
 *   CI covers 0, n < 30, or MDE80 above --fail-if-worse X  -> inconclusive (n too small)
 *   CI covers 0 otherwise                                  -> no change detected (MDE80 m)
 * A new reference.
 */
static json_t *bin_verdict(json_t *bin, double tolerance)
{
    double lo, hi, d = jnum(bin, "diff"), mde = jnum(bin, "mde80");
    long n = (long)json_integer_value(json_object_get(bin, "n"));
    bool has_ci = ci_pair(json_object_get(bin, "ci"), &lo, &hi);
    bool disagree = json_is_true(json_object_get(json_object_get(bin, "run_effect"), "disagree"));
    const char *word, *reason = NULL, *interval = "bootstrap";
    struct dsa_buf text = DSA_BUF_INIT;
    if (has_ci && json_is_true(json_object_get(bin, "degenerate")) && d == 0) {
        word = "no change detected";
        reason = "identical";
        dsa_buf_adds(&text, "no change detected (identical)");
        goto done;
    }
    if (disagree && ci_pair(json_object_get(json_object_get(bin, "two_level"), "ci"), &lo, &hi))
        interval = "two-level";
    if (n == 0) {
        word = "inconclusive";
        reason = "no paired samples"; /* all over the served context, failed or unpaired */
    } else if (!has_ci || n < 2) {
        word = "inconclusive";
        reason = "n too small";
    } else if (hi < 0 || lo > 0) {
        word = hi < 0 ? "worse" : "better";
    } else if (disagree) {
        word = "inconclusive";
        reason = "runs disagree";
    } else if (n < VERDICT_SMALL_N || (!isnan(tolerance) && mde > tolerance)) {
        word = "inconclusive";
        reason = "n too small";
    } else {
        word = "no change detected";
    }
    dsa_buf_adds(&text, word);
    if (reason)
        dsa_buf_addf(&text, " (%s)", reason);
    else if (!strcmp(word, "no change detected")) {
        dsa_buf_adds(&text, " (MDE80 ");
        dsa_fmt_sig(&text, mde, 3);
        dsa_buf_adds(&text, ")");
    }
done:;
    json_t *v = json_pack("{s:s,s:o,s:s,s:s}", "verdict", word, "reason",
                          reason ? json_string(reason) : json_null(), "interval", interval, "text",
                          text.data);
    dsa_buf_release(&text);
    return v;
}

/* "≤8K, ≤16K" of the bins whose verdict is `word` and, when not NULL, reason `reason`; "all"
   is named only when it is the only bin (the overall clause speaks for it otherwise) */
static size_t bins_with(json_t *bins, const char *word, const char *reason, struct dsa_buf *out)
{
    size_t c = 0, nb = json_array_size(bins);
    for (size_t k = 0; k < (nb > 1 ? nb - 1 : nb); k++) {
        json_t *b = json_array_get(bins, k), *v = json_object_get(b, "verdict");
        const char *r = json_string_value(json_object_get(v, "reason"));
        if (strcmp(json_string_value(json_object_get(v, "verdict")), word) ||
            (reason && (!r || strcmp(r, reason))))
            continue;
        dsa_buf_addf(out, "%s%s", c++ ? ", " : "", json_string_value(json_object_get(b, "bin")));
    }
    return c;
}

/* "≤8K, ≤16K (runs disagree) and ≤32K (n too small)" */
static size_t inconclusive_bins(json_t *bins, struct dsa_buf *out)
{
    static const char *const reasons[] = {"runs disagree", "n too small", "no paired samples"};
    size_t total = 0;
    for (int r = 0; r < 3; r++) {
        struct dsa_buf one = DSA_BUF_INIT;
        size_t c = bins_with(bins, "inconclusive", reasons[r], &one);
        if (c)
            dsa_buf_addf(out, "%s%s (%s)", total ? " and " : "", one.data, reasons[r]);
        total += c;
        dsa_buf_release(&one);
    }
    return total;
}

/* the bin with the largest MDE80 among the "no change detected" ones (NULL if none) */
static json_t *largest_mde(json_t *bins)
{
    json_t *best = NULL;
    for (size_t k = 0; k < json_array_size(bins); k++) {
        json_t *b = json_array_get(bins, k);
        const char *w =
            json_string_value(json_object_get(json_object_get(b, "verdict"), "verdict"));
        if (strcmp(w, "no change detected") || isnan(jnum(b, "mde80")))
            continue;
        if (!best || jnum(b, "mde80") > jnum(best, "mde80"))
            best = b;
    }
    return best;
}

static const char *verdict_word(json_t *bin)
{
    return json_string_value(json_object_get(json_object_get(bin, "verdict"), "verdict"));
}

/* "; no change detected elsewhere (largest MDE80 0.044 at ≤256K)" */
static void add_mde_clause(struct dsa_buf *t, json_t *big, const char *lead)
{
    dsa_buf_addf(t, "%s (largest MDE80 ", lead);
    dsa_fmt_sig(t, jnum(big, "mde80"), 3);
    dsa_buf_addf(t, " at %s)", json_string_value(json_object_get(big, "bin")));
}

/* " (all -0.075 [-0.089, -0.060])" */
static void add_all_clause(struct dsa_buf *t, json_t *all)
{
    double lo, hi, d = jnum(all, "diff");
    if (!ci_pair(json_object_get(all, "ci"), &lo, &hi))
        return;
    dsa_buf_adds(t, " (all ");
    dsa_fmt_diff_ci(t, d, true, lo, hi, dsa_fmt_diff_decimals(d, lo, hi));
    dsa_buf_adds(t, ")");
}

/*
 * The summary over bins, "all" judged beside them:
 *   worse in ≤8K, ≤16K (all -0.075 [-0.089, -0.060])          any bin worse (or better)
 *   worse over all bins pooled (all …)                         only "all" worse
 *   inconclusive in ≤8K, ≤16K (runs disagree); no change detected elsewhere (largest …)
 *   no change detected in any bin (largest MDE80 0.044 at ≤256K)
 * One-bin comparisons (GSM8K) take the bin's own text.
 * A new reference.
 */
static json_t *overall_verdict(json_t *bins)
{
    struct dsa_buf t = DSA_BUF_INIT, w = DSA_BUF_INIT, bt = DSA_BUF_INIT, inc = DSA_BUF_INIT;
    size_t nb = json_array_size(bins);
    size_t nw = bins_with(bins, "worse", NULL, &w), nbt = bins_with(bins, "better", NULL, &bt);
    size_t ni = inconclusive_bins(bins, &inc);
    json_t *all = json_array_get(bins, nb - 1), *big = largest_mde(bins);
    const char *word, *aw = verdict_word(all);
    json_t *av = json_object_get(all, "verdict");
    if (nb == 1) {
        word = aw;
        dsa_buf_adds(&t, json_string_value(json_object_get(av, "text")));
    } else if (nw || nbt || !strcmp(aw, "worse") || !strcmp(aw, "better")) {
        word = nw && nbt ? "mixed" : nw ? "worse" : nbt ? "better" : aw;
        if (nw)
            dsa_buf_addf(&t, "worse in %s", w.data);
        if (nbt)
            dsa_buf_addf(&t, "%sbetter in %s", nw ? "; " : "", bt.data);
        if (!nw && !nbt)
            dsa_buf_addf(&t, "%s over all bins pooled", aw);
        add_all_clause(&t, all);
    } else if (ni || strcmp(aw, "no change detected")) {
        word = "inconclusive";
        if (ni)
            dsa_buf_addf(&t, "inconclusive in %s", inc.data);
        else
            dsa_buf_addf(&t, "inconclusive over all bins pooled (%s)",
                         json_string_value(json_object_get(av, "reason")));
        if (ni && !strcmp(aw, "no change detected") && ni == nb - 1) {
            dsa_buf_adds(&t, "; no change detected over all bins pooled (MDE80 ");
            dsa_fmt_sig(&t, jnum(all, "mde80"), 3);
            dsa_buf_adds(&t, ")");
        } else if (ni && big) {
            add_mde_clause(&t, big, "; no change detected elsewhere");
        }
    } else {
        word = "no change detected";
        if (big)
            add_mde_clause(&t, big, "no change detected in any bin");
        else
            dsa_buf_adds(&t, "no change detected in any bin (identical)");
    }
    json_t *v = json_pack("{s:s,s:s}", "verdict", word, "text", t.data);
    dsa_buf_release(&t);
    dsa_buf_release(&w);
    dsa_buf_release(&bt);
    dsa_buf_release(&inc);
    return v;
}

static void add_verdicts(json_t *doc, double tolerance)
{
    json_t *bins = json_object_get(doc, "bins");
    for (size_t k = 0; k < json_array_size(bins); k++) {
        json_t *b = json_array_get(bins, k);
        json_object_set_new(b, "verdict", bin_verdict(b, tolerance));
    }
    if (json_array_size(bins))
        json_object_set_new(doc, "verdict", overall_verdict(bins));
}

int dsa_cmp_load_build(const char *base_path, const char *cand_path, const char *aa_path,
                       const struct dsa_cmp_opts *opts, json_t **doc)
{
    struct dsa_cmp_side s[3];
    memset(s, 0, sizeof s);
    int ret = DSA_EXIT_DATA;
    *doc = NULL;
    const char *paths[3] = {base_path, cand_path, aa_path};
    if (sides_load(s, paths, 3, opts->threads) < 0)
        goto cleanup;
    *doc = dsa_cmp_build(&s[0], &s[1], aa_path ? &s[2] : NULL, opts);
    if (*doc) {
        /* an empty comparison must never pass a CI gate silently */
        json_t *bins = json_object_get(*doc, "bins");
        json_t *all = json_array_get(bins, json_array_size(bins) - 1);
        if (json_integer_value(json_object_get(all, "n")) == 0) {
            dsa_errorf("no sample is paired between '%s' and '%s' (ids that finished on both "
                       "sides)",
                       base_path, cand_path);
            json_decref(*doc);
            *doc = NULL;
            goto cleanup;
        }
        ret = DSA_EXIT_OK;
    }
cleanup:
    sides_release(s, 3, opts->threads);
    return ret;
}

/* Parses "percentile"/"bca" and "taus2"/"mt19937"; -1 if unknown. */
static int parse_ci(const char *s)
{
    return !strcmp(s, "percentile") ? DSA_CI_PERCENTILE : !strcmp(s, "bca") ? DSA_CI_BCA : -1;
}

static int parse_rng(const char *s)
{
    return !strcmp(s, "taus2") ? DSA_RNG_TAUS2 : !strcmp(s, "mt19937") ? DSA_RNG_MT19937 : -1;
}

int dsa_cmp_cli_apply(const struct dsa_cmp_cli *c, struct dsa_cmp_opts *o)
{
    memset(o, 0, sizeof *o);
    o->fail_if_worse = NAN;
    o->fail_if_al_drops = NAN;
    o->label_base = c->label_base;
    o->label_cand = c->label_cand;
    o->boot.resamples = c->resamples;
    o->boot.confidence = c->confidence;
    o->boot.seed = (uint64_t)c->seed;
    int ci = parse_ci(c->ci), rng = parse_rng(c->rng);
    if (ci < 0)
        return dsa_errorf("--ci must be 'percentile' or 'bca', not '%s'", c->ci);
    if (rng < 0)
        return dsa_errorf("--rng must be 'taus2' or 'mt19937', not '%s'", c->rng);
    /* B below 100 gives meaningless 95 % ends; above 10^7 the replicates alone need 80 MB */
    if (c->resamples < 100 || c->resamples > 10000000)
        return dsa_errorf("--resamples must be between 100 and 10000000, not %ld", c->resamples);
    if (!(c->confidence >= 0.5 && c->confidence < 1))
        return dsa_errorf("--confidence must be in [0.5, 1), not %g", c->confidence);
    if (c->seed < 0)
        return dsa_errorf("--seed must be >= 0, not %ld", c->seed);
    if (c->threads < 0 || c->threads > 256)
        return dsa_errorf("--threads must be between 0 and 256, not %d", c->threads);
    o->threads = c->threads;
    if (!o->threads) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        o->threads = cpus < 1 ? 1 : cpus > 8 ? 8 : (int)cpus;
    }
    o->boot.ci = (enum dsa_ci_method)ci;
    o->boot.rng = (enum dsa_rng_kind)rng;
    return 0;
}

/* ---- planning --------------------------------------------------------------------------- */

static bool bin_matches(const struct bin_info *b, const char *want)
{
    if (!want || !strcmp(want, b->label))
        return true;
    long k = bin_key(want, -1);
    return k > 0 && k == b->key;
}

/* every sample has the same score in every run (greedy decoding): repeating runs adds nothing */
static bool runs_identical(const double *y, size_t n, size_t R)
{
    for (size_t r = 1; r < R; r++)
        for (size_t i = 0; i < n; i++)
            if (y[r * n + i] != y[i])
                return false;
    return R > 1;
}

/* an integer count, or null when unreachable (infinite, or too large to convert: absurd
   scores make it 1e219); the _exact real is kept beside it */
static json_t *plan_count(double need)
{
    return isfinite(need) && need <= 0x1p53 ? json_integer((json_int_t)(need <= 1 ? 1 : ceil(need)))
                                            : json_null();
}

/*
 * Planning by samples, for identical runs (greedy) and for one run (which cannot show whether
 * runs differ): the variance of a future paired difference per sample is at most twice the
 * per-sample variance (paired correlation >= 0), so with n samples MDE = z·√(2·var/n), and a
 * change delta needs z²·2·var/delta² samples, whatever the number of runs.
 */
static void plan_by_samples(json_t *o, const struct dsa_var_components *vc, bool identical,
                            double detect, double confidence, double power)
{
    double var_d = 2 * vc->var_sample;
    json_object_set_new(o, "mode", json_string("samples"));
    json_object_set_new(o, "why", json_string(identical ? "identical runs" : "one run"));
    json_object_set_new(
        o, "mde_n", jreal(sqrt(dsa_stats_power_n(var_d, 1, confidence, power) / (double)vc->n)));
    if (!isnan(detect)) {
        double need = dsa_stats_power_n(var_d, detect, confidence, power);
        json_object_set_new(o, "samples_needed_exact", jreal(need));
        json_object_set_new(o, "samples_needed", plan_count(need));
    }
}

static void plan_by_runs(json_t *o, const struct dsa_var_components *vc, double detect,
                         long max_runs, double confidence, double power)
{
    json_object_set_new(o, "mode", json_string("runs"));
    if (!isnan(detect)) {
        double need = dsa_stats_plan_runs(vc, detect, confidence, power);
        json_object_set_new(o, "runs_needed_exact", jreal(need));
        json_object_set_new(o, "runs_needed", plan_count(need));
    }
    json_t *mde = json_array();
    for (long k = 1; k <= max_runs; k++)
        json_array_append_new(
            mde, json_pack("{s:I,s:o}", "runs", (json_int_t)k, "mde",
                           jreal(dsa_stats_plan_mde(vc, (double)k, confidence, power))));
    json_object_set_new(o, "mde", mde);
}

static json_t *plan_bin(const struct side_data *sd, size_t n, const size_t *ks, size_t m,
                        const char *label, double detect, long max_runs, double confidence,
                        double power)
{
    /* active runs, then the samples finished in all of them */
    size_t *runs = dsa_xmalloc((sd->R + 1) * sizeof *runs), R = 0;
    for (size_t q = 0; q < sd->R; q++) {
        bool any = false;
        for (size_t j = 0; j < m && !any; j++)
            any = sd->state[q * n + ks[j]] != ST_MISSING;
        if (any)
            runs[R++] = q;
    }
    size_t *keep = dsa_xmalloc((m + 1) * sizeof *keep), nk = 0, n_excl = 0;
    for (size_t j = 0; j < m; j++) {
        bool all = R > 0, excl = false;
        for (size_t q = 0; q < R; q++) {
            all &= sd->state[runs[q] * n + ks[j]] == ST_OK;
            excl |= sd->state[runs[q] * n + ks[j]] == ST_EXCLUDED;
        }
        n_excl += excl;
        if (all)
            keep[nk++] = ks[j];
    }
    double *y = dsa_xmalloc((R * nk + 1) * sizeof *y);
    for (size_t q = 0; q < R; q++)
        for (size_t j = 0; j < nk; j++)
            y[q * nk + j] = sd->score[runs[q] * n + keep[j]];
    struct dsa_var_components vc;
    json_t *o =
        json_pack("{s:s,s:I,s:I,s:I,s:I}", "bin", label, "n", (json_int_t)nk, "runs", (json_int_t)R,
                  "n_samples", (json_int_t)m, "n_excluded", (json_int_t)n_excl);
    if (dsa_stats_var_components(y, nk, R, &vc) == 0) {
        bool identical = runs_identical(y, nk, R);
        json_object_set_new(o, "mean", jreal(vc.mean));
        json_object_set_new(o, "var_sample", jreal(vc.var_sample));
        json_object_set_new(o, "var_resid", jreal(vc.var_resid));
        json_object_set_new(o, "var_run", jreal(vc.var_run));
        json_object_set_new(o, "bound", json_boolean(vc.bound));
        json_object_set_new(o, "identical_runs", json_boolean(identical));
        if (identical || R == 1)
            plan_by_samples(o, &vc, identical, detect, confidence, power);
        else
            plan_by_runs(o, &vc, detect, max_runs, confidence, power);
    } else {
        /* no figure: say why (the README's 256K bin served over its context) */
        struct dsa_buf why = DSA_BUF_INIT;
        if (m && n_excl == m)
            dsa_buf_addf(&why, "all %zu samples are over the served context (excluded)", m);
        else if (n_excl)
            dsa_buf_addf(&why,
                         "%zu of %zu samples finished every run (%zu over the served context)", nk,
                         m, n_excl);
        else
            dsa_buf_addf(&why, "%zu of %zu samples finished every run", nk, m);
        json_object_set_new(o, "no_figure", json_string(why.data));
        dsa_buf_release(&why);
    }
    free(y);
    free(keep);
    free(runs);
    return o;
}

json_t *dsa_cmp_plan(const struct dsa_cmp_side *s, const char *only_bin, double detect,
                     long max_runs, double confidence, double power)
{
    const struct dsa_cmp_side *sides[1] = {s};
    struct universe u;
    if (universe_build(&u, sides, 1) < 0) {
        universe_release(&u);
        return NULL;
    }
    struct side_data sd;
    side_data_build(&sd, s, &u);
    json_t *bins = json_array();
    size_t *ks = dsa_xmalloc((u.n + 1) * sizeof *ks);
    bool single_all = u.n_bins == 1 && !strcmp(u.bins[0].label, "all");
    for (size_t bi = 0; bi < u.n_bins && !single_all; bi++) {
        if (!bin_matches(&u.bins[bi], only_bin))
            continue;
        size_t m = 0;
        for (size_t k = 0; k < u.n; k++)
            if (u.bin[k] == bi)
                ks[m++] = k;
        json_array_append_new(
            bins, plan_bin(&sd, u.n, ks, m, u.bins[bi].label, detect, max_runs, confidence, power));
    }
    if (!only_bin || !strcmp(only_bin, "all")) {
        for (size_t k = 0; k < u.n; k++)
            ks[k] = k;
        json_array_append_new(
            bins, plan_bin(&sd, u.n, ks, u.n, "all", detect, max_runs, confidence, power));
    }
    free(ks);
    side_data_release(&sd);
    universe_release(&u);
    if (!json_array_size(bins)) {
        json_decref(bins);
        dsa_errorf("no bin '%s' in '%s'", only_bin, s->path);
        return NULL;
    }
    return json_pack("{s:s,s:I,s:o,s:f,s:f,s:o}", "source", s->path, "runs", (json_int_t)s->n_runs,
                     "detect", jreal(detect), "confidence", confidence, "power", power, "bins",
                     bins);
}

/* ---- built-in identity check ------------------------------------------------------------ */

bool dsa_cmp_header_al(const struct dsa_cmp_side *s, double *al)
{
    for (size_t q = 0; q < s->n_runs; q++) {
        json_t *h = s->runs[q].header;
        json_t *v = json_object_get(h, "acceptance_length");
        if (!json_is_number(v))
            v = json_object_get(json_object_get(h, "mtp"), "acceptance_length");
        if (json_is_number(v)) {
            *al = json_number_value(v);
            return true;
        }
    }
    return false;
}

/* the record's output text: "output" (run files), else "text" (the name `grade gsm8k` reads) */
static json_t *rec_output(json_t *r)
{
    json_t *o = json_object_get(r, "output");
    return json_is_string(o)                            ? o
           : json_is_string(json_object_get(r, "text")) ? json_object_get(r, "text")
                                                        : NULL;
}

static json_t *identity_builtin(const struct dsa_cmp_side *base, const struct dsa_cmp_side *cand)
{
    if (!base->n_runs || !cand->n_runs)
        return NULL;
    /* first run of each side: greedy runs are compared byte for byte, over the union of ids
       (an id with an output on one side only differs), and prompts must hash the same */
    json_t *rb = base->runs[0].records, *rc = cand->runs[0].records;
    json_t *by_id = json_object();
    bool any = false;
    for (size_t k = 0; k < json_array_size(rb); k++) {
        json_t *r = json_array_get(rb, k);
        if (rec_output(r)) {
            json_object_set(by_id, json_string_value(json_object_get(r, "id")), r);
            any = true;
        }
    }
    double alb = NAN, alc = NAN;
    bool has_al = dsa_cmp_header_al(base, &alb) && dsa_cmp_header_al(cand, &alc);
    if (!any && !has_al) {
        json_decref(by_id);
        return NULL;
    }
    size_t n = 0, same = 0;
    json_t *first = json_null(), *seen = json_object();
    for (size_t k = 0; k < json_array_size(rc) && any; k++) {
        json_t *r = json_array_get(rc, k), *o = rec_output(r);
        const char *id = json_string_value(json_object_get(r, "id"));
        json_t *rbase = json_object_get(by_id, id);
        if (!o)
            continue;
        n++;
        json_object_set_new(seen, id, json_true());
        const char *why = NULL;
        size_t off = 0;
        if (!rbase) {
            why = "missing from the baseline";
        } else {
            json_t *ob = rec_output(rbase);
            json_t *pa = json_object_get(rbase, "prompt_sha256"),
                   *pb = json_object_get(r, "prompt_sha256");
            size_t la = json_string_length(ob), lb = json_string_length(o);
            const char *a = json_string_value(ob), *b = json_string_value(o);
            while (off < la && off < lb && a[off] == b[off])
                off++;
            if (json_is_string(pa) && json_is_string(pb) && !json_equal(pa, pb))
                why = "different prompt";
            else if (la != lb || off != la)
                why = "different output";
        }
        if (!why)
            same++;
        else if (json_is_null(first))
            first = json_pack("{s:s,s:I,s:s}", "id", id, "offset", (json_int_t)off, "why", why);
    }
    /* ids with an output in the baseline only */
    const char *id;
    json_t *v;
    json_object_foreach(by_id, id, v)
    {
        (void)v;
        if (json_object_get(seen, id))
            continue;
        n++;
        if (json_is_null(first))
            first = json_pack("{s:s,s:I,s:s}", "id", id, "offset", (json_int_t)0, "why",
                              "missing from the candidate");
    }
    json_decref(seen);
    json_decref(by_id);
    json_t *al = has_al ? json_pack("{s:f,s:f}", "base", alb, "cand", alc) : json_null();
    const char *ev = side_eval(base) ? side_eval(base) : side_eval(cand);
    return json_pack("{s:s,s:I,s:I,s:b,s:o,s:o}", "eval", ev ? ev : "unknown", "n", (json_int_t)n,
                     "same", (json_int_t)same, "identical", any ? same == n : 1, "first_diff",
                     first, "acceptance_length", al);
}
