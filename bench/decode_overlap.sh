#!/usr/bin/env bash
# One device call for the overlapped wgmma decode logits (bench/RESULTS.md "Issue #13, round 5:
# decode overlap"): kernels-only builds of this tree and of a baseline tree side by side, the
# SASS counts of the decode kernels (QGMMA, the wgmma waits, local memory), the baseline's whole
# `kernels check` and `kernels bench -k S3a` / `-k layer`, this tree's whole `kernels check` and
# `-k logits_decode` under forced 3/7 CTAs and under every selectable variant (the serial kernel
# DSA_CUDA_DECODE_OVERLAP=0, DSA_CUDA_DECODE_PASSES=1|2), `-k S3a` alternating with the baseline,
# the variants' timings, then memcheck / racecheck on small cases and ncu while time is left.
# Every step has a timeout (a lost mbarrier phase would hang). Logs go to $OUT.
#   BUDGET_S=240 bench/decode_overlap.sh BASELINE_TREE
# SPDX-License-Identifier: GPL-3.0-or-later
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
. "$(dirname "$0")/kernels_build.sh"
BASE_TREE=$1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
kbuild_pair "$BASE_TREE" || exit 1
echo "[${SECONDS}s] built"
D=/tmp/kb/dsa-eval
B=/tmp/kbase/dsa-eval
T="timeout 90"
LIB=$(find /tmp/kb -name 'libdsacuda.a' | head -1)
cuobjdump -sass "$LIB" >"$OUT/sass.txt" 2>&1
awk '/Function :/ { f = $3 } f ~ /decode_wgmma/ && /\/\*[0-9a-f]+\*\// {
        n[f]++; if (/QGMMA/) q[f]++; if (/WARPGROUP.DEPBAR/) d[f]++; if (/WARPGROUP.ARRIVE/) a[f]++
        if (/UTMALDG/) t[f]++; if (/UBLKCP/) b[f]++; if (/LDGSTS/) g[f]++; if (/LDL|STL/) x[f]++ }
     END { for (f in n) printf "%s: %d instr, QGMMA %d, WARPGROUP.DEPBAR %d, WARPGROUP.ARRIVE %d, UTMALDG %d, UBLKCP %d, LDGSTS %d, LDL/STL %d\n",
                                f, n[f], q[f], d[f], a[f], t[f], b[f], g[f], x[f] }' "$OUT/sass.txt" |
    sed 's/EEv14CUtensorMap_st15d_decode_params//' | sort
grep -oE 'WARPGROUP.DEPBAR[^;]*' "$OUT/sass.txt" | sort | uniq -c
cuobjdump -res-usage "$LIB" 2>&1 | grep -A1 decode_wgmma | grep -oE '_Z[0-9]+decode_wgmma_[a-z_]*kernelILi[0-9]+ELi[0-9]+ELi[0-9]+ELi[0-9]+|REG:[0-9]+|STACK:[0-9]+' | paste - - - | sort -u
run_check() { # name env... -- args
    local name=$1; shift
    env "$@" >"$OUT/check-$name.txt" 2>&1
    echo "check $name rc=$?: $(tail -1 "$OUT/check-$name.txt")"; grep -E 'FAIL' "$OUT/check-$name.txt" | head -3
}
run_check base $T $B kernels check
run_check all $T $D kernels check
for g in 3 7; do run_check ctas$g DSA_CUDA_DECODE_CTAS=$g $T $D kernels check -k logits_decode --reruns 2; done
run_check serial DSA_CUDA_DECODE_OVERLAP=0 $T $D kernels check -k logits_decode
run_check serial-ctas7 DSA_CUDA_DECODE_OVERLAP=0 DSA_CUDA_DECODE_CTAS=7 $T $D kernels check -k logits_decode --reruns 2
for v in 1 2; do
    run_check passes$v DSA_CUDA_DECODE_PASSES=$v $T $D kernels check -k logits_decode
    run_check passes$v-ctas7 DSA_CUDA_DECODE_PASSES=$v DSA_CUDA_DECODE_CTAS=7 $T $D kernels check -k logits_decode --reruns 2
done
grep -hE 'N=[34] ' "$OUT/check-all.txt" | grep logits_decode
echo "[${SECONDS}s] checked"
for r in 1 2; do
    $T $B kernels bench -k S3a >"$OUT/bench-base$r.txt" 2>&1; echo "bench base$r rc=$?"
    $T $D kernels bench -k S3a >"$OUT/bench-new$r.txt" 2>&1; echo "bench new$r rc=$?"
done
$T $B kernels bench -k layer >>"$OUT/bench-base1.txt" 2>&1
$T $D kernels bench -k layer >>"$OUT/bench-new1.txt" 2>&1
DSA_CUDA_DECODE_OVERLAP=0 $T $D kernels bench -k S3a >"$OUT/bench-serial.txt" 2>&1; echo "bench serial rc=$?"
DSA_CUDA_DECODE_PASSES=1 $T $D kernels bench -k S3a/N=2 >"$OUT/bench-passes.txt" 2>&1; echo "bench passes=1 rc=$?"
DSA_CUDA_DECODE_PASSES=2 $T $D kernels bench -k S3a/N=4 >>"$OUT/bench-passes.txt" 2>&1; echo "bench passes=2 rc=$?"
for f in base1 new1 base2 new2 serial passes; do echo "== $f"; grep -E '^(S3a|layer|stage)' "$OUT/bench-$f.txt"; done
echo "[${SECONDS}s] benched"
S="timeout 90 compute-sanitizer"
[ "$SECONDS" -gt "${BUDGET_S:-240}" ] && { echo "sanitizers skipped at ${SECONDS}s"; S=true; }
$S --tool memcheck $D kernels check --quick --reruns 1 -k logits_decode >"$OUT/memcheck.txt" 2>&1
echo "memcheck rc=$?: $(grep -hE 'ERROR SUMMARY|passed' "$OUT/memcheck.txt" | tr '\n' ' ')"
DSA_CUDA_DECODE_CTAS=7 $S --tool memcheck $D kernels check --quick --reruns 0 -k logits_decode >"$OUT/memcheck7.txt" 2>&1
echo "memcheck ctas=7 rc=$?: $(grep -hE 'ERROR SUMMARY|passed' "$OUT/memcheck7.txt" | tr '\n' ' ')"
DSA_CUDA_DECODE_CTAS=7 $S --tool racecheck $D kernels check --quick --reruns 0 -k logits_decode >"$OUT/racecheck7.txt" 2>&1
echo "racecheck ctas=7 rc=$?: $(grep -hE 'RACECHECK SUMMARY|passed' "$OUT/racecheck7.txt" | tr '\n' ' ')"
grep -m3 -A2 'Error: Race' "$OUT/racecheck7.txt"
for k in "logits_decode/B=5 N=3 L=20000 H=64" "logits_decode/B=5 N=4 L=20000 H=64" "logits_decode/B=4 N=3"; do
    $S --tool racecheck $D kernels check --reruns 0 -k "$k" >"$OUT/racecheck.txt" 2>&1
    echo "racecheck -k $k rc=$?: $(grep -hE 'RACECHECK SUMMARY|passed' "$OUT/racecheck.txt" | tr '\n' ' ')"
done
echo "[${SECONDS}s] sanitized"
if [ "$SECONDS" -lt "${BUDGET_S:-240}" ]; then
    SECT="--section SpeedOfLight --section Occupancy --section WarpStateStats"
    for k in "S3a/N=1 B=64 L=128K" "S3a/N=4"; do
        timeout 40 ncu --clock-control none $SECT -k regex:decode_wgmma --launch-skip 5 --launch-count 1 \
            $D kernels bench -k "$k" >"$OUT/ncu.txt" 2>&1
        echo "== ncu $k"; grep -E 'Throughput|Occupancy|Duration|Block Limit|Issued Ipc|Warp Cycles|rror' "$OUT/ncu.txt"
    done
fi
echo "script time ${SECONDS}s"
(cd "$OUT" && tar -czf ../dov.tgz . && rm -f ./* && mv ../dov.tgz .)
exit 0
