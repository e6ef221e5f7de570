/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "util/fs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/buf.h"
#include "util/msg.h"

int dsa_mkdirs(const char *path)
{
    char *p = dsa_xstrdup(path);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(p, 0777) && errno != EEXIST) {
            dsa_errorf("cannot create directory '%s': %s", p, strerror(errno));
            free(p);
            return -1;
        }
        *s = '/';
    }
    int ret = 0;
    if (mkdir(p, 0777) && errno != EEXIST)
        ret = dsa_errorf("cannot create directory '%s': %s", p, strerror(errno));
    else if (!dsa_is_dir(p))
        ret = dsa_errorf("cannot create directory '%s': a file is in the way", p);
    free(p);
    return ret;
}

bool dsa_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool dsa_is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

char *dsa_path_join(const char *a, const char *b)
{
    struct dsa_buf out = DSA_BUF_INIT;
    dsa_buf_adds(&out, a);
    if (out.len && out.data[out.len - 1] != '/')
        dsa_buf_addch(&out, '/');
    dsa_buf_adds(&out, b);
    return dsa_buf_detach(&out, NULL);
}

char *dsa_cache_dir(void)
{
    const char *env = getenv("DSA_EVAL_CACHE");
    if (env && *env)
        return dsa_xstrdup(env);
    env = getenv("XDG_CACHE_HOME");
    if (env && *env)
        return dsa_path_join(env, "dsa-eval");
    env = getenv("HOME");
    struct dsa_buf out = DSA_BUF_INIT;
    dsa_buf_addf(&out, "%s/.cache/dsa-eval", env && *env ? env : ".");
    return dsa_buf_detach(&out, NULL);
}
