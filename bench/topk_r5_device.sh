#!/usr/bin/env bash
# One device call for round 5 of the S4 top-k (bench/RESULTS.md "Issue #13, round 5: top-k"):
# builds the kernels-only tool; `kernels check -k topk` on the default path, with the last gather
# CTA doing the final (DSA_CUDA_TOPK_LAST=64: every check shape), with round 4's kernels
# (DSA_CUDA_TOPK_R4=6) and with the count-select sample (DSA_CUDA_TOPK_COUNT=1); `kernels bench
# -k S4` on each, at 20 and at 2000 timed calls (the SM clock logged by nvidia-smi every 100 ms
# beside), the torch.topk peer the same two ways; ncu per-kernel times; memcheck and racecheck
# on the top-k cases, default and LAST. Logs go to $OUT (one archive). Past TIME_S seconds
# (default 200) the ncu and sanitizer runs are skipped, so the logs still come back.
# SPDX-License-Identifier: GPL-3.0-or-later
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
NVCC=/usr/local/cuda/bin/nvcc
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
cmake -S . -B /tmp/kb -DDSA_KERNELS_ONLY=ON -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER=$NVCC >/dev/null &&
    cmake --build /tmp/kb -j16 2>&1 | grep -E 'warning|error|Built target dsa-eval' || exit 1
D=/tmp/kb/dsa-eval
echo "build done at ${SECONDS}s"
V=("" "DSA_CUDA_TOPK_LAST=64" "DSA_CUDA_TOPK_R4=6" "DSA_CUDA_TOPK_COUNT=1")
for v in "${V[@]}"; do
    env $v $D kernels check -k topk >"$OUT/check-${v:-default}.txt" 2>&1
    echo "check -k topk ${v:-default} rc=$?"; tail -1 "$OUT/check-${v:-default}.txt"
    grep -E 'FAIL' "$OUT/check-${v:-default}.txt" | head -5
done
echo "checks done at ${SECONDS}s"
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw --format=csv,noheader -lms 100 >"$OUT/clk.txt" &
CLK=$!
for it in 20 2000; do
    for v in "" "DSA_CUDA_TOPK_LAST=8" "DSA_CUDA_TOPK_LAST=64" "DSA_CUDA_TOPK_R4=6" "DSA_CUDA_TOPK_COUNT=1"; do
        echo "== iters $it ${v:-default} $(date +%T.%N)"
        env $v $D kernels bench -k S4 --iters $it 2>&1 | grep -E '^S4'
    done
done >"$OUT/bench.txt" 2>&1
for it in 20 2000; do
    echo "== peer iters $it $(date +%T.%N)"; python3 bench/topk_peer.py --iters $it 2>&1
done >"$OUT/peer.txt"
echo "== iters 20 default again $(date +%T.%N)" >>"$OUT/bench.txt"
$D kernels bench -k S4 2>&1 | grep -E '^S4' >>"$OUT/bench.txt"
echo "== end $(date +%T.%N)" >>"$OUT/bench.txt"
kill $CLK
cat "$OUT/bench.txt" "$OUT/peer.txt"
echo "bench done at ${SECONDS}s"
LATE=${TIME_S:-200}
NCU="timeout 30 ncu --clock-control none --metrics gpu__time_duration.sum --print-summary per-kernel"
for v in "" "DSA_CUDA_TOPK_LAST=8"; do
    for k in "S4/k=2048 rows=1 " "S4/k=2048 rows=8 "; do
        [ "$SECONDS" -gt "$LATE" ] && { echo "ncu skipped at ${SECONDS}s"; break 2; }
        echo "== ncu ${v:-default} $k"; env $v $NCU $D kernels bench -k "$k" 2>&1 | grep -E '\)x\(|gpu__time_duration|==ERR|rror'
    done
done >"$OUT/ncu.txt" 2>&1
cat "$OUT/ncu.txt"
S="timeout 40 compute-sanitizer"
[ "$SECONDS" -gt $((LATE + 40)) ] && { echo "sanitizers skipped at ${SECONDS}s"; S=true; }
for v in "" "DSA_CUDA_TOPK_LAST=64"; do
    env $v $S --tool memcheck $D kernels check --quick --reruns 1 -k topk >"$OUT/memcheck-${v:-default}.txt" 2>&1
    echo "memcheck -k topk ${v:-default} rc=$?"; grep -E 'ERROR SUMMARY|passed' "$OUT/memcheck-${v:-default}.txt"
    env $v $S --tool racecheck $D kernels check --quick --reruns 0 -k topk/k=2048 >"$OUT/racecheck-${v:-default}.txt" 2>&1
    echo "racecheck -k topk/k=2048 ${v:-default} rc=$?"; grep -E 'RACECHECK SUMMARY|passed' "$OUT/racecheck-${v:-default}.txt"
done
echo "script time ${SECONDS}s"
(cd "$OUT" && tar -czf ../kdev.tgz . && rm -f ./* && mv ../kdev.tgz .)
exit 0
