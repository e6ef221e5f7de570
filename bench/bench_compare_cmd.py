#!/usr/bin/env python3
# bench_compare_cmd: `dsa-eval compare --json` as a user runs it (the whole process: reading
# 2 x R run files, pairing, every statistic of every row, writing the JSON) against scipy doing
# the same bootstraps in the same run, and `--threads 2` against `--threads 1`.
#
#   python3 bench/bench_compare_cmd.py [--build build] [--bins 8] [--n 800] [--runs 3]
#                                      [--resamples 10000] [--rounds 3]
#
# Data, written to a temporary folder (seeded): R run files per side of an MRCR run, bins x n
# samples with a per-sample difficulty, per-run noise and a candidate shift of -0.01; no
# latency_ms (so the latency cell is not computed).
# dsa-eval side: `compare BASE CAND --json --resamples B --threads T` (T = 1, 2, 8); CPU seconds
# (user+sys of the child, from wait4) and wall seconds; the outputs of every thread count
# must be byte-identical (exit 1 otherwise).
# scipy side (bench/compare_ref.py): per bin and for all samples, scipy.stats.bootstrap
# (paired, vectorized, percentile, B resamples) of the pooled difference of per-sample means
# and of each run's difference, and scipy.stats.f_oneway of each side's runs: the statistics
# that `compare` computes for each row (it also adds the two-level CI and the run-level
# permutation test, which scipy is not asked for).
# SPDX-License-Identifier: GPL-3.0-or-later
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# scipy and numpy: Debian's, as the tests use them
PYTHON = os.environ.get("DSA_PYTHON") or "/usr/bin/python3"


def header(run, url):
    return {"dsa_eval_run": 1, "tool": {"version": "0.1.0", "git": "bench"},
            "command": ["dsa-eval", "mrcr", "--endpoint", url], "eval": "mrcr", "run": run,
            "created": "2026-12-01T12:00:00Z",
            "match": {"dataset": "openai/mrcr", "revision": "bench"},
            "dataset": {"name": "openai/mrcr", "revision": "bench", "needles": 8},
            "backend": {"kind": "endpoint", "url": url, "model": "m", "server": "s"},
            "params": {"temperature": 0, "max_tokens": 4096, "seed": 42}}


def make_runs(folder, bins, n, runs):
    rng = random.Random(20261201)
    difficulty = [rng.random() for _ in range(bins * n)]
    for side, url, shift in (("base", "http://localhost:8000", 0.0),
                             ("cand", "http://localhost:8001", -0.01)):
        os.makedirs(os.path.join(folder, side))
        for q in range(runs):
            run_shift = rng.gauss(0, 0.01)
            with open(os.path.join(folder, side, "run-%03d.jsonl" % (q + 1)), "w") as f:
                f.write(json.dumps(header(q + 1, url), sort_keys=True) + "\n")
                for k in range(bins * n):
                    b = k // n
                    s = 0.3 + 0.6 * difficulty[k] + shift + run_shift + rng.gauss(0, 0.1)
                    rec = {"id": "n8/r%05d" % k, "bin": "b%d" % b, "bin_tokens": 8192 << b,
                           "status": "ok", "score": round(min(1.0, max(0.0, s)), 6),
                           "error": None}
                    f.write(json.dumps(rec, sort_keys=True) + "\n")


def timed(argv, out_path):
    """(CPU seconds of the child, wall seconds)."""
    t0 = time.monotonic()
    with open(out_path, "wb") as out:
        p = subprocess.Popen(argv, stdout=out)
        _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("bench_compare_cmd: %s exited with status %d" % (" ".join(argv), status))
    return ru.ru_utime + ru.ru_stime, wall


def show(name, ts):
    cpu, wall = [t[0] for t in ts], [t[1] for t in ts]
    print("  %-28s CPU min %6.3f s median %6.3f s   wall min %6.3f s median %6.3f s"
          % (name, min(cpu), statistics.median(cpu), min(wall), statistics.median(wall)))
    return min(cpu), statistics.median(cpu), min(wall), statistics.median(wall)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--bins", type=int, default=8)
    ap.add_argument("--n", type=int, default=800)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--resamples", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    dsa = os.path.join(args.build, "dsa-eval")
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    with tempfile.TemporaryDirectory() as tmp:
        make_runs(tmp, args.bins, args.n, args.runs)
        base, cand = os.path.join(tmp, "base"), os.path.join(tmp, "cand")
        res = {1: [], 2: [], 8: []}
        load0 = os.getloadavg()
        ref = []
        outs = {}
        for _ in range(args.rounds):
            for t in (1, 2, 8):
                out = os.path.join(tmp, "t%d.json" % t)
                res[t].append(timed([dsa, "compare", base, cand, "--json", "--resamples",
                                     str(args.resamples), "--threads", str(t)], out))
                outs[t] = open(out, "rb").read()
            t0 = time.monotonic()
            p = subprocess.Popen([PYTHON, os.path.join(HERE, "compare_ref.py"), base,
                                  cand, str(args.resamples)], stdout=subprocess.DEVNULL, env=env)
            _, status, ru = os.wait4(p.pid, 0)
            if os.waitstatus_to_exitcode(status) != 0:
                sys.exit("bench_compare_cmd: compare_ref.py failed")
            ref.append((ru.ru_utime + ru.ru_stime, time.monotonic() - t0))
        print("compare --json, %d vs %d runs, %d bins x %d samples, B = %d; %d rounds each"
              % (args.runs, args.runs, args.bins, args.n, args.resamples, args.rounds))
        d1 = show("dsa-eval --threads 1", res[1])
        d2 = show("dsa-eval --threads 2", res[2])
        sp = show("scipy (compare_ref.py)", ref)
        print("  ratio scipy / dsa-eval (CPU, --threads 1): min %.1fx median %.1fx"
              % (sp[0] / d1[0], sp[1] / d1[1]))
        print("  --threads 2 vs 1 (wall): min %.2fx median %.2fx; CPU %.2fx"
              % (d1[2] / d2[2], d1[3] / d2[3], d2[1] / d1[1]))
        print("  --threads 2: CPU / wall = %.2f cores busy (min over rounds of wall, median of CPU)"
              % (d2[1] / d2[2]))
        print("  load average (1 min) before / after: %.2f / %.2f on %d CPUs"
              % (load0[0], os.getloadavg()[0], os.cpu_count()))
        same = outs[1] == outs[2] == outs[8]
        print("  output byte-identical with 1, 2 and 8 threads: %s" % ("yes" if same else "NO"))
        return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
