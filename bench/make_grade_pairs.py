#!/usr/bin/env python3
# Writes N mixed MRCR grading lines (JSONL) for bench/bench_grade_cmd.py, deterministically
# (seeded), from the real log rows of tests/data/mrcr:
#   python3 bench/make_grade_pairs.py N OUT.jsonl
# Each answer is the ground truth of a real row under a new 10-character prefix; the response
# is, in turn: the answer with
# word-level edits (40 %), the answer itself (15 %), other real rows' responses (20 %), a
# response without the prefix (10 %), or the answer with edits and non-ASCII text (emoji,
# CJK, accents: 15 %). Half of the lines use the keys of `grade mrcr`'s own format (id,
# prefix, response, answer), half the public logs' format (dataset_index, needle_count,
# input as a message list: two earlier turns of about 3.3k code points each from other rows,
# then the question; model_response, ground_truth, extra fields); half are written with
# json.dumps' default ensure_ascii (\uXXXX escapes), half as raw UTF-8.
# SPDX-License-Identifier: GPL-3.0-or-later
import glob
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LOGS = sorted(glob.glob(os.path.join(HERE, "..", "tests", "data", "mrcr", "*.jsonl")))
EXTRA = ["é", "ü", "ß", "漢字", "😀", "🌍", "ñ", "Ω", "—", "“quoted”", "日本語のテキスト"]


def rows():
    out = []
    for path in LOGS:
        for line in open(path, encoding="utf-8"):
            r = json.loads(line)
            if "model_response" in r and len(r["ground_truth"]) > 10:
                out.append(r)
    return out


def edit(rng, text, extra):
    words = text.split(" ")
    for _ in range(rng.randint(1, 30)):
        k = rng.randrange(len(words))
        op = rng.random()
        if op < 0.4:
            del words[k]
            if not words:
                words = [""]
        elif op < 0.7:
            words.insert(k, rng.choice(words))
        else:
            words[k] = words[k][::-1]
        if extra:
            words.insert(rng.randrange(len(words) + 1), rng.choice(EXTRA))
    return " ".join(words)


def context(rng, src):
    text = ""
    while len(text) < 3300:
        text += rng.choice(src)["ground_truth"][10:] + "\n\n"
    return text


def main():
    n, out_path = int(sys.argv[1]), sys.argv[2]
    rng = random.Random(20261201)
    src = rows()
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    with open(out_path, "w", encoding="utf-8") as f:
        for i in range(n):
            r1, r2 = rng.choice(src), rng.choice(src)
            prefix = "".join(rng.choice(alphabet) for _ in range(10))
            body = r1["ground_truth"][10:]
            answer = prefix + body
            kind = rng.random()
            if kind < 0.40:
                response = prefix + edit(rng, body, False)
            elif kind < 0.55:
                response = answer
            elif kind < 0.75:
                o1, o2 = rng.choice(src), rng.choice(src)
                response = prefix + o1["model_response"][10:]
            elif kind < 0.85:
                response = "Sure! " + answer
            else:
                response = prefix + edit(rng, body, True)
            if i % 2 == 0:
                rec = {"id": "n%d/r%04d" % (2 + 6 * (i % 4 == 0), i), "prefix": prefix,
                       "response": response, "answer": answer}
            else:
                question = ("Prepend %s to the %dth (1 indexed) email about faculty. Do not "
                            "include any other text in your response." % (prefix, 1 + i % 8))
                rec = {"timestamp": "2025-12-22 21:06:52", "dataset_index": i,
                       "needle_count": 8, "token_count": 1000 + 37 * i,
                       "latency_seconds": 1.5 + i / 1000, "model": "bench",
                       "input": [{"role": "user", "content": context(rng, src)},
                                 {"role": "assistant", "content": context(rng, src)},
                                 {"role": "user", "content": question}],
                       "model_response": response, "ground_truth": answer, "score": 0.0}
            f.write(json.dumps(rec, ensure_ascii=(i // 2) % 2 == 0) + "\n")


if __name__ == "__main__":
    main()
