#!/usr/bin/env bash
# One device call for the indexer kernels (bench/RESULTS.md "Indexer kernels (H200)"): builds
# the kernels-only tool from this tree (and, when given, a baseline tree for a same-call
# comparison), runs `kernels check`, compute-sanitizer memcheck and racecheck on small top-k and
# logits cases, `kernels bench` (table and JSON) and the torch.topk peer. Logs go to $OUT.
#   bench/kernels_device.sh [BASELINE_TREE]
# SPDX-License-Identifier: GPL-3.0-or-later
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
. "$(dirname "$0")/kernels_build.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
kbuild . /tmp/kb 16 || exit 1
[ $# -ge 1 ] && { kbuild "$1" /tmp/kbase 16 || exit 1; }
D=/tmp/kb/dsa-eval
S="timeout 90 compute-sanitizer"
$D kernels check >"$OUT/check.txt" 2>&1; echo "check rc=$?"; tail -1 "$OUT/check.txt"
grep -E 'FAIL|SKIP' "$OUT/check.txt" | head
# the logits' tiles per block follow the work; the check's shapes are small (1-2 tiles), so
# the larger tile counts of the benchmark shapes are checked by forcing them
for t in 4 16; do
    DSA_CUDA_MMA_TILES=$t $D kernels check -k logits --reruns 2 >"$OUT/check-tiles$t.txt" 2>&1
    echo "check -k logits tiles=$t rc=$?"; tail -1 "$OUT/check-tiles$t.txt"
done
# the pipelined decode kernel with a forced small grid: every CTA's page range crosses sequences
for g in 3 7; do
    DSA_CUDA_DECODE_CTAS=$g $D kernels check -k logits_decode --reruns 2 >"$OUT/check-ctas$g.txt" 2>&1
    echo "check -k logits_decode ctas=$g rc=$?"; tail -1 "$OUT/check-ctas$g.txt"
done
# the variants that stay selectable: the heads split over warp pairs in the decode kernel
# (DSA_CUDA_DECODE_SPLIT=2 with DSA_CUDA_LOGITS=pipe; the default is one warp per q row), fp8 -> f16 by bit moves (the default is the conversion
# unit), the top-k and prep kernels without programmatic dependent launch, the sample fused
# into the top-k gather
DSA_CUDA_LOGITS=pipe DSA_CUDA_DECODE_SPLIT=2 $D kernels check -k logits_decode >"$OUT/check-split1.txt" 2>&1
echo "check -k logits_decode DSA_CUDA_LOGITS=pipe DSA_CUDA_DECODE_SPLIT=1 rc=$?"; tail -1 "$OUT/check-split1.txt"
# the split kernel continues the one-warp kernel's sum chain: the same errors, case by case
grep logits_decode "$OUT/check.txt" >"$OUT/dec-a.txt"; grep logits_decode "$OUT/check-split1.txt" >"$OUT/dec-b.txt"
cmp -s "$OUT/dec-a.txt" "$OUT/dec-b.txt" && echo "decode split vs whole: identical rows" || echo "decode split vs whole: rows differ"
DSA_CUDA_LOGITS=pipe DSA_CUDA_DECODE_STAGES=8 $D kernels check -k logits_decode >"$OUT/check-stg8.txt" 2>&1
echo "check -k logits_decode DSA_CUDA_LOGITS=pipe DSA_CUDA_DECODE_STAGES=8 rc=$?"; tail -1 "$OUT/check-stg8.txt"
DSA_CUDA_LOGITS=pipe DSA_CUDA_DECODE_STAGES=8 DSA_CUDA_DECODE_CTAS=7 $D kernels check -k logits_decode --reruns 2 >"$OUT/check-stg8-ctas7.txt" 2>&1
echo "check -k logits_decode STAGES=8 ctas=7 rc=$?"; tail -1 "$OUT/check-stg8-ctas7.txt"
DSA_CUDA_LOGITS=pipe DSA_CUDA_DECODE_CVT=0 DSA_CUDA_DECODE_CTAS=7 $D kernels check -k logits_decode --reruns 2 \
    >"$OUT/check-cvt-ctas7.txt" 2>&1
echo "check -k logits_decode CVT=0 ctas=7 rc=$?"; tail -1 "$OUT/check-cvt-ctas7.txt"
DSA_CUDA_PDL=0 $D kernels check -k topk >"$OUT/check-nopdl.txt" 2>&1
echo "check -k topk DSA_CUDA_PDL=0 rc=$?"; tail -1 "$OUT/check-nopdl.txt"
DSA_CUDA_TOPK_FUSE=8 $D kernels check -k topk >"$OUT/check-fuse.txt" 2>&1
echo "check -k topk DSA_CUDA_TOPK_FUSE=8 rc=$?"; tail -1 "$OUT/check-fuse.txt"
# timings first (they matter most if the call runs out of time), then the rest
$D kernels bench >"$OUT/bench.txt" 2>&1; echo "bench rc=$?"
# A/B in the same call: the one-warp-per-row decode kernel, the prep and top-k without PDL
DSA_CUDA_LOGITS=pipe DSA_CUDA_DECODE_SPLIT=2 $D kernels bench -k S3a >"$OUT/bench-split1.txt" 2>&1; echo "bench split1 rc=$?"
DSA_CUDA_LOGITS=pipe DSA_CUDA_DECODE_STAGES=8 $D kernels bench -k S3a >"$OUT/bench-stg8.txt" 2>&1; echo "bench stages8 rc=$?"
DSA_CUDA_LOGITS=pipe DSA_CUDA_DECODE_STAGES=8 $D kernels bench -k layer >>"$OUT/bench-stg8.txt" 2>&1
DSA_CUDA_PDL=0 $D kernels bench -k S4 >"$OUT/bench-nopdl.txt" 2>&1; echo "bench nopdl rc=$?"
DSA_CUDA_PDL=0 $D kernels bench -k S1 >>"$OUT/bench-nopdl.txt" 2>&1
DSA_CUDA_LOGITS=pipe DSA_CUDA_DECODE_SPLIT=1 DSA_CUDA_PDL=0 $D kernels bench -k layer >>"$OUT/bench-nopdl.txt" 2>&1
$D kernels bench -k S3a >"$OUT/bench-again.txt" 2>&1; $D kernels bench -k S4 >>"$OUT/bench-again.txt" 2>&1
cat "$OUT/bench.txt" "$OUT/bench-split1.txt" "$OUT/bench-stg8.txt" "$OUT/bench-nopdl.txt" "$OUT/bench-again.txt"
if [ $# -ge 1 ]; then
    /tmp/kbase/dsa-eval kernels bench -k S4 >"$OUT/bench-base.txt" 2>&1; echo "base bench rc=$?"
    /tmp/kbase/dsa-eval kernels bench -k S1 >>"$OUT/bench-base.txt" 2>&1
fi
[ $# -ge 1 ] && cat "$OUT/bench-base.txt"
# the SASS instruction mix of the tensor-core logits kernels: HMMA, ldmatrix, fp8 conversions
LIB=$(find /tmp/kb -name 'libdsacuda.a' | head -1)
cuobjdump -sass "$LIB" >"$OUT/sass.txt" 2>&1
awk '/Function :/ { f = $3 } f ~ /logits_mma|decode_pipe|decode_wgmma/ && /\/\*[0-9a-f]+\*\// {
        n[f]++; if (/HMMA/) h[f]++; if (/LDSM/) l[f]++; if (/F2FP|I2F|F2F/) c[f]++
        if (/LDGSTS/) g[f]++; if (/LDS/) s[f]++; if (/PRMT/) p[f]++; if (/LDL|STL/) x[f]++
        if (/BAR/) br[f]++ }
     END { for (f in n) printf "%s: %d instructions, HMMA %d, LDSM %d, F2FP/I2F/F2F %d, LDGSTS %d, LDS* %d, PRMT %d, LDL/STL %d, BAR %d\n",
                                f, n[f], h[f], l[f], c[f], g[f], s[f], p[f], x[f], br[f] }' \
    "$OUT/sass.txt" | sort
cuobjdump -res-usage "$LIB" 2>&1 | grep -A1 -E 'decode_pipe|decode_wgmma|final_kernel|sample_kernel' | grep -oE '_Z[0-9]+[a-z_]+kernelI?[A-Za-z0-9]*|REG:[0-9]+|SHARED:[0-9]+' | paste - - - | sort -u
# per-kernel device time (ncu, clocks as found): the top-k phases and the decode kernel
NCU="timeout 90 ncu --clock-control none --metrics gpu__time_duration.sum --print-summary per-kernel"
for k in "S4/k=2048 rows=1 " "S4/k=2048 rows=8 " "S4/k=2048 rows=64 " "S3a/N=1 B=1 " "S3a/N=1 B=64 L=128K" "S1+S2/T=256"; do
    echo "== ncu $k"; $NCU $D kernels bench -k "$k" 2>&1 | grep -E '\)x\(|gpu__time_duration|==ERR|rror'
done >"$OUT/ncu.txt" 2>&1
echo "== ncu stages=8 S3a/N=1 B=64 L=128K" >>"$OUT/ncu.txt"
DSA_CUDA_LOGITS=pipe DSA_CUDA_DECODE_STAGES=8 $NCU $D kernels bench -k "S3a/N=1 B=64 L=128K" 2>&1 | grep -E '\)x\(|gpu__time_duration|==ERR|rror' >>"$OUT/ncu.txt"
echo "== ncu split=1 S3a/N=1 B=64 L=128K" >>"$OUT/ncu.txt"
DSA_CUDA_LOGITS=pipe DSA_CUDA_DECODE_SPLIT=1 $NCU $D kernels bench -k "S3a/N=1 B=64 L=128K" 2>&1 | grep -E '\)x\(|gpu__time_duration|==ERR|rror' >>"$OUT/ncu.txt"
SECT="--section SpeedOfLight --section Occupancy --section WarpStateStats --section ComputeWorkloadAnalysis"
timeout 90 ncu --clock-control none $SECT -k regex:decode_wgmma \
    --launch-skip 5 --launch-count 1 $D kernels bench -k "S3a/N=1 B=64 L=128K" >"$OUT/ncu-sol.txt" 2>&1
timeout 90 ncu --clock-control none $SECT -k regex:final_kernel \
    --launch-skip 5 --launch-count 1 $D kernels bench -k "S4/k=2048 rows=1 " >"$OUT/ncu-sol-s4.txt" 2>&1
grep -E 'Throughput|Occupancy|Duration|Block Limit Reg|Stall|Issued Ipc|Pipe|Warp Cycles' "$OUT/ncu-sol.txt" "$OUT/ncu-sol-s4.txt"
$D kernels bench --json -k S4 >"$OUT/bench-s4.json" 2>&1
python3 bench/topk_peer.py >"$OUT/peer.txt" 2>&1; echo "peer rc=$?"
# BUDGET_S (default 600): past it the sanitizers are skipped, so the call ends in time
[ "$SECONDS" -gt "${BUDGET_S:-600}" ] && { echo "sanitizers skipped at ${SECONDS}s"; S=true; }
for k in topk logits_decode logits_prefill/M=17; do
    $S --tool memcheck $D kernels check --quick --reruns 1 -k "$k" >"$OUT/memcheck.txt" 2>&1
    echo "memcheck -k $k rc=$?"; grep -E 'ERROR SUMMARY|passed' "$OUT/memcheck.txt"
done
$S --tool memcheck $D kernels check --reruns 1 -k "logits_decode/B=5 N=2" >"$OUT/memcheck.txt" 2>&1
echo "memcheck -k logits_decode/B=5 N=2 rc=$?"; grep -E 'ERROR SUMMARY|passed' "$OUT/memcheck.txt"
for k in topk/k=2048 "logits_decode/B=3 N=4" "logits_decode/B=5 N=4" "logits_decode/B=67" "k_prep" "q_prep"; do
    $S --tool racecheck $D kernels check --reruns 0 -k "$k" >"$OUT/racecheck.txt" 2>&1
    echo "racecheck -k $k rc=$?"; grep -E 'RACECHECK SUMMARY|passed' "$OUT/racecheck.txt"
done
DSA_CUDA_DECODE_CTAS=7 $S --tool racecheck $D kernels check --quick --reruns 0 -k logits_decode >"$OUT/racecheck.txt" 2>&1
echo "racecheck ctas=7 -k logits_decode rc=$?"; grep -E 'RACECHECK SUMMARY|passed' "$OUT/racecheck.txt"
DSA_CUDA_LOGITS=pipe DSA_CUDA_DECODE_STAGES=8 DSA_CUDA_DECODE_CTAS=7 $S --tool racecheck $D kernels check --quick --reruns 0 -k logits_decode >"$OUT/racecheck.txt" 2>&1
echo "racecheck stages=8 ctas=7 -k logits_decode rc=$?"; grep -E 'RACECHECK SUMMARY|passed' "$OUT/racecheck.txt"
DSA_CUDA_DECODE_CTAS=7 $S --tool memcheck $D kernels check --quick --reruns 0 -k logits_decode >"$OUT/memcheck.txt" 2>&1
echo "memcheck ctas=7 -k logits_decode rc=$?"; grep -E 'ERROR SUMMARY|passed' "$OUT/memcheck.txt"
$S --tool memcheck $D kernels check --quick --reruns 0 -k prep >"$OUT/memcheck.txt" 2>&1
echo "memcheck -k prep rc=$?"; grep -E 'ERROR SUMMARY|passed' "$OUT/memcheck.txt"
cat "$OUT/ncu.txt" "$OUT/peer.txt"
echo "script time ${SECONDS}s"
# at most 8 files come back from a call: everything in one archive
(cd "$OUT" && tar -czf ../kdev.tgz . && rm -f ./* && mv ../kdev.tgz .)
exit 0
