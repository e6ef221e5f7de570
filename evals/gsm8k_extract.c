/* GSM8K answer extraction with PCRE2 and Python `re` semantics; see gsm8k_extract.h.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "evals/gsm8k_extract.h"

#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

/* The patterns exactly as the references spell them (Python raw strings). */
static const char *const extract_patterns[DSA_GSM8K_EXTRACT_N] = {
    [DSA_GSM8K_EXTRACT_COT_STRICT] = "The answer is (\\-?[0-9\\.\\,]+).",
    [DSA_GSM8K_EXTRACT_GSM8K_STRICT] = "#### (\\-?[0-9\\.\\,]+)",
    [DSA_GSM8K_EXTRACT_FLEXIBLE] = "(-?[$0-9.,]{2,})|(-?[0-9]+)",
    [DSA_GSM8K_EXTRACT_VLLM] = "\\d+",
};

static const char *const extract_names[DSA_GSM8K_EXTRACT_N] = {
    [DSA_GSM8K_EXTRACT_COT_STRICT] = "cot-strict",
    [DSA_GSM8K_EXTRACT_GSM8K_STRICT] = "gsm8k-strict",
    [DSA_GSM8K_EXTRACT_FLEXIBLE] = "flexible",
    [DSA_GSM8K_EXTRACT_VLLM] = "vllm",
};

/* lm-eval gsm8k exact_match regexes_to_ignore, applied in this order with re.sub */
static const char *const ignore_patterns[] = {",", "\\$", "(?s).*#### ", "\\.$"};
#define N_IGNORE (sizeof ignore_patterns / sizeof ignore_patterns[0])

struct dsa_gsm8k_extractor {
    pcre2_code *re[DSA_GSM8K_EXTRACT_N];
    pcre2_code *ignore[N_IGNORE];
    pcre2_match_data *md; /* sized for the largest pattern (3 pairs) */
};

const char *dsa_gsm8k_extract_name(enum dsa_gsm8k_extract_mode m)
{
    return (unsigned)m < DSA_GSM8K_EXTRACT_N ? extract_names[m] : "?";
}

int dsa_gsm8k_extract_parse(const char *name, enum dsa_gsm8k_extract_mode *out)
{
    for (int i = 0; i < DSA_GSM8K_EXTRACT_N; i++)
        if (!strcmp(name, extract_names[i])) {
            *out = (enum dsa_gsm8k_extract_mode)i;
            return 0;
        }
    return -1;
}

static pcre2_code *compile(const char *pat, uint32_t opts, pcre2_compile_context *cc)
{
    int err;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED, opts, &err, &off, cc);
    if (!re) {
        /* the patterns are constants: failing here is a build problem (PCRE2 without UTF) */
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        fprintf(stderr, "dsa-eval: internal error: cannot compile '%s': %s\n", pat, msg);
        abort();
    }
    return re;
}

dsa_gsm8k_extractor *dsa_gsm8k_extractor_new(void)
{
    dsa_gsm8k_extractor *x = dsa_xcalloc(1, sizeof *x);
    pcre2_compile_context *cc = pcre2_compile_context_create(NULL);
    /* Python: '.' excludes only '\n' and '$' looks only at a final '\n'. PCRE2's newline
       convention is a build-time default (it may be ANYCRLF), so fix it to LF. */
    pcre2_set_newline(cc, PCRE2_NEWLINE_LF);
    for (int i = 0; i < DSA_GSM8K_EXTRACT_N; i++) {
        /* Python's str \d is any Unicode decimal digit (category Nd) = PCRE2 UCP \d; model
           output is UTF-8, and invalid sequences simply never match */
        uint32_t opts =
            i == DSA_GSM8K_EXTRACT_VLLM ? PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF : 0;
        x->re[i] = compile(extract_patterns[i], opts, cc);
    }
    for (size_t i = 0; i < N_IGNORE; i++)
        x->ignore[i] = compile(ignore_patterns[i], 0, cc);
    pcre2_compile_context_free(cc);
    x->md = pcre2_match_data_create(4, NULL);
    return x;
}

void dsa_gsm8k_extractor_free(dsa_gsm8k_extractor **xp)
{
    dsa_gsm8k_extractor *x = *xp;
    if (!x)
        return;
    for (int i = 0; i < DSA_GSM8K_EXTRACT_N; i++)
        pcre2_code_free(x->re[i]);
    for (size_t i = 0; i < N_IGNORE; i++)
        pcre2_code_free(x->ignore[i]);
    pcre2_match_data_free(x->md);
    free(x);
    *xp = NULL;
}

/* A match's captured text, as Python's findall item becomes after the filter: one group ->
   that group; several groups -> the first non-empty one (start/end of the group). */
struct span {
    size_t so, eo;
    bool found;
};

/*
 * re.findall + pick: `last` selects the final match (group_select -1), else the first.
 * Matches are non-overlapping and scanned left to right, like Python; none of our
 * patterns can match the empty string, so the next search starts at the match end.
 */
static struct span find(dsa_gsm8k_extractor *x, pcre2_code *re, const char *s, size_t len,
                        bool last)
{
    struct span sp = {0, 0, false};
    size_t pos = 0;
    while (pos <= len) {
        int rc = pcre2_match(re, (PCRE2_SPTR)s, len, pos, 0, x->md, NULL);
        if (rc < 0)
            break; /* PCRE2_ERROR_NOMATCH, or a limit: Python would have found nothing more */
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(x->md);
        uint32_t ngroups = pcre2_get_ovector_count(x->md);
        size_t so = ov[0], eo = ov[1];
        uint32_t ncap = 0;
        pcre2_pattern_info(re, PCRE2_INFO_CAPTURECOUNT, &ncap);
        if (ncap) {
            so = eo = 0;
            for (uint32_t g = 1; g < (uint32_t)rc && g < ngroups; g++)
                if (ov[2 * g] != PCRE2_UNSET && ov[2 * g + 1] > ov[2 * g]) {
                    so = ov[2 * g];
                    eo = ov[2 * g + 1];
                    break;
                }
        }
        sp.so = so;
        sp.eo = eo;
        sp.found = true;
        if (!last)
            break;
        pos = ov[1] > ov[0] ? ov[1] : ov[1] + 1;
    }
    return sp;
}

static bool py_space(char c)
{
    /* str.strip() also removes Unicode spaces, but captured groups here are ASCII */
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

static char *vllm_rule(dsa_gsm8k_extractor *x, const char *text, size_t len)
{
    /* answer_str.replace(",", ""): ',' never occurs inside a UTF-8 multi-byte sequence */
    char *s = dsa_xmalloc(len + 1);
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        if (text[i] != ',')
            s[n++] = text[i];
    s[n] = '\0';
    char *ret = NULL;
    struct span sp = find(x, x->re[DSA_GSM8K_EXTRACT_VLLM], s, n, true);
    if (!sp.found) {
        ret = dsa_xstrdup(DSA_GSM8K_INVALID);
        goto cleanup;
    }
    const char *d = s + sp.so;
    size_t dn = sp.eo - sp.so;
    bool zeros = true;
    for (size_t i = 0; i < dn; i++) {
        /* ast.literal_eval only tokenizes ASCII digits: '١٢' or '１２' is a SyntaxError */
        if (d[i] < '0' || d[i] > '9') {
            ret = dsa_xstrdup(DSA_GSM8K_INVALID);
            goto cleanup;
        }
        if (d[i] != '0')
            zeros = false;
    }
    if (dn > 1 && d[0] == '0')
        /* Python 3 rejects leading zeros in decimal literals ("007"), except all zeros */
        ret = dsa_xstrdup(zeros ? "0" : DSA_GSM8K_INVALID);
    else
        ret = dsa_xstrndup(d, dn);
cleanup:
    free(s);
    return ret;
}

char *dsa_gsm8k_extract(dsa_gsm8k_extractor *x, enum dsa_gsm8k_extract_mode m, const char *text,
                        size_t len)
{
    if (m == DSA_GSM8K_EXTRACT_VLLM)
        return vllm_rule(x, text, len);
    struct span sp = find(x, x->re[m], text, len, m == DSA_GSM8K_EXTRACT_FLEXIBLE);
    if (!sp.found)
        return dsa_xstrdup(DSA_GSM8K_INVALID);
    while (sp.so < sp.eo && py_space(text[sp.so]))
        sp.so++;
    while (sp.eo > sp.so && py_space(text[sp.eo - 1]))
        sp.eo--;
    return dsa_xstrndup(text + sp.so, sp.eo - sp.so);
}

char *dsa_gsm8k_normalize(dsa_gsm8k_extractor *x, const char *s, size_t len)
{
    char *cur = dsa_xstrndup(s, len);
    size_t cur_len = len;
    for (size_t i = 0; i < N_IGNORE; i++) {
        /* deleting never lengthens the text: len + 1 bytes always suffice */
        PCRE2_SIZE out_len = cur_len + 1;
        char *out = dsa_xmalloc(out_len);
        int rc =
            pcre2_substitute(x->ignore[i], (PCRE2_SPTR)cur, cur_len, 0, PCRE2_SUBSTITUTE_GLOBAL,
                             x->md, NULL, (PCRE2_SPTR) "", 0, (PCRE2_UCHAR *)out, &out_len);
        if (rc < 0) {
            /* only a match limit could fail here; keep the text as it is (Python would not
               fail, but such input is pathological and can only be scored wrong) */
            free(out);
            continue;
        }
        free(cur);
        cur = out;
        cur_len = out_len;
    }
    for (size_t i = 0; i < cur_len; i++)
        if (cur[i] >= 'A' && cur[i] <= 'Z')
            cur[i] = (char)(cur[i] - 'A' + 'a');
    return cur;
}

bool dsa_gsm8k_is_correct(dsa_gsm8k_extractor *x, enum dsa_gsm8k_extract_mode m, const char *pred,
                          const char *gold, size_t gold_len)
{
    if (!strcmp(pred, DSA_GSM8K_INVALID))
        return false;
    bool eq;
    if (m == DSA_GSM8K_EXTRACT_VLLM) {
        char *g = vllm_rule(x, gold, gold_len);
        eq = !strcmp(pred, g);
        free(g);
    } else {
        char *p = dsa_gsm8k_normalize(x, pred, strlen(pred));
        char *g = dsa_gsm8k_normalize(x, gold, gold_len);
        eq = !strcmp(p, g);
        free(p);
        free(g);
    }
    return eq;
}
