/*
 * dsa-eval version: the tool version, the git commit it was built from, and the versions of
 * the libraries it was built against (these go into every run header too).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <curl/curl.h>
#include <gsl/gsl_version.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/opensslv.h>
#include <pcre2.h>
#include <stdio.h>

#include "commands.h"
#include "util/exitcode.h"
#include "util/opt.h"
#include "version.h"

int cmd_version(int argc, char **argv)
{
    static const char *const usage[] = {"dsa-eval version", NULL};
    struct dsa_option opts[] = {DSA_OPT_END()};
    int n = dsa_opt_parse(&argc, argv, opts, usage);
    if (n < 0)
        return dsa_opt_exit(n);
    if (n > 0) {
        fprintf(stderr, "usage: %s\n", usage[0]);
        return DSA_EXIT_USAGE;
    }
    printf("dsa-eval %s (git %s)\n", DSA_VERSION, DSA_GIT_HASH);
    printf("libcurl %s, jansson %s, pcre2 %d.%d, gsl %s, %s\n",
           curl_version_info(CURLVERSION_NOW)->version, jansson_version_str(), PCRE2_MAJOR,
           PCRE2_MINOR, GSL_VERSION, OpenSSL_version(OPENSSL_VERSION));
#ifdef DSA_HAVE_CUDA
    printf("cuda kernels: built for sm_90a\n");
#else
    printf("cuda kernels: not built (CPU reference only)\n");
#endif
    return DSA_EXIT_OK;
}
