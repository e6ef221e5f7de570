/*
 * Trace files (trace.h): safetensors parsing with jansson over a memory mapping.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "kernels/trace.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernels/kutil.h"

#define MAX_HEADER (100u << 20) /* safetensors' own limit on the JSON header */

struct dsa_trace {
    void *map;
    size_t map_len;
    struct dsa_trace_tensor *t;
    size_t n;
    json_t *meta;
};

static const struct {
    const char *name;
    enum dsa_trace_dtype dtype;
    size_t size;
} dtypes[] = {
    {"BF16", DSA_TR_BF16, 2}, {"F16", DSA_TR_F16, 2}, {"F32", DSA_TR_F32, 4},
    {"I32", DSA_TR_I32, 4},   {"I64", DSA_TR_I64, 8}, {"U8", DSA_TR_U8, 1},
};

static int errf(char *err, size_t n, const char *fmt, ...) DSA_KUTIL_PRINTF(3, 4);
static int errf(char *err, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
    return -1;
}

static void release(struct dsa_trace *t)
{
    for (size_t i = 0; i < t->n; i++)
        free((char *)t->t[i].name);
    free(t->t);
    json_decref(t->meta);
}

/* one entry {"dtype", "shape", "data_offsets"}; data = the data section */
static int parse_entry(const char *name, json_t *v, const uint8_t *data, size_t dlen,
                       struct dsa_trace_tensor *out, char *err, size_t errlen)
{
    if (!json_is_object(v))
        return errf(err, errlen, "tensor '%s' is not an object", name);
    const char *dt = json_string_value(json_object_get(v, "dtype"));
    json_t *shape = json_object_get(v, "shape"), *offs = json_object_get(v, "data_offsets");
    size_t k, esize = 0;
    if (!dt)
        return errf(err, errlen, "tensor '%s' has no dtype", name);
    for (k = 0; k < sizeof dtypes / sizeof dtypes[0]; k++)
        if (!strcmp(dt, dtypes[k].name))
            break;
    if (k == sizeof dtypes / sizeof dtypes[0])
        return errf(err, errlen, "tensor '%s' has an unsupported dtype '%.16s'", name, dt);
    out->dtype = dtypes[k].dtype;
    esize = dtypes[k].size;
    if (!json_is_array(shape) || json_array_size(shape) > 8)
        return errf(err, errlen, "tensor '%s' has no shape of at most 8 dimensions", name);
    out->ndim = (int)json_array_size(shape);
    uint64_t count = 1;
    for (int d = 0; d < out->ndim; d++) {
        json_t *x = json_array_get(shape, (size_t)d);
        if (!json_is_integer(x) || json_integer_value(x) < 0)
            return errf(err, errlen, "tensor '%s' has a bad dimension", name);
        uint64_t e = (uint64_t)json_integer_value(x);
        if (e && count > UINT64_MAX / e)
            return errf(err, errlen, "tensor '%s' is too large", name);
        count *= e;
        out->shape[d] = (int64_t)e;
    }
    if (count > SIZE_MAX / esize)
        return errf(err, errlen, "tensor '%s' is too large", name);
    if (!json_is_array(offs) || json_array_size(offs) != 2 ||
        !json_is_integer(json_array_get(offs, 0)) || !json_is_integer(json_array_get(offs, 1)))
        return errf(err, errlen, "tensor '%s' has no data_offsets [begin, end]", name);
    json_int_t b = json_integer_value(json_array_get(offs, 0));
    json_int_t e = json_integer_value(json_array_get(offs, 1));
    if (b < 0 || e < b || (uint64_t)e > dlen)
        return errf(err, errlen, "tensor '%s' has data_offsets outside the file", name);
    if ((uint64_t)(e - b) != count * esize)
        return errf(err, errlen, "tensor '%s' holds %lld bytes, its shape needs %llu", name,
                    (long long)(e - b), (unsigned long long)(count * esize));
    out->data = data + b;
    out->nbytes = (size_t)(e - b);
    return 0;
}

/* index of the first non-finite element of a float tensor, or -1: a NaN or Inf in q, k or w
   makes every logit NaN, and a NaN selection "matches" a NaN golden with recall 1 */
static int64_t first_non_finite(const struct dsa_trace_tensor *t)
{
    const uint8_t *p = t->data;
    switch (t->dtype) {
    case DSA_TR_F32:
        for (size_t i = 0; i + 4 <= t->nbytes; i += 4) {
            uint32_t u = (uint32_t)p[i] | (uint32_t)p[i + 1] << 8 | (uint32_t)p[i + 2] << 16 |
                         (uint32_t)p[i + 3] << 24; /* safetensors is little-endian */
            if ((u & 0x7f800000u) == 0x7f800000u)
                return (int64_t)(i / 4);
        }
        return -1;
    case DSA_TR_BF16:
    case DSA_TR_F16: {
        uint16_t mask = t->dtype == DSA_TR_BF16 ? 0x7f80u : 0x7c00u; /* all-ones exponent */
        for (size_t i = 0; i + 2 <= t->nbytes; i += 2) {
            uint16_t u = (uint16_t)(p[i] | p[i + 1] << 8);
            if ((u & mask) == mask)
                return (int64_t)(i / 2);
        }
        return -1;
    }
    default:
        return -1;
    }
}

static int cmp_tensor_offset(const void *a, const void *b)
{
    const struct dsa_trace_tensor *x = *(const struct dsa_trace_tensor *const *)a;
    const struct dsa_trace_tensor *y = *(const struct dsa_trace_tensor *const *)b;
    return x->data < y->data ? -1 : x->data > y->data;
}

/*
 * What a trace must be beyond its syntax: float tensors hold finite numbers only, and no two
 * tensors share bytes (overlapping data_offsets would make one capture two tensors).
 */
static int validate(struct dsa_trace *t, char *err, size_t errlen)
{
    for (size_t i = 0; i < t->n; i++) {
        int64_t at = first_non_finite(&t->t[i]);
        if (at >= 0)
            return errf(err, errlen,
                        "tensor '%s' holds NaN or Inf (element %lld): no selection of such "
                        "scores means anything",
                        t->t[i].name, (long long)at);
    }
    const struct dsa_trace_tensor **by = dsa_kutil_calloc(t->n + 1, sizeof *by);
    for (size_t i = 0; i < t->n; i++)
        by[i] = &t->t[i];
    qsort(by, t->n, sizeof *by, cmp_tensor_offset);
    int rc = 0;
    for (size_t i = 1; i < t->n && !rc; i++)
        if ((const uint8_t *)by[i - 1]->data + by[i - 1]->nbytes > (const uint8_t *)by[i]->data)
            rc = errf(err, errlen, "tensors '%s' and '%s' overlap (data_offsets)", by[i - 1]->name,
                      by[i]->name);
    free(by);
    return rc;
}

int dsa_trace_parse(const uint8_t *buf, size_t len, dsa_trace **out, char *err, size_t errlen)
{
    *out = NULL;
    if (len < 8)
        return errf(err, errlen, "shorter than the 8-byte header length");
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = (hlen << 8) | buf[i];
    if (hlen > MAX_HEADER || hlen > len - 8)
        return errf(err, errlen, "header length %llu does not fit the file",
                    (unsigned long long)hlen);
    json_error_t je;
    /* a duplicated tensor name is two captures under one name: refuse, never pick one */
    json_t *h = json_loadb((const char *)buf + 8, (size_t)hlen, JSON_REJECT_DUPLICATES, &je);
    if (!json_is_object(h)) {
        json_decref(h);
        return errf(err, errlen, "header is not a JSON object: %s", h ? "other value" : je.text);
    }
    struct dsa_trace *t = dsa_kutil_calloc(1, sizeof *t);
    t->t = dsa_kutil_calloc(json_object_size(h) + 1, sizeof *t->t);
    const uint8_t *data = buf + 8 + hlen;
    size_t dlen = len - 8 - (size_t)hlen;
    const char *key;
    json_t *v;
    int rc = 0;
    json_object_foreach(h, key, v)
    {
        if (!strcmp(key, "__metadata__")) {
            const char *mk;
            json_t *mv;
            if (!json_is_object(v)) {
                rc = errf(err, errlen, "__metadata__ is not an object");
                break;
            }
            json_object_foreach(v, mk, mv)
            {
                if (!json_is_string(mv)) {
                    rc = errf(err, errlen, "__metadata__ value of '%.64s' is not a string", mk);
                    break;
                }
            }
            if (rc)
                break;
            t->meta = json_incref(v);
            continue;
        }
        if ((rc = parse_entry(key, v, data, dlen, &t->t[t->n], err, errlen)))
            break;
        t->t[t->n++].name = dsa_kutil_strdup(key);
    }
    json_decref(h);
    if (!rc)
        rc = validate(t, err, errlen);
    if (rc) {
        release(t);
        free(t);
        return -1;
    }
    *out = t;
    return 0;
}

int dsa_trace_open(const char *path, dsa_trace **out)
{
    *out = NULL;
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return dsa_kutil_errorf("cannot read trace '%s': %s", path, strerror(errno));
    struct stat st;
    void *map = MAP_FAILED;
    if (fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) { /* mmap of a directory: "No such device" */
        close(fd);
        return dsa_kutil_errorf("cannot read trace '%s': %s", path,
                                S_ISDIR(st.st_mode) ? strerror(EISDIR) : "not a regular file");
    }
    if (fstat(fd, &st) == 0 && st.st_size > 0)
        map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (map == MAP_FAILED)
        return dsa_kutil_errorf("cannot read trace '%s': %s", path,
                                st.st_size == 0 ? "empty file" : strerror(e));
    char err[256];
    if (dsa_trace_parse(map, (size_t)st.st_size, out, err, sizeof err)) {
        munmap(map, (size_t)st.st_size);
        return dsa_kutil_errorf("cannot read trace '%s': %s", path, err);
    }
    (*out)->map = map;
    (*out)->map_len = (size_t)st.st_size;
    return 0;
}

void dsa_trace_free(dsa_trace **pt)
{
    struct dsa_trace *t = *pt;
    if (!t)
        return;
    release(t);
    if (t->map)
        munmap(t->map, t->map_len);
    free(t);
    *pt = NULL;
}

const struct dsa_trace_tensor *dsa_trace_get(const dsa_trace *t, const char *name)
{
    for (size_t i = 0; i < t->n; i++)
        if (!strcmp(t->t[i].name, name))
            return &t->t[i];
    return NULL;
}

const char *dsa_trace_meta(const dsa_trace *t, const char *key)
{
    return t->meta ? json_string_value(json_object_get(t->meta, key)) : NULL;
}
