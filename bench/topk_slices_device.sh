#!/usr/bin/env bash
# One device call on the 64-row top-k gather (bench/RESULTS.md "Issue #13, round 11", call B):
# whether its 1.7 TB/s depends on the slice geometry (DSA_CUDA_TOPK_SLICES: slices a row;
# the default 8 gives every warp a 16 KB region, so the warps of the one wave load addresses
# congruent modulo 16 KB at the same time), and what ncu says bounds it. Checks the top-k
# cases at other slice counts first. Everything it prints goes to $OUT/log.txt too.
#   bash bench/topk_slices_device.sh
# SPDX-License-Identifier: GPL-3.0-or-later
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
exec > >(tee "$OUT/log.txt") 2>&1
. "$(dirname "$0")/kernels_build.sh"
kbuild . /tmp/kb 16 || exit 1
D=/tmp/kb/dsa-eval
echo "build done at ${SECONDS}s"
for n in 3 7 12; do
    DSA_CUDA_TOPK_SLICES=$n $D kernels check -k topk --reruns 2 >"$OUT/check.txt" 2>&1
    echo "check -k topk DSA_CUDA_TOPK_SLICES=$n rc=$?"; tail -1 "$OUT/check.txt"; grep FAIL "$OUT/check.txt" | head -3
done
for round in 1 2; do
    for n in 8 7 6 5 4 9 10 12 16; do
        echo "== round $round DSA_CUDA_TOPK_SLICES=$n"
        DSA_CUDA_TOPK_SLICES=$n $D kernels bench -k "S4/k=2048 rows=64 " --iters 200 2>&1 | grep -E '^S4'
    done
done
NCU="timeout 60 ncu --clock-control none"
for n in 8 7; do
    echo "== ncu DSA_CUDA_TOPK_SLICES=$n gather, one launch"
    DSA_CUDA_TOPK_SLICES=$n $NCU --section SpeedOfLight --section MemoryWorkloadAnalysis \
        --section Occupancy --section WarpStateStats --section LaunchStats -k regex:gather_warps \
        --launch-skip 5 --launch-count 1 $D kernels bench -k "S4/k=2048 rows=64 " 2>&1 |
        grep -E 'Duration|Throughput|DRAM|L2 Hit|L1/TEX Hit|Occupancy|Warp Cycles|Stall|Active Warps|Eligible|Issued|Registers|Waves|Grid Size|Mem Busy|Max Bandwidth|Mem Pipes'
done
echo "script time ${SECONDS}s"
