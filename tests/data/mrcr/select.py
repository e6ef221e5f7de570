#!/usr/bin/env python3
# Regenerates the MRCR log subsets of this folder from the upstream logs (README.md here):
#   python3 select.py DIR   (DIR: the folder of evaluation_log_gemini_3_*.jsonl of
#                            2211427551/OpenAI-MRCR-Fork at ad1a7a83982fd0b75028b939ce80c050d5d4ce08)
# Lines are copied byte for byte; lines.txt records which upstream lines each file holds.
# SPDX-License-Identifier: GPL-3.0-or-later
import json
import re
import sys

QUESTION = re.compile(r"^Prepend ([A-Za-z0-9]{10}) to the ([0-9]+)(?:st|nd|rd|th) \(1 indexed\) "
                      r"(.+?) about (.+)\. Do not include any other text in your response\.$")


def pick(rows, per_block, keep):
    """Lines (0-based) to keep: those `keep` says, plus the first `per_block` of each block of 100."""
    chosen, count = set(), {}
    for i, r in enumerate(rows):
        if keep(i, r):
            chosen.add(i)
    for i, r in enumerate(rows):
        b = r["dataset_index"] // 100
        if count.get(b, 0) < per_block and i not in chosen and "model_response" in r:
            chosen.add(i)
            count[b] = count.get(b, 0) + 1
    return chosen


BLOCK_TO_BIN = [5, 2, 6, 3, 0, 7, 4, 1]


def below(r):
    """The row's logged token count falls in the bin below its official (block) bin."""
    n, edge, b = r.get("token_count"), 8192, 0
    if not isinstance(n, int):
        return False
    while n > edge:
        edge, b = edge * 2, b + 1
    return b == BLOCK_TO_BIN[r["dataset_index"] // 100] - 1


def stripped(r):
    m = r.get("model_response")
    return isinstance(m, str) and m.strip() != m


def main(src):
    plan = {
        # line 1 holds the 2,170-character answer of the grader vectors; keep every error line
        "evaluation_log_gemini_3_pro_8needle.jsonl": (10, lambda i, r: i == 0 or "model_response" not in r),
        "evaluation_log_gemini_3_pro_2needle.jsonl": (100, lambda i, r: True),
        # every row where strip() changes the response (the official grade may differ there), and
        # every row whose token count lies in the bin below its block's bin
        "evaluation_log_gemini_3_flash_8needle.jsonl": (6, lambda i, r: stripped(r) or below(r)),
        "evaluation_log_gemini_3_flash_2needle.jsonl": (8, lambda i, r: stripped(r) or below(r) or
                                                        ("model_response" not in r and i < 40)),
    }
    manifest = []
    formats_seen = set()
    all_formats = {}
    raw = {}
    for name in plan:
        with open(f"{src}/{name}", "rb") as f:
            raw[name] = f.read().split(b"\n")[:-1]
    for name in ("evaluation_log_gemini_3_flash_8needle.jsonl", "evaluation_log_gemini_3_flash_2needle.jsonl"):
        for i, line in enumerate(raw[name]):
            r = json.loads(line)
            q = (r.get("input") or {}).get("content")
            m = QUESTION.match(q or "")
            if m and "token_count" in r:
                all_formats.setdefault(m.group(3), (name, i))
    for name, (per_block, keep) in plan.items():
        rows = [json.loads(l) for l in raw[name]]
        chosen = pick(rows, per_block, keep)
        if "flash" in name:
            for i in chosen:
                m = QUESTION.match((rows[i].get("input") or {}).get("content") or "")
                if m:
                    formats_seen.add(m.group(3))
        raw[name + ".chosen"] = chosen
    # every question format of the real data appears at least once in the flash subsets
    for fmt, (name, i) in sorted(all_formats.items()):
        if fmt not in formats_seen:
            raw[name + ".chosen"].add(i)
    for name in plan:
        chosen = sorted(raw[name + ".chosen"])
        with open(name, "wb") as out:
            for i in chosen:
                out.write(raw[name][i] + b"\n")
        manifest.append(f"{name}: " + " ".join(str(i + 1) for i in chosen))
    with open("lines.txt", "w") as f:
        f.write("# upstream line numbers (1-based) of each subset, in order\n")
        f.write("\n".join(manifest) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
