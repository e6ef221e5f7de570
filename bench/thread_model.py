#!/usr/bin/env python3
# thread_model: the wall time a run would take on free cores, from the CPU time of each of its
# threads, for hosts whose load makes the wall clock meaningless.
#
#   perf record -F 1999 -o T2.data build/dsa-eval compare BASE CAND --json --threads 2 >/dev/null
#   perf record -F 1999 -o T1.data build/dsa-eval compare BASE CAND --json --threads 1 >/dev/null
#   python3 bench/thread_model.py T2.data [T1.data]
#
# perf samples each thread's CPU time (cpu-clock, not wall). The first thread is the main one;
# every other thread works beside it for the span of its own samples (compare's helpers: the
# file readers, the bootstrap workers, the freers each live for one phase). The critical path
# is the main thread's samples outside those spans plus, for each span, the larger of the main
# thread's samples in it and the helper's. With T1.data the modelled speed-up is T1's samples
# over that path (the same work on one thread); without it, the 2-thread run's own total.
# SPDX-License-Identifier: GPL-3.0-or-later
import collections
import subprocess
import sys


def samples(path):
    out = subprocess.run(["perf", "script", "-i", path, "-F", "tid,time"], check=True,
                         capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        p = line.replace(":", " ").split()
        if len(p) >= 2:
            rows.append((int(p[0]), float(p[1])))
    return rows


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: thread_model.py RUN.data [ONE_THREAD.data]")
    rows = samples(sys.argv[1])
    count = collections.Counter(t for t, _ in rows)
    first = {t: min(tm for tt, tm in rows if tt == t) for t in count}
    last = {t: max(tm for tt, tm in rows if tt == t) for t in count}
    main_t = min(count, key=lambda t: first[t])
    helpers = sorted((t for t in count if t != main_t), key=lambda t: first[t])
    main_times = sorted(tm for tt, tm in rows if tt == main_t)
    crit, prev = 0, float("-inf")
    print("thread %d (main): %d samples" % (main_t, count[main_t]))
    for t in helpers:
        a, b = first[t], last[t]
        alone = sum(1 for tm in main_times if prev < tm < a)
        beside = sum(1 for tm in main_times if a <= tm <= b)
        crit += alone + max(beside, count[t])
        print("thread %d: %d samples; main thread %d before it alone, %d beside it"
              % (t, count[t], alone, beside))
        prev = max(prev, b)
    tail = sum(1 for tm in main_times if tm > prev)
    crit += tail
    total = len(rows)
    ref = len(samples(sys.argv[2])) if len(sys.argv) == 3 else total
    print("main thread alone at the end: %d samples" % tail)
    print("critical path %d samples; %s %d samples; modelled speed-up %.2fx"
          % (crit, "one-thread run" if len(sys.argv) == 3 else "all threads", ref, ref / crit))


if __name__ == "__main__":
    main()
