/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "util/fmt.h"

#include <math.h>

int dsa_fmt_decimals(double scale, int sig, int min_dec)
{
    scale = fabs(scale);
    if (!(scale > 0) || !isfinite(scale))
        return min_dec;
    /* the position of the leading digit, then sig - 1 digits after it */
    int dec = sig - 1 - (int)floor(log10(scale));
    return dec < min_dec ? min_dec : dec > 12 ? 12 : dec;
}

int dsa_fmt_diff_decimals(double d, double lo, double hi)
{
    /* a width at the level of rounding noise (every paired difference equal) is no width */
    double w = hi - lo, scale = fabs(d) > 1 ? fabs(d) : 1;
    return dsa_fmt_decimals(isfinite(w) && w > 1e-12 * scale ? w : d, 2, 3);
}

static void add_signed(struct dsa_buf *b, double x, int dec)
{
    if (isnan(x))
        dsa_buf_adds(b, "n/a");
    else
        dsa_buf_addf(b, "%+.*f", dec, x);
}

void dsa_fmt_diff_ci(struct dsa_buf *b, double d, bool has_ci, double lo, double hi, int dec)
{
    add_signed(b, d, dec);
    if (!has_ci)
        return;
    dsa_buf_adds(b, " [");
    add_signed(b, lo, dec);
    dsa_buf_adds(b, ", ");
    add_signed(b, hi, dec);
    dsa_buf_adds(b, "]");
}

void dsa_fmt_sig(struct dsa_buf *b, double x, int min_dec)
{
    if (isnan(x))
        dsa_buf_adds(b, "n/a");
    else if (fabs(x) < 1e-12) /* 0, or rounding noise of a sum that is 0 */
        dsa_buf_adds(b, "0");
    else
        dsa_buf_addf(b, "%.*f", dsa_fmt_decimals(x, 2, min_dec), x);
}
