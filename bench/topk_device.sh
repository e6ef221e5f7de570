#!/usr/bin/env bash
# One device call for the S4 top-k paths (bench/RESULTS.md "Issue #13, round 4"): builds the
# kernels-only tool, runs `kernels check` with the default routing and with each top-k path
# forced (DSA_CUDA_TOPK_CLUSTER=0: sample / gather / final for every row count; =64: one
# cluster per row up to 64 rows; =16 was the default during round 4's call, 0 is now),
# `kernels bench -k S4` and -k S1 for each, the torch.topk peer
# in the same call, ncu per-kernel times, and memcheck / racecheck on the top-k cases.
# Logs go to $OUT (one archive).
# SPDX-License-Identifier: GPL-3.0-or-later
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
NVCC=/usr/local/cuda/bin/nvcc
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
cmake -S . -B /tmp/kb -DDSA_KERNELS_ONLY=ON -DCMAKE_CUDA_COMPILER=$NVCC >/dev/null &&
    cmake --build /tmp/kb -j16 2>&1 | grep -E 'warning|error|Built target dsa-eval' || exit 1
D=/tmp/kb/dsa-eval
echo "build done at ${SECONDS}s"
$D kernels check >"$OUT/check.txt" 2>&1; echo "check rc=$?"; tail -1 "$OUT/check.txt"
grep -E 'FAIL|SKIP' "$OUT/check.txt" | head
for c in 0 64; do
    DSA_CUDA_TOPK_CLUSTER=$c $D kernels check -k topk >"$OUT/check-cl$c.txt" 2>&1
    echo "check -k topk DSA_CUDA_TOPK_CLUSTER=$c rc=$?"; tail -1 "$OUT/check-cl$c.txt"
    grep -E 'FAIL' "$OUT/check-cl$c.txt" | head -5
done
echo "checks done at ${SECONDS}s"
$D kernels bench -k S4 >"$OUT/bench.txt" 2>&1; echo "bench rc=$?"
$D kernels bench -k S1 >>"$OUT/bench.txt" 2>&1
DSA_CUDA_PDL=0 $D kernels bench -k S1 >"$OUT/bench-nopdl.txt" 2>&1
for c in 0 64; do
    DSA_CUDA_TOPK_CLUSTER=$c $D kernels bench -k S4 >"$OUT/bench-cl$c.txt" 2>&1
done
python3 bench/topk_peer.py >"$OUT/peer.txt" 2>&1; echo "peer rc=$?"
$D kernels bench -k S4 >"$OUT/bench-again.txt" 2>&1
cat "$OUT/bench.txt" "$OUT/bench-cl0.txt" "$OUT/bench-cl64.txt" "$OUT/bench-again.txt" "$OUT/bench-nopdl.txt" "$OUT/peer.txt"
echo "bench done at ${SECONDS}s"
# past TIME_S seconds (default 150) the ncu and sanitizer runs are skipped, so the logs come back
LATE=${TIME_S:-150}
[ "$SECONDS" -gt "$LATE" ] && echo "ncu skipped at ${SECONDS}s"
NCU="timeout 30 ncu --clock-control none --metrics gpu__time_duration.sum --print-summary per-kernel"
for k in "S4/k=2048 rows=1 " "S4/k=2048 rows=8 " "S4/k=2048 rows=64 "; do
    [ "$SECONDS" -gt "$LATE" ] && break
    echo "== ncu $k"; $NCU $D kernels bench -k "$k" 2>&1 | grep -E '\)x\(|gpu__time_duration|==ERR|rror'
    [ "$k" = "S4/k=2048 rows=64 " ] || continue
    echo "== ncu CLUSTER=64 $k"
    DSA_CUDA_TOPK_CLUSTER=64 $NCU $D kernels bench -k "$k" 2>&1 | grep -E '\)x\(|gpu__time_duration|==ERR|rror'
done >"$OUT/ncu.txt" 2>&1
cat "$OUT/ncu.txt"
S="timeout 30 compute-sanitizer"
[ "$SECONDS" -gt $((LATE + 40)) ] && { echo "sanitizers skipped at ${SECONDS}s"; S=true; }
for c in 16 0; do
    DSA_CUDA_TOPK_CLUSTER=$c $S --tool memcheck $D kernels check --quick --reruns 1 -k topk >"$OUT/memcheck-cl$c.txt" 2>&1
    echo "memcheck -k topk CLUSTER=$c rc=$?"; grep -E 'ERROR SUMMARY|passed' "$OUT/memcheck-cl$c.txt"
    DSA_CUDA_TOPK_CLUSTER=$c $S --tool racecheck $D kernels check --quick --reruns 0 -k topk/k=2048 >"$OUT/racecheck-cl$c.txt" 2>&1
    echo "racecheck -k topk/k=2048 CLUSTER=$c rc=$?"; grep -E 'RACECHECK SUMMARY|passed' "$OUT/racecheck-cl$c.txt"
done
$S --tool memcheck $D kernels check --quick --reruns 0 -k prep >"$OUT/memcheck-prep.txt" 2>&1
echo "memcheck -k prep rc=$?"; grep -E 'ERROR SUMMARY|passed' "$OUT/memcheck-prep.txt"
for k in k_prep q_prep; do
    $S --tool racecheck $D kernels check --quick --reruns 0 -k $k >"$OUT/racecheck-$k.txt" 2>&1
    echo "racecheck -k $k rc=$?"; grep -E 'RACECHECK SUMMARY|passed' "$OUT/racecheck-$k.txt"
done
echo "script time ${SECONDS}s"
(cd "$OUT" && tar -czf ../kdev.tgz . && rm -f ./* && mv ../kdev.tgz .)
exit 0
