/*
 * The input line of `dsa-eval grade mrcr`: JSON -> (response, answer, prefix) code points ->
 * the official grade. Errors are returned as text, never printed, so that the command decides
 * how to report them and the fuzz target stays quiet.
 *
 * Lone surrogates. Python's json.loads keeps a lone "\ud800" escape as the code point U+D800
 * and the official grader compares it like any other code point; jansson refuses such lines.
 * Before parsing, each lone surrogate escape U+D800+k (k < 2048) is rewritten as the escaped
 * pair of BASE+k, where BASE starts a window of 2048 private-use code points of planes 15-16
 * (U+F0000..U+10FFFF, 64 windows) that the line does not use anywhere, raw or escaped; after
 * UTF-8 decoding, BASE+k is mapped back to U+D800+k. The mapping is therefore one-to-one.
 * Only a line that uses all 64 windows and has a lone surrogate is refused, with a message.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "evals/mrcr_grade.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/utf8.h"

/* planes 15-16 (private use), as 64 windows of 2048 code points, one per surrogate */
#define PUA_FIRST  0xF0000u
#define PUA_WINDOW 2048u

static enum dsa_mrcr_line_status bad(struct dsa_mrcr_line *out, bool parse_error, const char *fmt,
                                     ...) DSA_PRINTF(3, 4);

/* Keeps the message one printable ASCII line: jansson quotes the offending input. */
static void sanitize(char *s)
{
    for (unsigned char *p = (unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p >= 0x7F)
            *p = '?';
}

static enum dsa_mrcr_line_status bad(struct dsa_mrcr_line *out, bool parse_error, const char *fmt,
                                     ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->why, sizeof out->why, fmt, ap);
    va_end(ap);
    sanitize(out->why);
    out->parse_error = parse_error;
    if (out->ids) {
        json_decref(out->ids);
        out->ids = NULL;
    }
    return DSA_MRCR_LINE_BAD;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The value of "\uXXXX" at s[i] (s[i] == '\\'), or -1. */
static long escape_at(const char *s, size_t len, size_t i)
{
    if (i + 6 > len || s[i] != '\\' || s[i + 1] != 'u')
        return -1;
    long v = 0;
    for (int k = 2; k < 6; k++) {
        int h = hexval(s[i + k]);
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

/* The code point of the 4-byte UTF-8 sequence at s[i], unchecked (an invalid one makes
   jansson refuse the line anyway), or 0 if there is none. */
static uint32_t raw4_at(const char *s, size_t len, size_t i)
{
    const unsigned char *u = (const unsigned char *)s + i;
    if (i + 3 >= len || u[0] < 0xF0 || u[0] > 0xF4)
        return 0;
    return ((uint32_t)(u[0] & 7) << 18) | ((uint32_t)(u[1] & 0x3F) << 12) |
           ((uint32_t)(u[2] & 0x3F) << 6) | (u[3] & 0x3F);
}

/* Marks the window of planes 15–16 that holds cp (if it is there) as used. */
static void mark_window(uint64_t *used, uint32_t cp)
{
    if (cp >= PUA_FIRST && cp <= 0x10FFFF)
        *used |= UINT64_C(1) << ((cp - PUA_FIRST) / PUA_WINDOW);
}

/* Rewrites lone surrogate escapes (see the top of the file). Returns 0 and *out = NULL when
   the line has none; 0, a fresh copy and the window base when it had some; -1 when every
   window is in use. Escapes are scanned whole (the JSON escape \\\\ is
   skipped as one, so \\ud800 is no \u escape); outside strings a backslash makes the line invalid
   JSON with or without the rewrite. */
static int remap_lone_surrogates(const char *s, size_t len, char **out, size_t *out_len,
                                 uint32_t *base)
{
    /* pass 1: are there lone surrogates, and which windows does the line use? */
    bool lone = false;
    uint64_t used = 0;
    for (size_t i = 0; i < len; i++) {
        if ((unsigned char)s[i] >= 0xF0) {
            mark_window(&used, raw4_at(s, len, i));
            continue;
        }
        if (s[i] != '\\' || i + 1 >= len)
            continue;
        long v = escape_at(s, len, i);
        if (v < 0) {
            i++; /* a two-character escape such as \\ or \n */
            continue;
        }
        long lo = v >= 0xD800 && v <= 0xDBFF ? escape_at(s, len, i + 6) : -1;
        if (lo >= 0xDC00 && lo <= 0xDFFF) { /* a valid pair: one code point */
            mark_window(&used, 0x10000 + (((uint32_t)v - 0xD800) << 10) + ((uint32_t)lo - 0xDC00));
            i += 11;
            continue;
        }
        lone = lone || (v >= 0xD800 && v <= 0xDFFF);
        i += 5;
    }
    *out = NULL;
    if (!lone)
        return 0;
    if (used == UINT64_MAX)
        return -1;
    int w = 63; /* the last free window: U+10F800.. unless the line uses it */
    while (used & (UINT64_C(1) << w))
        w--;
    *base = PUA_FIRST + (uint32_t)w * PUA_WINDOW;

    /* pass 2: the same scan, rewriting each lone surrogate */
    struct dsa_buf b = DSA_BUF_INIT;
    dsa_buf_grow(&b, len + 64);
    size_t copied = 0; /* s[0..copied) is already in b */
    for (size_t i = 0; i < len; i++) {
        if (s[i] != '\\' || i + 1 >= len)
            continue;
        long v = escape_at(s, len, i);
        if (v < 0) {
            i++;
            continue;
        }
        long lo = v >= 0xD800 && v <= 0xDBFF ? escape_at(s, len, i + 6) : -1;
        if (lo >= 0xDC00 && lo <= 0xDFFF) {
            i += 11;
            continue;
        }
        if (v >= 0xD800 && v <= 0xDFFF) {
            uint32_t u = *base + (uint32_t)(v - 0xD800) - 0x10000;
            dsa_buf_add(&b, s + copied, i - copied);
            dsa_buf_addf(&b, "\\u%04X\\u%04X", 0xD800 + (u >> 10), 0xDC00 + (u & 0x3FF));
            copied = i + 6;
        }
        i += 5;
    }
    dsa_buf_add(&b, s + copied, len - copied);
    *out = dsa_buf_detach(&b, out_len);
    return 0;
}

/* The first present, non-null key among names[]; *which = its name. */
static json_t *get_any(json_t *obj, const char *const *names, const char **which)
{
    for (; *names; names++) {
        json_t *v = json_object_get(obj, *names);
        if (v) {
            *which = *names;
            return v;
        }
    }
    return NULL;
}

/* "Prepend XXXXXXXXXX to the 7th (1 indexed) email about faculty. ..." -> XXXXXXXXXX */
static bool prefix_from_question(const char *q, size_t qlen, const char **p, size_t *plen)
{
    static const char intro[] = "Prepend ", outro[] = " to the ";
    const char *end = q + qlen;
    for (const char *s = q; (size_t)(end - s) >= sizeof intro - 1; s++) {
        if (memcmp(s, intro, sizeof intro - 1))
            continue;
        const char *t = s + sizeof intro - 1, *u = t;
        while (u < end && *u != ' ')
            u++;
        if (u == t || (size_t)(end - u) < sizeof outro - 1 || memcmp(u, outro, sizeof outro - 1))
            return false;
        *p = t;
        *plen = (size_t)(u - t);
        return true;
    }
    return false;
}

/* The question text inside "input": a string, {"content": "..."} or a message list. */
static json_t *question_of(json_t *input)
{
    if (json_is_array(input))
        input = json_array_get(input, json_array_size(input) - 1);
    if (json_is_object(input))
        input = json_object_get(input, "content");
    return json_is_string(input) ? input : NULL;
}

/* UTF-8 (valid: jansson checked it) -> code points, undoing the lone surrogate mapping. */
static uint32_t *code_points(const char *s, size_t len, bool remapped, uint32_t base, size_t *n)
{
    uint32_t *cp = dsa_utf8_decode_alloc(s, len, n, NULL);
    if (cp && remapped)
        for (size_t i = 0; i < *n; i++)
            if (cp[i] >= base && cp[i] < base + PUA_WINDOW)
                cp[i] = cp[i] - base + 0xD800;
    return cp;
}

/* An identifying string of a line that had lone surrogates: output is UTF-8, which cannot
   carry them, so each becomes U+FFFD (as Python's errors="replace" would write it). */
static json_t *id_string(json_t *v, uint32_t base)
{
    size_t n;
    uint32_t *cp = dsa_utf8_decode_alloc(json_string_value(v), json_string_length(v), &n, NULL);
    struct dsa_buf b = DSA_BUF_INIT;
    for (size_t i = 0; cp && i < n; i++) {
        char u8[4];
        uint32_t c = cp[i] >= base && cp[i] < base + PUA_WINDOW ? 0xFFFD : cp[i];
        dsa_buf_add(&b, u8, (size_t)dsa_utf8_encode(c, u8));
    }
    free(cp);
    json_t *s = json_stringn(b.data, b.len);
    dsa_buf_release(&b);
    return s;
}

enum dsa_mrcr_line_status dsa_mrcr_grade_line(const char *text, size_t len,
                                              struct dsa_mrcr_line *out)
{
    static const char *const response_keys[] = {"response", "model_response", NULL};
    static const char *const answer_keys[] = {"answer", "ground_truth", NULL};
    static const char *const prefix_keys[] = {"prefix", "random_string_to_prepend", NULL};
    static const char *const id_keys[] = {"id", "dataset_index", "needle_count", "n_needles"};

    memset(out, 0, sizeof *out);
    enum dsa_mrcr_line_status st;
    char *copy = NULL;
    size_t copy_len = 0;
    json_t *root = NULL;
    uint32_t *r = NULL, *a = NULL, *p = NULL;

    uint32_t base = 0;
    if (remap_lone_surrogates(text, len, &copy, &copy_len, &base) < 0) {
        st = bad(out, false,
                 "lone UTF-16 surrogates on a line that uses every 2048-code-point window of "
                 "planes 15-16 are not supported");
        goto cleanup;
    }
    bool remapped = copy != NULL;
    json_error_t err;
    /* JSON_ALLOW_NUL: "\u0000" is a code point like any other for json.loads */
    root = json_loadb(remapped ? copy : text, remapped ? copy_len : len,
                      JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &err);
    if (!root) {
        st = bad(out, true, "%s", len ? err.text : "empty line");
        goto cleanup;
    }
    if (!json_is_object(root)) {
        st = bad(out, true, "expected a JSON object");
        goto cleanup;
    }

    out->ids = json_object();
    for (size_t k = 0; k < DSA_ARRAY_SIZE(id_keys); k++) {
        json_t *v = json_object_get(root, id_keys[k]);
        if (v && remapped && json_is_string(v))
            json_object_set_new(out->ids, id_keys[k], id_string(v, base));
        else if (v)
            json_object_set(out->ids, id_keys[k], v);
    }

    const char *rkey = NULL, *akey = NULL, *pkey = NULL;
    json_t *resp = get_any(root, response_keys, &rkey);
    if (!resp) {
        json_t *e = json_object_get(root, "error");
        if (e && !json_is_null(e)) {
            snprintf(out->why, sizeof out->why, "request error (no response)");
            st = DSA_MRCR_LINE_SKIPPED;
            goto cleanup;
        }
        st = bad(out, false, "missing \"response\" (or \"model_response\")");
        goto cleanup;
    }
    if (!json_is_string(resp) && !json_is_null(resp)) {
        st = bad(out, false, "\"%s\" must be a string", rkey);
        goto cleanup;
    }
    json_t *ans = get_any(root, answer_keys, &akey);
    if (!ans) {
        st = bad(out, false, "missing \"answer\" (or \"ground_truth\")");
        goto cleanup;
    }
    if (!json_is_string(ans)) {
        st = bad(out, false, "\"%s\" must be a string", akey);
        goto cleanup;
    }
    const char *ps;
    size_t plen;
    json_t *pv = get_any(root, prefix_keys, &pkey);
    if (pv) {
        if (!json_is_string(pv)) {
            st = bad(out, false, "\"%s\" must be a string", pkey);
            goto cleanup;
        }
        ps = json_string_value(pv);
        plen = json_string_length(pv);
    } else {
        json_t *input = json_object_get(root, "input");
        json_t *q = input ? question_of(input) : NULL;
        if (!input) {
            st = bad(out, false,
                     "missing \"prefix\" (or \"random_string_to_prepend\", or \"input\" "
                     "holding the question)");
            goto cleanup;
        }
        if (!q || !prefix_from_question(json_string_value(q), json_string_length(q), &ps, &plen)) {
            st = bad(out, false,
                     "no prefix: \"input\" holds no question \"Prepend <prefix> to the ...\"");
            goto cleanup;
        }
    }

    size_t nr = 0, na, np;
    if (json_is_string(resp))
        r = code_points(json_string_value(resp), json_string_length(resp), remapped, base, &nr);
    else
        r = dsa_xmalloc(sizeof *r); /* null: the empty response */
    a = code_points(json_string_value(ans), json_string_length(ans), remapped, base, &na);
    p = code_points(ps, plen, remapped, base, &np);
    if (!r || !a || !p) { /* cannot happen: jansson validated the UTF-8 */
        st = bad(out, false, "invalid UTF-8 in a string");
        goto cleanup;
    }
    dsa_mrcr_grade_cp(r, nr, a, na, p, np, &out->grade);
    st = DSA_MRCR_LINE_GRADED;

cleanup:
    free(r);
    free(a);
    free(p);
    json_decref(root);
    free(copy);
    return st;
}
