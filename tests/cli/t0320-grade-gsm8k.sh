#!/usr/bin/env bash
# dsa-eval grade gsm8k: extraction records byte for byte, gold scoring, bad input, exit codes.
. "$(dirname "$0")/lib.sh"

cat >"$TMP/in.jsonl" <<'JSONL'
{"dsa_eval_run":1,"eval":"gsm8k"}
{"id":"q0000","output":"Janet sells 9 eggs at $2 = $18 every day. The answer is 18.","gold":"18"}
{"output":"The answer is 18\n\nQ: next","gold":18}
{"output":"The answer is $1,250.50.","gold":"She pays 1,250.50.\n#### 1250.50"}
{"output":"The answer is 007."}
{"id":"q0004","status":"failed","score":null,"error":"timeout"}
JSONL

run() { "$DSA_BIN" grade gsm8k "$@" <"$TMP/in.jsonl"; }

expect_success "cot-strict" run --extract cot-strict
expect_eq "cot-strict records" "$(cat "$TMP/out")" '{"correct":true,"id":"q0000","line":2,"pred":"18"}
{"correct":false,"line":3,"pred":"1"}
{"correct":false,"line":4,"pred":"[invalid]"}
{"line":5,"pred":"007"}
{"id":"q0004","line":6,"skipped":"no output (the request failed)"}'
grep -q '^dsa-eval: 4 graded (cot-strict): 1/3 correct (0.3333), some lines skipped' "$TMP/err" && ok "cot-strict note" || not_ok "cot-strict note"

expect_success "flexible" run --extract flexible -q
expect_eq "flexible preds" "$(sed -n 's/.*"pred":"\([^"]*\)".*/\1/p' "$TMP/out" | tr '\n' ' ')" '18. 18 $1,250.50. 007. '
expect_eq "flexible scores with lm-eval normalisation" "$(grep -c '"correct":true' "$TMP/out")" 3
expect_eq "-q silences the note" "$(cat "$TMP/err")" ""

expect_success "vllm is the default" run
expect_eq "vllm preds" "$(sed -n 's/.*"pred":"\([^"]*\)".*/\1/p' "$TMP/out" | tr '\n' ' ')" '18 18 50 [invalid] '

expect_success "gsm8k-strict from a file argument" "$DSA_BIN" grade gsm8k --extract gsm8k-strict "$TMP/in.jsonl"
expect_eq "gsm8k-strict preds" "$(grep -c '"pred":"\[invalid\]"' "$TMP/out")" 4

printf '{"output":"#### 5","gold":"5"}\nnot json\n{"output":"#### 6"}\n' >"$TMP/bad.jsonl"
expect_code 3 "a bad line stops the run" "$DSA_BIN" grade gsm8k "$TMP/bad.jsonl"
grep -q "cannot parse line 2 of '.*bad.jsonl'" "$TMP/err" && ok "bad line message" || not_ok "bad line message"
expect_eq "lines before the bad one are written" "$(wc -l <"$TMP/out" | tr -d ' ')" 1
expect_success "--keep-going" "$DSA_BIN" grade gsm8k --keep-going "$TMP/bad.jsonl"
expect_eq "--keep-going records" "$(sed -n 2p "$TMP/out")" '{"line":2,"skipped":"not a JSON object"}'
printf '{"output":3}\n' >"$TMP/bad2.jsonl"
expect_code 3 "output must be a string" "$DSA_BIN" grade gsm8k "$TMP/bad2.jsonl"
grep -q 'line 1 of .*"output" must be a string' "$TMP/err" && ok "type message" || not_ok "type message"
expect_code 2 "unknown extraction" "$DSA_BIN" grade gsm8k --extract posix "$TMP/in.jsonl"
expect_code 3 "missing file" "$DSA_BIN" grade gsm8k /nonexistent.jsonl
expect_success "grade gsm8k --help" "$DSA_BIN" grade gsm8k --help
grep -q '^usage: dsa-eval grade gsm8k' "$TMP/out" && ok "usage line" || not_ok "usage line"
"$DSA_BIN" grade --help | grep -q '^    gsm8k ' && ok "grade lists gsm8k" || not_ok "grade lists gsm8k"
done_testing
