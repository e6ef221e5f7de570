#!/usr/bin/env bash
# One device call (issue #13, round 7): S1+S2 as built (the ue8m0 quotient as an exact product,
# kernels/cuda/prep.cu quant_div; the top-k fill a kernel of its own) against the other forms
# (DSA_CUDA_PREP_DIV=1: the divisions; DSA_CUDA_PREP_FILL=2: the fill inside q_prep_kernel),
# alternating in one build; the whole check and the prep checks of every form; the sanitizers
# on the prep kernels; with NCU=1, ncu's stall reasons of the decode kernel at next_n 2 and 1.
# Logs in $OUT; prints the lines bench/RESULTS.md quotes.
#   bench/prep_device.sh
# SPDX-License-Identifier: GPL-3.0-or-later
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
. "$(dirname "$0")/kernels_build.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
kbuild . /tmp/kb 16 || exit 1
D=/tmp/kb/dsa-eval
echo "[${SECONDS}s] built"
$D kernels check --reruns 20 >"$OUT/check.txt" 2>&1; echo "check rc=$?: $(tail -1 "$OUT/check.txt")"
grep -E 'FAIL|SKIP' "$OUT/check.txt" | head
forms=("" "DSA_CUDA_PREP_DIV=1" "DSA_CUDA_PREP_FILL=2" "DSA_CUDA_PREP_DIV=1 DSA_CUDA_PREP_FILL=2")
for e in "${forms[@]:1}"; do
    env $e $D kernels check --reruns 20 -k prep >"$OUT/check-form.txt" 2>&1
    echo "check -k prep $e rc=$?: $(tail -1 "$OUT/check-form.txt")"
done
grep -E 'q_prep.*extreme' "$OUT/check.txt"
echo "[${SECONDS}s] checked"
for r in 1 2; do
    for e in "${forms[@]}"; do
        env $e $D kernels bench --iters 500 -k "S1+S2" >"$OUT/b.txt" 2>&1
        echo "== round $r ${e:-as built}"; grep -E '^S1\+S2' "$OUT/b.txt"
    done
done
$D kernels bench -k layer | grep -E '^layer'
echo "[${SECONDS}s] timed"
S="timeout 60 compute-sanitizer"
DSA_CUDA_PREP_FILL=2 $S --tool memcheck $D kernels check --quick --reruns 1 -k prep >"$OUT/memcheck.txt" 2>&1
echo "memcheck prep FILL=2 rc=$?: $(grep -hE 'ERROR SUMMARY|passed' "$OUT/memcheck.txt" | tr '\n' ' ')"
DSA_CUDA_PREP_FILL=2 $S --tool racecheck $D kernels check --quick --reruns 0 -k prep >"$OUT/racecheck.txt" 2>&1
echo "racecheck prep FILL=2 rc=$?: $(grep -hE 'RACECHECK SUMMARY|passed' "$OUT/racecheck.txt" | tr '\n' ' ')"
echo "[${SECONDS}s] sanitized"
[ -n "${NCU:-}" ] && for k in "S3a/N=2" "S3a/N=1 B=64 L=128K"; do
    f="$OUT/ncu.txt"
    timeout 60 ncu --clock-control none --section SpeedOfLight --section Occupancy \
        --section WarpStateStats --section MemoryWorkloadAnalysis --page raw \
        -k regex:decode_wgmma --launch-skip 5 --launch-count 1 $D kernels bench -k "$k" >"$f" 2>&1
    echo "== ncu $k rc=$?"
    grep -E 'gpu__time_duration.sum|dram__throughput.avg.pct|sm__throughput.avg.pct|smsp__average_warp_latency_per_inst_issued|sm__warps_active.avg.pct|launch__registers_per_thread|launch__occupancy_limit' "$f" | head -12
    grep -E 'smsp__average_warps_issue_stalled_[a-z_]+_per_issue_active.ratio' "$f" | awk '{print $1, $NF}' | sort -k2 -g -r | head -10
done
echo "script time ${SECONDS}s"
exit 0
