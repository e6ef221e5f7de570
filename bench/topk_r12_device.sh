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
. "$(dirname "$0")/kernels_build.sh"
kdev_begin 450 || exit 1
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
ksan_topk DSA_CUDA_TOPK_R12=0 DSA_CUDA_TOPK_R12=1 DSA_CUDA_TOPK_LAST=64
ksan_prep
echo "sanitizers done at ${SECONDS}s"
$D kernels bench >"$OUT/bench.txt" 2>&1
echo "bench rc=$?"; cat "$OUT/bench.txt"
kab S4 S4 200 2 DSA_CUDA_TOPK_R12=0 DSA_CUDA_TOPK_R12=1 >"$OUT/ab-s4.txt" 2>&1
cat "$OUT/ab-s4.txt"
kab S1+S2 S1 500 1 DSA_CUDA_PREP_QV=0 DSA_CUDA_PREP_QV=2 >"$OUT/ab-prep.txt" 2>&1
cat "$OUT/ab-prep.txt"
kab layer layer 100 2 DSA_CUDA_TOPK_R12=0 DSA_CUDA_TOPK_R12=1 "DSA_CUDA_TOPK_R12=1 DSA_CUDA_PREP_QV=2" >"$OUT/ab-layer.txt" 2>&1
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
