/*
 * Exit statuses of dsa-eval, documented in README.md ("Exit codes"). Scripts and CI jobs
 * depend on these numbers: never renumber, only add.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_UTIL_EXITCODE_H
#define DSA_UTIL_EXITCODE_H

enum dsa_exit {
    DSA_EXIT_OK = 0,           /* everything ran; no regression, no failed sample */
    DSA_EXIT_FAIL = 1,         /* evaluation finished, but with failed samples, a regression
                                  (--fail-if-worse), or differing outputs (compare) */
    DSA_EXIT_USAGE = 2,        /* bad command line */
    DSA_EXIT_DATA = 3,         /* bad input data: unparsable file, wrong types, checksum */
    DSA_EXIT_BACKEND = 4,      /* backend or network error: server unreachable, auth, CUDA */
    DSA_EXIT_IO = 5,           /* cannot write output (disk full, closed pipe, run file) */
    DSA_EXIT_MISMATCH = 6,     /* a run file's header does not match this command (resume) */
    DSA_EXIT_INTERNAL = 70,    /* a bug: an invariant did not hold */
    DSA_EXIT_INTERRUPTED = 130 /* SIGINT/SIGTERM: finished records are on disk, rerun resumes */
};

#endif
