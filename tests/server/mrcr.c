/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "mrcr.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "answer.h"
#include "util/buf.h"
#include "util/hash.h"

#include <pcre2.h>

static pcre2_code *question_re, *request_re;
static pthread_once_t re_once = PTHREAD_ONCE_INIT;

static pcre2_code *compile(const char *pattern, uint32_t flags)
{
    int code;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
                                   flags | PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &code, &off, NULL);
    if (!re)
        abort(); /* a bug in the fixed patterns below */
    return re;
}

static void compile_all(void)
{
    /* The real question, with the closing sentence optional so that shortened synthetic
       questions still parse; the topic is everything up to the final '.'. */
    question_re = compile("^\\s*Prepend (.+?) to the ([0-9]{1,9})(?:st|nd|rd|th) \\(1 indexed\\) "
                          "(.+?) about (.+?)\\.?"
                          "(?: Do not include any other text in your response\\.)?\\s*$",
                          PCRE2_DOTALL);
    request_re =
        compile("^\\s*write an? (.+?) about (.+?)[.!]?\\s*$", PCRE2_DOTALL | PCRE2_CASELESS);
}

static char *group(pcre2_match_data *md, const char *s, int i)
{
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    return dsa_xstrndup(s + ov[2 * i], ov[2 * i + 1] - ov[2 * i]);
}

int srv_mrcr_parse_question(const char *s, size_t n, struct srv_mrcr_question *q)
{
    memset(q, 0, sizeof *q);
    pthread_once(&re_once, compile_all);
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(question_re, NULL);
    int rc = pcre2_match(question_re, (PCRE2_SPTR)s, n, 0, 0, md, NULL);
    if (rc == 5) {
        q->prefix = group(md, s, 1);
        char *k = group(md, s, 2);
        q->k = strtol(k, NULL, 10);
        free(k);
        q->format = group(md, s, 3);
        q->topic = group(md, s, 4);
    }
    pcre2_match_data_free(md);
    if (rc != 5 || q->k < 1) {
        srv_mrcr_question_release(q);
        return -1;
    }
    return 0;
}

void srv_mrcr_question_release(struct srv_mrcr_question *q)
{
    free(q->prefix);
    free(q->format);
    free(q->topic);
    memset(q, 0, sizeof *q);
}

static bool same_text(const char *s, size_t n, PCRE2_SIZE *ov, int i, const char *want)
{
    size_t len = ov[2 * i + 1] - ov[2 * i];
    (void)n;
    return len == strlen(want) && strncasecmp(s + ov[2 * i], want, len) == 0;
}

bool srv_mrcr_is_request(const char *s, size_t n, const char *format, const char *topic)
{
    pthread_once(&re_once, compile_all);
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(request_re, NULL);
    int rc = pcre2_match(request_re, (PCRE2_SPTR)s, n, 0, 0, md, NULL);
    bool ok = false;
    if (rc == 3) {
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        ok = same_text(s, n, ov, 1, format) && same_text(s, n, ov, 2, topic);
    }
    pcre2_match_data_free(md);
    return ok;
}

static const char *str_or_empty(const json_t *m, const char *key, size_t *len)
{
    const json_t *v = json_object_get(m, key);
    if (json_is_string(v)) {
        *len = json_string_length(v);
        return json_string_value(v);
    }
    *len = 0;
    return "";
}

uint64_t srv_mrcr_content_hash(const json_t *messages)
{
    dsa_sha256 *h = dsa_sha256_new();
    size_t i;
    const json_t *m;
    json_array_foreach(messages, i, m)
    {
        size_t len;
        const char *role = str_or_empty(m, "role", &len);
        dsa_sha256_update(h, role, len);
        dsa_sha256_update(h, "", 1);
        const char *content = str_or_empty(m, "content", &len);
        dsa_sha256_update(h, content, len);
        dsa_sha256_update(h, "", 1);
    }
    char hex[65];
    dsa_sha256_final_hex(h, hex);
    dsa_sha256_free(&h);
    hex[16] = '\0';
    return strtoull(hex, NULL, 16);
}

size_t srv_mrcr_cut(const char *s, size_t n, size_t num, size_t den)
{
    size_t chars = 0;
    for (size_t i = 0; i < n; i++)
        chars += ((unsigned char)s[i] & 0xc0) != 0x80;
    size_t keep = chars * num / den, seen = 0, i = 0;
    for (; i < n; i++) {
        if (((unsigned char)s[i] & 0xc0) != 0x80) {
            if (seen == keep)
                break;
            seen++;
        }
    }
    return i;
}

static const char *role_of(const json_t *m)
{
    const json_t *r = json_object_get(m, "role");
    return json_is_string(r) ? json_string_value(r) : "";
}

bool srv_answer_mrcr(const struct srv_answer_in *in, const struct srv_answer_cfg *cfg,
                     struct dsa_buf *out, struct srv_answer_info *info)
{
    const json_t *msgs = in->messages;
    size_t nmsg = json_array_size(msgs);
    if (!msgs || nmsg < 2)
        return false;
    const json_t *last = json_array_get(msgs, nmsg - 1);
    const json_t *qc = json_object_get(last, "content");
    if (strcmp(role_of(last), "user") != 0 || !json_is_string(qc))
        return false;
    struct srv_mrcr_question q;
    if (srv_mrcr_parse_question(json_string_value(qc), json_string_length(qc), &q) != 0)
        return false;

    /* Needles: message indices of the assistant answers to matching requests, in order. */
    size_t *needles = dsa_xmalloc(nmsg * sizeof *needles), nn = 0;
    for (size_t i = 0; i + 2 < nmsg; i++) {
        const json_t *m = json_array_get(msgs, i), *next = json_array_get(msgs, i + 1);
        const json_t *c = json_object_get(m, "content");
        if (strcmp(role_of(m), "user") == 0 && json_is_string(c) &&
            strcmp(role_of(next), "assistant") == 0 &&
            srv_mrcr_is_request(json_string_value(c), json_string_length(c), q.format, q.topic))
            needles[nn++] = i + 1;
    }

    uint64_t h = srv_mrcr_content_hash(msgs);
    info->wrong =
        srv_decide_u(cfg->seed, h, "wrong") < srv_ptable_get(&cfg->wrong, in->prompt_tokens);
    info->garbled = !info->wrong && srv_decide_u(cfg->seed, h, "garble") <
                                        srv_ptable_get(&cfg->garble, in->prompt_tokens);
    if (cfg->build && *cfg->build) {
        char tag[256];
        snprintf(tag, sizeof tag, "build:%s", cfg->build);
        info->build_changed = srv_decide_u(cfg->seed, h, tag) < cfg->build_fraction;
    }

    /* The message answered: the k-th needle, or for a wrong answer another one of the same
       request (or, with a single match, the assistant message after the target's, wrapping
       to the one before it). */
    long pick = -1;
    if (q.k >= 1 && (size_t)q.k <= nn) {
        pick = (long)needles[q.k - 1];
        if (info->wrong) {
            if (nn > 1) {
                size_t j =
                    ((size_t)q.k - 1 + 1 + srv_decide_bits(cfg->seed, h, "pick") % (nn - 1)) % nn;
                pick = (long)needles[j];
            } else if ((size_t)pick + 2 < nmsg - 1) {
                pick += 2;
            } else if (pick >= 3) {
                pick -= 2;
            }
        }
    }

    dsa_buf_adds(out, q.prefix);
    size_t body_at = out->len;
    if (pick >= 0) {
        size_t len;
        const char *text = str_or_empty(json_array_get(msgs, (size_t)pick), "content", &len);
        if (info->garbled)
            len = srv_mrcr_cut(text, len, 1, 2);
        dsa_buf_add(out, text, len);
    }
    if (info->build_changed) {
        size_t keep = srv_mrcr_cut(out->data + body_at, out->len - body_at, 3, 4);
        out->len = body_at + keep;
        out->data[out->len] = '\0';
    }
    free(needles);
    srv_mrcr_question_release(&q);
    return true;
}
