/*
 * URLs as they may be shown: in files, reports, JSON documents and messages. A URL's
 * user-info is a credential (http://alice:PW@host), so every URL that leaves the process goes
 * through dsa_url_redact() first.
 * Ownership: inputs are borrowed; returned strings are fresh and the caller frees them.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_UTIL_URL_H
#define DSA_UTIL_URL_H

#include <stdbool.h>

#include <jansson.h>

#define DSA_URL_MASK "***"

/*
 * "http://alice:PW@host:8000/v1" -> "http://alice:***@host:8000/v1"; a user-info without a
 * password is a token on its own ("https://TOKEN@host") and loses it all ("***@host"). The
 * user-info is everything of the authority (after "://", up to the first '/', '?' or '#')
 * before its last '@'. Anything else is returned unchanged (as a copy).
 */
char *dsa_url_redact(const char *url);
/* true when dsa_url_redact(url) would change it */
bool dsa_url_has_userinfo(const char *url);
/* Every string of the JSON value v (objects and arrays, recursively) that holds a URL with
   user-info is replaced, in place, by its dsa_url_redact() form: run files written before
   URLs were masked may still hold a password, and compare, report and merge must not show
   it. Returns the number of strings changed. */
size_t dsa_url_redact_json(json_t *v);

#endif
