/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "util/fs.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* the PID of a "BASE.tmp-PID" name, or 0 when `name` is not one */
static long tmp_pid(const char *name, const char *base, size_t base_len)
{
    static const char sfx[] = ".tmp-";
    if (strncmp(name, base, base_len) || strncmp(name + base_len, sfx, sizeof sfx - 1))
        return 0;
    const char *d = name + base_len + sizeof sfx - 1;
    char *end;
    errno = 0;
    long pid = strtol(d, &end, 10);
    if (*d < '1' || *d > '9' || *end || errno || pid <= 0 || pid > 0x7fffffff)
        return 0;
    return pid;
}

void dsa_tmp_sweep(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? dsa_xstrdup(path) : dsa_xstrdup(".");
    if (slash)
        dir[slash == path ? 1 : slash - path] = '\0';
    const char *base = slash ? slash + 1 : path;
    size_t base_len = strlen(base);
    DIR *d = base_len ? opendir(dir) : NULL;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        long pid = tmp_pid(e->d_name, base, base_len);
        /* EPERM means alive under another user: only ESRCH proves the writer is gone */
        if (!pid || pid == (long)getpid() || !(kill((pid_t)pid, 0) < 0 && errno == ESRCH))
            continue;
        char *stale = dsa_path_join(dir, e->d_name);
        if (!unlink(stale))
            dsa_notef("removed '%s', left by an interrupted run", stale);
        free(stale);
    }
    if (d)
        closedir(d);
    free(dir);
}

char *dsa_tmp_path(const char *path)
{
    dsa_tmp_sweep(path);
    struct dsa_buf tmp = DSA_BUF_INIT;
    dsa_buf_addf(&tmp, "%s.tmp-%ld", path, (long)getpid());
    return dsa_buf_detach(&tmp, NULL);
}

int dsa_atomic_open(struct dsa_atomic *a, const char *path)
{
    struct stat st;
    a->path = path;
    a->tmp = NULL;
    if (!stat(path, &st) && S_ISDIR(st.st_mode)) {
        dsa_errorf("cannot write '%s': Is a directory", path);
        return -1;
    }
    /* a device or pipe (-o /dev/stdout, /dev/full, a FIFO) is written in place: renaming a
       temporary file over it would replace the device node itself */
    if (!stat(path, &st) && !S_ISREG(st.st_mode)) {
        a->f = fopen(path, "wb");
        if (!a->f)
            return dsa_errorf("cannot open '%s': %s", path, strerror(errno));
        return 0;
    }
    a->tmp = dsa_tmp_path(path);
    a->f = fopen(a->tmp, "wb");
    if (!a->f) {
        dsa_errorf("cannot create '%s': %s", a->tmp, strerror(errno));
        free(a->tmp);
        a->tmp = NULL;
        return -1;
    }
    return 0;
}

int dsa_atomic_commit(struct dsa_atomic *a)
{
    int ret = 0;
    errno = 0; /* a stream error without errno reads as EIO */
    /* fsync before the rename: otherwise a power cut can leave PATH renamed but empty */
    bool bad = fflush(a->f) || ferror(a->f) || (a->tmp && fsync(fileno(a->f)));
    int err = errno;
    if (fclose(a->f) && !bad) {
        bad = true;
        err = errno;
    }
    a->f = NULL;
    if (bad) {
        ret = dsa_errorf("cannot write '%s': %s", a->tmp ? a->tmp : a->path,
                         strerror(err ? err : EIO));
        if (a->tmp)
            unlink(a->tmp);
    } else if (a->tmp && rename(a->tmp, a->path)) {
        ret = dsa_errorf("cannot rename '%s' to '%s': %s", a->tmp, a->path, strerror(errno));
        unlink(a->tmp);
    }
    free(a->tmp);
    a->tmp = NULL;
    return ret;
}

void dsa_atomic_abort(struct dsa_atomic *a)
{
    if (a->f)
        fclose(a->f);
    a->f = NULL;
    if (a->tmp)
        unlink(a->tmp);
    free(a->tmp);
    a->tmp = NULL;
}

bool dsa_fd_reader_gone(int fd)
{
    if (errno == EPIPE)
        return true;
    /* Linux reports POLLERR on the write end of a pipe without readers; the errno of the
       failed write may be long overwritten by the time the error is noticed */
    struct pollfd p = {fd, 0, 0};
    return poll(&p, 1, 0) == 1 && (p.revents & POLLERR);
}
