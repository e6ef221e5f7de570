#!/usr/bin/env python3
# Reference checks for tests/unit/test_ruler.c: rebuilds each RULER prompt from its parts with
# RULER's own string operations in CPython (str.replace, str.format, " ".join, the essay's
# re.sub(r"\s+", " ", ...).split(" ")) and requires the bytes dsa-eval generated.
# Usage: sample_ref.py HAYSTACK.txt < samples.jsonl   (one object a line: id, input, outputs)
# The templates are transcribed from the sources docs/ruler.md names.
# SPDX-License-Identifier: GPL-3.0-or-later
import json
import re
import sys
from collections import Counter

NIAH = (
    "Some special magic {type_needle_v} are hidden within the following text. Make sure to "
    "memorize it. I will quiz you about the {type_needle_v} afterwards.\n{context}\nWhat are "
    "all the special magic {type_needle_v} for {query} mentioned in the provided text?"
    " The special magic {type_needle_v} for {query} mentioned in the provided text are"
)
NEEDLE = "One of the special magic {type_needle_v} for {key} is: {value}."
NOISE = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."
VT = (
    "Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n"
    "{context}\nQuestion: Find all variables that are assigned the value {query} in the text "
    "above. Answer: According to the chain(s) of variable assignment in the text above, {num_v} "
    "variables are assgined the value {query}, they are: "
)
CWE = (
    "Below is a numbered list of words. In these words, some appear more often than others. "
    "Memorize the ones that appear most often.\n{context}\nQuestion: What are the 10 most common "
    "words in the above list? Answer: The top 10 words that appear most often in the list are:"
)
# task: (haystack, value type, num_k, num_v, num_q)
TASKS = {
    "niah_single_1": ("repeat", "numbers", 1, 1, 1),
    "niah_single_2": ("essay", "numbers", 1, 1, 1),
    "niah_single_3": ("essay", "uuids", 1, 1, 1),
    "niah_multikey_1": ("essay", "numbers", 4, 1, 1),
    "niah_multikey_2": ("needle", "numbers", 1, 1, 1),
    "niah_multikey_3": ("needle", "uuids", 1, 1, 1),
    "niah_multivalue": ("essay", "numbers", 1, 4, 1),
    "niah_multiquery": ("essay", "numbers", 1, 1, 4),
}


def fail(sid, what):
    sys.exit(f"{sid}: {what}")


def check_niah(s, words):
    hay, tv, nk, nv, nq = TASKS[s["id"].split("/")[0]]
    nk = max(nk, nq)  # RULER: num_needle_k = max(num_needle_k, num_needle_q)
    inp, outs = s["input"], s["outputs"]
    pat = re.escape(NEEDLE).replace(r"\{type_needle_v\}", tv)
    pat = pat.replace(r"\{key\}", "(?P<key>[^ ]+)").replace(r"\{value\}", "(?P<value>[^ ]+)")
    found = [(m.group("key"), m.group("value"), m.group(0)) for m in re.finditer(pat, inp)]
    keys_of = {v: k for k, v, _ in found}
    query_keys = []
    for v in outs:
        if v not in keys_of:
            fail(s["id"], f"no needle holds {v}")
        if keys_of[v] not in query_keys:
            query_keys.append(keys_of[v])
    if len(query_keys) != nq or len(outs) != nq * nv:
        fail(s["id"], "wrong number of asked keys or answers")
    query = ", ".join(query_keys[:-1]) + ", and " + query_keys[-1] if nq > 1 else query_keys[0]
    template, v = NIAH, tv
    if nq * nv == 1:
        template = template.replace("Some", "A").replace("are all", "is")
        template = template.replace("are", "is").replace("answers", "answer")
        v = tv[:-1]
    head = template.format(type_needle_v=v, context="\x00", query=query).split("\x00")[0]
    tail = template.format(type_needle_v=v, context="\x00", query=query).split("\x00")[1]
    if not inp.startswith(head) or not inp.endswith(tail):
        fail(s["id"], "template head or tail differs")
    context = inp[len(head) : len(inp) - len(tail)]
    if template.format(type_needle_v=v, context=context, query=query) != inp:
        fail(s["id"], "template.format differs")
    real = [n for n in found if n[0] in set(keys_of[o] for o in outs) or hay != "needle"]
    if hay == "repeat":
        lines = context.split("\n")
        if any(l != NOISE and not re.fullmatch(pat, l) for l in lines):
            fail(s["id"], "a line is neither noise nor a needle")
        if sum(1 for l in lines if l != NOISE) != nk * nv:
            fail(s["id"], "needle count")
    elif hay == "needle":
        lines = context.split("\n")
        if any(not re.fullmatch(pat, l) for l in lines):
            fail(s["id"], "a line is not in the needle format")
        if len(set(k for k, _, _ in found)) != len(found):
            fail(s["id"], "a key repeats")
    else:
        if len(found) != nk * nv:
            fail(s["id"], "needle count")
        text = context
        for _, _, needle in real:
            text = text.replace(" " + needle, "", 1)
        # depth 0 or 100 leaves an empty first or last piece: " ".join gives a space there
        text = text[1:] if context.startswith(" ") else text
        text = text[:-1] if context.endswith(" ") else text
        n = len(text.split(" "))
        want = " ".join((words * (n // len(words) + 1))[:n])
        if text != want:
            fail(s["id"], "the essay without its needles is not the haystack's first words")


def check_chain(sid, text, outs):
    m = re.search(r"assigned the value (\d+) in the text above", text)
    head, tail = VT.split("{context}")
    tail = tail.format(query=m.group(1), num_v=len(outs))
    context = text[len(head) : len(text) - len(tail)]
    if VT.format(context=context, query=m.group(1), num_v=len(outs)) != text:
        fail(sid, "template.format differs")
    chain = [f"VAR {outs[0]} = {m.group(1)}"]
    chain += [f"VAR {outs[j + 1]} = VAR {outs[j]} " for j in range(len(outs) - 1)]
    if re.findall(r"VAR [A-Z]+ = (?:VAR [A-Z]+ |\d+)", context) != chain:
        fail(sid, "chain statements or order")
    noise = context
    for st in chain:
        noise = noise.replace(st, "", 1)
    if set(noise.split()) - set(NOISE.split()):
        fail(sid, "text other than noise")


def check_vt(s):
    inp, outs = s["input"], s["outputs"]
    cut = inp.rfind("Memorize and track the chain(s)")
    icl, main = inp[:cut], inp[cut:]
    if not icl.endswith("\n\n\n\n") or not icl.startswith("Memorize and track the chain(s)"):
        fail(s["id"], "few-shot example")
    # the example: its prompt, " ", its five 3-letter names, "\n\n" (+ "\n\n" before the task)
    ex, names = icl[:-4].rsplit("they are: ", 1)
    names = names.split(" ")[1:]
    if len(names) != 5 or any(not re.fullmatch("[A-Z]{3}", x) for x in names):
        fail(s["id"], "few-shot answer")
    check_chain(s["id"] + " (example)", ex + "they are: ", names)
    check_chain(s["id"], main, outs)


def check_cwe(s):
    inp, outs = s["input"], s["outputs"]
    ex_end = inp.index("list are:") + len("list are:")
    nl = inp.index("\n", ex_end)
    example, main = inp[:nl], inp[nl + 1 :]
    head, tail = CWE.split("{context}")
    context = main[len(head) : len(main) - len(tail)]
    if CWE.format(context=context) != main:
        fail(s["id"], "template.format differs")
    entries = re.findall(r"(\d+)\. ([a-z]+)", context)
    if [int(i) for i, _ in entries] != list(range(1, len(entries) + 1)):
        fail(s["id"], "numbering")
    if " ".join(f"{i}. {w}" for i, w in entries) != context:
        fail(s["id"], "list format")
    c = Counter(w for _, w in entries)
    if sorted(w for w, k in c.items() if k == 30) != sorted(outs) or set(c.values()) != {30, 3}:
        fail(s["id"], "frequencies")
    ex_ctx = example[len(head) : example.index(tail)]
    ex_entries = re.findall(r"(\d+)\. ([a-z]+)", ex_ctx)
    if " ".join(f"{i + 1}. {w}" for i, (_, w) in enumerate(ex_entries)) != ex_ctx:
        fail(s["id"], "example list format")
    ce = Counter(w for _, w in ex_entries)
    ans = example[example.index(tail) + len(tail) :]
    ex_common = [w for _, w in re.findall(r"(\d+)\. ([a-z]+)", ans)]
    if sorted(w for w, k in ce.items() if k == 10) != sorted(ex_common) or len(ce) != 40:
        fail(s["id"], "example frequencies")
    if not ans.startswith("1. "):
        fail(s["id"], "example answer join")


def main():
    essay = open(sys.argv[1], encoding="utf-8").read()
    words = re.sub(r"\s+", " ", essay).strip().split(" ")
    n = 0
    for line in sys.stdin:
        s = json.loads(line)
        task = s["id"].split("/")[0]
        if task == "vt":
            check_vt(s)
        elif task == "cwe":
            check_cwe(s)
        else:
            check_niah(s, words)
        n += 1
    print(f"ok {n}")


if __name__ == "__main__":
    main()
