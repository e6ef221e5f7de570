/*
 * dsa-test-server: a loopback HTTP server that speaks the vLLM (or SGLang) dialect of the
 * OpenAI API closely enough for dsa-eval's endpoint backend, answers MRCR questions by doing
 * the task, exposes spec-decode counters on /metrics and injects faults on demand.
 * Usage and the determinism contract: docs/test-server.md.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <errno.h>
#include <limits.h>
#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "gsm8k.h"
#include "metrics.h"
#include "server.h"
#include "util/exitcode.h"
#include "util/msg.h"
#include "util/opt.h"

static const char *const usage[] = {
    "dsa-test-server [--port N | --port 0 --port-file F] [--dialect vllm|sglang|llamacpp] "
    "[options]",
    NULL,
};

/* Writes the port through a temporary file and rename(), so a reader never sees it half
   written. */
static int write_port_file(const char *path, unsigned port)
{
    size_t n = strlen(path) + 16;
    char *tmp = malloc(n);
    snprintf(tmp, n, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    int rc = -1;
    if (!f) {
        dsa_errorf("cannot write '%s': %s", tmp, strerror(errno));
        goto cleanup;
    }
    fprintf(f, "%u\n", port);
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        dsa_errorf("cannot write '%s': %s", path, strerror(errno));
        goto cleanup;
    }
    rc = 0;
cleanup:
    free(tmp);
    return rc;
}

/* a whole (small) text file, NUL-terminated; NULL with the error printed */
static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        dsa_errorf("cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    struct dsa_buf b = DSA_BUF_INIT;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        dsa_buf_add(&b, chunk, n);
    fclose(f);
    return dsa_buf_detach(&b, NULL);
}

static bool is_loopback(const char *host)
{
    return strcmp(host, "127.0.0.1") == 0 || strcmp(host, "localhost") == 0 ||
           strcmp(host, "::1") == 0;
}

/* --inflight-log: every 10 ms, "SECONDS COUNT" (seconds since the server started, requests
   between their parsed body and their answer). A client's window is judged by what the server
   holds, not by what the client believes it sent. */
struct inflight_log {
    FILE *f;
    pthread_t thread;
    bool started;
};

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *inflight_sampler(void *ud)
{
    struct inflight_log *l = ud;
    double t0 = mono_s();
    const struct timespec tick = {0, 10 * 1000 * 1000};
    while (!atomic_load(&srv_stopping)) {
        fprintf(l->f, "%.3f %d\n", mono_s() - t0, srv_metrics_running_now());
        fflush(l->f); /* readable while the server runs, and complete after SIGKILL */
        nanosleep(&tick, NULL);
    }
    return NULL;
}

static void inflight_stop(struct inflight_log *l)
{
    if (l->started)
        pthread_join(l->thread, NULL);
    if (l->f)
        fclose(l->f);
}

int main(int argc, char **argv)
{
    static const char default_version[] = "0.11.0";
    struct srv_config cfg = {
        .model = "dsa-test-model",
        .server_version = default_version,
        .max_model_len = 163840,
        .max_body = 64L << 20,
        .stall_s = 3600,
        .retry_after_s = 1,
        .eos_token_id = 1,
        .answer = {.build = "", .gsm8k_build_question = 7},
    };
    const char *host = "127.0.0.1", *port_file = NULL, *dialect = "vllm", *log_path = NULL,
               *inflight_path = NULL;
    const char *per_request = "none";
    const char *gsm8k_data = NULL;
    const char *wrong = NULL, *garble = NULL, *rates = NULL, *context_error = "new";
    int port = 8000, max_conn = 2048;
    long seed = 0, fault_seed = 0;
    double length = -1.0;
    struct dsa_strlist faults = {0}, canned = {0};
    const char *tls_cert = NULL, *tls_key = NULL;
    struct dsa_option opts[] = {
        DSA_OPT_STRING(0, "host", &host, "ADDR", "loopback address to bind (127.0.0.1, ::1)"),
        DSA_OPT_INT(0, "port", &port, "N", "port; 0 binds an ephemeral one (default 8000)"),
        DSA_OPT_STRING(0, "port-file", &port_file, "FILE", "write the bound port to FILE"),
        DSA_OPT_STRING(0, "dialect", &dialect, "D", "vllm (default), sglang or llamacpp"),
        DSA_OPT_BOOL(0, "metrics", &cfg.llamacpp_metrics,
                     "llamacpp: serve /metrics (llama-server's flag; 501 without)"),
        DSA_OPT_BOOL(0, "old-models", &cfg.llamacpp_old_models,
                     "llamacpp: /v1/models meta without n_ctx, as older builds"),
        DSA_OPT_STRING(0, "model", &cfg.model, "NAME", "served model name"),
        DSA_OPT_STRING(0, "server-version", &cfg.server_version, "V", "what /version reports"),
        DSA_OPT_LONG(0, "max-model-len", &cfg.max_model_len, "N", "context length in tokens"),
        DSA_OPT_STRING(0, "context-error", &context_error, "STYLE",
                       "over-context message: new (default) or old vLLM phrasing"),
        DSA_OPT_BOOL(0, "enable-force-include-usage", &cfg.force_include_usage,
                     "streams end with a usage chunk even when not asked"),
        DSA_OPT_STRING(0, "require-api-key", &cfg.api_key, "KEY", "answer 401 without it"),
        DSA_OPT_STRING(0, "log-requests", &log_path, "FILE", "append received requests (JSONL)"),
        DSA_OPT_STRING(0, "inflight-log", &inflight_path, "FILE",
                       "write 'SECONDS COUNT' of requests held, every 10 ms"),
        DSA_OPT_LONG(0, "seed", &seed, "N", "seed of the MRCR decisions (default 0)"),
        DSA_OPT_STRING(0, "mrcr-wrong", &wrong, "P", "chance of answering another needle"),
        DSA_OPT_STRING(0, "mrcr-garble", &garble, "P", "chance of a damaged needle"),
        DSA_OPT_STRING(0, "build", &cfg.answer.build, "ID", "server build id (default: base)"),
        DSA_OPT_DOUBLE(0, "build-fraction", &cfg.answer.build_fraction, "F",
                       "share of MRCR answers this build changes"),
        DSA_OPT_STRING(0, "gsm8k-data", &gsm8k_data, "FILE",
                       "GSM8K test.jsonl: answer its questions with their gold solutions"),
        DSA_OPT_LONG(0, "gsm8k-build-question", &cfg.answer.gsm8k_build_question, "N",
                     "the GSM8K question a non-empty --build answers differently (7)"),
        DSA_OPT_INT(0, "spec-tokens", &cfg.spec.k, "K", "speculative tokens per step (0 = off)"),
        DSA_OPT_DOUBLE(0, "acceptance-length", &length, "L", "synthetic acceptance length"),
        DSA_OPT_STRING(0, "acceptance-rates", &rates, "R0,R1,..",
                       "synthetic per-position acceptance rates"),
        DSA_OPT_STRING(0, "per-request-spec-decode-metrics", &per_request, "MODE",
                       "none (default), summary or detailed, as vLLM's flag"),
        DSA_OPT_STRLIST(0, "fault", &faults, "KIND[:WHEN]",
                        "inject a fault; WHEN = RATE, first, nth=N or match=TEXT (repeatable)"),
        DSA_OPT_LONG(0, "fault-seed", &fault_seed, "N", "seed of the fault decisions"),
        DSA_OPT_STRING(0, "tls-cert", &tls_cert, "FILE",
                       "serve https:// with this PEM certificate"),
        DSA_OPT_STRING(0, "tls-key", &tls_key, "FILE", "the certificate's PEM private key"),
        DSA_OPT_STRLIST(0, "canned", &canned, "PATH=FILE",
                        "PATH answers 200 with FILE's bytes (.txt: text; repeatable)"),
        DSA_OPT_INT(0, "stall-seconds", &cfg.stall_s, "S", "how long the stall fault waits"),
        DSA_OPT_INT(0, "retry-after", &cfg.retry_after_s, "S", "Retry-After of 429/503"),
        DSA_OPT_INT(0, "delay-ms", &cfg.delay_ms, "MS", "delay before each generation answer"),
        DSA_OPT_INT(0, "chunk-delay-ms", &cfg.chunk_delay_ms, "MS", "delay between SSE events"),
        DSA_OPT_LONG(0, "max-body", &cfg.max_body, "BYTES", "largest request body (413 above)"),
        DSA_OPT_INT(0, "max-connections", &max_conn, "N", "concurrent connections (2048)"),
        DSA_OPT_END(),
    };
    int rc = DSA_EXIT_USAGE;
    int n = dsa_opt_parse(&argc, argv, opts, usage);
    if (n < 0)
        return dsa_opt_exit(n);
    char err[256];
    struct MHD_Daemon *d = NULL;
    struct inflight_log ilog = {NULL, 0, false};
    if (n > 0) {
        dsa_errorf("unexpected argument '%s'", argv[0]);
        goto cleanup;
    }
    if (!is_loopback(host)) {
        dsa_errorf("refusing to bind '%s': the test server listens on loopback only", host);
        goto cleanup;
    }
    if (port < 0 || port > 65535 || max_conn < 1 || cfg.max_model_len < 1 || cfg.max_body < 1) {
        dsa_errorf("bad --port, --max-connections, --max-model-len or --max-body");
        goto cleanup;
    }
    if (strcmp(dialect, "vllm") != 0 && strcmp(dialect, "sglang") != 0 &&
        strcmp(dialect, "llamacpp") != 0) {
        dsa_errorf("unknown dialect '%s' (want vllm, sglang or llamacpp)", dialect);
        goto cleanup;
    }
    cfg.sglang = strcmp(dialect, "sglang") == 0;
    cfg.llamacpp = strcmp(dialect, "llamacpp") == 0;
    if (cfg.llamacpp && cfg.server_version == default_version)
        cfg.server_version = "b6940-dsatest"; /* llama-server's build_info shape */
    if (strcmp(context_error, "new") != 0 && strcmp(context_error, "old") != 0) {
        dsa_errorf("unknown --context-error '%s' (want new or old)", context_error);
        goto cleanup;
    }
    cfg.old_context_error = strcmp(context_error, "old") == 0;
    cfg.answer.seed = (uint64_t)seed;
    cfg.fault_seed = (uint64_t)fault_seed;
    if (wrong && srv_ptable_parse(wrong, &cfg.answer.wrong, err, sizeof err) != 0) {
        dsa_errorf("bad --mrcr-wrong '%s': %s", wrong, err);
        goto cleanup;
    }
    if (garble && srv_ptable_parse(garble, &cfg.answer.garble, err, sizeof err) != 0) {
        dsa_errorf("bad --mrcr-garble '%s': %s", garble, err);
        goto cleanup;
    }
    if (!(cfg.answer.build_fraction >= 0.0 && cfg.answer.build_fraction <= 1.0)) {
        dsa_errorf("bad --build-fraction (want 0..1)");
        goto cleanup;
    }
    if (cfg.spec.k < 0 || cfg.spec.k > SRV_SPEC_MAX) {
        dsa_errorf("bad --spec-tokens %d (want 0..%d)", cfg.spec.k, SRV_SPEC_MAX);
        goto cleanup;
    }
    if (rates && length >= 0.0) {
        dsa_errorf("give --acceptance-rates or --acceptance-length, not both");
        goto cleanup;
    }
    if (rates && srv_spec_rates_parse(&cfg.spec, rates) != 0) {
        dsa_errorf("bad --acceptance-rates '%s' (want --spec-tokens values in [0,1], "
                   "non-increasing)",
                   rates);
        goto cleanup;
    }
    if (length >= 0.0 && srv_spec_rates_from_length(&cfg.spec, length) != 0) {
        dsa_errorf("bad --acceptance-length %g (want 1..K+1 with --spec-tokens K)", length);
        goto cleanup;
    }
    if (cfg.spec.k > 0 && !rates && length < 0.0) {
        /* No rates given: every draft token accepted. */
        for (int i = 0; i < cfg.spec.k; i++)
            cfg.spec.rates[i] = 1.0;
    }
    if (strcmp(per_request, "none") == 0) {
        cfg.per_request_spec = 0;
    } else if (strcmp(per_request, "summary") == 0) {
        cfg.per_request_spec = 1;
    } else if (strcmp(per_request, "detailed") == 0) {
        cfg.per_request_spec = 2;
    } else {
        dsa_errorf("unknown --per-request-spec-decode-metrics '%s' (want none, summary or "
                   "detailed)",
                   per_request);
        goto cleanup;
    }
    if (faults.n > SRV_MAX_FAULT_RULES) {
        dsa_errorf("at most %d --fault rules", SRV_MAX_FAULT_RULES);
        goto cleanup;
    }
    for (size_t i = 0; i < faults.n; i++) {
        if (srv_fault_rule_parse(faults.v[i], &cfg.faults[i], err, sizeof err) != 0) {
            dsa_errorf("bad --fault '%s': %s", faults.v[i], err);
            goto cleanup;
        }
    }
    cfg.n_faults = faults.n;
    if (canned.n > SRV_MAX_CANNED) {
        dsa_errorf("at most %d --canned answers", SRV_MAX_CANNED);
        goto cleanup;
    }
    for (size_t i = 0; i < canned.n; i++) {
        const char *eq = strchr(canned.v[i], '=');
        if (!eq || eq == canned.v[i] || !eq[1]) {
            dsa_errorf("bad --canned '%s' (want PATH=FILE)", canned.v[i]);
            goto cleanup;
        }
        cfg.canned[i] =
            (struct srv_canned){dsa_xstrndup(canned.v[i], (size_t)(eq - canned.v[i])), eq + 1};
    }
    cfg.n_canned = canned.n;
    if (!tls_cert != !tls_key) {
        dsa_errorf("give --tls-cert and --tls-key together");
        goto cleanup;
    }
    if (tls_cert && (!(cfg.tls_cert = read_text(tls_cert)) || !(cfg.tls_key = read_text(tls_key))))
        goto cleanup;
    if (gsm8k_data && (rc = srv_gsm8k_load(gsm8k_data)) != 0)
        goto cleanup;

    rc = DSA_EXIT_IO;
    if (log_path && !(cfg.log = fopen(log_path, "a"))) {
        dsa_errorf("cannot open '%s': %s", log_path, strerror(errno));
        goto cleanup;
    }
    /* Enough descriptors for --max-connections. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    /* Signals go to main only: block them before any thread exists. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    srv_metrics_init(cfg.model, &cfg.spec, cfg.sglang);
    rc = DSA_EXIT_BACKEND;
    d = srv_http_start(&cfg, host, port, (unsigned)max_conn);
    if (!d) {
        dsa_errorf("cannot listen on %s port %d", host, port);
        goto cleanup;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    unsigned bound = info ? info->port : (unsigned)port;
    if (port_file && write_port_file(port_file, bound) != 0) {
        rc = DSA_EXIT_IO;
        goto cleanup;
    }
    if (inflight_path) {
        if (!(ilog.f = fopen(inflight_path, "w"))) {
            rc = DSA_EXIT_IO;
            dsa_errorf("cannot open '%s': %s", inflight_path, strerror(errno));
            goto cleanup;
        }
        ilog.started = pthread_create(&ilog.thread, NULL, inflight_sampler, &ilog) == 0;
    }
    dsa_notef("test server listening on %s port %u (%s dialect)", host, bound, dialect);

    int sig = 0;
    sigwait(&set, &sig);
    atomic_store(&srv_stopping, true);
    rc = DSA_EXIT_OK;
cleanup:
    atomic_store(&srv_stopping, true);
    inflight_stop(&ilog);
    if (d)
        MHD_stop_daemon(d);
    if (cfg.log)
        fclose(cfg.log);
    dsa_strlist_release(&faults);
    for (size_t i = 0; i < cfg.n_canned; i++)
        free((char *)cfg.canned[i].path);
    free(cfg.tls_cert);
    free(cfg.tls_key);
    dsa_strlist_release(&canned);
    srv_gsm8k_unload();
    return rc;
}
