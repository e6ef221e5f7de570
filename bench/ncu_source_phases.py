#!/usr/bin/env python3
# Sums ncu's source page (ncu --import R.ncu-rep --page source --csv --print-source cuda,sass,
# as bench/topk_profile_device.sh writes it) by function of kernels/cuda/topk.cu: executed warp
# instructions and stall samples per function, other files by name. The line ranges are those
# of topk.cu at 9970d85 (round 12's profile, bench/RESULTS.md); edit RANGES for another tree.
# ncu attributes an inlined line at more than one level, so the sum exceeds the kernel's
# executed instructions and the shares are approximate.
#   python3 bench/ncu_source_phases.py final_kernel-source.csv
# SPDX-License-Identifier: GPL-3.0-or-later
import collections
import csv
import sys

RANGES = [
    (105, 124, "hist_add"), (125, 157, "rank_bin"), (158, 217, "select_bits"),
    (218, 231, "select_in_smem"), (232, 264, "select_adaptive"), (265, 292, "count_select"),
    (293, 372, "sample/row_threshold"), (373, 418, "sample kernels"),
    (519, 591, "full_row_select"), (592, 612, "take_candidates"), (613, 646, "seg_in/seg_ids"),
    (647, 680, "copy_candidates"), (681, 730, "final_row"), (731, 749, "final_kernel"),
]


def count(text):
    """ncu prints '-' or nothing where a line has no value"""
    return int(text) if text and text.isdigit() else 0


def function_of(path, line):
    if path != "topk.cu":
        return path
    return next((name for lo, hi, name in RANGES if lo <= line <= hi), f"topk.cu:{line}")


def main(argv):
    instr, samples = collections.Counter(), collections.Counter()
    path, header = None, None
    with open(argv[1], newline="") as f:
        for row in csv.reader(f):
            if not row or row[0] == "Function Name":
                continue
            if row[0] == "File Path":
                path = row[1].split("/")[-1]
            elif row[0] == "Line No":
                header = row
            elif header and row[0].isdigit():
                d = dict(zip(header, row))
                name = function_of(path, int(row[0]))
                instr[name] += count(d.get("Instructions Executed"))
                samples[name] += count(d.get("Warp Stall Sampling (All Samples)"))
    total = sum(instr.values()) or 1
    for name, n in instr.most_common():
        if n:
            print(f"{name:28s} {n:8d} {100 * n / total:5.1f}%  samples {samples[name]}")
    print("total", total)


if __name__ == "__main__":
    main(sys.argv)
