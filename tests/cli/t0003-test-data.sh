#!/usr/bin/env bash
# The third-party test data is what its README says: every data file of tests/data/gsm8k and
# tests/data/mrcr (and the trace fixtures of tests/data/traces, traces-glm, traces-ruler and
# traces-ruler-glm) is listed in the README.md beside it with its sha256, and the bytes match.
# SPDX-License-Identifier: GPL-3.0-or-later
. "$(dirname "$0")/lib.sh"

for dir in gsm8k mrcr traces traces-glm traces-ruler traces-ruler-glm; do
    readme="$DSA_DATA/$dir/README.md"
    [ -f "$readme" ] || { not_ok "$dir: README.md exists"; continue; }
    # table rows: | `file` | ... | `sha256` |
    listed=$(grep -E '^\| `[^`]+\.(jsonl|safetensors)` \|' "$readme" | sed -E 's/^\| `([^`]+)` \|.*`([0-9a-f]{64})` \|$/\1 \2/')
    [ -n "$listed" ] && ok "$dir: README lists files" || not_ok "$dir: README lists files"
    while read -r file sum; do
        got=$(sha256sum "$DSA_DATA/$dir/$file" 2>/dev/null | cut -d' ' -f1)
        expect_eq "$dir/$file: sha256 as its README says" "$got" "$sum"
    done <<<"$listed"
    for f in "$DSA_DATA/$dir"/*.jsonl "$DSA_DATA/$dir"/*.safetensors; do
        [ -e "$f" ] || continue
        name=$(basename "$f")
        grep -q "^$name " <<<"$listed" && ok "$dir/$name: listed with its sha256" ||
            not_ok "$dir/$name: listed with its sha256"
    done
done
# nothing in the repository reads or points outside it: no test, benchmark, script, document or
# comment names the design inputs the project was started from (the pattern is spelled in pieces
# so that this file does not match it; build trees and run outputs are not the repository)
pat="DSA_""SHARED|\\.\\./""shared|spec""s/|DES""IGN\\.md"
if grep -rlE --exclude-dir=.git --exclude-dir='build*' --exclude-dir=runs --exclude-dir=Testing \
    "$pat" "$DSA_SRC" >"$TMP/outside" 2>/dev/null; then
    not_ok "nothing in the repository points outside it"; sed 's/^/#   /' "$TMP/outside"
else
    ok "nothing in the repository points outside it"
fi
done_testing
