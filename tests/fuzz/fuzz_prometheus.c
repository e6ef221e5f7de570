/* Fuzz target: the Prometheus exposition parser and the spec-decode counter reader
 * (evals/prometheus.c, evals/mtp.c) on arbitrary /metrics bodies.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "evals/mtp.h"
#include "evals/prometheus.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a copy of exactly `size` bytes, so any read past the end is caught by ASan */
    char *text = fuzz_copy(data, size);
    if (!text)
        return 0;
    dsa_prom *p = NULL;
    char err[256];
    if (dsa_prom_parse(text, size, &p, err, sizeof err) == 0) {
        struct dsa_mtp_counters c;
        double sum;
        dsa_prom_sum(p, DSA_MTP_DRAFTS, &sum);
        for (size_t i = 0; i < dsa_prom_count(p); i++)
            (void)dsa_prom_label(dsa_prom_sample(p, i), "position");
        if (dsa_mtp_counters_from_prom(p, &c, err, sizeof err) == 0) {
            struct dsa_mtp_result r;
            (void)dsa_mtp_delta(&c, &c, &r, err, sizeof err);
        }
        dsa_prom_free(&p);
    }
    free(text);
    return 0;
}
