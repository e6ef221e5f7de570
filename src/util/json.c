/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "util/json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/msg.h"

static void where_prefix(char *out, size_t n, const struct dsa_json_where *w)
{
    if (w && w->lineno > 0)
        snprintf(out, n, "line %ld of '%s'", w->lineno, w->path ? w->path : "<input>");
    else
        snprintf(out, n, "'%s'", w && w->path ? w->path : "<input>");
}

static json_t *parse_object(const char *text, size_t len, const struct dsa_json_where *w,
                            size_t flags)
{
    char where[512];
    json_error_t err;
    /* JSON_REJECT_DUPLICATES: a duplicated key in outside data is ambiguous, refuse it */
    json_t *v = json_loadb(text, len, JSON_REJECT_DUPLICATES | flags, &err);
    where_prefix(where, sizeof where, w);
    if (!v) {
        dsa_errorf("cannot parse %s: %s", where, err.text);
        return NULL;
    }
    if (!json_is_object(v)) {
        dsa_errorf("cannot parse %s: expected a JSON object", where);
        json_decref(v);
        return NULL;
    }
    return v;
}

json_t *dsa_json_parse_object(const char *text, size_t len, const struct dsa_json_where *w)
{
    return parse_object(text, len, w, 0);
}

json_t *dsa_json_parse_record(const char *text, size_t len, const struct dsa_json_where *w)
{
    return parse_object(text, len, w, JSON_ALLOW_NUL);
}

static json_t *get(json_t *obj, const char *key, bool optional, bool *missing,
                   const struct dsa_json_where *w)
{
    json_t *v = json_object_get(obj, key);
    *missing = !v || json_is_null(v);
    if (*missing && !optional) {
        char where[512];
        where_prefix(where, sizeof where, w);
        dsa_errorf("%s: missing \"%s\"", where, key);
    }
    return v;
}

static bool type_error(const char *key, const char *type, const struct dsa_json_where *w)
{
    char where[512];
    where_prefix(where, sizeof where, w);
    dsa_errorf("%s: \"%s\" must be %s", where, key, type);
    return false;
}

bool dsa_json_get_str(json_t *obj, const char *key, bool optional, const char **out, size_t *len,
                      const struct dsa_json_where *w)
{
    bool missing;
    json_t *v = get(obj, key, optional, &missing, w);
    if (missing) {
        *out = NULL;
        if (len)
            *len = 0;
        return optional;
    }
    if (!json_is_string(v))
        return type_error(key, "a string", w);
    *out = json_string_value(v);
    if (len)
        *len = json_string_length(v);
    return true;
}

bool dsa_json_get_int(json_t *obj, const char *key, bool optional, long long *out,
                      const struct dsa_json_where *w)
{
    bool missing;
    json_t *v = get(obj, key, optional, &missing, w);
    if (missing)
        return optional;
    if (!json_is_integer(v))
        return type_error(key, "an integer", w);
    *out = json_integer_value(v);
    return true;
}

double dsa_json_num(const json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

void dsa_json_print_doc(const json_t *v, FILE *out)
{
    char *s = json_dumps(v, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    fprintf(out, "%s\n", s);
    free(s);
}

char *dsa_json_dumps_line(const json_t *v)
{
    /* JSON_REAL_PRECISION(17): doubles round-trip exactly */
    return json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17) | JSON_ENCODE_ANY);
}

json_t *dsa_json_first_line(const char *path, bool complete)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, f);
    fclose(f);
    json_t *v =
        n > 0 && (!complete || line[n - 1] == '\n') ? json_loadb(line, (size_t)n, 0, NULL) : NULL;
    free(line);
    return v;
}
