/*
 * Prometheus text exposition format (version 0.0.4) parser, for the spec-decode counters of
 * vLLM's /metrics (docs/gsm8k.md "MTP acceptance (`--mtp`)"). Accepted, line by line ('\n'; a '\r'
 * before it is tolerated):
 *   - empty lines and lines whose first non-blank character is '#' (HELP, TYPE, comments);
 *   - samples  name[{label="value",...[,]}] value [timestamp]
 *     name: [a-zA-Z_:][a-zA-Z0-9_:]*, or a quoted UTF-8 name as the first item inside the
 *     braces ({"my.metric",label="v"}, the newer exposition); label names [a-zA-Z_][a-zA-Z0-9_]*
 *     (or quoted); label values escape only \\ \" \n; value: a float as Go's ParseFloat reads
 *     it (1234.0, 1.234567e+06, NaN, +Inf, -Inf); timestamp: an integer (milliseconds).
 * Anything else is an error naming the line ("line 12: expected '=' after label name").
 * Names are compared exactly, as whole tokens: vllm:spec_decode_num_drafts_total does not
 * match vllm:spec_decode_num_drafts_created or ..._num_draft_tokens_total.
 *
 * Ownership: a dsa_prom owns its samples; pointers into it are borrowed until
 * dsa_prom_free(), which NULLs the caller's pointer.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_EVALS_PROMETHEUS_H
#define DSA_EVALS_PROMETHEUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dsa_prom_label {
    char *name;
    char *value; /* unescaped */
};

struct dsa_prom_sample {
    char *name;
    struct dsa_prom_label *labels;
    size_t n_labels;
    double value;
    bool has_timestamp;
    int64_t timestamp_ms;
};

typedef struct dsa_prom dsa_prom;

/* Parses a whole exposition. Returns 0 and *out, or -1 with a message in err (e.g.
   "line 3: bad value 'x'"). Never reads past text[len]; NUL bytes are an error. */
int dsa_prom_parse(const char *text, size_t len, dsa_prom **out, char *err, size_t err_size);
size_t dsa_prom_count(const dsa_prom *p);
const struct dsa_prom_sample *dsa_prom_sample(const dsa_prom *p, size_t i);
/* the value of a label of a sample, or NULL */
const char *dsa_prom_label(const struct dsa_prom_sample *s, const char *name);
/* Sums the samples named exactly `name` (over all label sets). Returns how many matched;
 *sum is 0 when none did. */
size_t dsa_prom_sum(const dsa_prom *p, const char *name, double *sum);
void dsa_prom_free(dsa_prom **p);

#endif
