/*
 * bench_curl_ref: the reference side of bench/bench_window.sh, a plain libcurl multi loop
 * sending exactly the request bodies a dsa-eval run sent. It reads dsa-test-server's
 * --log-requests file (one JSON line per received request, the body as its exact bytes),
 * keeps every POST, and, with all bodies in memory beforehand (not timed), keeps CONCURRENCY
 * of them in flight against URL: POSTFIELDS without a copy, the answer discarded, a finished
 * handle reused for the next body at once. Printed: requests, wall seconds and this process's
 * CPU seconds (getrusage, user + system) per request over the loop alone.
 *
 *   bench_curl_ref LOG URL CONCURRENCY
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

struct req {
    char *url;
    char *body;
    size_t len;
};

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static size_t sink(char *p, size_t s, size_t n, void *ud)
{
    (void)p;
    (void)ud;
    return s * n;
}

static size_t load(const char *log, const char *base, struct req **out)
{
    FILE *f = fopen(log, "r");
    if (!f)
        return 0;
    size_t n = 0, cap = 0;
    char *line = NULL;
    size_t lcap = 0;
    while (getline(&line, &lcap, f) > 0) {
        json_t *v = json_loads(line, 0, NULL);
        const char *m = json_string_value(json_object_get(v, "method"));
        json_t *body = json_object_get(v, "body");
        if (m && !strcmp(m, "POST") && json_is_string(body)) {
            if (n == cap) {
                cap = cap ? 2 * cap : 1024;
                *out = realloc(*out, cap * sizeof **out);
            }
            const char *path = json_string_value(json_object_get(v, "path"));
            size_t ul = strlen(base) + strlen(path) + 1;
            (*out)[n].url = malloc(ul);
            snprintf((*out)[n].url, ul, "%s%s", base, path);
            (*out)[n].len = json_string_length(body);
            (*out)[n].body = malloc((*out)[n].len + 1);
            memcpy((*out)[n].body, json_string_value(body), (*out)[n].len + 1);
            n++;
        }
        json_decref(v);
    }
    free(line);
    fclose(f);
    return n;
}

static void start(CURLM *multi, CURL *e, const struct req *r, struct curl_slist *h)
{
    curl_easy_setopt(e, CURLOPT_URL, r->url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->len);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_multi_add_handle(multi, e);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: bench_curl_ref LOG URL CONCURRENCY\n");
        return 2;
    }
    struct req *reqs = NULL;
    size_t n = load(argv[1], argv[2], &reqs);
    int conc = atoi(argv[3]);
    if (!n || conc < 1) {
        fprintf(stderr, "bench_curl_ref: no POST requests in '%s'\n", argv[1]);
        return 1;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURLM *multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, (long)conc + 4);
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    h = curl_slist_append(h, "Expect:");
    double c0 = cpu_s(), t0 = now_s();
    size_t next = 0, done = 0;
    for (; next < n && next < (size_t)conc; next++)
        start(multi, curl_easy_init(), &reqs[next], h);
    while (done < n) {
        int running, left;
        curl_multi_perform(multi, &running);
        CURLMsg *m;
        while ((m = curl_multi_info_read(multi, &left))) {
            if (m->msg != CURLMSG_DONE)
                continue;
            CURL *e = m->easy_handle;
            curl_multi_remove_handle(multi, e);
            done++;
            if (next < n)
                start(multi, e, &reqs[next++], h);
            else
                curl_easy_cleanup(e);
        }
        if (done < n)
            curl_multi_poll(multi, NULL, 0, 1000, NULL);
    }
    double cpu = cpu_s() - c0, wall = now_s() - t0;
    printf("reference: %zu requests in %.2f s, CPU %.3f s = %.0f us/request\n", n, wall, cpu,
           1e6 * cpu / (double)n);
    curl_slist_free_all(h);
    curl_multi_cleanup(multi);
    for (size_t i = 0; i < n; i++) {
        free(reqs[i].url);
        free(reqs[i].body);
    }
    free(reqs);
    return 0;
}
