/*
 * UTC timestamps as run files ("created") and dataset metadata ("fetched_at") write them:
 * ISO 8601 to the second with a 'Z', "2026-11-30T12:00:00Z". No allocation, no state.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_UTIL_UTC_H
#define DSA_UTIL_UTC_H

#include <time.h>

#define DSA_UTC_SIZE 32 /* bytes of `out`: room for years beyond 9999 */

/* `t` (seconds since the epoch) formatted into out; returns out */
char *dsa_utc_format(time_t t, char out[DSA_UTC_SIZE]);
/* the current time, formatted */
char *dsa_utc_now(char out[DSA_UTC_SIZE]);

#endif
