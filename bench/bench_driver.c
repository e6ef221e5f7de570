/*
 * bench_driver: overhead of the endpoint backend's event loop against dsa-test-server on
 * loopback with instant answers. For each concurrency it keeps the window full with small
 * chat requests and prints requests/s and the client's CPU seconds per 1,000 requests
 * (getrusage of this process only: the server's CPU is not counted).
 *
 * Reference, measured in the same run: the leanest libcurl client there is, one easy handle
 * doing blocking curl_easy_perform() calls back to back on one keep-alive connection (what a
 * concurrency-1 driver cannot beat). The ratio driver/reference at concurrency 1 is the
 * price of the multi loop, the retry bookkeeping and JSON building/parsing per request.
 *
 *   bench_driver [--server PATH] [--requests N] [--concurrency 1,64,1024]
 * PATH defaults to $DSA_TEST_SERVER, else tests/dsa-test-server next to this binary.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "backend/endpoint.h"
#include "util/buf.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static pid_t start_server(const char *path, int *port)
{
    char pf[] = "/tmp/bench_driver_port.XXXXXX";
    int fd = mkstemp(pf);
    if (fd < 0)
        return -1;
    close(fd);
    unlink(pf);
    pid_t pid = fork();
    if (pid == 0) {
        /* the server's own logging would cost it time: silence stderr */
        freopen("/dev/null", "w", stderr);
        execl(path, path, "--port", "0", "--port-file", pf, "--max-connections", "4096",
              (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 200; i++) {
        FILE *f = fopen(pf, "r");
        if (f) {
            int ok = fscanf(f, "%d", port) == 1;
            fclose(f);
            if (ok) {
                unlink(pf);
                return pid;
            }
        }
        usleep(20000);
    }
    kill(pid, SIGTERM);
    return -1;
}

static const char *BODY = "{\"messages\":[{\"role\":\"user\",\"content\":\"ping\"}],"
                          "\"max_tokens\":8,\"temperature\":0}";

static size_t sink(char *p, size_t s, size_t n, void *ud)
{
    (void)p;
    (void)ud;
    return s * n;
}

/* the reference: blocking easy calls on one connection */
static void reference(const char *url, long n, double *rps, double *cpu_per_k)
{
    CURL *e = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    char full[256];
    snprintf(full, sizeof full, "%s/v1/chat/completions", url);
    curl_easy_setopt(e, CURLOPT_URL, full);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, BODY);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, sink);
    double t0 = now_s(), c0 = cpu_s();
    for (long i = 0; i < n; i++)
        curl_easy_perform(e);
    double t = now_s() - t0, c = cpu_s() - c0;
    *rps = (double)n / t;
    *cpu_per_k = c / (double)n * 1000.0;
    curl_slist_free_all(h);
    curl_easy_cleanup(e);
}

struct tally {
    long ok, failed;
};

static void on_done(const struct dsa_result *r)
{
    struct tally *t = r->ud;
    if (r->status == DSA_RES_OK && r->content)
        t->ok++;
    else
        t->failed++;
}

static int driver(const char *url, int concurrency, long n, double *rps, double *cpu_per_k)
{
    const char *urls[] = {url};
    struct dsa_endpoint_opts o = {.urls = urls,
                                  .n_urls = 1,
                                  .model = "dsa-test-model",
                                  .concurrency = concurrency,
                                  .retries = 0,
                                  .timeout_s = 60};
    int code;
    dsa_backend *b = dsa_endpoint_open(&o, &code);
    if (!b)
        return -1;
    json_t *body = json_loads(BODY, 0, NULL);
    struct tally t = {0, 0};
    struct dsa_request rq = {
        .api = DSA_API_CHAT, .body = body, .endpoint = -1, .done = on_done, .ud = &t};
    long submitted = 0;
    double t0 = now_s(), c0 = cpu_s();
    for (;;) {
        while (submitted < n && dsa_backend_idle_slots(b) > 0) {
            dsa_backend_submit(b, &rq);
            submitted++;
        }
        int pending = dsa_backend_poll(b, 100);
        if (pending < 0)
            break;
        if (pending == 0 && submitted == n)
            break;
    }
    double tw = now_s() - t0, c = cpu_s() - c0;
    *rps = (double)n / tw;
    *cpu_per_k = c / (double)n * 1000.0;
    json_decref(body);
    dsa_backend_free(&b);
    if (t.failed || t.ok != n) {
        fprintf(stderr, "bench_driver: %ld of %ld requests failed\n", t.failed, n);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *server = getenv("DSA_TEST_SERVER");
    long n = 5000;
    const char *conc = "1,64,1024";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--server") && i + 1 < argc)
            server = argv[++i];
        else if (!strcmp(argv[i], "--requests") && i + 1 < argc)
            n = atol(argv[++i]);
        else if (!strcmp(argv[i], "--concurrency") && i + 1 < argc)
            conc = argv[++i];
        else {
            fprintf(stderr, "usage: bench_driver [--server PATH] [--requests N] "
                            "[--concurrency 1,64,1024]\n");
            return 2;
        }
    }
    char guess[4096];
    if (!server) {
        /* build/bench/bench_driver → build/tests/dsa-test-server */
        ssize_t k = readlink("/proc/self/exe", guess, sizeof guess - 64);
        if (k > 0) {
            guess[k] = 0;
            char *slash = strrchr(guess, '/');
            if (slash) {
                *slash = 0;
                strcat(guess, "/../tests/dsa-test-server");
                server = guess;
            }
        }
    }
    int port;
    pid_t pid = server ? start_server(server, &port) : -1;
    if (pid < 0) {
        fprintf(stderr, "bench_driver: cannot start the test server (--server PATH)\n");
        return 1;
    }
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    double ref_rps, ref_cpu;
    reference(url, n, &ref_rps, &ref_cpu); /* also warms the server */
    reference(url, n, &ref_rps, &ref_cpu);
    printf("endpoint driver vs blocking curl_easy_perform loop, %ld chat requests each, "
           "loopback, instant answers\n",
           n);
    printf("%-28s %12s %18s %10s\n", "client", "requests/s", "CPU s/1000 req", "CPU ratio");
    printf("%-28s %12.0f %18.4f %10s\n", "reference (easy, c=1)", ref_rps, ref_cpu, "1.00");
    int ret = 0;
    char *list = strdup(conc);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        int c = atoi(tok);
        double rps, cpu;
        if (driver(url, c, n, &rps, &cpu) < 0) {
            ret = 1;
            break;
        }
        char label[32];
        snprintf(label, sizeof label, "dsa backend c=%d", c);
        printf("%-28s %12.0f %18.4f %10.2f\n", label, rps, cpu, cpu / ref_cpu);
        fflush(stdout);
    }
    free(list);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    curl_global_cleanup();
    return ret;
}
