/*
 * Numbers printed with the precision their own scale needs. A fixed "%.3f" turns a 1e-4
 * recall change into "-0.000 [-0.000, +0.000]", which reads as "no effect"; these pick the
 * decimals from the quantity's scale (a CI's width, an SE's size) so that at least two
 * significant digits show, never fewer decimals than the usual 3 (4 for an SE), at most 12.
 * A difference that is exactly zero everywhere prints as "identical", not as a rounded 0.
 *
 * Ownership: everything appends to a caller's dsa_buf; nothing is allocated for the caller.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_UTIL_FMT_H
#define DSA_UTIL_FMT_H

#include <stdbool.h>

#include "util/buf.h"

/* Decimals that show `scale` (> 0) with `sig` significant digits, clamped to
   [min_dec, 12]; min_dec for a scale that is 0, NaN or infinite. */
int dsa_fmt_decimals(double scale, int sig, int min_dec);

/* Decimals for a difference, its CI and the means beside it: two significant digits of the CI
   width (of |d| when the CI has no width), at least 3. */
int dsa_fmt_diff_decimals(double d, double lo, double hi);

/* "-0.063 [-0.087, -0.039]" with `dec` decimals; "n/a" parts for NaN ends; has_ci false
   prints the difference alone. */
void dsa_fmt_diff_ci(struct dsa_buf *b, double d, bool has_ci, double lo, double hi, int dec);

/* "0.0125" / "0.000012" / "0": x with two significant digits, at least min_dec decimals */
void dsa_fmt_sig(struct dsa_buf *b, double x, int min_dec);

#endif
