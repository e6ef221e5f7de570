#!/usr/bin/env bash
# One device call for the fp8 wgmma prefill kernel (S3b): kernels-only build, `kernels check`
# (default and with a forced 7-CTA grid), reruns, compute-sanitizer memcheck and racecheck on the
# small prefill cases, the QGMMA/UTMALDG count of the SASS, and `kernels bench -k S3b` with the
# new default against DSA_CUDA_LOGITS=mma (the old mma.sync kernel), alternating. Logs in $OUT.
# SPDX-License-Identifier: GPL-3.0-or-later
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
. "$(dirname "$0")/kernels_build.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
kbuild . /tmp/kb 16 || exit 1
D=/tmp/kb/dsa-eval
$D kernels check >"$OUT/check.txt" 2>&1; echo "check rc=$?"; tail -1 "$OUT/check.txt"
grep -E 'FAIL|SKIP' "$OUT/check.txt" | head
grep logits_prefill "$OUT/check.txt" | head -20
DSA_CUDA_DECODE_CTAS=7 $D kernels check -k logits_prefill --reruns 20 >"$OUT/check-ctas7.txt" 2>&1
echo "check -k logits_prefill ctas=7 reruns=20 rc=$?"; tail -1 "$OUT/check-ctas7.txt"
$D kernels check -k logits_prefill --reruns 20 >"$OUT/check-rr.txt" 2>&1
echo "check -k logits_prefill reruns=20 rc=$?"; tail -1 "$OUT/check-rr.txt"
for t in memcheck racecheck; do
  timeout 150 compute-sanitizer --tool $t $D kernels check -k "logits_prefill/M=37" >"$OUT/san-$t.txt" 2>&1
  echo "$t rc=$?"; grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|hazard' "$OUT/san-$t.txt" | head -3
done
o=$(find /tmp/kb -name 'prefill_wgmma.cu.o' | head -1)
echo "SASS $o: QGMMA $(cuobjdump --dump-sass "$o" | grep -c QGMMA) HGMMA $(cuobjdump --dump-sass "$o" | grep -c HGMMA) HMMA $(cuobjdump --dump-sass "$o" | grep -c 'HMMA') UTMALDG $(cuobjdump --dump-sass "$o" | grep -c UTMALDG)"
for r in 1 2; do
  echo "== round $r new"; $D kernels bench -k S3b 2>&1 | tail -5
  echo "== round $r mma"; DSA_CUDA_LOGITS=mma $D kernels bench -k S3b 2>&1 | tail -5
done | tee "$OUT/bench.txt"
