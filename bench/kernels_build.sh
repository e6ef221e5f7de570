# Sourced by the device scripts (bench/kernels_device.sh, decode_occ.sh, decode_overlap.sh):
# kernels-only builds of a tree with the device's nvcc, printing only warnings, errors and the
# final target, so a log shows at once whether nvcc was clean.
#   kbuild TREE DIR [JOBS]       one tree into DIR (default 8 jobs)
#   kbuild_pair BASELINE_TREE    the baseline into /tmp/kbase (in the background, its log in
#                                $OUT/build-base.txt) beside this tree into /tmp/kb; returns 1
#                                unless both built
# SPDX-License-Identifier: GPL-3.0-or-later
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
kbuild() {
    cmake -S "$1" -B "$2" -DDSA_KERNELS_ONLY=ON -DCMAKE_CUDA_COMPILER="$NVCC" >/dev/null &&
        cmake --build "$2" -j"${3:-8}" 2>&1 | grep -E 'warning|error|Built target dsa-eval'
}
kbuild_pair() {
    kbuild "$1" /tmp/kbase >"$OUT/build-base.txt" 2>&1 &
    kbuild . /tmp/kb || return 1
    wait
    cat "$OUT/build-base.txt"
    [ -x /tmp/kbase/dsa-eval ]
}
