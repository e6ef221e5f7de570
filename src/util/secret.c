/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "util/secret.h"

#include <errno.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#include "util/msg.h"

int dsa_secret_hold(void)
{
    struct rlimit none = {0, 0};
    if (setrlimit(RLIMIT_CORE, &none))
        return dsa_errorf("cannot turn core dumps off: %s", strerror(errno));
    /* a core_pattern pipe (systemd-coredump, apport) ignores RLIMIT_CORE; this does not */
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0))
        return dsa_errorf("cannot turn core dumps off: %s", strerror(errno));
    return 0;
}

bool dsa_secret_header_safe(const char *v, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)v[i];
        /* CR or LF would end the header and start one of the peer's choosing */
        if (c < 0x20 || c == 0x7f)
            return false;
    }
    return true;
}
