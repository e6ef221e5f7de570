#!/usr/bin/env bash
# One device call for round 11 of the indexer kernels (bench/RESULTS.md "Issue #13, round 11"):
# builds the kernels-only tool; `kernels check` on everything, then the top-k cases with round
# 10's parts put back (DSA_CUDA_TOPK_R11 bits), other slice counts (DSA_CUDA_TOPK_SLICES) and
# the last-CTA final, the prep cases at 1 and 4 vectors a warp (DSA_CUDA_PREP_QV);
# compute-sanitizer on the new paths; the whole `kernels bench`; then A/B rounds in the same
# call, alternating the variants: S4 (--iters 200), S1+S2 (--iters 500), the layer
# (--iters 100); ncu kernel durations and speed of light of the 64-row top-k; the torch.topk
# peer. Everything it prints goes to $OUT/log.txt too; the logs come back as one archive. Past TIME_S seconds (default 420) the later parts are skipped, so the logs
# still come back.
#   bash bench/topk_r11_device.sh
# SPDX-License-Identifier: GPL-3.0-or-later
set -u
OUT=${OUT:-/tmp/out}
. "$(dirname "$0")/kernels_build.sh"
kdev_begin 420 || exit 1
for v in DSA_CUDA_TOPK_R11=4 DSA_CUDA_TOPK_R11=7 DSA_CUDA_TOPK_SLICES=7 DSA_CUDA_TOPK_SLICES=3 \
    DSA_CUDA_TOPK_LAST=64 DSA_CUDA_PDL=0; do
    env $v $D kernels check -k topk --reruns 20 >"$OUT/check-v.txt" 2>&1
    echo "check -k topk $v rc=$?"; tail -1 "$OUT/check-v.txt"; grep FAIL "$OUT/check-v.txt" | head -3
done
for q in 1 4; do
    DSA_CUDA_PREP_QV=$q $D kernels check -k prep --reruns 5 >"$OUT/check-v.txt" 2>&1
    echo "check -k prep DSA_CUDA_PREP_QV=$q rc=$?"; tail -1 "$OUT/check-v.txt"
    grep FAIL "$OUT/check-v.txt" | head -3
done
echo "checks done at ${SECONDS}s"
ksan_topk "" DSA_CUDA_TOPK_R11=4 DSA_CUDA_TOPK_SLICES=7
ksan_prep
echo "sanitizers done at ${SECONDS}s"
$D kernels bench >"$OUT/bench.txt" 2>&1
echo "bench rc=$?"; cat "$OUT/bench.txt"
kab S4 S4 200 2 "" DSA_CUDA_TOPK_R11=4 DSA_CUDA_TOPK_R11=7 DSA_CUDA_TOPK_SLICES=16 >"$OUT/ab-s4.txt" 2>&1
cat "$OUT/ab-s4.txt"
kab S1+S2 S1 500 2 DSA_CUDA_PREP_QV=2 DSA_CUDA_PREP_QV=4 DSA_CUDA_PREP_QV=1 >"$OUT/ab-prep.txt" 2>&1
cat "$OUT/ab-prep.txt"
kab layer layer 100 2 "" DSA_CUDA_TOPK_R11=4 "DSA_CUDA_TOPK_R11=7 DSA_CUDA_PREP_QV=4" >"$OUT/ab-layer.txt" 2>&1
cat "$OUT/ab-layer.txt"
NCU="timeout 40 ncu --clock-control none --metrics gpu__time_duration.sum --print-summary per-kernel"
for v in "" DSA_CUDA_TOPK_R11=4; do
    late "ncu" && break
    echo "== ncu ${v:-default} S4 rows=64"
    env $v $NCU $D kernels bench -k "S4/k=2048 rows=64 " 2>&1 | grep -E '\)x\(|gpu__time_duration|==ERR|rror'
done >"$OUT/ncu.txt" 2>&1
cat "$OUT/ncu.txt"
late "ncu sections" || DSA_CUDA_TOPK_R11=0 timeout 60 ncu --clock-control none --section SpeedOfLight \
    --section Occupancy --section WarpStateStats -k regex:gather_warps --launch-skip 5 --launch-count 1 \
    $D kernels bench -k "S4/k=2048 rows=64 " 2>&1 |
    grep -E 'Duration|Throughput|Hit Rate|Occupancy|Warp Cycles|Active Warps|Registers|Waves'
late "peer" || { python3 bench/topk_peer.py >"$OUT/peer.txt" 2>&1; echo "peer rc=$?"; cat "$OUT/peer.txt"; }
echo "script time ${SECONDS}s"
# at most 8 files come back from a call: everything in one archive
(cd "$OUT" && tar -czf ../kdev.tgz . && rm -f ./* && mv ../kdev.tgz .)
exit 0
