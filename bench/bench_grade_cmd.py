#!/usr/bin/env python3
# bench_grade_cmd: `dsa-eval grade mrcr` as a user runs it (the whole process: reading the
# JSONL file, JSON, grading, writing the records) against the same work in CPython in the same
# run: bench/grade_ref.py, json.loads of every line and the official grade(). Both sides are
# timed in CPU seconds of the child process (user + system, from wait4's rusage), each
# several rounds, alternating, and reported as min and median; the scores of both sides are
# compared as doubles, line by line (exit 1 on any difference).
#
#   python3 bench/bench_grade_cmd.py [--build build] [--pairs 5000] [--rounds 3]
#
# Inputs, written to a temporary folder: "mixed" = bench/make_grade_pairs.py N (seeded);
# "logs" = the four MRCR log subsets of tests/data/mrcr (291 lines) concatenated 20 times
# (the same bytes each time, so that a run is long enough to time).
# SPDX-License-Identifier: GPL-3.0-or-later
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LOGS = ["evaluation_log_gemini_3_pro_8needle.jsonl", "evaluation_log_gemini_3_pro_2needle.jsonl",
        "evaluation_log_gemini_3_flash_8needle.jsonl",
        "evaluation_log_gemini_3_flash_2needle.jsonl"]


def cpu_run(argv, out_path):
    """Runs argv with stdout to out_path; returns the child's CPU seconds (user + system)."""
    with open(out_path, "wb") as out:
        p = subprocess.Popen(argv, stdout=out)
        _, status, ru = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("bench_grade_cmd: %s exited with status %d" % (argv[0], status))
    return ru.ru_utime + ru.ru_stime


def scores_dsa(path):
    got = {}
    for line in open(path, encoding="utf-8"):
        r = json.loads(line)
        got[r["line"]] = r.get("score", "skipped")
    return got


def scores_ref(path):
    got = {}
    for line in open(path, encoding="utf-8"):
        n, s = line.split()
        got[int(n)] = s if s == "skipped" else float(s)
    return got


def bench(name, data, dsa, rounds, tmp):
    size = os.path.getsize(data)
    lines = sum(1 for _ in open(data, "rb"))
    t_dsa, t_py = [], []
    for _ in range(rounds):
        t_dsa.append(cpu_run([dsa, "grade", "mrcr", "-q", data], os.path.join(tmp, "dsa.out")))
        t_py.append(cpu_run([sys.executable, os.path.join(HERE, "grade_ref.py"), data],
                            os.path.join(tmp, "ref.out")))
    a, b = scores_dsa(os.path.join(tmp, "dsa.out")), scores_ref(os.path.join(tmp, "ref.out"))
    same = sum(1 for k in b if a.get(k) == b[k])
    print("%-6s %6d lines %6.1f MB  dsa-eval min %.3f s median %.3f s   CPython min %.3f s "
          "median %.3f s   ratio min %.1fx median %.1fx   identical scores %d / %d"
          % (name, lines, size / 1e6, min(t_dsa), statistics.median(t_dsa), min(t_py),
             statistics.median(t_py), min(t_py) / min(t_dsa),
             statistics.median(t_py) / statistics.median(t_dsa), same, len(b)))
    return same == len(b) == len(a)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--pairs", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    dsa = os.path.join(args.build, "dsa-eval")
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        mixed = os.path.join(tmp, "mixed.jsonl")
        subprocess.run([sys.executable, os.path.join(HERE, "make_grade_pairs.py"),
                        str(args.pairs), mixed], check=True)
        logs = os.path.join(tmp, "logs.jsonl")
        with open(logs, "wb") as out:
            for _ in range(20):
                for name in LOGS:
                    with open(os.path.join(ROOT, "tests", "data", "mrcr", name), "rb") as f:
                        out.write(f.read())
        print("grade mrcr, whole process, CPU seconds (user+sys) over %d rounds each"
              % args.rounds)
        ok = bench("mixed", mixed, dsa, args.rounds, tmp) and ok
        ok = bench("logs", logs, dsa, args.rounds, tmp) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
