/*
 * Small definitions every module uses. No allocation, no state.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_UTIL_COMMON_H
#define DSA_UTIL_COMMON_H

#include <stddef.h>

#define DSA_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* printf-format checking for our message helpers */
#define DSA_PRINTF(fmt_idx, first_arg) __attribute__((format(printf, fmt_idx, first_arg)))

/*
 * DSA_UNITTEST marks a function that is file-local in spirit but that the unit tests call:
 * static in a build without tests, exported when the test suite is built (the same
 * pattern as curl's UNITTEST). Declare such functions in the module's header under
 * "#ifdef DSA_UNITTEST_BUILD".
 */
#ifdef DSA_UNITTEST_BUILD
#define DSA_UNITTEST
#else
#define DSA_UNITTEST static
#endif

#endif
