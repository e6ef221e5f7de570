#!/usr/bin/env python3
# bench_inproc_cmd: `dsa-eval mrcr --backend inprocess --device cpu` as a user runs it (the whole
# process: the shipped 8-needle sample, one row per bin with --limit, the proxy model's inputs,
# S1-S4 of the C reference, the fp64 golden selection, the run file) for several builds and
# thread counts in the same run. Each configuration is one dsa-eval binary and a DSA_THREADS
# value; each round runs every configuration once, alternating, into a fresh --out. Reported per
# configuration: CPU seconds of the child (user + system, from wait4's rusage) and wall seconds,
# min and median over the rounds, and the records' time per context token by stage (median of
# the rounds, when the build records stage_us_per_token). Every configuration must write the
# same selections and scores as the first (selection_sha256, score, recall_last,
# needle_retention_golden compared as text; exit 1 on any difference).
#
#   python3 bench/bench_inproc_cmd.py --config after:build/dsa-eval:2 \
#       --config after-1t:build/dsa-eval:1 --config before:/tmp/old/build/dsa-eval:2 [--rounds 3]
# SPDX-License-Identifier: GPL-3.0-or-later
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

KEYS = ["proxy", "s1_k_prep", "s2_q_prep", "s3_logits", "s4_topk", "golden", "host", "total"]
SAME = ["id", "selection_sha256", "score", "recall_last", "needle_retention_golden"]


def run_once(binary, threads, out, limit):
    env = dict(os.environ, DSA_THREADS=str(threads))
    argv = [binary, "mrcr", "--backend", "inprocess", "--device", "cpu", "-q", "--limit",
            str(limit), "--out", out]
    t0 = time.monotonic()
    p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("bench_inproc_cmd: %s exited with status %d" % (binary, status))
    with open(os.path.join(out, "run-001.jsonl")) as f:
        recs = [json.loads(line) for line in f.readlines()[1:]]
    return ru.ru_utime + ru.ru_stime, wall, recs


def per_token(recs):
    """the stages over all rows: total time over total context tokens (as the summary does)"""
    if not all("stage_us_per_token" in r for r in recs):
        return None
    tok = sum(r["context_tokens"] for r in recs)
    return {k: sum(r["stage_us_per_token"][k] * r["context_tokens"] for r in recs) / tok
            for k in KEYS}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", action="append", required=True, help="NAME:BINARY:THREADS")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--limit", type=int, default=1)
    a = ap.parse_args()
    configs = [c.rsplit(":", 2) for c in a.config]
    res = {name: {"cpu": [], "wall": [], "stages": []} for name, _, _ in configs}
    ref = None
    with tempfile.TemporaryDirectory() as tmp:
        for rnd in range(a.rounds):
            for name, binary, threads in configs:
                out = os.path.join(tmp, "%s-%d" % (name, rnd))
                cpu, wall, recs = run_once(binary, int(threads), out, a.limit)
                same = [[r.get(k) for k in SAME] for r in recs]
                if ref is None:
                    ref = same
                elif same != ref:
                    sys.exit("bench_inproc_cmd: %s wrote other selections or scores" % name)
                res[name]["cpu"].append(cpu)
                res[name]["wall"].append(wall)
                st = per_token(recs)
                if st:
                    res[name]["stages"].append(st)
    print("rows %d, rounds %d, outputs identical across configurations" % (len(ref), a.rounds))
    print("%-10s %8s %8s %8s %8s" % ("config", "cpu min", "cpu med", "wall min", "wall med"))
    for name, _, _ in configs:
        c, w = res[name]["cpu"], res[name]["wall"]
        print("%-10s %7.2fs %7.2fs %7.2fs %7.2fs" % (name, min(c), statistics.median(c), min(w),
                                                      statistics.median(w)))
    for name, _, _ in configs:
        st = res[name]["stages"]
        if st:
            med = {k: statistics.median(s[k] for s in st) for k in KEYS}
            print("%-10s µs/token (median of rounds): " % name +
                  ", ".join("%s %.1f" % (k, med[k]) for k in KEYS))


if __name__ == "__main__":
    main()
