#!/usr/bin/env bash
# A/B timings of a tuning knob in one device call (bench/RESULTS.md): the tensor-core logits'
# tiles per block (DSA_CUDA_MMA_TILES). Builds the kernels-only tool first unless /tmp/kb has
# it. (The top-k knobs DSA_CUDA_TOPK of the second top-k version went with it.)
# SPDX-License-Identifier: GPL-3.0-or-later
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
[ -x /tmp/kb/dsa-eval ] || {
    cmake -S . -B /tmp/kb -DDSA_KERNELS_ONLY=ON -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc >/dev/null &&
        cmake --build /tmp/kb -j16 2>&1 | grep -E 'warning|error|Built target dsa-eval'
}
D=/tmp/kb/dsa-eval
row() { grep -E '^S[34]' | sed "s/^/$1 /"; }
for t in 1 2 4 8 16; do
    for k in "N=1 B=1 L" "N=1 B=8 L" "N=1 B=64 L=128K"; do
        DSA_CUDA_MMA_TILES=$t $D kernels bench -k "S3a/$k" | row "tiles=$t"
    done
done | tee "$OUT/variants-s3a.txt"
