#!/usr/bin/env bash
# Second device call of round 5 (bench/RESULTS.md "Issue #13, round 5: decode overlap"): the
# serial wgmma decode kernel at the new occupancy (the default) against round 4's occupancy
# (DSA_CUDA_DECODE_OCC=0) and a baseline tree. Builds both (kernels only), the SASS and
# register counts of the decode kernels, the whole `kernels check`, `-k logits_decode` under
# forced 3/7 CTAs and under every selectable variant (DSA_CUDA_DECODE_OCC=0,
# DSA_CUDA_DECODE_OVERLAP=1, DSA_CUDA_DECODE_PASSES=1), `kernels bench -k S3a` (the default
# twice, the baseline and OCC=0 between) and `-k layer`, then memcheck / racecheck on small
# cases while time is left. Every step has a timeout. Logs go to $OUT.
#   BUDGET_S=170 bench/decode_occ.sh BASELINE_TREE
# SPDX-License-Identifier: GPL-3.0-or-later
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
. "$(dirname "$0")/kernels_build.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
kbuild_pair "$1" || exit 1
echo "[${SECONDS}s] built"
D=/tmp/kb/dsa-eval
B=/tmp/kbase/dsa-eval
T="timeout 90"
LIB=$(find /tmp/kb -name 'libdsacuda.a' | head -1)
cuobjdump -sass "$LIB" >"$OUT/sass.txt" 2>&1
awk '/Function :/ { f = $3 } f ~ /decode_wgmma/ && /\/\*[0-9a-f]+\*\// {
        n[f]++; if (/QGMMA/) q[f]++; if (/WARPGROUP.DEPBAR/) d[f]++; if (/LDGSTS/) g[f]++; if (/LDL|STL/) x[f]++ }
     END { for (f in n) printf "%s: %d instr, QGMMA %d, WARPGROUP.DEPBAR %d, LDGSTS %d, LDL/STL %d\n",
                                f, n[f], q[f], d[f], g[f], x[f] }' "$OUT/sass.txt" |
    sed 's/EEv14CUtensorMap_st15d_decode_params//' | grep -v ILi32 | sort
cuobjdump -res-usage "$LIB" 2>&1 | grep -A1 decode_wgmma | grep -oE '_Z[0-9]+decode_wgmma_[a-z_]*kernelILi64ELi[0-9]+ELi[0-9]+ELi[0-9]+(ELi[0-9]+)?|REG:[0-9]+|STACK:[0-9]+' | paste - - - | sort -u
run_check() { # name env... cmd
    local name=$1; shift
    env "$@" >"$OUT/check-$name.txt" 2>&1
    echo "check $name rc=$?: $(tail -1 "$OUT/check-$name.txt")"; grep -E 'FAIL' "$OUT/check-$name.txt" | head -3
}
run_check all $T $D kernels check
for g in 3 7; do run_check ctas$g DSA_CUDA_DECODE_CTAS=$g $T $D kernels check -k logits_decode --reruns 2; done
for v in DSA_CUDA_DECODE_OCC=0 DSA_CUDA_DECODE_OVERLAP=1 DSA_CUDA_DECODE_PASSES=1; do
    run_check "${v#DSA_CUDA_DECODE_}" $v $T $D kernels check -k logits_decode --reruns 5
    run_check "${v#DSA_CUDA_DECODE_}-ctas7" $v DSA_CUDA_DECODE_CTAS=7 $T $D kernels check -k logits_decode --reruns 2
done
echo "[${SECONDS}s] checked"
$T $D kernels bench -k S3a >"$OUT/bench-new1.txt" 2>&1; echo "bench new1 rc=$?"
$T $B kernels bench -k S3a >"$OUT/bench-base.txt" 2>&1; echo "bench base rc=$?"
DSA_CUDA_DECODE_OCC=0 $T $D kernels bench -k S3a >"$OUT/bench-occ0.txt" 2>&1; echo "bench occ0 rc=$?"
$T $D kernels bench -k S3a >"$OUT/bench-new2.txt" 2>&1; echo "bench new2 rc=$?"
$T $D kernels bench -k layer >>"$OUT/bench-new1.txt" 2>&1
$T $B kernels bench -k layer >>"$OUT/bench-base.txt" 2>&1
for f in new1 base occ0 new2; do echo "== $f"; grep -E '^(S3a|layer)' "$OUT/bench-$f.txt"; done
echo "[${SECONDS}s] benched"
S="timeout 60 compute-sanitizer"
[ "$SECONDS" -gt "${BUDGET_S:-170}" ] && { echo "sanitizers skipped at ${SECONDS}s"; S=true; }
$S --tool memcheck $D kernels check --quick --reruns 1 -k logits_decode >"$OUT/memcheck.txt" 2>&1
echo "memcheck rc=$?: $(grep -hE 'ERROR SUMMARY|passed' "$OUT/memcheck.txt" | tr '\n' ' ')"
DSA_CUDA_DECODE_CTAS=7 $S --tool racecheck $D kernels check --quick --reruns 0 -k logits_decode >"$OUT/racecheck7.txt" 2>&1
echo "racecheck ctas=7 rc=$?: $(grep -hE 'RACECHECK SUMMARY|passed' "$OUT/racecheck7.txt" | tr '\n' ' ')"
grep -m3 -A2 'Error: Race' "$OUT/racecheck7.txt"
for k in "logits_decode/B=5 N=4 L=20000 H=64" "logits_decode/B=5 N=2 L=20000 H=64 w=f32"; do
    $S --tool racecheck $D kernels check --reruns 0 -k "$k" >"$OUT/racecheck.txt" 2>&1
    echo "racecheck -k $k rc=$?: $(grep -hE 'RACECHECK SUMMARY|passed' "$OUT/racecheck.txt" | tr '\n' ' ')"
done
echo "script time ${SECONDS}s"
(cd "$OUT" && tar -czf ../docc.tgz . && rm -f ./* && mv ../docc.tgz .)
exit 0
