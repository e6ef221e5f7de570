#!/usr/bin/env python3
# The reference side of bench/bench_compare_cmd.py: what `compare` computes for each row,
# done with scipy. Reads BASE/ and CAND/ run files (header line, then records), pairs by id
# within each bin, and per bin and for all samples computes: scipy.stats.bootstrap(paired,
# vectorized, percentile, B resamples) of the pooled difference of per-sample means (mean
# over runs), the same for each run q (candidate run q - baseline run q), and
# scipy.stats.f_oneway over each side's runs. Prints one JSON object.
#   python3 bench/compare_ref.py BASE CAND B
# SPDX-License-Identifier: GPL-3.0-or-later
import glob
import json
import os
import sys

import numpy as np
from scipy import stats


def load(folder):
    runs = []
    for path in sorted(glob.glob(os.path.join(folder, "*.jsonl"))):
        with open(path, encoding="utf-8") as f:
            next(f)
            runs.append({r["id"]: (r["bin"], r["score"]) for r in map(json.loads, f)})
    return runs


def boot(x, y, B, rng):
    r = stats.bootstrap((x, y), lambda a, b, axis=-1: np.mean(b - a, axis=axis), paired=True,
                        vectorized=True, n_resamples=B, method="percentile", random_state=rng)
    return [float(np.mean(y - x)), r.confidence_interval.low, r.confidence_interval.high]


def row(A, C, B, rng):
    out = {"pooled": boot(A.mean(axis=0), C.mean(axis=0), B, rng)}
    out["runs"] = [boot(A[q], C[q], B, rng) for q in range(min(len(A), len(C)))]
    out["f_base"] = float(stats.f_oneway(*A).pvalue)
    out["f_cand"] = float(stats.f_oneway(*C).pvalue)
    return out


def main():
    base, cand, B = load(sys.argv[1]), load(sys.argv[2]), int(sys.argv[3])
    ids = sorted(set.intersection(*(set(r) for r in base + cand)))
    bins = sorted({base[0][i][0] for i in ids})
    rng = np.random.default_rng(1)
    A = np.array([[r[i][1] for i in ids] for r in base])
    C = np.array([[r[i][1] for i in ids] for r in cand])
    of = np.array([base[0][i][0] for i in ids])
    out = {b: row(A[:, of == b], C[:, of == b], B, rng) for b in bins}
    out["all"] = row(A, C, B, rng)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
