#!/usr/bin/env bash
# Where the S4 final and sample kernels spend their instructions and stalls (bench/RESULTS.md
# "Issue #13, round 12"): builds the kernels-only tool (with -lineinfo, as every build) and
# profiles one launch each of final_kernel and sample_kernel at 8 rows x 256K with ncu's
# SourceCounters, InstructionStats and WarpStateStats sections, then prints the source page
# (SASS with per-instruction executed counts and stall samples, and the CUDA lines) as CSV.
# Everything goes to $OUT; the logs come back as one archive.
#   bash bench/topk_profile_device.sh
# SPDX-License-Identifier: GPL-3.0-or-later
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
. "$(dirname "$0")/kernels_build.sh"
kbuild . /tmp/kb 16 >"$OUT/build.txt" 2>&1
cat "$OUT/build.txt"
[ -x /tmp/kb/dsa-eval ] || exit 1
D=/tmp/kb/dsa-eval
ncu --version | tail -1
ncu --help | grep -A6 -E 'print-source|--page ' >"$OUT/ncu-help.txt" 2>&1
for k in final_kernel sample_kernel; do
    timeout 120 ncu --clock-control none --section SourceCounters --section InstructionStats \
        --section WarpStateStats --section LaunchStats --import-source yes -k regex:$k \
        --launch-skip 3 --launch-count 1 -o "/tmp/$k" \
        $D kernels bench -k "S4/k=2048 rows=8 " --iters 20 >"$OUT/$k-run.txt" 2>&1
    echo "ncu $k rc=$?"
    ncu --import "/tmp/$k.ncu-rep" --page details >"$OUT/$k-details.txt" 2>&1
    ncu --import "/tmp/$k.ncu-rep" --page source --csv --print-source cuda,sass \
        >"$OUT/$k-source.csv" 2>&1 ||
        ncu --import "/tmp/$k.ncu-rep" --page source --csv >"$OUT/$k-source.csv" 2>&1
    echo "source page rc=$? lines $(wc -l <"$OUT/$k-source.csv")"
    head -3 "$OUT/$k-source.csv"
done
(cd "$OUT" && tar -czf ../kdev.tgz . && rm -f ./* && mv ../kdev.tgz .)
exit 0
