#!/usr/bin/env python3
# The reference side of bench/bench_grade_cmd.py: what a user of Python does to regrade an MRCR
# JSONL file, json.loads of every line and the official grade() (docs/mrcr.md "Grading"),
# with the key rules of `dsa-eval grade mrcr` (docs/grade.md "Input keys"). Prints one line
# per input line: the line number and repr(score), or "skipped".
#   python3 bench/grade_ref.py FILE > scores.txt
# SPDX-License-Identifier: GPL-3.0-or-later
import json
import re
import sys
from difflib import SequenceMatcher

PREPEND = re.compile(r"Prepend (\S+) to the ")


def grade(response, answer, random_string_to_prepend) -> float:
    if not response.startswith(random_string_to_prepend):
        return 0
    response = response.removeprefix(random_string_to_prepend)
    answer = answer.removeprefix(random_string_to_prepend)
    return float(SequenceMatcher(None, response, answer).ratio())


def first(d, *keys):
    for k in keys:
        if k in d:
            return d[k]
    return None


def main():
    out = []
    with open(sys.argv[1], encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            d = json.loads(line)
            response = first(d, "response", "model_response")
            if response is None and "error" in d:
                out.append("%d skipped" % lineno)
                continue
            prefix = first(d, "prefix", "random_string_to_prepend")
            if prefix is None:
                q = d["input"]
                if isinstance(q, list):
                    q = q[-1]
                if isinstance(q, dict):
                    q = q["content"]
                prefix = PREPEND.search(q).group(1)
            score = grade(response or "", first(d, "answer", "ground_truth"), prefix)
            out.append("%d %r" % (lineno, float(score)))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
