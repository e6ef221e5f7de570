#!/usr/bin/env python3
# The peer of `dsa-eval kernels bench`'s S4 rows: torch.topk (k = 2048, fp32) on the same shapes
# and the same input distribution (uniform in [0, 1000) at a 1e-3 step), timed the same way: 3
# warm-up calls, then N calls each between two CUDA events, inputs rotated over enough copies to
# exceed 3 x L2, median and minimum. Run on the GPU machine right after `kernels bench`.
#   python3 bench/topk_peer.py [--iters N] [--json]
# SPDX-License-Identifier: GPL-3.0-or-later
import argparse
import json
import statistics

import torch

SHAPES = [(1, 128 * 1024), (8, 256 * 1024), (64, 256 * 1024)]
K = 2048


def time_topk(rows, length, iters, l2):
    set_bytes = rows * length * 4
    sets = 1 if set_bytes > 3 * l2 else max(2, min(512, -(-3 * l2 // set_bytes)))
    gen = torch.Generator(device="cuda").manual_seed(1)
    xs = [torch.randint(0, 1000003, (rows, length), device="cuda", generator=gen)
          .to(torch.float32).mul_(1e-3) for _ in range(sets)]
    for i in range(3):
        torch.topk(xs[i % sets], K, dim=1, sorted=False)
    torch.cuda.synchronize()
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(iters + 1)]
    ev[0].record()
    for i in range(iters):
        torch.topk(xs[(3 + i) % sets], K, dim=1, sorted=False)
        ev[i + 1].record()
    torch.cuda.synchronize()
    us = [1e3 * ev[i].elapsed_time(ev[i + 1]) for i in range(iters)]
    return statistics.median(us), min(us), sets


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    props = torch.cuda.get_device_properties(0)
    l2 = props.L2_cache_size
    rows = []
    for r, n in SHAPES:
        med, mn, sets = time_topk(r, n, a.iters, l2)
        rows.append({"shape": f"k={K} rows={r} len={n // 1024}K", "median_us": round(med, 2),
                     "min_us": round(mn, 2), "sets": sets})
    if a.json:
        print(json.dumps({"peer": f"torch.topk (torch {torch.__version__})", "device": props.name,
                          "l2_bytes": l2, "iters": a.iters, "cases": rows}))
        return
    print(f"torch.topk (torch {torch.__version__}) on {props.name}, L2 {l2 / 1e6:.0f} MB; "
          f"median of {a.iters} calls after 3 warm-ups, sorted=False")
    print(f"{'stage':5} {'shape':24} {'median_us':>10} {'min_us':>9} {'sets':>4}")
    for row in rows:
        print(f"{'S4':5} {row['shape']:24} {row['median_us']:10.1f} {row['min_us']:9.1f} "
              f"{row['sets']:4d}")


if __name__ == "__main__":
    main()
