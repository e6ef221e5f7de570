#!/usr/bin/env python3
# Writes a small indexer trace file (safetensors, docs/kernels.md "Trace files") with the
# standard library only: random bf16 k/q/w whose per-vector scale varies, the LayerNorm and a
# plain-theta RoPE table. An independent writer of the format, for the CLI tests.
# Usage: make_trace.py OUT T M H [bad-kind]
# SPDX-License-Identifier: GPL-3.0-or-later
import json
import math
import random
import struct
import sys


def bf16(x):
    u = struct.unpack("<I", struct.pack("<f", x))[0]
    u += 0x7FFF + ((u >> 16) & 1)  # round to nearest even
    return (u >> 16) & 0xFFFF


def main():
    out, T, M, H = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    bad = sys.argv[5] if len(sys.argv) > 5 else ""
    rnd = random.Random(5)
    vocab = [[rnd.gauss(0, 1) for _ in range(128)] for _ in range(50)]
    toks = [rnd.randrange(50) for _ in range(T)]
    tensors = {}

    def bf16_vecs(vecs):
        return struct.pack("<%dH" % sum(len(v) for v in vecs), *[bf16(x) for v in vecs for x in v])

    k = []
    for t in range(T):
        a = math.exp(0.5 * rnd.gauss(0, 1))
        k.append([a * (vocab[toks[t]][d] + 0.5 * rnd.gauss(0, 1)) for d in range(128)])
    qpos = list(range(T - M, T))
    q, w = [], []
    for p in qpos:
        for h in range(H):
            b = math.exp(0.75 * rnd.gauss(0, 1))
            q.append([b * (vocab[toks[p]][d] + rnd.gauss(0, 1)) for d in range(128)])
        w.append([0.5 + 0.5 * rnd.gauss(0, 1) for _ in range(H)])
    cos = [math.cos(p * 10000.0 ** (-2.0 * i / 64)) for p in range(T) for i in range(32)]
    sin = [math.sin(p * 10000.0 ** (-2.0 * i / 64)) for p in range(T) for i in range(32)]
    tensors["k_raw"] = ("BF16", [T, 128], bf16_vecs(k))
    tensors["q_raw"] = ("BF16", [M, H, 128], bf16_vecs(q))
    tensors["w_raw"] = ("BF16", [M, H], bf16_vecs(w))
    tensors["q_pos"] = ("I64", [M], struct.pack("<%dq" % M, *qpos))
    tensors["tokens"] = ("I32", [T], struct.pack("<%di" % T, *toks))
    tensors["ln_w"] = ("F32", [128], struct.pack("<128f", *[1.0 + 0.1 * rnd.gauss(0, 1) for _ in range(128)]))
    tensors["ln_b"] = ("F32", [128], struct.pack("<128f", *[0.02 * rnd.gauss(0, 1) for _ in range(128)]))
    tensors["cos"] = ("F32", [T, 32], struct.pack("<%df" % len(cos), *cos))
    tensors["sin"] = ("F32", [T, 32], struct.pack("<%df" % len(sin), *sin))
    if bad == "dtype":
        tensors["k_raw"] = ("F16",) + tensors["k_raw"][1:]
    if bad == "nan-q":  # every q element NaN (0x7fc0 in bf16)
        tensors["q_raw"] = ("BF16", [M, H, 128], struct.pack("<H", 0x7FC0) * (M * H * 128))
    if bad == "inf-k":  # one +Inf in k
        raw = bytearray(tensors["k_raw"][2])
        raw[200:202] = struct.pack("<H", 0x7F80)
        tensors["k_raw"] = ("BF16", [T, 128], bytes(raw))
    header, data = {"__metadata__": {"rope": "neox", "model": "make_trace.py"}}, b""
    for name, (dt, shape, raw) in tensors.items():
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if bad == "offsets":
        header["q_raw"]["data_offsets"][1] += 2
    if bad == "overlap":  # w_raw's bytes inside q_raw's
        qb = header["q_raw"]["data_offsets"][0]
        wb, we = header["w_raw"]["data_offsets"]
        header["w_raw"]["data_offsets"] = [qb, qb + (we - wb)]
    h = json.dumps(header)
    if bad == "duplicate":  # a second "k_raw" entry: json.dumps never writes one
        h = h[:-1] + ', "k_raw": ' + json.dumps(header["k_raw"]) + "}"
    h = h.encode()
    h += b" " * (-len(h) % 8)
    blob = struct.pack("<Q", len(h)) + h + data
    if bad == "truncated":
        blob = blob[: len(blob) - 100]
    with open(out, "wb") as f:
        f.write(blob)


if __name__ == "__main__":
    main()
