#!/usr/bin/env python3
# The reference side of fuzz_grade_diff: every line {"prefix", "response", "answer", "score"}
# that the target wrote is graded again with CPython's difflib (openai/mrcr's grade(): 0
# without the prefix, else SequenceMatcher(None, response.removeprefix(p),
# answer.removeprefix(p)).ratio())
# and must be bit-equal. Prints "N cases, M distinct, all equal" or the first mismatches.
# Usage: grade_diff.py FILE
# SPDX-License-Identifier: GPL-3.0-or-later
import difflib
import json
import sys


def grade(p, r, a):
    if not r.startswith(p):
        return 0.0
    return difflib.SequenceMatcher(None, r.removeprefix(p), a.removeprefix(p)).ratio()


def main():
    n, seen, bad = 0, set(), []
    with open(sys.argv[1], encoding="utf-8") as f:
        for line in f:
            c = json.loads(line)
            n += 1
            key = (c["prefix"], c["response"], c["answer"])
            if key in seen:
                continue
            seen.add(key)
            want = grade(*key)
            if want != c["score"]:
                bad.append((key, c["score"], want))
    if bad:
        for key, got, want in bad[:5]:
            print("mismatch: %r -> %r, difflib %r" % (key, got, want))
        sys.exit(1)
    if not seen:
        print("no cases")
        sys.exit(1)
    print("%d cases, %d distinct, all equal" % (n, len(seen)))


if __name__ == "__main__":
    main()
