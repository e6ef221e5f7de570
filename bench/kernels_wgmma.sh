#!/usr/bin/env bash
# One device call for the fp8 wgmma decode logits (bench/RESULTS.md "Issue #13, round 4"):
# kernels-only build, the QGMMA/TMA counts of the SASS, the whole `kernels check` (the wgmma
# decode kernel is the default), `-k logits_decode` with forced 3/7 CTAs and with next_n 4 in
# one pass (DSA_CUDA_DECODE_PASSES=1; two is the default), racecheck over the forced 7-CTA grid, `kernels bench -k
# S3a` and `-k layer` against the mma.sync kernel (DSA_CUDA_LOGITS=pipe, alternating), the other
# sanitizer runs, then ncu if time is left. Every step has a timeout (a lost mbarrier phase
# would hang). Logs go to $OUT.
#   BUDGET_S=200 bench/kernels_wgmma.sh
# SPDX-License-Identifier: GPL-3.0-or-later
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
NVCC=/usr/local/cuda/bin/nvcc
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
cmake -S . -B /tmp/kb -DDSA_KERNELS_ONLY=ON -DCMAKE_CUDA_COMPILER=$NVCC >/dev/null &&
    cmake --build /tmp/kb -j16 2>&1 | grep -E 'warning|error|Built target dsa-eval' || exit 1
echo "[${SECONDS}s] built"
D=/tmp/kb/dsa-eval
W="env DSA_CUDA_LOGITS=wgmma"
P="env DSA_CUDA_LOGITS=pipe"
T="timeout 60"
LIB=$(find /tmp/kb -name 'libdsacuda.a' | head -1)
cuobjdump -sass "$LIB" >"$OUT/sass.txt" 2>&1
awk '/Function :/ { f = $3 } f ~ /decode_wgmma|decode_pipe/ && /\/\*[0-9a-f]+\*\// {
        n[f]++; if (/QGMMA/) q[f]++; if (/HGMMA/) hg[f]++; if (/HMMA/) h[f]++; if (/UTMALDG/) t[f]++
        if (/UBLKCP/) b[f]++; if (/SYNCS/) s[f]++; if (/LDL|STL/) x[f]++; if (/WARPGROUP/) wg[f]++ }
     END { for (f in n) printf "%s: %d instructions, QGMMA %d, HGMMA %d, HMMA %d, UTMALDG %d, UBLKCP %d, SYNCS %d, WARPGROUP %d, LDL/STL %d\n",
                                f, n[f], q[f], hg[f], h[f], t[f], b[f], s[f], wg[f], x[f] }' "$OUT/sass.txt" | sort
grep -m3 QGMMA "$OUT/sass.txt"
cuobjdump -res-usage "$LIB" 2>&1 | grep -A1 decode_wgmma | grep -oE '_Z[0-9]+decode_wgmma_kernelILi[0-9]+ELi[0-9]+|REG:[0-9]+|SHARED:[0-9]+|STACK:[0-9]+' | paste - - - - | sort -u
timeout 100 $D kernels check >"$OUT/check-all.txt" 2>&1
echo "check (all stages, default) rc=$?"; tail -1 "$OUT/check-all.txt"; grep -E 'FAIL|SKIP' "$OUT/check-all.txt" | head
for g in 3 7; do
    $W DSA_CUDA_DECODE_CTAS=$g $T $D kernels check -k logits_decode --reruns 2 >"$OUT/check-wgmma-ctas$g.txt" 2>&1
    echo "check wgmma ctas=$g rc=$?"; tail -1 "$OUT/check-wgmma-ctas$g.txt"; grep FAIL "$OUT/check-wgmma-ctas$g.txt" | head -3
done
# next_n 4 in one pass of four q rows (DSA_CUDA_DECODE_PASSES=1; two passes are the default)
$W DSA_CUDA_DECODE_PASSES=1 $T $D kernels check -k logits_decode >"$OUT/check-pass1.txt" 2>&1
echo "check passes=1 rc=$?"; tail -1 "$OUT/check-pass1.txt"; grep FAIL "$OUT/check-pass1.txt" | head -3
$W DSA_CUDA_DECODE_PASSES=1 DSA_CUDA_DECODE_CTAS=7 $T $D kernels check -k logits_decode --reruns 2 >"$OUT/check-pass1-ctas7.txt" 2>&1
echo "check passes=1 ctas=7 rc=$?"; tail -1 "$OUT/check-pass1-ctas7.txt"; grep FAIL "$OUT/check-pass1-ctas7.txt" | head -3
grep -E 'N=4' "$OUT/check-pass1.txt"
echo "[${SECONDS}s] checked"
S="timeout 90 compute-sanitizer"
$W DSA_CUDA_DECODE_CTAS=7 $S --tool racecheck $D kernels check --quick --reruns 0 -k logits_decode >"$OUT/racecheck7.txt" 2>&1
echo "racecheck wgmma ctas=7 rc=$?"; grep -E 'RACECHECK SUMMARY|passed' "$OUT/racecheck7.txt"; grep -m3 -A2 'Error: Race' "$OUT/racecheck7.txt"
for r in 1 2; do
    $P $T $D kernels bench -k S3a >"$OUT/bench-base$r.txt" 2>&1; echo "bench base$r rc=$?"
    $W $T $D kernels bench -k S3a >"$OUT/bench-wgmma$r.txt" 2>&1; echo "bench wgmma$r rc=$?"
done
for r in 1 2; do
    $W DSA_CUDA_DECODE_PASSES=1 $T $D kernels bench -k S3a/N=4 >>"$OUT/bench-wgmma$r.txt" 2>&1; echo "bench passes=1 rc=$?"
done
$P $T $D kernels bench -k layer >>"$OUT/bench-base1.txt" 2>&1
$W $T $D kernels bench -k layer >>"$OUT/bench-wgmma1.txt" 2>&1
for f in base1 wgmma1 base2 wgmma2; do echo "== $f"; cat "$OUT/bench-$f.txt"; done
echo "[${SECONDS}s] benched"
[ "$SECONDS" -gt "${BUDGET_S:-200}" ] && { echo "sanitizers skipped at ${SECONDS}s"; S=true; }
$W $S --tool memcheck $D kernels check --quick --reruns 1 -k logits_decode >"$OUT/memcheck.txt" 2>&1
echo "memcheck wgmma rc=$?"; grep -E 'ERROR SUMMARY|passed' "$OUT/memcheck.txt"
for k in "logits_decode/B=3 N=4" "logits_decode/B=5 N=2"; do
    $W $S --tool racecheck $D kernels check --reruns 0 -k "$k" >"$OUT/racecheck.txt" 2>&1
    echo "racecheck wgmma -k $k rc=$?"; grep -E 'RACECHECK SUMMARY|passed' "$OUT/racecheck.txt"
done
$W DSA_CUDA_DECODE_PASSES=1 DSA_CUDA_DECODE_CTAS=7 $S --tool racecheck $D kernels check --reruns 0 -k "logits_decode/B=5 N=4" >"$OUT/racecheck7p1.txt" 2>&1
echo "racecheck passes=1 ctas=7 -k B=5 N=4 rc=$?"; grep -E 'RACECHECK SUMMARY|passed' "$OUT/racecheck7p1.txt"
$W DSA_CUDA_DECODE_CTAS=7 $S --tool memcheck $D kernels check --quick --reruns 0 -k logits_decode >"$OUT/memcheck7.txt" 2>&1
echo "memcheck wgmma ctas=7 rc=$?"; grep -E 'ERROR SUMMARY|passed' "$OUT/memcheck7.txt"
echo "[${SECONDS}s] sanitized"
if [ "$SECONDS" -lt "${BUDGET_S:-200}" ]; then
    SECT="--section SpeedOfLight --section Occupancy --section WarpStateStats"
    for k in "S3a/N=1 B=64 L=128K" "S3a/N=4"; do
        $W timeout 40 ncu --clock-control none $SECT -k regex:decode_wgmma --launch-skip 5 --launch-count 1 \
            $D kernels bench -k "$k" >"$OUT/ncu.txt" 2>&1
        echo "== ncu wgmma $k"; grep -E 'Throughput|Occupancy|Duration|Block Limit|Issued Ipc|Warp Cycles|rror' "$OUT/ncu.txt"
    done
fi
echo "script time ${SECONDS}s"
(cd "$OUT" && tar -czf ../kw.tgz . && rm -f ./* && mv ../kw.tgz .)
exit 0
