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
grep -q "holds the model's top-2048; pass --topk 2048" "$TMP/err" && ok "note on the top-k mismatch" || not_ok "note on the top-k mismatch"
grep -q '^model selection' "$TMP/out" && not_ok "no model line at another k" || ok "no model line at another k"
done_testing
