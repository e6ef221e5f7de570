#!/usr/bin/env bash
# GLM-5.x traces (tests/data/traces-glm: transformers' GlmMoeDsa on an H200): the head count and the
# RoPE layout come from the file (32 heads, interleaved pairs); with them dsa-eval's fp64 golden
# selection reproduces the model's own top-512 of every query row, the DeepSeek layout does not,
# and the C reference's fp8 selection hashes to what the CUDA kernels gave on the H200 (7e2eacde…,
# bench/RESULTS.md "Traces of the upstream model").
# SPDX-License-Identifier: GPL-3.0-or-later
. "$(dirname "$0")/lib.sh"

TR="$DSA_DATA/traces-glm/n8_r0000.safetensors"
expect_success "kernels trace on the GLM fixture" "$DSA_BIN" kernels trace "$TR" --device cpu --topk 512
grep -q "^trace '$TR' layer 1: T=1261 rows=4 rope=interleaved,.*heads=32 on cpu$" "$TMP/out" && ok "32 heads and interleaved RoPE from the file" || not_ok "32 heads and interleaved RoPE from the file"
expect_eq "golden = the model's selection on all 4 rows" "$(grep -c -E '^ +12(5[7-9]|60) +0\.[0-9]{4} +0\.[0-9]{4} +1\.0000$' "$TMP/out")" "4"
grep -q '^model selection: stack 0\.9795, golden 1\.0000$' "$TMP/out" && ok "model selection line" || not_ok "model selection line"
grep -q 'selection_sha256 7e2eacde44f734b9e8cd97e4b32d70bacaea75b1c4614b124a6bfba607ee930e$' "$TMP/out" && ok "the H200's CUDA selection, reproduced" || not_ok "the H200's CUDA selection, reproduced"

expect_success "DeepSeek's half-split RoPE on the same trace" "$DSA_BIN" kernels trace "$TR" --device cpu --topk 512 --variant rope=neox
g=$(sed -n 's/^model selection: stack [0-9.]*, golden \([0-9.]*\)$/\1/p' "$TMP/out")
awk -v g="$g" 'BEGIN { exit !(g != "" && g < 0.9) }' && ok "the wrong layout loses the model's selection ($g)" || not_ok "the wrong layout loses the model's selection ($g)"

R="$TMP/runs"
expect_success "mrcr --traces on the GLM fixture" "$DSA_BIN" mrcr --backend inprocess --device cpu --traces "$DSA_DATA/traces-glm" --topk 512 --out "$R/a"
grep -q "(model: tiny-random GlmMoeDsa (transformers 5.17.0, seed 1, 2 layers, hidden 256)): cpu-reference on cpu, rope=interleaved,.*heads=32, top-512" "$TMP/out" && ok "summary names the checkpoint and its layout" || not_ok "summary names the checkpoint and its layout"
grep -q -E '^≤8K +1 +0\.9795 +0\.9795 +1\.0000 ' "$TMP/out" && ok "bin row: recall and model agreement" || not_ok "bin row: recall and model agreement"
grep -qF '"selection_sha256":"7e2eacde44f734b9e8cd97e4b32d70bacaea75b1c4614b124a6bfba607ee930e"' "$R/a/run-001.jsonl" && ok "record: the H200's selection hash" || not_ok "record: the H200's selection hash"
done_testing
