#!/usr/bin/env bash
# dsa-eval gsm8k --backend inprocess --mtp N: batched MTP verify rows select exactly what the
# same rows select one at a time (CPU reference); records, resume, bad options.
. "$(dirname "$0")/lib.sh"
DATA="$DSA_DATA/gsm8k"
G=("$DSA_BIN" gsm8k --backend inprocess --device cpu --data "$DATA")
if [ ! -f "$DATA/test.jsonl" ]; then echo "Bail out! no GSM8K data at $DATA"; exit 1; fi

expect_success "mtp 3, 3 questions" "${G[@]}" --mtp 3 --limit 3 --out "$TMP/g"
grep -q '^identical selections: 3/3 questions; bit-identical logits: 3/3$' "$TMP/out" && ok "verdict line" || not_ok "verdict line"
F="$TMP/g/run-001.jsonl"
expect_eq "records" "$(tail -n +2 "$F" | wc -l | tr -d ' ')" "3"
for key in '"id":"q0000"' '"identical":true' '"logits_identical":true' '"mtp":3' '"score":1.0' '"selection_sha256":"' '"topk":512'; do
    grep -q "$key" "$F" && ok "records have $key" || not_ok "records have $key"
done
head -n 1 "$F" | grep -q '"eval":"gsm8k"' && ok "header eval" || not_ok "header eval"
expect_success "mtp 1 (next_n 2)" "${G[@]}" --mtp 1 --limit 2 --variant weights=bf16 --out "$TMP/g1"
grep -q '"mtp":1' "$TMP/g1/run-001.jsonl" && ok "mtp 1 recorded" || not_ok "mtp 1 recorded"
expect_success "resume" "${G[@]}" --mtp 3 --limit 3 --out "$TMP/g"
expect_eq "resume adds nothing" "$(tail -n +2 "$F" | wc -l | tr -d ' ')" "3"
grep -qx "dsa-eval: resuming: 3 of 3 samples already done in '$F': nothing left to do" "$TMP/err" \
    && ok "resume says so" || { not_ok "resume says so"; sed 's/^/#   /' "$TMP/err"; }
expect_success "in-process --json" "${G[@]}" --mtp 3 --limit 3 --out "$TMP/g" --json
"$DSA_PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["dsa_eval_summary"] == 1 and d["rows"][0]["pooled"]["scored"] == 3, d' "$TMP/out" \
    && ok "in-process gsm8k --json prints the summary document" || { not_ok "in-process gsm8k --json prints the summary document"; head -5 "$TMP/out" | sed 's/^/#   /'; }
expect_code 2 "mtp 5 is too many" "${G[@]}" --mtp 5 --limit 1 --out "$TMP/x"
expect_code 2 "no --out" "${G[@]}" --mtp 3 --limit 1
done_testing
