/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "util/url.h"

#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

/* the user-info of `url` as [*start, *end), or false when it has none */
static bool userinfo(const char *url, const char **start, const char **end)
{
    const char *p = strstr(url, "://");
    if (!p)
        return false;
    const char *auth = p + 3;
    size_t alen = strcspn(auth, "/?#");
    const char *at = NULL;
    for (const char *q = auth; q < auth + alen; q++)
        if (*q == '@')
            at = q; /* the last '@' ends it: a password may hold '@' unescaped */
    if (!at)
        return false;
    *start = auth;
    *end = at;
    return true;
}

bool dsa_url_has_userinfo(const char *url)
{
    const char *s, *e;
    return userinfo(url, &s, &e);
}

char *dsa_url_redact(const char *url)
{
    const char *s, *e;
    if (!userinfo(url, &s, &e))
        return dsa_xstrdup(url);
    struct dsa_buf b = DSA_BUF_INIT;
    dsa_buf_add(&b, url, (size_t)(s - url));
    const char *colon = memchr(s, ':', (size_t)(e - s));
    if (colon) {
        dsa_buf_add(&b, s, (size_t)(colon + 1 - s)); /* the user name is not a secret */
        dsa_buf_adds(&b, DSA_URL_MASK);
    } else {
        dsa_buf_adds(&b, DSA_URL_MASK);
    }
    dsa_buf_adds(&b, e);
    return dsa_buf_detach(&b, NULL);
}

/* one member or element: a string is masked in place, a container is walked */
static size_t redact_value(json_t *x)
{
    if (!json_is_string(x))
        return dsa_url_redact_json(x);
    if (!dsa_url_has_userinfo(json_string_value(x)))
        return 0;
    char *shown = dsa_url_redact(json_string_value(x));
    json_string_set(x, shown);
    free(shown);
    return 1;
}

size_t dsa_url_redact_json(json_t *v)
{
    size_t n = 0;
    const char *k;
    json_t *x;
    if (json_is_object(v)) {
        json_object_foreach(v, k, x)
        {
            n += redact_value(x);
        }
    }
    for (size_t i = 0; json_is_array(v) && i < json_array_size(v); i++)
        n += redact_value(json_array_get(v, i));
    return n;
}
