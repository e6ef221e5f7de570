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

#include "evals/mrcr_grade_fields.h"
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

/* Whether s may hold a surrogate escape "\\uD800".."\\uDFFF" (an escaped backslash before "u"
   is a false positive, which only costs the exact scan below). Most lines have none, and
   memchr skips to each backslash. */
static bool may_have_surrogate_escape(const char *s, size_t len)
{
    const char *end = s + len;
    for (const char *p = memchr(s, '\\', len); p; p = memchr(p + 1, '\\', (size_t)(end - p - 1))) {
        if (end - p >= 4 && p[1] == 'u' && (p[2] | 0x20) == 'd' && hexval(p[3]) >= 8)
            return true;
    }
    return false;
}

/* Rewrites lone surrogate escapes (see the top of the file). Returns 0 and *out = NULL when
   the line has none; 0, a fresh copy and the window base when it had some; -1 when every
   window is in use. Escapes are scanned whole (the JSON escape \\\\ is
   skipped as one, so \\ud800 is no \u escape); outside strings a backslash makes the line invalid
   JSON with or without the rewrite. */
static int remap_lone_surrogates(const char *s, size_t len, char **out, size_t *out_len,
                                 uint32_t *base)
{
    *out = NULL;
    if (!may_have_surrogate_escape(s, len))
        return 0;
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

/* The first of fields[] present on the line (null counts as present); *which = its key. */
static const struct dsa_mrcr_fvalue *get_any(const struct dsa_mrcr_fields *mf, const int *fields,
                                             const char **which)
{
    for (; *fields >= 0; fields++) {
        if (mf->f[*fields].type != DSA_MT_ABSENT) {
            *which = dsa_mrcr_field_names[*fields];
            return &mf->f[*fields];
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

/* The identity keys, copied to the output record. */
static json_t *ids_of(const struct dsa_mrcr_fields *mf, bool remapped, uint32_t base)
{
    json_t *ids = json_object();
    for (int k = DSA_MF_ID; k <= DSA_MF_N_NEEDLES; k++) {
        json_t *v = mf->f[k].value;
        if (v && remapped && json_is_string(v))
            json_object_set_new(ids, dsa_mrcr_field_names[k], id_string(v, base));
        else if (v)
            json_object_set(ids, dsa_mrcr_field_names[k], v);
    }
    return ids;
}

/* The prefix: a prefix key, else the question in "input". */
static enum dsa_mrcr_line_status prefix_of(const struct dsa_mrcr_fields *mf,
                                           struct dsa_mrcr_line *out, const char **ps, size_t *plen)
{
    static const int prefix_keys[] = {DSA_MF_PREFIX, DSA_MF_RANDOM_STRING, -1};
    const char *pkey = NULL;
    const struct dsa_mrcr_fvalue *pv = get_any(mf, prefix_keys, &pkey);
    if (pv) {
        if (pv->type != DSA_MT_STRING)
            return bad(out, false, "\"%s\" must be a string", pkey);
        *ps = dsa_mrcr_fields_str(mf, pv);
        *plen = pv->len;
        return DSA_MRCR_LINE_GRADED;
    }
    if (mf->f[DSA_MF_INPUT].type == DSA_MT_ABSENT)
        return bad(out, false,
                   "missing \"prefix\" (or \"random_string_to_prepend\", or \"input\" "
                   "holding the question)");
    const struct dsa_mrcr_fvalue *q = &mf->question;
    if (q->type != DSA_MT_STRING ||
        !prefix_from_question(dsa_mrcr_fields_str(mf, q), q->len, ps, plen))
        return bad(out, false,
                   "no prefix: \"input\" holds no question \"Prepend <prefix> to the ...\"");
    return DSA_MRCR_LINE_GRADED;
}

/* Checks the fields of a line and grades it. */
static enum dsa_mrcr_line_status grade_fields(const struct dsa_mrcr_fields *mf, bool remapped,
                                              uint32_t base, struct dsa_mrcr_line *out)
{
    static const int response_keys[] = {DSA_MF_RESPONSE, DSA_MF_MODEL_RESPONSE, -1};
    static const int answer_keys[] = {DSA_MF_ANSWER, DSA_MF_GROUND_TRUTH, -1};
    enum dsa_mrcr_line_status st;
    uint32_t *r = NULL, *a = NULL, *p = NULL;

    out->ids = ids_of(mf, remapped, base);
    const char *rkey = NULL, *akey = NULL;
    const struct dsa_mrcr_fvalue *resp = get_any(mf, response_keys, &rkey);
    if (!resp) {
        enum dsa_mrcr_ftype e = mf->f[DSA_MF_ERROR].type;
        if (e != DSA_MT_ABSENT && e != DSA_MT_NULL) {
            snprintf(out->why, sizeof out->why, "request error (no response)");
            return DSA_MRCR_LINE_SKIPPED;
        }
        return bad(out, false, "missing \"response\" (or \"model_response\")");
    }
    if (resp->type != DSA_MT_STRING && resp->type != DSA_MT_NULL)
        return bad(out, false, "\"%s\" must be a string", rkey);
    const struct dsa_mrcr_fvalue *ans = get_any(mf, answer_keys, &akey);
    if (!ans)
        return bad(out, false, "missing \"answer\" (or \"ground_truth\")");
    if (ans->type != DSA_MT_STRING)
        return bad(out, false, "\"%s\" must be a string", akey);
    const char *ps = NULL;
    size_t plen = 0;
    st = prefix_of(mf, out, &ps, &plen);
    if (st != DSA_MRCR_LINE_GRADED)
        return st;

    size_t nr = 0, na, np;
    if (resp->type == DSA_MT_STRING)
        r = code_points(dsa_mrcr_fields_str(mf, resp), resp->len, remapped, base, &nr);
    else
        r = dsa_xmalloc(sizeof *r); /* null: the empty response */
    a = code_points(dsa_mrcr_fields_str(mf, ans), ans->len, remapped, base, &na);
    p = code_points(ps, plen, remapped, base, &np);
    if (!r || !a || !p) { /* cannot happen: the UTF-8 was validated */
        st = bad(out, false, "invalid UTF-8 in a string");
        goto cleanup;
    }
    dsa_mrcr_grade_cp(r, nr, a, na, p, np, &out->grade);
    st = DSA_MRCR_LINE_GRADED;
cleanup:
    free(r);
    free(a);
    free(p);
    return st;
}

enum dsa_mrcr_line_status dsa_mrcr_grade_line(const char *text, size_t len,
                                              struct dsa_mrcr_line *out)
{
    memset(out, 0, sizeof *out);
    enum dsa_mrcr_line_status st;
    char *copy = NULL;
    size_t copy_len = 0;
    struct dsa_mrcr_fields mf;
    dsa_mrcr_fields_init(&mf);

    uint32_t base = 0;
    if (remap_lone_surrogates(text, len, &copy, &copy_len, &base) < 0) {
        st = bad(out, false,
                 "lone UTF-16 surrogates on a line that uses every 2048-code-point window of "
                 "planes 15-16 are not supported");
        goto cleanup;
    }
    bool remapped = copy != NULL;
    const char *t = remapped ? copy : text;
    size_t tl = remapped ? copy_len : len;
    /* the stream reader takes every well-formed line; the tree reader words the refusals */
    if (dsa_mrcr_fields_stream(t, tl, &mf) < 0) {
        dsa_mrcr_fields_release(&mf);
        dsa_mrcr_fields_init(&mf);
        int rc = dsa_mrcr_fields_tree(t, tl, &mf);
        if (rc < 0) {
            st = bad(out, true, "%s", rc == -1 ? mf.error : "expected a JSON object");
            goto cleanup;
        }
    }
    st = grade_fields(&mf, remapped, base, out);
cleanup:
    dsa_mrcr_fields_release(&mf);
    free(copy);
    return st;
}
