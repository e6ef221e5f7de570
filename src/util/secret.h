/*
 * A process that holds a secret (an API key, a URL's password) must not write it into a
 * core file: dsa_secret_hold() turns core dumps off for the rest of the process
 * (RLIMIT_CORE 0, and PR_SET_DUMPABLE 0 so that neither a core_pattern pipe nor ptrace by
 * another user can read the memory). It is called once a key is read; it never turns them
 * back on, since freed memory may still hold the key.
 * Ownership: nothing is allocated; inputs are borrowed.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_UTIL_SECRET_H
#define DSA_UTIL_SECRET_H

#include <stdbool.h>
#include <stddef.h>

/* 0, or -1 (printed) when the limit cannot be lowered */
int dsa_secret_hold(void);
/* true when `v` may go into an HTTP header value: no CR, LF or other control byte */
bool dsa_secret_header_safe(const char *v, size_t len);

#endif
