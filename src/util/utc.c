/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "util/utc.h"

char *dsa_utc_format(time_t t, char out[DSA_UTC_SIZE])
{
    struct tm tm;
    if (!gmtime_r(&t, &tm) || !strftime(out, DSA_UTC_SIZE, "%Y-%m-%dT%H:%M:%SZ", &tm))
        out[0] = '\0'; /* a year that does not fit: never a torn string */
    return out;
}

char *dsa_utc_now(char out[DSA_UTC_SIZE])
{
    return dsa_utc_format(time(NULL), out);
}
