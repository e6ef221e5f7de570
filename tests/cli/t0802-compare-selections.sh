#!/usr/bin/env bash
# compare counts bit-identical top-k selections (in-process runs record selection_sha256):
# per bin and overall, in the text output, the --json document and the markdown report.
. "$(dirname "$0")/lib.sh"

# two runs of 5 samples in two bins; samples 2 and 4 select other keys in the candidate
for side in base cand; do
    : >"$TMP/$side.jsonl"
    for i in 0 1 2 3 4; do
        bin="≤8K"; tok=8192
        [ "$i" -ge 3 ] && { bin="≤16K"; tok=16384; }
        h="h$i"
        [ "$side" = cand ] && { [ "$i" = 2 ] || [ "$i" = 4 ]; } && h="x$i"
        printf '{"id":"n8/r%04d","bin":"%s","bin_tokens":%d,"score":0.9%d,"selection_sha256":"%s"}\n' \
            "$i" "$bin" "$tok" "$i" "$h" >>"$TMP/$side.jsonl"
    done
done
expect_success "compare text" "$DSA_BIN" compare "$TMP/base.jsonl" "$TMP/cand.jsonl"
expect_eq "selections per bin" "$(grep selections "$TMP/out" | awk '{print $2}' | tr '\n' ' ')" "2/3 1/2 3/5 "
expect_success "compare --json" "$DSA_BIN" compare --json "$TMP/base.jsonl" "$TMP/cand.jsonl"
got=$("$DSA_PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(" ".join("%s:%d/%d" % (b["bin"], b["selections"]["identical"], b["selections"]["n"]) for b in d["bins"]))' "$TMP/out")
expect_eq "json selections" "$got" "≤8K:2/3 ≤16K:1/2 all:3/5"
expect_success "report md" "$DSA_BIN" report "$TMP/base.jsonl" "$TMP/cand.jsonl" --format md
expect_eq "md row" "$(grep '^| identical selections' "$TMP/out")" "| identical selections | 2/3 | 1/2 | 3/5 |"
# no hashes: no selections line
sed 's/,"selection_sha256":"[a-z0-9]*"//' "$TMP/base.jsonl" >"$TMP/plain.jsonl"
expect_success "compare without hashes" "$DSA_BIN" compare "$TMP/plain.jsonl" "$TMP/cand.jsonl"
expect_eq "no selections line" "$(grep -c selections "$TMP/out")" "0"
done_testing
