#!/usr/bin/env bash
# One device call for round 5 of the S4 top-k (bench/RESULTS.md "Issue #13, round 5: top-k"):
# builds the kernels-only tool, runs `kernels check -k topk` on the default path and with round
# 4's kernels put back (DSA_CUDA_TOPK_R4=7, and =5: only the new gather), `kernels bench -k S4`
# on the default path, on each R4 bit alone and on R4=7 (A/B of each change in one call), the
# torch.topk peer in the same call, ncu per-kernel times, and memcheck / racecheck on the top-k
# cases. Logs go to $OUT (one archive). TIME_S (default 200): past it the ncu and sanitizer runs
# are skipped, so the logs still come back.
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
for r in 0 7 5; do
    DSA_CUDA_TOPK_R4=$r $D kernels check -k topk >"$OUT/check-r4-$r.txt" 2>&1
    echo "check -k topk DSA_CUDA_TOPK_R4=$r rc=$?"; tail -1 "$OUT/check-r4-$r.txt"
    grep -E 'FAIL' "$OUT/check-r4-$r.txt" | head -5
done
echo "checks done at ${SECONDS}s"
for r in 0 1 2 4 7 0; do
    echo "== bench -k S4 DSA_CUDA_TOPK_R4=$r"
    DSA_CUDA_TOPK_R4=$r $D kernels bench -k S4 2>&1 | grep -E '^S4'
done >"$OUT/bench.txt" 2>&1
python3 bench/topk_peer.py >"$OUT/peer.txt" 2>&1; echo "peer rc=$?"
cat "$OUT/bench.txt" "$OUT/peer.txt"
echo "bench done at ${SECONDS}s"
LATE=${TIME_S:-200}
NCU="timeout 30 ncu --clock-control none --metrics gpu__time_duration.sum --print-summary per-kernel"
for k in "S4/k=2048 rows=1 " "S4/k=2048 rows=8 " "S4/k=2048 rows=64 "; do
    [ "$SECONDS" -gt "$LATE" ] && { echo "ncu skipped at ${SECONDS}s"; break; }
    echo "== ncu $k"; $NCU $D kernels bench -k "$k" 2>&1 | grep -E '\)x\(|gpu__time_duration|==ERR|rror'
done >"$OUT/ncu.txt" 2>&1
cat "$OUT/ncu.txt"
S="timeout 40 compute-sanitizer"
[ "$SECONDS" -gt $((LATE + 40)) ] && { echo "sanitizers skipped at ${SECONDS}s"; S=true; }
$S --tool memcheck $D kernels check --quick --reruns 1 -k topk >"$OUT/memcheck.txt" 2>&1
echo "memcheck -k topk rc=$?"; grep -E 'ERROR SUMMARY|passed' "$OUT/memcheck.txt"
$S --tool racecheck $D kernels check --quick --reruns 0 -k topk/k=2048 >"$OUT/racecheck.txt" 2>&1
echo "racecheck -k topk/k=2048 rc=$?"; grep -E 'RACECHECK SUMMARY|passed' "$OUT/racecheck.txt"
echo "script time ${SECONDS}s"
(cd "$OUT" && tar -czf ../kdev.tgz . && rm -f ./* && mv ../kdev.tgz .)
exit 0
