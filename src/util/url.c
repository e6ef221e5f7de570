/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "util/url.h"

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
