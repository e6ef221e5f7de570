/*
 * RULER's scoring (ruler.h; docs/ruler.md "Scoring"): postprocess_pred, then
 * string_match_all / string_match_part on lowercased text. Lowercasing is ICU's full case
 * mapping in the root locale, which is what Python's str.lower() does (SpecialCasing's
 * unconditional mappings, Final_Sigma), so "İ" becomes "i̇" and a word-final "Σ" "ς".
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdlib.h>
#include <string.h>
#include <unicode/ustring.h>
#include <unicode/utypes.h>

#include "evals/ruler_int.h"

/* Strips Python whitespace at both ends of s[0..*n) in place; returns the new start. */
static char *py_strip(char *s, size_t *n)
{
    size_t a = 0, b = *n;
    size_t sp;
    while (a < b && (sp = dsa_ruler_space_len((const unsigned char *)s + a, b - a)))
        a += sp;
    while (b > a) { /* the last character: step back over continuation bytes */
        size_t c = b - 1;
        while (c > a && ((unsigned char)s[c] & 0xc0) == 0x80)
            c--;
        if (dsa_ruler_space_len((const unsigned char *)s + c, b - c) != b - c)
            break;
        b = c;
    }
    *n = b - a;
    return s + a;
}

char *dsa_ruler_postprocess(const char *pred, size_t n, size_t *outlen)
{
    char *buf = dsa_xstrndup(pred ? pred : "", pred ? n : 0);
    size_t len = pred ? n : 0;
    char *p = py_strip(buf, &len);
    for (size_t i = 0; i < len; i++) /* re.sub(r"[\x00-\x1f]", "\n", ...) */
        if ((unsigned char)p[i] < 0x20)
            p[i] = '\n';
    p = py_strip(p, &len);
    memmove(buf, p, len);
    buf[len] = '\0';
    if (outlen)
        *outlen = len;
    return buf;
}

/* UTF-8 -> lowercased UTF-16 (invalid bytes -> U+FFFD). Returns a malloc'd array and its
   length in *out_len, or NULL when ICU fails. */
static UChar *lower16(const char *s, size_t n, int32_t *out_len)
{
    UErrorCode e = U_ZERO_ERROR;
    int32_t len16 = 0;
    if (n > (size_t)INT32_MAX / 2)
        return NULL;
    u_strFromUTF8WithSub(NULL, 0, &len16, s, (int32_t)n, 0xfffd, NULL, &e);
    if (e != U_BUFFER_OVERFLOW_ERROR && U_FAILURE(e))
        return NULL;
    UChar *u = dsa_xmalloc(((size_t)len16 + 1) * sizeof *u);
    e = U_ZERO_ERROR;
    u_strFromUTF8WithSub(u, len16 + 1, NULL, s, (int32_t)n, 0xfffd, NULL, &e);
    if (U_FAILURE(e)) {
        free(u);
        return NULL;
    }
    /* full lowercase mapping can grow the string (U+0130 -> 2 units); size first */
    e = U_ZERO_ERROR;
    int32_t lo_len = u_strToLower(NULL, 0, u, len16, "", &e);
    if (e != U_BUFFER_OVERFLOW_ERROR && U_FAILURE(e)) {
        free(u);
        return NULL;
    }
    UChar *lo = dsa_xmalloc(((size_t)lo_len + 1) * sizeof *lo);
    e = U_ZERO_ERROR;
    u_strToLower(lo, lo_len + 1, u, len16, "", &e);
    free(u);
    if (U_FAILURE(e)) {
        free(lo);
        return NULL;
    }
    *out_len = lo_len;
    return lo;
}

/* Python's `needle in hay` on code points; on UTF-16 code units the same answer, since
   a valid needle can only match at code point boundaries. */
static bool contains16(const UChar *hay, int32_t hn, const UChar *nd, int32_t nn)
{
    if (nn == 0)
        return true;
    for (int32_t i = 0; i + nn <= hn; i++)
        if (hay[i] == nd[0] && !memcmp(hay + i, nd, (size_t)nn * sizeof *nd))
            return true;
    return false;
}

double dsa_ruler_score(enum dsa_ruler_metric m, const char *pred, size_t n, const char *const *refs,
                       size_t nrefs)
{
    if (!nrefs)
        return 0.0;
    size_t plen;
    char *p = dsa_ruler_postprocess(pred, n, &plen);
    int32_t hn = 0;
    UChar *hay = lower16(p, plen, &hn);
    free(p);
    if (!hay)
        return 0.0;
    size_t hits = 0;
    for (size_t i = 0; i < nrefs; i++) {
        int32_t nn = 0;
        UChar *nd = lower16(refs[i], strlen(refs[i]), &nn);
        hits += nd && contains16(hay, hn, nd, nn);
        free(nd);
    }
    free(hay);
    if (m == DSA_RULER_MATCH_PART) /* RULER: max over references of the 0/1 match */
        return hits ? 1.0 : 0.0;
    return (double)hits / (double)nrefs;
}
