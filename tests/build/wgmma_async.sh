#!/usr/bin/env bash
# ptxas keeps the fp8 wgmma kernels asynchronous and spill-free: compiling decode_wgmma.cu,
# prefill_wgmma.cu and prefill_wg4.cu for sm_90a with -Xptxas -v must print no "wgmma.mma_async
# instructions are serialized" note (C7514 / C7518 / C7520: a wgmma under a branch, in flight across a loop's back
# edge, or its accumulators touched before the wait) and no spill. Either leaves the results
# correct, so `kernels check` cannot see it, while it halves S3b's speed; hence a build test,
# registered where nvcc exists.  usage: wgmma_async.sh NVCC SOURCE_DIR
# SPDX-License-Identifier: GPL-3.0-or-later
set -u
nvcc=$1 src=$2 fail=0
for f in decode_wgmma prefill_wgmma prefill_wg4; do
    if ! out=$("$nvcc" -std=c++17 -gencode arch=compute_90a,code=sm_90a -O3 \
        -I"$src/kernels/include" -I"$src/kernels/cuda" -Xptxas -v \
        -c "$src/kernels/cuda/$f.cu" -o /dev/null 2>&1); then
        echo "$f: nvcc failed"
        echo "$out"
        exit 1
    fi
    kernels=$(grep -c "Compiling entry function" <<<"$out")
    serial=$(grep -c "instructions are serialized" <<<"$out")
    spills=$(grep "bytes spill stores" <<<"$out" | grep -vc " 0 bytes spill stores")
    echo "$f: $kernels kernels, $serial serialised, $spills spilling"
    if [ "$kernels" = 0 ] || [ "$serial" != 0 ] || [ "$spills" != 0 ]; then
        grep -E "serialized|spill stores" <<<"$out" | grep -v " 0 bytes spill stores"
        fail=1
    fi
done
exit $fail
