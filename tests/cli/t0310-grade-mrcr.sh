#!/usr/bin/env bash
# dsa-eval grade mrcr: output records, log formats, lone surrogates, request-error lines,
# and bad input (one line on stderr, exit 3; --keep-going: exit 1). See docs/grade.md.
# SPDX-License-Identifier: GPL-3.0-or-later
. "$(dirname "$0")/lib.sh"
LOGS="$DSA_DATA/mrcr"   # subsets of real Gemini grading logs (README.md there)

expect_success "grade --help" "$DSA_BIN" grade --help
grep -q '^    mrcr ' "$TMP/out" && ok "grade --help lists mrcr" || not_ok "grade --help lists mrcr"
expect_success "grade mrcr --help" "$DSA_BIN" grade mrcr --help
expect_code 2 "grade without an eval" "$DSA_BIN" grade
expect_code 2 "grade with an unknown eval" "$DSA_BIN" grade frob
expect_eq "unknown eval message" "$(cat "$TMP/err")" \
    "dsa-eval: 'frob' is not an eval of 'grade' (see 'dsa-eval grade --help')"
expect_code 2 "two input files" "$DSA_BIN" grade mrcr a b

# exact output bytes: sorted keys, %.17g reals, line numbers, identifying keys kept
printf '%s\n' '{"response":"PFXabcd","answer":"PFXbcde","prefix":"PFX","id":"r1"}' \
    '{"response":" PFXabcd","answer":"PFXabcd","prefix":"PFX","id":"r2"}' \
    '{"response":"PFXabcd","answer":"PFXabcd","random_string_to_prepend":"PFX","id":3}' \
    '{"model_response":"PFX\u00e9x","ground_truth":"PFX\u00e9y","input":{"role":"user","content":"Prepend PFX to the 2nd (1 indexed) poem about tides. Do not include any other text in your response."},"dataset_index":7,"needle_count":8}' \
    '{"response":null,"answer":"PFXa","prefix":"PFX"}' \
    '{"response":"PFXa\ud800b","answer":"PFXa\ud800c\udc00","prefix":"PFX"}' \
    '{"dataset_index":"668","needle_count":"8","error":"<html>504 Gateway Time-out</html>"}' \
    '{"response":"PFXabcdefghij","answer":"PFXabcdefghik","input":"Prepend PFX to the 1st (1 indexed) riddle about x."}' \
    >"$TMP/in.jsonl"
cat >"$TMP/want.jsonl" <<'WANT'
{"exact":false,"id":"r1","line":1,"prefix_hit":true,"score":0.75}
{"exact":false,"id":"r2","line":2,"prefix_hit":false,"score":0.0}
{"exact":true,"id":3,"line":3,"prefix_hit":true,"score":1.0}
{"dataset_index":7,"exact":false,"line":4,"needle_count":8,"prefix_hit":true,"score":0.5}
{"exact":false,"line":5,"prefix_hit":false,"score":0.0}
{"exact":false,"line":6,"prefix_hit":true,"score":0.5714285714285714}
{"dataset_index":"668","line":7,"needle_count":"8","skipped":"request error (no response)"}
{"exact":false,"line":8,"prefix_hit":true,"score":0.90000000000000002}
WANT
expect_success "grade mrcr FILE" "$DSA_BIN" grade mrcr "$TMP/in.jsonl"
expect_eq "records, byte for byte" "$(cat "$TMP/out")" "$(cat "$TMP/want.jsonl")"
grep -q "skipped 1 request-error lines" "$TMP/err" && ok "request error noted" ||
    not_ok "request error noted"
"$DSA_BIN" grade mrcr -q <"$TMP/in.jsonl" >"$TMP/out2" 2>"$TMP/err2"
expect_eq "stdin and -q" "$(cat "$TMP/out2")$(cat "$TMP/err2")" "$(cat "$TMP/want.jsonl")"

# bad input: exactly one line on stderr, exit 3, records before the bad line are written
bad_case() { # TITLE CONTENT WANT_STDERR [WANT_STDOUT_LINES]
    printf '%b' "$2" >"$TMP/bad.jsonl"
    expect_code 3 "$1: exit 3" "$DSA_BIN" grade mrcr "$TMP/bad.jsonl"
    expect_eq "$1: message" "$(cat "$TMP/err")" "$3"
    expect_eq "$1: records before it kept" "$(wc -l <"$TMP/out")" "${4:-0}"
}
GOOD='{"response":"PFXa","answer":"PFXa","prefix":"PFX"}\n'
bad_case "truncated JSON" "$GOOD"'{"response":"PFXa","answer":"PF' \
    "dsa-eval: cannot parse line 2 of '$TMP/bad.jsonl': premature end of input near '\"PF'" 1
bad_case "not an object" '[1,2]\n' \
    "dsa-eval: cannot parse line 1 of '$TMP/bad.jsonl': expected a JSON object"
bad_case "empty line" "$GOOD\n$GOOD" \
    "dsa-eval: cannot parse line 2 of '$TMP/bad.jsonl': empty line" 1
bad_case "answer not a string" '{"response":"PFXa","answer":5,"prefix":"PFX"}\n' \
    "dsa-eval: line 1 of '$TMP/bad.jsonl': \"answer\" must be a string"
bad_case "response not a string" "$GOOD$GOOD"'{"response":["x"],"answer":"a","prefix":"P"}\n' \
    "dsa-eval: line 3 of '$TMP/bad.jsonl': \"response\" must be a string" 2
bad_case "prefix not a string" '{"response":"a","answer":"a","prefix":1}\n' \
    "dsa-eval: line 1 of '$TMP/bad.jsonl': \"prefix\" must be a string"
bad_case "missing prefix" '{"response":"PFXa","answer":"PFXa"}\n' \
    "dsa-eval: line 1 of '$TMP/bad.jsonl': missing \"prefix\" (or \"random_string_to_prepend\", or \"input\" holding the question)"
bad_case "no prefix in the question" '{"response":"a","answer":"a","input":"Write a poem"}\n' \
    "dsa-eval: line 1 of '$TMP/bad.jsonl': no prefix: \"input\" holds no question \"Prepend <prefix> to the ...\""
bad_case "missing answer" '{"response":"PFXa","prefix":"PFX"}\n' \
    "dsa-eval: line 1 of '$TMP/bad.jsonl': missing \"answer\" (or \"ground_truth\")"
bad_case "missing response" '{"answer":"PFXa","prefix":"PFX"}\n' \
    "dsa-eval: line 1 of '$TMP/bad.jsonl': missing \"response\" (or \"model_response\")"
bad_case "invalid UTF-8" '{"response":"PFX\xff","answer":"PFXa","prefix":"PFX"}\n' \
    "dsa-eval: cannot parse line 1 of '$TMP/bad.jsonl': unable to decode byte 0xff near '\"PFX'"
bad_case "UTF-8 encoded surrogate" '{"response":"PFX\xed\xa0\x80","answer":"PFXa","prefix":"PFX"}\n' \
    "dsa-eval: cannot parse line 1 of '$TMP/bad.jsonl': unable to decode byte 0xed near '\"PFX'"
bad_case "duplicate key" '{"response":"PFXa","response":"PFXb","answer":"PFXa","prefix":"PFX"}\n' \
    "dsa-eval: cannot parse line 1 of '$TMP/bad.jsonl': duplicate object key near '\"response\"'"
bad_case "empty file" '' "dsa-eval: no input lines in '$TMP/bad.jsonl'"
expect_code 3 "missing file" "$DSA_BIN" grade mrcr "$TMP/nonexistent.jsonl"
expect_eq "missing file message" "$(cat "$TMP/err")" \
    "dsa-eval: cannot open '$TMP/nonexistent.jsonl': No such file or directory"

# --keep-going: every bad line reported, every good line graded, exit 1
printf '%b' "$GOOD"'{"response":1}\n'"$GOOD"'{oops\n'"$GOOD" >"$TMP/mixed.jsonl"
expect_code 1 "--keep-going exits 1" "$DSA_BIN" grade mrcr --keep-going "$TMP/mixed.jsonl"
expect_eq "--keep-going grades the good lines" "$(grep -o '"line":[0-9]*' "$TMP/out" | tr '\n' ' ')" \
    '"line":1 "line":3 "line":5 '
expect_eq "--keep-going reports each bad line" "$(grep -c '^dsa-eval: .*line [24] of' "$TMP/err")" 2
grep -q "^dsa-eval: 2 bad lines in" "$TMP/err" && ok "--keep-going summary" || not_ok "--keep-going summary"

# the real logs: the pro logs reproduce the logged score on every graded row (98)
require_python
{
    for f in pro_8needle pro_2needle flash_2needle; do
        expect_success "grade mrcr gemini_3_$f" "$DSA_BIN" grade mrcr \
            "$LOGS/evaluation_log_gemini_3_$f.jsonl"
        cp "$TMP/out" "$TMP/$f.out"
    done
    expect_eq "pro 8-needle: 80 records" "$(wc -l <"$TMP/pro_8needle.out")" 80
    expect_eq "pro 8-needle: 7 request errors skipped" \
        "$(grep -c '"skipped"' "$TMP/pro_8needle.out")" 7
    expect_eq "flash 2-needle: 2 request errors skipped" \
        "$(grep -c '"skipped"' "$TMP/flash_2needle.out")" 2
    {
        cmp_py='import json, sys
logs, outs = sys.argv[1::2], sys.argv[2::2]
same = differ = 0
for lf, of in zip(logs, outs):
    rows = [json.loads(l) for l in open(lf)]
    for l in open(of):
        o = json.loads(l)
        if "score" not in o:
            continue
        if o["score"] == float(rows[o["line"] - 1]["score"]) and o["dataset_index"] == rows[o["line"] - 1]["dataset_index"]:
            same += 1
        else:
            differ += 1
print(same, differ)'
        expect_eq "pro logs: 98 scores equal the logged ones, 0 differ" \
            "$("$DSA_PYTHON" -c "$cmp_py" "$LOGS/evaluation_log_gemini_3_pro_8needle.jsonl" \
                "$TMP/pro_8needle.out" "$LOGS/evaluation_log_gemini_3_pro_2needle.jsonl" \
                "$TMP/pro_2needle.out")" "98 0"
        expect_eq "flash 2-needle: 4 scores differ (graded after strip())" \
            "$("$DSA_PYTHON" -c "$cmp_py" "$LOGS/evaluation_log_gemini_3_flash_2needle.jsonl" \
                "$TMP/flash_2needle.out")" "65 4"
    }
}
done_testing
