/* Unit tests of the run loop (src/run, util/shard, the store's exit statuses): --shard parsing and
 * the id hash split (vectors from an independent Python computation of splitmix64(fnv1a64(id))),
 * the store's codes as exit statuses, the drive loop over a fake backend (everything answered; a
 * signal cancels what is in flight; a stop and a submit error end it), the eval table's backend
 * check and hooks, and the run loop (dsa_loop_run_on) over a toy eval row: every sample graded
 * and appended once (with a follow-up request), a resume that sends nothing, --shard, a server
 * gone away, a signal. SPDX-License-Identifier: GPL-3.0-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "evals/evals.h"
#include "evals/gsm8k_acceptance.h"
#include "run/loop.h"
#include "run/run.h"
#include "store/store.h"
#include "util/shard.h"
#include "util/exitcode.h"

static void test_shard_parse(void **state)
{
    (void)state;
    struct dsa_shard s;
    assert_int_equal(dsa_shard_parse(NULL, &s), 0);
    assert_int_equal(s.n, 0);
    assert_int_equal(dsa_shard_parse("2/5", &s), 0);
    assert_int_equal(s.i, 2);
    assert_int_equal(s.n, 5);
    assert_int_equal(dsa_shard_parse("1/1", &s), 0);
    const char *bad[] = {"0/2",  "3/2",     "1/0",  "2",    "a/b", "1/2x",
                         "-1/2", "1/65537", " 1/2", "+1/2", ""};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++)
        assert_int_equal(dsa_shard_parse(bad[k], &s), -1);
}

static void test_shard_vectors(void **state)
{
    (void)state;
    /* 1 + splitmix64(fnv1a64(id)) mod n, computed in Python from the published constants */
    const char *ids[] = {"q0000", "q0001", "q0002", "q0003",    "q0004",
                         "q0005", "q0006", "q0007", "n8/r0000", "n2/r0123"};
    const int of3[] = {3, 2, 1, 1, 1, 3, 1, 1, 2, 1};
    const int of4[] = {4, 1, 3, 4, 1, 1, 1, 2, 1, 3};
    for (size_t k = 0; k < sizeof ids / sizeof *ids; k++)
        for (int i = 1; i <= 4; i++) {
            struct dsa_shard s3 = {i, 3}, s4 = {i, 4};
            if (i <= 3)
                assert_int_equal(dsa_shard_keep(&s3, ids[k]), of3[k] == i);
            assert_int_equal(dsa_shard_keep(&s4, ids[k]), of4[k] == i);
        }
    struct dsa_shard none = {0, 0}, one = {1, 1};
    assert_true(dsa_shard_keep(&none, "q0000"));
    assert_true(dsa_shard_keep(&one, "q0000"));
    assert_true(dsa_shard_keep(NULL, "q0000"));
}

static void test_shard_partition(void **state)
{
    (void)state;
    /* every id in exactly one shard, for every n; and no shard of 7 empty over 1000 ids */
    for (int n = 1; n <= 8; n++) {
        int per[9] = {0};
        for (int q = 0; q < 1000; q++) {
            char id[16];
            snprintf(id, sizeof id, "q%04d", q);
            int in = 0;
            for (int i = 1; i <= n; i++) {
                struct dsa_shard s = {i, n};
                if (dsa_shard_keep(&s, id)) {
                    in++;
                    per[i]++;
                }
            }
            assert_int_equal(in, 1);
        }
        for (int i = 1; i <= n; i++)
            assert_true(per[i] > 1000 / n / 2);
    }
}

static void test_shard_match(void **state)
{
    (void)state;
    json_t *m = json_object();
    struct dsa_shard none = {0, 0}, s = {2, 3};
    dsa_shard_match(&none, m);
    assert_int_equal(json_object_size(m), 0);
    dsa_shard_match(&s, m);
    assert_string_equal(json_string_value(json_object_get(m, "shard")), "2/3");
    json_decref(m);
}

static void test_store_exit(void **state)
{
    (void)state;
    assert_int_equal(dsa_run_exit_status(0), DSA_EXIT_OK);
    assert_int_equal(dsa_run_exit_status(-1), DSA_EXIT_IO);
    assert_int_equal(dsa_run_exit_status(-2), DSA_EXIT_MISMATCH);
    assert_int_equal(dsa_run_exit_status(-3), DSA_EXIT_DATA);
}

/* ---- a fake backend: a window of `slots` requests, each answered on the next poll ---- */

struct fake {
    struct dsa_backend base;
    int slots;
    struct dsa_request q[8];
    int nq;
    int answered, cancelled, polls;
    volatile int *raise_at_poll; /* sets *flag at poll number `at` */
    int at;
};

static json_t *f_describe(dsa_backend *b)
{
    (void)b;
    return json_object();
}
static int f_submit(dsa_backend *b, const struct dsa_request *r)
{
    struct fake *f = (struct fake *)b;
    f->q[f->nq] = *r;
    json_incref(f->q[f->nq++].body); /* as a backend does: the caller may release its own */
    return 0;
}
/* answers r: st, or FAILED with `unreachable` when its body says {"unreachable": true} (a
   server gone away) */
static void answer(const struct dsa_request *r, enum dsa_res_status st)
{
    struct dsa_result res;
    memset(&res, 0, sizeof res);
    res.status = st;
    res.ud = r->ud;
    res.api = r->api;
    if (st == DSA_RES_OK && json_is_true(json_object_get(r->body, "unreachable"))) {
        res.status = DSA_RES_FAILED;
        res.unreachable = true;
        res.error = "cannot connect";
    }
    r->done(&res);
    json_decref(r->body);
}
static int f_poll(dsa_backend *b, int ms)
{
    (void)ms;
    struct fake *f = (struct fake *)b;
    if (++f->polls == f->at && f->raise_at_poll)
        *f->raise_at_poll = 1;
    if (f->nq) {
        answer(&f->q[0], DSA_RES_OK);
        memmove(f->q, f->q + 1, (size_t)(f->nq - 1) * sizeof *f->q);
        f->nq--;
        f->answered++;
    }
    return f->nq;
}
static void f_cancel(dsa_backend *b)
{
    struct fake *f = (struct fake *)b;
    while (f->nq) {
        answer(&f->q[--f->nq], DSA_RES_CANCELLED);
        f->cancelled++;
    }
}
static int f_idle(const dsa_backend *b)
{
    const struct fake *f = (const struct fake *)b;
    return f->slots - f->nq;
}
static void f_stats(const dsa_backend *b, long *r, long *e)
{
    (void)b;
    *r = *e = 0;
}
static int f_metrics(dsa_backend *b, struct dsa_buf *out)
{
    (void)b;
    (void)out;
    return 0;
}
static void f_free(dsa_backend *b)
{
    (void)b;
}
static const struct dsa_backend_ops fake_ops = {"fake", f_describe, f_submit,  f_poll, f_cancel,
                                                f_idle, f_stats,    f_metrics, f_free};

struct eval {
    int n, next, done, cancelled, stop_after, fail_at;
};
static void on_done(const struct dsa_result *r)
{
    struct eval *e = r->ud;
    if (r->status == DSA_RES_CANCELLED)
        e->cancelled++;
    else
        e->done++;
}
static int next(void *ud, dsa_backend *b)
{
    struct eval *e = ud;
    if (e->next == e->n)
        return 0;
    if (e->fail_at && e->next == e->fail_at)
        return -DSA_EXIT_DATA;
    e->next++;
    struct dsa_request r = {.api = DSA_API_SELECT, .done = on_done, .ud = e};
    return dsa_backend_submit(b, &r) ? -DSA_EXIT_INTERNAL : 1;
}
static bool stop(void *ud)
{
    struct eval *e = ud;
    return e->stop_after && e->done >= e->stop_after;
}

static void test_drive(void **state)
{
    (void)state;
    static const struct dsa_loop_feed hooks = {next, stop, NULL, 0};
    volatile int flag = 0;

    /* everything submitted and answered, the window never exceeded */
    struct fake f = {.base = {&fake_ops}, .slots = 3};
    struct eval e = {.n = 10};
    assert_int_equal(dsa_loop_drive(&f.base, &hooks, &e, &flag), DSA_EXIT_OK);
    assert_int_equal(e.done, 10);
    assert_int_equal(f.answered, 10);

    /* the signal: no more submissions, the window cancelled, exit 130 */
    struct fake g = {.base = {&fake_ops}, .slots = 3, .raise_at_poll = &flag, .at = 2};
    struct eval e2 = {.n = 10};
    assert_int_equal(dsa_loop_drive(&g.base, &hooks, &e2, &flag), DSA_EXIT_INTERRUPTED);
    assert_int_equal(e2.done, 2);
    assert_int_equal(e2.cancelled, 2);
    assert_int_equal(e2.next, 4);
    flag = 0;

    /* the eval's stop: cancelled, exit 0 (the eval says why) */
    struct fake h = {.base = {&fake_ops}, .slots = 2};
    struct eval e3 = {.n = 10, .stop_after = 3};
    assert_int_equal(dsa_loop_drive(&h.base, &hooks, &e3, &flag), DSA_EXIT_OK);
    assert_int_equal(e3.done, 3);
    assert_int_equal(e3.cancelled, 1);

    /* a submit error ends the run with its status */
    struct fake k = {.base = {&fake_ops}, .slots = 2};
    struct eval e4 = {.n = 10, .fail_at = 4};
    assert_int_equal(dsa_loop_drive(&k.base, &hooks, &e4, &flag), DSA_EXIT_DATA);
    assert_int_equal(e4.done + e4.cancelled, 4);
}

static void test_eval_table(void **state)
{
    (void)state;
    assert_non_null(dsa_eval_find("mrcr"));
    assert_non_null(dsa_eval_find("gsm8k"));
    assert_null(dsa_eval_find("nope"));
    assert_null(dsa_eval_find(NULL));
    assert_string_equal(dsa_eval_find("gsm8k")->title, "GSM8K");
    assert_non_null(dsa_eval_identity_for("gsm8k"));
    assert_null(dsa_eval_identity_for("mrcr"));
    /* the acceptance length is GSM8K's hook; runs that name no eval get it too */
    assert_ptr_equal(dsa_eval_acceptance_for("gsm8k"), dsa_gsm8k_acceptance);
    assert_ptr_equal(dsa_eval_acceptance_for(NULL), dsa_gsm8k_acceptance);
    assert_null(dsa_eval_acceptance_for("mrcr"));
    assert_null(dsa_eval_acceptance_for("nope"));
    for (const struct dsa_eval *e = dsa_evals; e->name; e++) {
        assert_int_equal(dsa_eval_check_backend(e, "endpoint"), 0);
        assert_int_equal(dsa_eval_check_backend(e, "inprocess"), e->inprocess ? 0 : -1);
        /* every row runs through the run loop: the hooks it always calls are there */
        const struct dsa_eval_hooks *h = e->hooks;
        assert_non_null(h);
        assert_true(h->check && h->load && h->total && h->header && h->next && h->request &&
                    h->grade && h->job_free && h->summary && h->free);
        assert_true(h->poll_ms > 0);
    }
    struct dsa_eval endpoint_only = {"x", "X", false, NULL, false, NULL, NULL};
    assert_int_equal(dsa_eval_check_backend(&endpoint_only, "inprocess"), -1);
    assert_int_equal(dsa_eval_check_backend(&endpoint_only, "endpoint"), 0);
}

/* ---- the run loop over a toy eval row: samples t00..t09 (fake backend) ---- */

struct toy {
    int n;           /* samples */
    int unreachable; /* the sample whose server is gone, or -1 */
    int twice;       /* the sample whose first answer asks for a second request, or -1 */
    int next, requests, summaries, last_ret;
    long last_records;
};
struct toy_job {
    char id[8];
    int i, answers;
};

static int toy_check(void *opts, struct dsa_eval_ctx *c)
{
    (void)opts, (void)c;
    return DSA_EXIT_OK;
}
static int toy_load(void *opts, const struct dsa_eval_ctx *c, void **ev)
{
    (void)c;
    *ev = opts;
    return DSA_EXIT_OK;
}
static long toy_total(void *ev)
{
    return ((struct toy *)ev)->n;
}
static void toy_header(void *ev, dsa_backend *b, int ri, json_t *h, json_t *old)
{
    (void)ev, (void)b, (void)ri, (void)old;
    json_object_set_new(h, "match", json_pack("{s:s}", "eval", "toy"));
}
static int toy_start(void *ev, dsa_backend *b, dsa_run *run, const char *path)
{
    (void)b, (void)run, (void)path;
    ((struct toy *)ev)->next = 0;
    return DSA_EXIT_OK;
}
static int toy_next(void *ev, void **job, const char **id)
{
    struct toy *t = ev;
    if (t->next == t->n)
        return 0;
    struct toy_job *j = calloc(1, sizeof *j);
    j->i = t->next++;
    snprintf(j->id, sizeof j->id, "t%02d", j->i);
    *job = j;
    *id = j->id;
    return 1;
}
static int toy_request(void *ev, void *job, struct dsa_request *rq, json_t **rec)
{
    (void)rec;
    struct toy *t = ev;
    struct toy_job *j = job;
    t->requests++;
    rq->api = DSA_API_SELECT;
    rq->body = json_pack("{s:i, s:b}", "i", j->i, "unreachable", j->i == t->unreachable);
    return 0;
}
static void toy_grade(void *ev, void *job, const struct dsa_result *r, json_t **rec,
                      struct dsa_request *rq)
{
    struct toy *t = ev;
    struct toy_job *j = job;
    assert_int_equal(r->status, DSA_RES_OK); /* stoppers and cancels never get here */
    if (j->i == t->twice && j->answers++ == 0) {
        rq->api = DSA_API_SELECT;
        rq->body = json_pack("{s:i}", "i", j->i);
        return;
    }
    *rec = json_pack("{s:s, s:s, s:s, s:f, s:i}", "id", j->id, "bin", "all", "status", "ok",
                     "score", 1.0, "answers", j->answers);
}
static void toy_job_free(void *ev, void *job)
{
    (void)ev;
    free(job);
}
static int toy_summary(void *ev, const struct dsa_eval_summary_in *in)
{
    struct toy *t = ev;
    t->summaries++;
    t->last_ret = in->ret;
    t->last_records = (long)json_array_size(json_array_get(in->runs, 0));
    return in->ret;
}
static void toy_free(void *ev)
{
    (void)ev;
}
static const struct dsa_eval_hooks toy_hooks = {
    .check = toy_check,
    .load = toy_load,
    .total = toy_total,
    .header = toy_header,
    .start = toy_start,
    .next = toy_next,
    .request = toy_request,
    .grade = toy_grade,
    .job_free = toy_job_free,
    .summary = toy_summary,
    .free = toy_free,
    .poll_ms = 1,
};
static const struct dsa_eval toy_row = {"toy", "Toy", true, NULL, false, NULL, &toy_hooks};

/* runs the toy row into dir with `shard` (NULL: all), the signal flag raised at the third turn
   when `signal`; the exit status */
static int toy_run(struct toy *t, const char *dir, const char *shard, volatile int *flag,
                   bool signal)
{
    struct fake f = {
        .base = {&fake_ops}, .slots = 3, .raise_at_poll = signal ? flag : NULL, .at = 3};
    struct dsa_loop_opts lo;
    dsa_loop_opts_init(&lo, 0, NULL, 1, 0, 10, NULL, 2048);
    lo.out = dir;
    lo.shard = shard;
    lo.quiet = true;
    lo.interrupted = flag;
    int ret = dsa_loop_run_on(&toy_row, t, &lo, &f.base);
    dsa_loop_opts_release(&lo);
    return ret;
}

static json_t *toy_records(const char *dir, json_t **header)
{
    char path[300];
    snprintf(path, sizeof path, "%s/run-001.jsonl", dir);
    json_t *recs = NULL;
    assert_int_equal(dsa_run_load(path, header, &recs), 0);
    return recs;
}

/* the run file and its folder gone */
static void toy_rm(const char *dir)
{
    char path[300];
    snprintf(path, sizeof path, "%s/run-001.jsonl", dir);
    unlink(path);
    rmdir(dir);
}

static void toy_dir(char *dir, size_t n, const char *name)
{
    snprintf(dir, n, "%s/%s.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", name);
    assert_non_null(mkdtemp(dir));
}

static void test_loop_run(void **state)
{
    (void)state;
    volatile int flag = 0;
    char dir[256];
    json_t *h = NULL, *recs;

    /* every sample requested once, graded, appended; a follow-up request for t03 */
    toy_dir(dir, sizeof dir, "toy-all");
    struct toy a = {.n = 10, .unreachable = -1, .twice = 3};
    assert_int_equal(toy_run(&a, dir, NULL, &flag, false), DSA_EXIT_OK);
    assert_int_equal(a.requests, 10);
    assert_int_equal(a.summaries, 1);
    assert_int_equal(a.last_ret, DSA_EXIT_OK);
    assert_int_equal(a.last_records, 10);
    recs = toy_records(dir, &h);
    assert_int_equal(json_array_size(recs), 10);
    assert_string_equal(json_string_value(json_object_get(h, "eval")), "toy");
    assert_string_equal(json_string_value(json_object_get(json_object_get(h, "match"), "eval")),
                        "toy");
    for (size_t i = 0; i < 10; i++) {
        json_t *r = json_array_get(recs, i);
        int k = atoi(json_string_value(json_object_get(r, "id")) + 1);
        /* t03 answered twice (the follow-up), the others once (not counted) */
        assert_int_equal(json_integer_value(json_object_get(r, "answers")), k == 3 ? 2 : 0);
    }
    json_decref(recs);
    json_decref(h);

    /* the same again: a resume, nothing requested, the summary sees the 10 records */
    struct toy b = {.n = 10, .unreachable = -1, .twice = -1};
    assert_int_equal(toy_run(&b, dir, NULL, &flag, false), DSA_EXIT_OK);
    assert_int_equal(b.requests, 0);
    assert_int_equal(b.last_records, 10);

    /* --shard 2/3: exactly the ids of that shard, and the shard in the match */
    toy_rm(dir);
    toy_dir(dir, sizeof dir, "toy-shard");
    struct toy c = {.n = 10, .unreachable = -1, .twice = -1};
    assert_int_equal(toy_run(&c, dir, "2/3", &flag, false), DSA_EXIT_OK);
    struct dsa_shard sh;
    assert_int_equal(dsa_shard_parse("2/3", &sh), 0);
    int want = 0;
    char id[8];
    for (int i = 0; i < 10; i++) {
        snprintf(id, sizeof id, "t%02d", i);
        want += dsa_shard_keep(&sh, id);
    }
    assert_true(want > 0 && want < 10);
    assert_int_equal(c.requests, want);
    recs = toy_records(dir, &h);
    assert_int_equal((int)json_array_size(recs), want);
    for (size_t i = 0; i < json_array_size(recs); i++)
        assert_true(
            dsa_shard_keep(&sh, json_string_value(json_object_get(json_array_get(recs, i), "id"))));
    assert_string_equal(json_string_value(json_object_get(json_object_get(h, "match"), "shard")),
                        "2/3");
    json_decref(recs);
    json_decref(h);

    /* a server gone away (t04): no record for it, the run stops with exit 4 */
    toy_rm(dir);
    toy_dir(dir, sizeof dir, "toy-gone");
    struct toy d = {.n = 10, .unreachable = 4, .twice = -1};
    assert_int_equal(toy_run(&d, dir, NULL, &flag, false), DSA_EXIT_BACKEND);
    assert_int_equal(d.last_ret, DSA_EXIT_BACKEND);
    recs = toy_records(dir, &h);
    assert_true(json_array_size(recs) >= 4 && json_array_size(recs) < 10);
    for (size_t i = 0; i < json_array_size(recs); i++)
        assert_string_not_equal(json_string_value(json_object_get(json_array_get(recs, i), "id")),
                                "t04");
    json_decref(recs);
    json_decref(h);

    /* the signal at the third turn: in-flight requests cancelled, exit 130, what finished kept */
    toy_rm(dir);
    toy_dir(dir, sizeof dir, "toy-signal");
    struct toy e = {.n = 10, .unreachable = -1, .twice = -1};
    assert_int_equal(toy_run(&e, dir, NULL, &flag, true), DSA_EXIT_INTERRUPTED);
    flag = 0;
    recs = toy_records(dir, &h);
    /* one answer per turn, the third in the turn the signal came in; the rest cancelled */
    assert_int_equal(json_array_size(recs), 3);
    json_decref(recs);
    json_decref(h);
    toy_rm(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shard_parse),     cmocka_unit_test(test_shard_vectors),
        cmocka_unit_test(test_shard_partition), cmocka_unit_test(test_shard_match),
        cmocka_unit_test(test_store_exit),      cmocka_unit_test(test_drive),
        cmocka_unit_test(test_eval_table),      cmocka_unit_test(test_loop_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
