#!/usr/bin/env bash
# One device call for round 12 of the indexer kernels (bench/RESULTS.md "Issue #13, round 12"):
# builds the kernels-only tool; `kernels check` on everything, then the top-k cases with
# round 11's select put back (DSA_CUDA_TOPK_R12=1)
# and on the other paths that share them (the last-CTA final, round 4's digits, the fused
# threshold), the prep cases on S2's whole-warp layouts (DSA_CUDA_PREP_QV=2|4);
# compute-sanitizer on both; the whole `kernels bench`; A/B rounds in the same call,
# alternating the variants: S4 (--iters 200), S1+S2 (--iters 500), the layer (--iters 100);
# ncu durations and instruction counts of the three top-k kernels at 8 and 64 rows; the
# torch.topk peer. Everything it prints goes to $OUT/log.txt too; the logs come back as one archive. Past
# TIME_S seconds (default 450) the later parts are skipped, so the logs still come back.
#   bash bench/topk_r12_device.sh
# (Calls 1 and 4 of the round ran earlier forms, whose switch bits selected parts since
# removed: bench/RESULTS.md says which.)
# SPDX-License-Identifier: GPL-3.0-or-later
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
exec > >(tee "$OUT/log.txt") 2>&1
. "$(dirname "$0")/kernels_build.sh"
LATE=${TIME_S:-450}
late() { [ "$SECONDS" -gt "$LATE" ] && { echo "skipped at ${SECONDS}s: $1"; return 0; }; return 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
kbuild . /tmp/kb 16 >"$OUT/build.txt" 2>&1
cat "$OUT/build.txt"
[ -x /tmp/kb/dsa-eval ] || exit 1
D=/tmp/kb/dsa-eval
echo "build done at ${SECONDS}s"
$D kernels check >"$OUT/check.txt" 2>&1
echo "check rc=$?"; tail -1 "$OUT/check.txt"; grep -E 'FAIL|SKIP' "$OUT/check.txt" | head
for v in DSA_CUDA_TOPK_R12=0 DSA_CUDA_TOPK_R12=1 DSA_CUDA_TOPK_LAST=64 \
    DSA_CUDA_TOPK_R4=6 DSA_CUDA_TOPK_FUSE=64; do
    env $v $D kernels check -k topk --reruns 20 >"$OUT/check-v.txt" 2>&1
    echo "check -k topk $v rc=$?"; tail -1 "$OUT/check-v.txt"; grep FAIL "$OUT/check-v.txt" | head -3
done
for q in 0 2 4; do
    DSA_CUDA_PREP_QV=$q $D kernels check -k prep --reruns 20 >"$OUT/check-v.txt" 2>&1
    echo "check -k prep DSA_CUDA_PREP_QV=$q rc=$?"; tail -1 "$OUT/check-v.txt"
    grep FAIL "$OUT/check-v.txt" | head -3
done
echo "checks done at ${SECONDS}s"
S="timeout 60 compute-sanitizer"
for v in DSA_CUDA_TOPK_R12=0 DSA_CUDA_TOPK_R12=1 DSA_CUDA_TOPK_LAST=64; do
    env $v $S --tool memcheck $D kernels check --quick --reruns 1 -k topk >"$OUT/san.txt" 2>&1
    echo "memcheck -k topk $v rc=$?"; grep -E 'ERROR SUMMARY|passed' "$OUT/san.txt"
    env $v $S --tool racecheck $D kernels check --quick --reruns 0 -k topk/k=2048 >"$OUT/san.txt" 2>&1
    echo "racecheck -k topk/k=2048 $v rc=$?"; grep -E 'RACECHECK SUMMARY|passed' "$OUT/san.txt"
done
$S --tool memcheck $D kernels check --quick --reruns 1 -k prep >"$OUT/san.txt" 2>&1
echo "memcheck -k prep rc=$?"; grep -E 'ERROR SUMMARY|passed' "$OUT/san.txt"
$S --tool racecheck $D kernels check --quick --reruns 0 -k q_prep >"$OUT/san.txt" 2>&1
echo "racecheck -k q_prep rc=$?"; grep -E 'RACECHECK SUMMARY|passed' "$OUT/san.txt"
echo "sanitizers done at ${SECONDS}s"
$D kernels bench >"$OUT/bench.txt" 2>&1
echo "bench rc=$?"; cat "$OUT/bench.txt"
for round in 1 2; do
    late "S4 round $round" && break
    for v in DSA_CUDA_TOPK_R12=0 DSA_CUDA_TOPK_R12=1; do
        echo "== S4 round $round $v"
        env $v $D kernels bench -k S4 --iters 200 2>&1 | grep -E '^S4'
    done
done >"$OUT/ab-s4.txt" 2>&1
cat "$OUT/ab-s4.txt"
for round in 1; do
    late "S1+S2 round $round" && break
    for q in 0 2; do
        echo "== S1+S2 round $round DSA_CUDA_PREP_QV=$q"
        DSA_CUDA_PREP_QV=$q $D kernels bench -k S1 --iters 500 2>&1 | grep -E '^S1'
    done
done >"$OUT/ab-prep.txt" 2>&1
cat "$OUT/ab-prep.txt"
for round in 1 2; do
    late "layer round $round" && break
    for v in DSA_CUDA_TOPK_R12=0 DSA_CUDA_TOPK_R12=1 "DSA_CUDA_TOPK_R12=1 DSA_CUDA_PREP_QV=2"; do
        echo "== layer round $round $v"
        env $v $D kernels bench -k layer --iters 100 2>&1 | grep -E '^layer'
    done
done >"$OUT/ab-layer.txt" 2>&1
cat "$OUT/ab-layer.txt"
NCU="timeout 40 ncu --clock-control none --metrics gpu__time_duration.sum,smsp__inst_executed.sum --print-summary per-kernel"
for v in DSA_CUDA_TOPK_R12=0 DSA_CUDA_TOPK_R12=1; do
    for rows in 8 64; do
        late "ncu" && break 2
        echo "== ncu $v S4 rows=$rows"
        env $v $NCU $D kernels bench -k "S4/k=2048 rows=$rows " 2>&1 |
            grep -E '\)x\(|gpu__time_duration|inst_executed|==ERR|rror'
    done
done >"$OUT/ncu.txt" 2>&1
cat "$OUT/ncu.txt"
late "peer" || { python3 bench/topk_peer.py >"$OUT/peer.txt" 2>&1; echo "peer rc=$?"; cat "$OUT/peer.txt"; }
echo "script time ${SECONDS}s"
# at most 8 files come back from a call: everything in one archive
(cd "$OUT" && tar -czf ../kdev.tgz . && rm -f ./* && mv ../kdev.tgz .)
exit 0
