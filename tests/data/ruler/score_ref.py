#!/usr/bin/env python3
# Reference for tests/unit/test_ruler.c: RULER's postprocess_pred, string_match_all and
# string_match_part, in RULER's own terms (Python's str.strip, re.sub, str.lower and `in`),
# on one JSON object a line: {"pred": str, "refs": [str]} -> {"post": str, "all": x, "part": y}.
# SPDX-License-Identifier: GPL-3.0-or-later
import json
import re
import sys

NP = re.compile(r"[\x00-\x1f]")


def post(pred):
    return NP.sub("\n", pred.strip()).strip()


for line in sys.stdin:
    case = json.loads(line)
    p = post(case["pred"])
    hits = [1.0 if r.lower() in p.lower() else 0.0 for r in case["refs"]]
    out = {
        "post": p,
        "all": sum(hits) / len(hits) if hits else 0.0,
        "part": max(hits) if hits else 0.0,
    }
    print(json.dumps(out))
