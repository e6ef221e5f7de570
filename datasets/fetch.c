/*
 * Dataset downloads through libcurl, and GSM8K file descriptions.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "datasets/fetch.h"

#include <stdio.h>
#include <string.h>

#include "util/exitcode.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/lines.h"
#include "util/msg.h"

bool dsa_fetch_is_gsm8k(const char *path)
{
    dsa_lines *l = dsa_lines_open(path);
    if (!l)
        return false;
    const char *line;
    size_t len;
    bool yes = false;
    if (dsa_lines_next(l, &line, &len) > 0) {
        json_t *o = json_loadb(line, len, 0, NULL);
        yes = json_is_object(o) && json_object_get(o, "question") && json_object_get(o, "answer") &&
              !json_object_get(o, "prompt");
        json_decref(o);
    }
    dsa_lines_free(&l);
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
