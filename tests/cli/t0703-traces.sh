#!/usr/bin/env bash
# Traces captured with the upstream model code (tests/data/traces: transformers' DeepseekV32 on an
# H200): dsa-eval's fp64 golden selection reproduces the model's own top-2048 of every query row;
# the other RoPE layout does not; the C reference's fp8 selection hashes to what the CUDA kernels
# gave on the H200 for the same file (f06e7c79…, bench/RESULTS.md "Traces of the upstream model").
. "$(dirname "$0")/lib.sh"

TR="$DSA_DATA/traces/n8_r0000.safetensors"
expect_success "kernels trace on the captured fixture" "$DSA_BIN" kernels trace "$TR" --device cpu
grep -q "^trace '$TR' layer 1: T=2259 rows=4 rope=neox,.*heads=64 on cpu$" "$TMP/out" && ok "layer and shape from the file" || not_ok "layer and shape from the file"
grep -q '^ *pos  *recall@2048  model:stack  model:golden$' "$TMP/out" && ok "model columns" || not_ok "model columns"
expect_eq "golden = the model's selection on all 4 rows" "$(grep -c -E '^ +225[5-8] +0\.[0-9]{4} +0\.[0-9]{4} +1\.0000$' "$TMP/out")" "4"
grep -q '^model selection: stack 0\.9960, golden 1\.0000$' "$TMP/out" && ok "model selection line" || not_ok "model selection line"
grep -q 'selection_sha256 f06e7c79e07e900d253fa52200d0e0da29655e083c7e5d2e188f7923bcd5d08f$' "$TMP/out" && ok "the H200's CUDA selection, reproduced" || not_ok "the H200's CUDA selection, reproduced"

expect_success "interleaved RoPE on the same trace" "$DSA_BIN" kernels trace "$TR" --device cpu --variant rope=interleaved
g=$(sed -n 's/^model selection: stack [0-9.]*, golden \([0-9.]*\)$/\1/p' "$TMP/out")
awk -v g="$g" 'BEGIN { exit !(g != "" && g < 0.95) }' && ok "the wrong layout loses the model's selection ($g)" || not_ok "the wrong layout loses the model's selection ($g)"

expect_success "--topk 512 against a top-2048 trace" "$DSA_BIN" kernels trace "$TR" --device cpu --topk 512
grep -q "holds the model's top-2048, not a top-512: no model columns" "$TMP/err" && ok "note on the top-k mismatch" || not_ok "note on the top-k mismatch"
grep -q '^model selection' "$TMP/out" && not_ok "no model line at another k" || ok "no model line at another k"
# mrcr --backend inprocess --traces DIR: the same file as one MRCR row, with the manifest's spans
R="$TMP/runs"
expect_success "mrcr --traces" "$DSA_BIN" mrcr --backend inprocess --device cpu --traces "$DSA_DATA/traces" --out "$R/a"
grep -q "^mrcr in-process on traces '$DSA_DATA/traces' (model: tiny-random DeepseekV32 (transformers 5.17.0, seed 1, 2 layers, hidden 256)): cpu-reference on cpu" "$TMP/out" && ok "summary names the checkpoint" || not_ok "summary names the checkpoint"
grep -q -E '^≤8K +1 +0\.9960 +0\.9960 +1\.0000 +0\.878 +0\.878 +0\.878$' "$TMP/out" && ok "bin row: recall, model agreement, needle retention" || not_ok "bin row: recall, model agreement, needle retention"
rec=$(sed -n 2p "$R/a/run-001.jsonl")
for kv in '"id":"n8/r0000"' '"bin":"≤8K"' '"model_agreement_golden":1.0' '"needle_tokens":41' '"context_tokens":2259' '"selection_sha256":"f06e7c79e07e900d253fa52200d0e0da29655e083c7e5d2e188f7923bcd5d08f"' '"layer":1' '"trace":"n8_r0000.safetensors"'; do
    grep -qF "$kv" <<<"$rec" && ok "record has $kv" || not_ok "record has $kv"
done
# needle retention 36 of 41 needle tokens, from the manifest's span [806, 847)
grep -qF '"needle_retention":0.87804878048780' <<<"$rec" && ok "needle retention 36/41" || not_ok "needle retention 36/41"
head -1 "$R/a/run-001.jsonl" | grep -qF '"source":"traces"' && ok "header: source traces" || not_ok "header: source traces"
# the time per stage: no proxy model on traces, the stack and the golden model timed
grep -Eq '^µs per context token: [0-9.]+ = proxy 0\.0 \+ S1 [0-9.]+ \+ S2 [0-9.]+ \+ S3 [0-9.]+ \+ S4 [0-9.]+ \+ golden [0-9.]+ \+ host [0-9.]+$' "$TMP/out" \
    && ok "traces summary: time per stage" || { not_ok "traces summary: time per stage"; sed 's/^/#   /' "$TMP/out"; }
"$DSA_PYTHON" -c '
import json, sys
st = json.loads(sys.argv[1])["stage_us_per_token"]
assert st["proxy"] == 0 and st["s3_logits"] > 0 and st["golden"] > 0, st
assert abs(sum(v for k, v in st.items() if k != "total") - st["total"]) <= 1e-9 * st["total"], st
' "$rec" && ok "traces record: stage_us_per_token" || not_ok "traces record: stage_us_per_token"
expect_success "resume is a no-op" "$DSA_BIN" mrcr --backend inprocess --device cpu --traces "$DSA_DATA/traces" --out "$R/a"
expect_eq "still one record" "$(wc -l <"$R/a/run-001.jsonl")" "2"
grep -q "^dsa-eval: resuming: 1 of 1 samples already done in '$R/a/run-001.jsonl': nothing left to do$" "$TMP/err" &&
    ok "the rerun says it resumed" || { not_ok "the rerun says it resumed"; sed 's/^/#   /' "$TMP/err"; }
expect_success "mrcr --traces --json" "$DSA_BIN" mrcr --backend inprocess --device cpu --traces "$DSA_DATA/traces" --out "$R/j" --json -q
"$DSA_PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["dsa_eval_summary"] == 1 and d["rows"][0]["bin"] == "≤8K" and d["rows"][0]["pooled"]["scored"] == 1, d' "$TMP/out" &&
    ok "--json prints the summary document, no text table" || { not_ok "--json prints the summary document"; sed 's/^/#   /' "$TMP/out"; }
expect_eq "-q: nothing on stderr" "$(wc -c <"$TMP/err")" "0"
expect_code 6 "another variant on the same run dir" "$DSA_BIN" mrcr --backend inprocess --device cpu --traces "$DSA_DATA/traces" --out "$R/a" --variant weights=bf16
expect_success "bf16 weights on the traces" "$DSA_BIN" mrcr --backend inprocess --device cpu --traces "$DSA_DATA/traces" --out "$R/b" --variant weights=bf16
expect_success "compare two builds on real activations" "$DSA_BIN" compare "$R/a" "$R/b"
grep -q 'selections  0/1 samples select bit-identical top-k sets' "$TMP/out" && ok "compare sees the selections differ" || not_ok "compare sees the selections differ"
if [ -n "${DSA_TEST_PLUGIN:-}" ]; then
    expect_success "another build (--kernels plugin) on the traces" "$DSA_BIN" mrcr --backend inprocess --traces "$DSA_DATA/traces" --kernels "$DSA_TEST_PLUGIN" --out "$R/p"
    expect_success "compare the built-in reference with the plugin build" "$DSA_BIN" compare "$R/a" "$R/p"
    grep -q 'selections  1/1 samples select bit-identical top-k sets' "$TMP/out" && ok "a copy of the reference selects identically" || not_ok "a copy of the reference selects identically"
fi

# gsm8k --mtp N --traces DIR: the 4 query rows as MTP decode rows (paged S3a, batched vs one row);
# the decode path selects exactly what the prefill path (S3b) selected: the same hash
expect_success "gsm8k --mtp 3 on the traces" "$DSA_BIN" gsm8k --backend inprocess --device cpu --mtp 3 --topk 2048 --traces "$DSA_DATA/traces" --out "$R/g3"
grep -q '^identical selections: 1/1 traces; bit-identical logits: 1/1$' "$TMP/out" && ok "mtp verdict line" || not_ok "mtp verdict line"
grep -q "^gsm8k in-process on traces '$DSA_DATA/traces' (model: tiny-random DeepseekV32 " "$TMP/out" && ok "gsm8k names the checkpoint" || not_ok "gsm8k names the checkpoint"
rec=$(sed -n 2p "$R/g3/run-001.jsonl")
grep -qF '"layers":[{"identical":true,"layer":1,"logits_identical":true,"selection_sha256":"f06e7c79e07e900d253fa52200d0e0da29655e083c7e5d2e188f7923bcd5d08f","steps":1}]' <<<"$rec" && ok "decode selects what prefill selected" || not_ok "decode selects what prefill selected"
expect_success "gsm8k --mtp 1 (two steps of 2)" "$DSA_BIN" gsm8k --backend inprocess --device cpu --mtp 1 --topk 2048 --traces "$DSA_DATA/traces" --out "$R/g1"
grep -qF '"steps":2' "$R/g1/run-001.jsonl" && ok "two verify steps" || not_ok "two verify steps"
expect_code 2 "gsm8k --traces needs --backend inprocess" "$DSA_BIN" gsm8k --traces "$DSA_DATA/traces" --endpoint http://127.0.0.1:9 --out "$R/g9"

# bad input: one line, exit 3, nothing half-written
mkdir -p "$TMP/bad"
cp "$DSA_DATA/traces/n8_r0000.safetensors" "$TMP/bad/"
printf '{"id": "n8/r0000", "bin": "≤8K", "file": "n8_r0000.safetensors", "needle": [806, 847]}\n{"id": "n8/r0001", "bin": "9K", "file": "x.safetensors"}\n' >"$TMP/bad/manifest.jsonl"
expect_code 3 "bad bin label" "$DSA_BIN" mrcr --backend inprocess --device cpu --traces "$TMP/bad" --out "$R/c"
grep -q "^dsa-eval: cannot parse line 2 of '$TMP/bad/manifest.jsonl': \"bin\" is not one of the MRCR bin labels" "$TMP/err" && ok "bad bin message" || not_ok "bad bin message"
printf '{"id": "n8/r0000", "bin": "≤8K", "file": "../n8_r0000.safetensors"}\n' >"$TMP/bad/manifest.jsonl"
expect_code 3 "file outside the folder" "$DSA_BIN" mrcr --backend inprocess --device cpu --traces "$TMP/bad" --out "$R/c"
grep -q 'must name a file inside the traces folder' "$TMP/err" && ok "outside-folder message" || not_ok "outside-folder message"
printf '{"id": "n8/r0000", "bin": "≤8K", "file": "n8_r0000.safetensors"}\n{"id": "n8/r0001", "bin": "≤8K", "file": "missing.safetensors"}\n' >"$TMP/bad/manifest.jsonl"
expect_code 3 "missing trace file" "$DSA_BIN" mrcr --backend inprocess --device cpu --traces "$TMP/bad" --out "$R/d"
grep -q "^dsa-eval: cannot read trace '$TMP/bad/missing.safetensors'" "$TMP/err" && ok "missing trace message" || not_ok "missing trace message"
expect_eq "the finished row was kept" "$(grep -c '"id":"n8/r0000"' "$R/d/run-001.jsonl")" "1"
expect_code 3 "no manifest" "$DSA_BIN" mrcr --backend inprocess --device cpu --traces "$TMP/none" --out "$R/e"
grep -q "^dsa-eval: cannot read traces manifest '$TMP/none/manifest.jsonl'" "$TMP/err" && ok "no manifest message" || not_ok "no manifest message"
expect_code 2 "--traces needs --backend inprocess" "$DSA_BIN" mrcr --traces "$DSA_DATA/traces" --out "$R/f" --endpoint http://127.0.0.1:9
expect_code 2 "--traces with --dataset" "$DSA_BIN" mrcr --backend inprocess --traces "$DSA_DATA/traces" --dataset x.jsonl --out "$R/f"
done_testing
