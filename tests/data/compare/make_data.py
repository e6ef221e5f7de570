#!/usr/bin/env python3
# Generates the small run files the compare/report tests read (checked in; rerun to remake).
# Deterministic: Python's random.Random(seed).random() is stable across Python 3 versions.
# SPDX-License-Identifier: GPL-3.0-or-later
import json, os, random

HERE = os.path.dirname(os.path.abspath(__file__))
BINS = [("≤8K", 8192), ("≤16K", 16384), ("≤32K", 32768)]


def header(eval_, run, backend, extra=None):
    h = {"dsa_eval_run": 1, "tool": {"version": "0.1.0", "git": "test"},
         "command": ["dsa-eval", eval_, "--endpoint", backend["url"]], "eval": eval_, "run": run,
         "created": "2026-11-30T12:00:00Z",
         "match": {"dataset": "openai/mrcr", "revision": "f4c69fae7cf81f7ca26b9fee34b392a50f6b8a1d"},
         "dataset": {"name": "openai/mrcr", "revision": "f4c69fae7cf81f7ca26b9fee34b392a50f6b8a1d",
                     "needles": 8},
         "backend": backend, "params": {"temperature": 0, "max_tokens": 4096, "seed": 42}}
    if extra:
        h.update(extra)
    return h


def write(path, hdr, recs):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        if hdr is not None:
            f.write(json.dumps(hdr, ensure_ascii=False, sort_keys=True) + "\n")
        for r in recs:
            f.write(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n")


def mrcr_records(rng, shift, run_shift, n=12, fail_ids=(), excl_ids=(), lat_scale=1.0):
    recs = []
    k = 0
    for label, tok in BINS:
        for j in range(n):
            rid = "n8/r%04d" % k
            base_q = 0.55 + 0.4 * ((k * 37) % 11) / 10.0  # sample difficulty
            noise = rng.random() * 0.2 - 0.1
            s = min(1.0, max(0.0, round(base_q + shift + run_shift + noise, 6)))
            lat = round((800 + 40 * (k % 7)) * lat_scale * (1 + 0.02 * (rng.random() - 0.5)), 3)
            r = {"id": rid, "bin": label, "bin_tokens": tok, "status": "ok", "score": s,
                 "error": None, "latency_ms": lat}
            if rid in excl_ids:
                r.update(status="excluded", score=None, latency_ms=None,
                         error="over_context: 270000 prompt tokens + 4096 > 262144")
            elif rid in fail_ids:
                r.update(status="failed", score=None, latency_ms=None, error="HTTP 500")
            recs.append(r)
            k += 1
    return recs


def main():
    be_main = {"kind": "endpoint", "url": "http://localhost:8000", "model": "deepseek-v3.2",
               "server": "vllm 0.11.0 (main 1a2b3c)"}
    be_pr = {"kind": "endpoint", "url": "http://localhost:8001", "model": "deepseek-v3.2",
             "server": "vllm 0.11.0 (pr 4d5e6f)"}
    excl = {"n8/r0030"}
    write(f"{HERE}/main/run-001.jsonl", header("mrcr", 1, be_main),
          mrcr_records(random.Random(1), 0.0, 0.0, excl_ids=excl))
    write(f"{HERE}/pr/run-001.jsonl", header("mrcr", 1, be_pr),
          mrcr_records(random.Random(2), -0.03, 0.0, excl_ids=excl, fail_ids={"n8/r0005"},
                       lat_scale=0.97))
    write(f"{HERE}/main-again/run-001.jsonl", header("mrcr", 1, be_main),
          mrcr_records(random.Random(3), 0.0, 0.0, excl_ids=excl))
    # three runs per side; candidate run 3 collapses in every bin (a run-level effect)
    for q in range(3):
        write(f"{HERE}/main3/run-%03d.jsonl" % (q + 1), header("mrcr", q + 1, be_main),
              mrcr_records(random.Random(10 + q), 0.0, 0.0, excl_ids=excl))
        write(f"{HERE}/pr3/run-%03d.jsonl" % (q + 1), header("mrcr", q + 1, be_pr),
              mrcr_records(random.Random(20 + q), 0.0, -0.25 if q == 2 else 0.0, excl_ids=excl))
    # plain score files: no header, only id/bin/score
    rng = random.Random(5)
    for name, shift in (("base", 0.0), ("cand", 0.02)):
        recs = [{"id": "s%03d" % k, "bin": ["8k", "16k"][k % 2],
                 "score": round(min(1.0, max(0.0, 0.6 + shift + 0.3 * (rng.random() - 0.5))), 4)}
                for k in range(20)]
        write(f"{HERE}/plain/{name}.jsonl", None, recs)
    # GSM8K greedy: 0/1 correct, output text, acceptance length in the header
    for name, al, diff in (("main", 3.4904, False), ("pr", 3.4904, False), ("pr-diff", 3.4711, True)):
        be = be_main if name == "main" else be_pr
        recs = []
        for k in range(32):
            out = "The answer is %d.\n#### %d" % (k * 3, k * 3)
            correct = 0 if k % 8 == 3 else 1
            if diff and k == 17:
                out = out.replace("answer", "result")
                correct = 0
            recs.append({"id": "q%04d" % k, "bin": "all", "status": "ok", "score": correct,
                         "error": None, "output": out,
                         "prompt_sha256": "%064x" % (k * 7919)})
        hdr = header("gsm8k", 1, be, {"mtp": {"acceptance_length": al},
                                       "dataset": {"name": "gsm8k", "revision": "main"}})
        write(f"{HERE}/gsm8k/{name}.jsonl", hdr, recs)

    # The seed's 256K episode in form: one candidate run shows a large negative difference
    # (a run-level shift of -0.10), the runs repeated twice more do not, and the three runs
    # pooled give a CI across zero. Each sample has a persistent effect of the change (sd
    # 0.15, mean 0) and per-run noise (sd 0.10).
    rng = random.Random(256)
    n = 94
    alpha = [rng.random() for _ in range(n)]
    gamma = [rng.gauss(0, 0.15) for _ in range(n)]
    shifts = [-0.10, 0.02, 0.03]
    clamp = lambda x: round(min(1.0, max(0.0, x)), 6)
    for q in range(3):
        for side, be in (("main", be_main), ("pr", be_pr)):
            recs = []
            for i in range(n):
                eps = rng.gauss(0, 0.10)
                s = alpha[i] + eps if side == "main" else alpha[i] + gamma[i] + shifts[q] + eps
                recs.append({"id": "n8/r%04d" % (500 + i), "bin": "≤256K", "bin_tokens": 262144,
                             "status": "ok", "score": clamp(s), "error": None})
            write(f"{HERE}/episode256k/{side}/run-%03d.jsonl" % (q + 1),
                  header("mrcr", q + 1, be), recs)


if __name__ == "__main__":
    main()
