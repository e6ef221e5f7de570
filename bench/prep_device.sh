#!/usr/bin/env bash
# One device call (issue #13, round 7): S1+S2 with the ue8m0 quotient as an exact product
# (kernels/cuda/prep.cu quant_div, DSA_CUDA_PREP_MUL=1) against the division (the default) in
# the same
# build, alternating; the whole check; sanitizers on the prep kernels; and ncu's stall reasons
# of the serial decode kernel at next_n=2 (the measurement round 5 left for N=2 / N=4).
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
DSA_CUDA_PREP_MUL=1 $D kernels check --reruns 20 -k prep >"$OUT/check-mul.txt" 2>&1
echo "check -k prep MUL=1 rc=$?: $(tail -1 "$OUT/check-mul.txt")"
grep -E 'q_prep.*extreme' "$OUT/check.txt" "$OUT/check-mul.txt"
echo "[${SECONDS}s] checked"
for r in 1 2 3; do
    for mul in 1 0; do
        DSA_CUDA_PREP_MUL=$mul $D kernels bench -k "S1+S2" >"$OUT/b-$mul-$r.txt" 2>&1
        DSA_CUDA_PREP_MUL=$mul $D kernels bench -k layer >>"$OUT/b-$mul-$r.txt" 2>&1
        echo "== round $r MUL=$mul"; grep -E '^(S1\+S2|layer)' "$OUT/b-$mul-$r.txt"
    done
done
echo "[${SECONDS}s] timed"
S="timeout 60 compute-sanitizer"
DSA_CUDA_PREP_MUL=1 $S --tool memcheck $D kernels check --quick --reruns 1 -k prep >"$OUT/memcheck.txt" 2>&1
echo "memcheck prep rc=$?: $(grep -hE 'ERROR SUMMARY|passed' "$OUT/memcheck.txt" | tr '\n' ' ')"
DSA_CUDA_PREP_MUL=1 $S --tool racecheck $D kernels check --quick --reruns 0 -k prep >"$OUT/racecheck.txt" 2>&1
echo "racecheck prep rc=$?: $(grep -hE 'RACECHECK SUMMARY|passed' "$OUT/racecheck.txt" | tr '\n' ' ')"
echo "[${SECONDS}s] sanitized"
for k in "S3a/N=2" "S3a/N=1 B=64 L=128K"; do
    f="$OUT/ncu-$(echo "$k" | tr -c 'A-Za-z0-9=\n' _).txt"
    timeout 60 ncu --clock-control none --section SpeedOfLight --section Occupancy \
        --section WarpStateStats --section MemoryWorkloadAnalysis --page raw \
        -k regex:decode_wgmma --launch-skip 5 --launch-count 1 $D kernels bench -k "$k" >"$f" 2>&1
    echo "== ncu $k rc=$?"
    grep -E 'gpu__time_duration.sum|dram__throughput.avg.pct|sm__throughput.avg.pct|smsp__average_warp_latency_per_inst_issued|sm__warps_active.avg.pct|launch__registers_per_thread|launch__occupancy_limit' "$f" | head -12
    grep -E 'smsp__average_warps_issue_stalled_[a-z_]+_per_issue_active.ratio' "$f" | awk '{print $1, $NF}' | sort -k2 -g -r | head -10
done
echo "script time ${SECONDS}s"
exit 0
