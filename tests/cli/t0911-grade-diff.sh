#!/bin/bash
# Differential fuzzing of the MRCR grader against CPython difflib: the fuzz target
# fuzz_grade_diff grades its corpus and seeded mutations (prefix/response/answer triples,
# any UTF-8) and writes each case; CPython grades every distinct case again, bit for bit.
# SPDX-License-Identifier: GPL-3.0-or-later
. "$DSA_SRC/tests/cli/lib.sh"
require_python
FZ=$DSA_BUILD/tests/fuzz_grade_diff
[ -x "$FZ" ] || { echo "Bail out! $FZ was not built"; exit 1; }
DSA_FUZZ_DIFF_OUT=$TMP/cases.jsonl expect_success "fuzz_grade_diff: corpus and 20000 mutations" \
    "$FZ" --iterations 20000 "$DSA_SRC/tests/fuzz/corpus/fuzz_grade_diff"
expect_success "every case equals CPython difflib" "$DSA_PYTHON" \
    "$DSA_SRC/tests/fuzz/grade_diff.py" "$TMP/cases.jsonl"
sed 's/^/# /' "$TMP/out"
n=$(sed -n 's/^[0-9]* cases, \([0-9]*\) distinct.*/\1/p' "$TMP/out")
[ "${n:-0}" -ge 5000 ] && ok "at least 5000 distinct cases ($n)" || not_ok "at least 5000 distinct cases (${n:-0})"
done_testing
