/*
 * The few helpers kernels/ needs from a host program, kept here so that kernels/ builds alone
 * (it includes nothing from src/): allocation that cannot fail, the splitmix64 mixer of the
 * random inputs and the proxy model, and one-line messages.
 *
 * Messages: "dsa-eval: <msg>" (errors) and "dsa-eval: warning: <msg>" on stderr, the same
 * lines as src/util/msg.h writes. A host that draws lines in place (the progress meter)
 * installs a sink with dsa_kutil_set_sink() so that kernel messages go through its own
 * message path; the sink receives the formatted message without the prefix.
 * Ownership: dsa_kutil_malloc/calloc/strdup return memory the caller frees with free().
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_KERNELS_KUTIL_H
#define DSA_KERNELS_KUTIL_H

#include <stddef.h>
#include <stdint.h>

#define DSA_KUTIL_PRINTF(fmt_idx, first_arg) __attribute__((format(printf, fmt_idx, first_arg)))

enum dsa_kutil_level { DSA_KUTIL_ERROR = 0, DSA_KUTIL_WARNING = 1 };

/* NULL restores the default (write to stderr with the prefix) */
void dsa_kutil_set_sink(void (*sink)(int level, const char *msg));

/* "dsa-eval: <msg>". Returns -1 so callers can write `return dsa_kutil_errorf(...)`. */
int dsa_kutil_errorf(const char *fmt, ...) DSA_KUTIL_PRINTF(1, 2);
/* "dsa-eval: warning: <msg>" */
void dsa_kutil_warnf(const char *fmt, ...) DSA_KUTIL_PRINTF(1, 2);

/* malloc/calloc/strdup that print one line and abort when memory is exhausted */
void *dsa_kutil_malloc(size_t n);
void *dsa_kutil_calloc(size_t n, size_t size);
char *dsa_kutil_strdup(const char *s);

/* splitmix64 (Steele, Lea, Flood 2014): the same function as src/util/hash.h's */
static inline uint64_t dsa_kutil_splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

#endif
