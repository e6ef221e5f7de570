# Sourced by the device scripts (bench/kernels_device.sh, decode_occ.sh, decode_overlap.sh):
# kernels-only builds of a tree with the device's nvcc, printing only warnings, errors and the
# final target, so a log shows at once whether nvcc was clean.
# The helpers of a one-call script's steps (kdev_begin, late, ksan_topk, ksan_prep, kab) are
# below, each with its use.
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

# The start of a one-call device script (topk_r11_device.sh, topk_r12_device.sh): everything
# printed from here on also goes to $OUT/log.txt; late NAME is true (and says so) once the
# script has run past TIME_S seconds (default: the argument, else 420); the GPU's name and
# clocks; this tree's kernels-only build into /tmp/kb, D = its dsa-eval (returns 1 when it did
# not build); the whole `kernels check`, its last line and any failed or skipped case.
#   kdev_begin [DEFAULT_TIME_S] || exit 1
kdev_begin() {
    mkdir -p "$OUT"
    exec > >(tee "$OUT/log.txt") 2>&1
    LATE=${TIME_S:-${1:-420}}
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
    kbuild . /tmp/kb 16 >"$OUT/build.txt" 2>&1
    cat "$OUT/build.txt"
    [ -x /tmp/kb/dsa-eval ] || return 1
    D=/tmp/kb/dsa-eval
    echo "build done at ${SECONDS}s"
    $D kernels check >"$OUT/check.txt" 2>&1
    echo "check rc=$?"
    tail -1 "$OUT/check.txt"
    grep -E 'FAIL|SKIP' "$OUT/check.txt" | head
}
late() { [ "$SECONDS" -gt "$LATE" ] && { echo "skipped at ${SECONDS}s: $1"; return 0; }; return 1; }

# compute-sanitizer on the top-k cases at each setting (an env assignment, "" = the default):
# memcheck on every top-k case, racecheck on the k = 2048 ones
#   ksan_topk "" DSA_CUDA_TOPK_R12=1
ksan_topk() {
    local S="timeout 60 compute-sanitizer" v
    for v in "$@"; do
        env $v $S --tool memcheck $D kernels check --quick --reruns 1 -k topk >"$OUT/san.txt" 2>&1
        echo "memcheck -k topk ${v:-default} rc=$?"; grep -E 'ERROR SUMMARY|passed' "$OUT/san.txt"
        env $v $S --tool racecheck $D kernels check --quick --reruns 0 -k topk/k=2048 >"$OUT/san.txt" 2>&1
        echo "racecheck -k topk/k=2048 ${v:-default} rc=$?"
        grep -E 'RACECHECK SUMMARY|passed' "$OUT/san.txt"
    done
}

# compute-sanitizer on S1/S2: memcheck on the prep cases, racecheck on q_prep's
ksan_prep() {
    local S="timeout 60 compute-sanitizer"
    $S --tool memcheck $D kernels check --quick --reruns 1 -k prep >"$OUT/san.txt" 2>&1
    echo "memcheck -k prep rc=$?"; grep -E 'ERROR SUMMARY|passed' "$OUT/san.txt"
    $S --tool racecheck $D kernels check --quick --reruns 0 -k q_prep >"$OUT/san.txt" 2>&1
    echo "racecheck -k q_prep rc=$?"; grep -E 'RACECHECK SUMMARY|passed' "$OUT/san.txt"
}

# A/B rounds of one bench filter in one call: ROUNDS rounds, each running every setting in turn
# (an env assignment, "" = the default; several assignments in one quoted word), the rows that
# start with the stage name; stops at a round that starts past TIME_S (late)
#   kab NAME FILTER ITERS ROUNDS SETTING...
kab() {
    local name=$1 filter=$2 iters=$3 rounds=$4 round v
    shift 4
    for round in $(seq "$rounds"); do
        late "$name round $round" && break
        for v in "$@"; do
            echo "== $name round $round ${v:-default}"
            env $v $D kernels bench -k "$filter" --iters "$iters" 2>&1 | grep -E "^${name%%+*}"
        done
    done
}
