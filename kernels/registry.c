/*
 * The built-in implementations and the plugin loader (plugin.h).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/plugin.h"
#include "kernels/kutil.h"

#ifdef DSA_HAVE_CUDA
/* kernels/cuda/api.cu: the CUDA vtable, or NULL when no device is usable */
const struct dsa_kernels_api *dsa_cuda_api(void);
#endif

const struct dsa_kernels_api *dsa_kernels_cuda(void)
{
#ifdef DSA_HAVE_CUDA
    return dsa_cuda_api();
#else
    return NULL;
#endif
}

#ifndef DSA_HAVE_CUDA
int dsa_cuda_time_calls(int (*fn)(void *ctx), void *ctx, int n, float *ms)
{
    (void)fn;
    (void)ctx;
    (void)n;
    (void)ms;
    return -1;
}

size_t dsa_cuda_l2_bytes(void)
{
    return 0;
}
#endif

const struct dsa_kernels_api *dsa_kernels_pick(const char *device)
{
    if (!device || !strcmp(device, "auto")) {
        const struct dsa_kernels_api *c = dsa_kernels_cuda();
        return c ? c : dsa_kernels_cpu();
    }
    if (!strcmp(device, "cpu"))
        return dsa_kernels_cpu();
    if (!strcmp(device, "cuda")) {
        const struct dsa_kernels_api *c = dsa_kernels_cuda();
        if (!c) {
#ifdef DSA_HAVE_CUDA
            dsa_kutil_errorf("no usable CUDA device for '--device cuda'");
#else
            dsa_kutil_errorf("this build has no CUDA kernels ('--device cuda'); rebuild with nvcc");
#endif
        }
        return c;
    }
    dsa_kutil_errorf("unknown device '%s' (use cuda or cpu)", device);
    return NULL;
}

static void *handles[8];
static int nhandles;

const struct dsa_kernels_api *dsa_kernels_load(const char *path)
{
    if (nhandles == (int)(sizeof handles / sizeof handles[0])) {
        dsa_kutil_errorf("too many kernel libraries loaded ('%s')", path);
        return NULL;
    }
    /* RTLD_LOCAL: the plugin's own symbols (it may carry its own copy of dsa_cpu_*) never
       interpose on ours, nor ours on its */
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        dsa_kutil_errorf("cannot load kernels '%s': %s", path, e ? e : "unknown error");
        return NULL;
    }
    dsa_kernels_get_api_fn get;
    void *sym = dlsym(h, DSA_KERNELS_SYMBOL);
    memcpy(&get, &sym, sizeof get); /* object to function pointer, as POSIX allows */
    const struct dsa_kernels_api *api = sym ? get() : NULL;
    const char *why = NULL;
    if (!sym)
        why = "no symbol '" DSA_KERNELS_SYMBOL "'";
    else if (!api)
        why = DSA_KERNELS_SYMBOL "() returned NULL";
    else if (api->abi_version != DSA_KERNELS_ABI_VERSION)
        why = "ABI version differs from this dsa-eval's";
    else if (api->struct_size < DSA_KERNELS_API_SIZE_V1)
        why = "its API struct is older than this dsa-eval's";
    else if (!api->name || !api->device || !api->alloc || !api->free || !api->upload ||
             !api->download || !api->memset_ || !api->sync || !api->supported || !api->k_prep ||
             !api->q_prep || !api->logits_decode || !api->logits_prefill || !api->topk)
        why = "a required slot is NULL";
    else if (api->init && api->init() != 0)
        why = "its init() failed";
    if (why) {
        dsa_kutil_errorf("cannot use kernels '%s': %s", path, why);
        dlclose(h);
        return NULL;
    }
    handles[nhandles++] = h;
    return api;
}

void dsa_kernels_unload(void)
{
    while (nhandles > 0)
        dlclose(handles[--nhandles]);
}
