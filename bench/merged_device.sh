#!/bin/bash
# merged_device.sh NEW.txz [OLD.txz]: one device call for a merged main on the H200 machine.
# NEW (and OLD, an earlier main for a same-call comparison) are bench/bundle_runtime.sh
# archives of CUDA builds. Runs bench/verify_h200.sh on NEW (kernels check, sanitizers, traces
# on CUDA against the CPU, the in-process mrcr up to 1M, kernels bench), the S4 rows with
# torch.topk in the same call, then the endpoint's window on the machine's 16 cores
# (bench_window.sh: ≤8K rows at concurrency 1000 for 3000 rows, NEW and OLD alternating, and for
# 10000 rows unless $LONG is set, ≤128K rows at 100 twice; $LONG rows, when set, at the end: the window alone over
# a run long enough that the ramp and the last answers' drain are a small part of it). Logs go to
# $OUT.
# SPDX-License-Identifier: GPL-3.0-or-later
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
N=/tmp/rt-new; mkdir -p $N; tar -xJf "${1:?new bundle}" -C $N
O=""; if [ $# -ge 2 ]; then O=/tmp/rt-old; mkdir -p $O; tar -xJf "$2" -C $O; fi
# verify_h200.sh's layout: .devrt/dsa-eval and .devrt/lib
mkdir -p .devrt/lib && cp $N/lib/* .devrt/lib/ && cp $N/real/dsa-eval .devrt/dsa-eval
s0=$(date +%s)
bash bench/verify_h200.sh 2>&1 | tee $OUT/verify.txt
$N/build/dsa-eval kernels bench -k S4 2>&1 | tee $OUT/s4.txt
python3 bench/topk_peer.py 2>&1 | tee -a $OUT/s4.txt
echo "t=$(( $(date +%s) - s0 )) s"
export TIME=$N/bin/time
win() { echo "== $*"; "$@" 2>&1 | tail -5; echo "t=$(( $(date +%s) - s0 )) s"; }
{
  win bash bench/bench_window.sh $N/build 3000 1000 2000 8k
  [ -n "$O" ] && win env DSA_EVAL=$O/build/dsa-eval bash bench/bench_window.sh $N/build 3000 1000 2000 8k
  [ -z "${LONG:-}" ] && win bash bench/bench_window.sh $N/build 10000 1000 2000 8k
  [ -n "$O" ] && [ -z "${LONG:-}" ] && win env DSA_EVAL=$O/build/dsa-eval bash bench/bench_window.sh $N/build 10000 1000 2000 8k
  win bash bench/bench_window.sh $N/build 3000 1000 2000 8k
  win bash bench/bench_window.sh $N/build 150 100 2000 128k
  [ -n "$O" ] && win env DSA_EVAL=$O/build/dsa-eval bash bench/bench_window.sh $N/build 150 100 2000 128k
  win bash bench/bench_window.sh $N/build 150 100 2000 128k
  [ -n "${LONG:-}" ] && win env NOREF=1 bash bench/bench_window.sh $N/build "$LONG" 1000 2000 8k
} | tee $OUT/window.txt
