/*
 * The two readers of a `grade mrcr` line (mrcr_grade_fields.h). Why an event parser: a log
 * line is mostly text that grading never looks at (the "input" context, the response's
 * neighbours), and jansson always builds the whole tree, copying every string twice on the
 * way; yajl lexes the line once and hands each string over in place (measured in
 * bench/RESULTS.md "grade mrcr, whole command"; the choice is in docs/design.md).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "evals/mrcr_grade_fields.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <yajl/yajl_parse.h>

#include "util/json_pick.h"

const char *const dsa_mrcr_field_names[DSA_MF_COUNT] = {
    "response",      "model_response", "answer",
    "ground_truth",  "prefix",         "random_string_to_prepend",
    "error",         "input",          "id",
    "dataset_index", "needle_count",   "n_needles",
};

/* jansson's JSON_PARSER_MAX_DEPTH: a deeper line goes to the tree reader, which refuses it */
#define MAX_DEPTH 2048

void dsa_mrcr_fields_init(struct dsa_mrcr_fields *mf)
{
    memset(mf, 0, sizeof *mf);
    dsa_buf_init(&mf->arena);
}

void dsa_mrcr_fields_release(struct dsa_mrcr_fields *mf)
{
    for (int k = 0; k < DSA_MF_COUNT; k++)
        json_decref(mf->f[k].value);
    dsa_buf_release(&mf->arena);
    memset(mf, 0, sizeof *mf);
}

/* Only these strings are kept: the others are lexed and dropped. */
static bool is_text_field(int k)
{
    return k == DSA_MF_RESPONSE || k == DSA_MF_MODEL_RESPONSE || k == DSA_MF_ANSWER ||
           k == DSA_MF_GROUND_TRUTH || k == DSA_MF_PREFIX || k == DSA_MF_RANDOM_STRING;
}

static bool is_id_field(int k)
{
    return k >= DSA_MF_ID && k <= DSA_MF_N_NEEDLES;
}

static void keep_string(struct dsa_mrcr_fields *mf, struct dsa_mrcr_fvalue *v, const char *s,
                        size_t len)
{
    v->type = DSA_MT_STRING;
    v->off = mf->arena.len;
    v->len = len;
    dsa_buf_add(&mf->arena, s, len);
    dsa_buf_addch(&mf->arena, '\0');
}

/* ---- the stream reader ---- */

struct scan {
    const char *text;
    yajl_handle h;
    struct dsa_mrcr_fields *mf;
    int depth;         /* containers open */
    int member;        /* the depth-1 key whose value is being read, or -1 */
    char input_kind;   /* 'a' or 'o': "input" opened as an array or an object */
    int content_depth; /* depth of the last "content" key inside "input", or 0 */
    size_t id_start;   /* offset of the identity value being read */
    size_t end;        /* offset just past the line's object, once it closed */
    bool failed;       /* a callback declined the line */
    uint32_t serial;
    uint32_t *open; /* open[d]: serial of the object open at depth d (0: an array) */
    size_t open_cap;
    struct dsa_json_keys keys; /* for refusing duplicates as JSON_REJECT_DUPLICATES does */
};

static int member_of(const unsigned char *key, size_t len)
{
    for (int k = 0; k < DSA_MF_COUNT; k++)
        if (strlen(dsa_mrcr_field_names[k]) == len && !memcmp(dsa_mrcr_field_names[k], key, len))
            return k;
    return -1;
}

/* An identity value has ended at the parser's position: keep it as jansson reads it. */
static void end_id_value(struct scan *s)
{
    size_t end = yajl_get_bytes_consumed(s->h);
    json_t *v = json_loadb(s->text + s->id_start, end - s->id_start,
                           JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, NULL);
    if (!v) {
        s->failed = true;
        return;
    }
    json_decref(s->mf->f[s->member].value);
    s->mf->f[s->member].value = v;
}

static void set_question(struct scan *s, enum dsa_mrcr_ftype t, const unsigned char *str,
                         size_t len)
{
    if (t == DSA_MT_STRING)
        keep_string(s->mf, &s->mf->question, (const char *)str, len);
    else
        s->mf->question = (struct dsa_mrcr_fvalue){DSA_MT_ABSENT, 0, 0, NULL};
}

/* Every value (a scalar, or a container as it opens) at the depth it appears at. */
static void note_value(struct scan *s, enum dsa_mrcr_ftype t, const unsigned char *str, size_t len)
{
    int d = s->depth;
    if (d == 0) { /* the line itself must be an object: else jansson words the refusal */
        s->failed = true;
        return;
    }
    if (d == 1) {
        if (s->member < 0)
            return;
        struct dsa_mrcr_fvalue *v = &s->mf->f[s->member];
        v->type = t;
        if (t == DSA_MT_STRING && is_text_field(s->member))
            keep_string(s->mf, v, (const char *)str, len);
        if (s->member == DSA_MF_INPUT)
            set_question(s, t, str, len);
        return;
    }
    if (s->member != DSA_MF_INPUT)
        return;
    if (d == 2 && s->input_kind == 'a') { /* a new element: the question is the last one's */
        s->content_depth = 0;
        set_question(s, t, str, len);
    } else if (d == s->content_depth) {
        set_question(s, t, str, len);
    }
}

/* A scalar's value has been read: identity values at depth 1 end here. */
static int scalar(struct scan *s, enum dsa_mrcr_ftype t, const unsigned char *str, size_t len)
{
    note_value(s, t, str, len);
    if (s->depth == 1 && s->member >= 0 && is_id_field(s->member))
        end_id_value(s);
    return !s->failed;
}

static int on_null(void *ctx)
{
    return scalar(ctx, DSA_MT_NULL, NULL, 0);
}

static int on_boolean(void *ctx, int b)
{
    (void)b;
    return scalar(ctx, DSA_MT_OTHER, NULL, 0);
}

static int on_number(void *ctx, const char *num, size_t len)
{
    struct scan *s = ctx;
    if (!dsa_json_number_fits(num, len)) /* the tree reader words jansson's refusal */
        return 0;
    return scalar(s, DSA_MT_OTHER, NULL, 0);
}

static int on_string(void *ctx, const unsigned char *str, size_t len)
{
    return scalar(ctx, DSA_MT_STRING, str, len);
}

static int open_container(struct scan *s, bool is_map)
{
    if (s->depth || !is_map) /* the line's own object is no value of a member */
        note_value(s, DSA_MT_OTHER, NULL, 0);
    if (s->failed || s->depth >= MAX_DEPTH)
        return 0;
    if (s->depth == 1 && s->member == DSA_MF_INPUT)
        s->input_kind = is_map ? 'o' : 'a';
    s->depth++;
    if ((size_t)s->depth >= s->open_cap) {
        s->open_cap *= 2;
        s->open = dsa_xrealloc(s->open, s->open_cap * sizeof *s->open);
    }
    s->open[s->depth] = is_map ? ++s->serial : 0;
    return 1;
}

static int close_container(struct scan *s)
{
    s->depth--;
    if (s->depth == 0)
        s->end = yajl_get_bytes_consumed(s->h);
    if (s->depth == 1 && s->member >= 0 && is_id_field(s->member))
        end_id_value(s);
    return !s->failed;
}

static int on_start_map(void *ctx)
{
    return open_container(ctx, true);
}

static int on_start_array(void *ctx)
{
    return open_container(ctx, false);
}

static int on_end(void *ctx)
{
    return close_container(ctx);
}

static int on_map_key(void *ctx, const unsigned char *key, size_t len)
{
    struct scan *s = ctx;
    if (memchr(key, '\0', len) || !dsa_json_keys_add(&s->keys, s->open[s->depth], key, len))
        return 0; /* jansson refuses both, with its own words */
    if (s->depth == 1) {
        s->member = member_of(key, len);
        if (s->member >= 0 && is_id_field(s->member))
            s->id_start = dsa_json_value_start(s->text, yajl_get_bytes_consumed(s->h));
        return 1;
    }
    if (s->member == DSA_MF_INPUT &&
        ((s->depth == 2 && s->input_kind == 'o') || (s->depth == 3 && s->input_kind == 'a')))
        s->content_depth = len == 7 && !memcmp(key, "content", 7) ? s->depth : 0;
    return 1;
}

static const yajl_callbacks scan_callbacks = {
    .yajl_null = on_null,
    .yajl_boolean = on_boolean,
    .yajl_number = on_number,
    .yajl_string = on_string,
    .yajl_start_map = on_start_map,
    .yajl_map_key = on_map_key,
    .yajl_end_map = on_end,
    .yajl_start_array = on_start_array,
    .yajl_end_array = on_end,
};

int dsa_mrcr_fields_stream(const char *text, size_t len, struct dsa_mrcr_fields *mf)
{
    /* UTF-8 and control bytes only: JSON_ALLOW_NUL, so "\u0000" is a code point here */
    if (!len || !dsa_json_text_plain(text, len, false))
        return -1;
    struct scan sc = {0}, *s = &sc;
    s->open_cap = 16;
    s->open = dsa_xmalloc(s->open_cap * sizeof *s->open);
    s->text = text;
    s->mf = mf;
    s->member = -1;
    s->h = yajl_alloc(&scan_callbacks, NULL, s);
    /* UTF-8 was checked above, strictly (yajl's own check lets overlong forms through) */
    yajl_config(s->h, yajl_dont_validate_strings, 1);
    int ret = -1;
    if (yajl_parse(s->h, (const unsigned char *)text, len) == yajl_status_ok &&
        yajl_complete_parse(s->h) == yajl_status_ok && !s->failed &&
        dsa_json_only_blanks_after(text, len, s->end))
        ret = 0;
    yajl_free(s->h);
    free(s->open);
    dsa_json_keys_release(&s->keys);
    return ret;
}

/* ---- the tree reader ---- */

static enum dsa_mrcr_ftype type_of(const json_t *v)
{
    if (!v)
        return DSA_MT_ABSENT;
    if (json_is_string(v))
        return DSA_MT_STRING;
    return json_is_null(v) ? DSA_MT_NULL : DSA_MT_OTHER;
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

int dsa_mrcr_fields_tree(const char *text, size_t len, struct dsa_mrcr_fields *mf)
{
    json_error_t err;
    /* JSON_ALLOW_NUL: "\u0000" is a code point like any other for json.loads */
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &err);
    if (!root) {
        snprintf(mf->error, sizeof mf->error, "%s", len ? err.text : "empty line");
        return -1;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        return -2;
    }
    for (int k = 0; k < DSA_MF_COUNT; k++) {
        json_t *v = json_object_get(root, dsa_mrcr_field_names[k]);
        struct dsa_mrcr_fvalue *fv = &mf->f[k];
        fv->type = type_of(v);
        if (fv->type == DSA_MT_STRING && is_text_field(k))
            keep_string(mf, fv, json_string_value(v), json_string_length(v));
        if (v && is_id_field(k))
            fv->value = json_incref(v);
    }
    json_t *q = question_of(json_object_get(root, "input"));
    if (q)
        keep_string(mf, &mf->question, json_string_value(q), json_string_length(q));
    json_decref(root);
    return 0;
}
