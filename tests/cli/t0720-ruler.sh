#!/usr/bin/env bash
# dsa-eval ruler: the RULER eval through the run loop — against the test server (chat and
# completions: the request carries the sample's input byte for byte, every score equals
# RULER's string_match_all computed by CPython on the recorded output), deterministic sample
# ids and inputs, resume, --shard + merge = the unsharded run, in-process on the CPU (needle
# retention and recall@k records), compare and report on its runs, and bad input.
# SPDX-License-Identifier: GPL-3.0-or-later
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/srvlib.sh"
require_python

R=("$DSA_BIN" ruler --tasks niah_single_1,niah_multivalue,vt,cwe --lengths 4k --limit 2)
start_server --seed 3 --log-requests "$TMP/req.jsonl" || { echo "Bail out! server"; exit 1; }
URL=$SERVER_URL

expect_success "chat run" "${R[@]}" --endpoint "$URL" --out "$TMP/a" -q
F=$TMP/a/run-001.jsonl
expect_eq "8 records" "$(tail -n +2 "$F" | wc -l | tr -d ' ')" 8
head -n 1 "$F" | grep -q '"eval":"ruler"' && ok "header eval" || not_ok "header eval"
head -n 1 "$F" | grep -q '"haystack":"kjv-genesis-2kings.txt"' && ok "header names the haystack" \
    || not_ok "header names the haystack"
grep -q '^4k  *8 ' "$TMP/out" && ok "summary row" || { not_ok "summary row"; sed 's/^/#   /' "$TMP/out"; }

# the requests: one user message holding the input whose sha256 the record keeps
"$DSA_PYTHON" - "$F" "$TMP/req.jsonl" <<'PY' && ok "chat bodies carry the inputs" || not_ok "chat bodies carry the inputs"
import hashlib, json, sys
recs = {json.loads(l)["input_sha256"]: json.loads(l) for l in open(sys.argv[1]).read().splitlines()[1:]}
seen = 0
for line in open(sys.argv[2]):
    r = json.loads(line)
    if r.get("path") != "/v1/chat/completions":
        continue
    b = json.loads(r["body"])
    (m,) = b["messages"]
    h = hashlib.sha256(m["content"].encode()).hexdigest()
    rec = recs[h]
    assert m["role"] == "user" and b["temperature"] == 0, b
    assert b["max_tokens"] == {"niah": 128, "vt": 30, "cwe": 120}[rec["task"].split("_")[0]], b
    seen += 1
assert seen == 8, seen
PY

# a server that answers every chat request with the references of two samples: scores of 1,
# of a part (cwe's ten words, three of them given) and 0, each equal to CPython's RULER scoring
"$DSA_PYTHON" - "$F" "$TMP/canned.json" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()[1:]]
by = {r["id"]: r for r in recs}
text = "Answer: " + " ".join(by["niah_single_1/4k/0000"]["references"]) + ". Also " + \
       ", ".join(by["cwe/4k/0001"]["references"][:3]) + "."
json.dump({"id": "c", "object": "chat.completion", "model": "dsa-test-model",
           "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop"}],
           "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}},
          open(sys.argv[2], "w"))
PY
start_server --seed 3 --canned "/v1/chat/completions=$TMP/canned.json" || { echo "Bail out! server"; exit 1; }
expect_success "chat run, canned answers" "${R[@]}" --endpoint "$SERVER_URL" --out "$TMP/c" -q
"$DSA_PYTHON" - "$TMP/c/run-001.jsonl" "$DSA_SRC/tests/data/ruler/score_ref.py" <<'PY' \
    && ok "scores = CPython string_match_all (1, a part, 0)" || not_ok "scores = CPython string_match_all (1, a part, 0)"
import json, subprocess, sys
recs = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()[1:]]
inp = "".join(json.dumps({"pred": r["output"], "refs": r["references"]}) + "\n" for r in recs)
ref = [json.loads(l) for l in subprocess.run([sys.executable, sys.argv[2]], input=inp, text=True,
                                              capture_output=True, check=True).stdout.splitlines()]
scores = {r["id"]: r["score"] for r in recs}
assert [r["score"] for r in recs] == [x["all"] for x in ref], (scores, ref)
assert scores["niah_single_1/4k/0000"] == 1.0 and scores["cwe/4k/0001"] == 0.3, scores
assert scores["vt/4k/0000"] == 0.0, scores
PY

# one request at a time: the records land in the order the samples are sent
expect_success "completions run" "${R[@]}" --endpoint "$URL" --api completions -c 1 --out "$TMP/p" -q
"$DSA_PYTHON" - "$TMP/p/run-001.jsonl" "$TMP/req.jsonl" <<'PY' && ok "completions bodies: the input as the prompt" || not_ok "completions bodies: the input as the prompt"
import hashlib, json, sys
shas = {json.loads(l)["input_sha256"] for l in open(sys.argv[1]).read().splitlines()[1:]}
got = {hashlib.sha256(json.loads(json.loads(l)["body"])["prompt"].encode()).hexdigest()
       for l in open(sys.argv[2]) if json.loads(l).get("path") == "/v1/completions"}
assert got == shas and len(shas) == 8, (len(got), len(shas))
PY
ids() { tail -n +2 "$1" | "$DSA_PYTHON" -c 'import json,sys; print(sorted((json.loads(l)["id"], json.loads(l)["input_sha256"]) for l in sys.stdin))'; }
expect_eq "the same samples in chat and completions runs" "$(ids "$TMP/p/run-001.jsonl")" "$(ids "$F")"
expect_eq "ids sent in task, length, index order" "$(tail -n +2 "$TMP/p/run-001.jsonl" | grep -o '"id":"[^"]*"' | head -3 | tr '\n' ' ')" \
    '"id":"niah_single_1/4k/0000" "id":"niah_single_1/4k/0001" "id":"niah_multivalue/4k/0000" '
expect_success "rerun resumes" "${R[@]}" --endpoint "$URL" --out "$TMP/a"
grep -q "resuming: 8 of 8 samples already done in '$TMP/a/run-001.jsonl': nothing left to do" "$TMP/err" \
    && ok "resume note" || { not_ok "resume note"; sed 's/^/#   /' "$TMP/err"; }
expect_code 6 "another seed is another run" "${R[@]}" --endpoint "$URL" --out "$TMP/a" --seed 9 -q

# shards merge into the unsharded run (records and match)
for i in 1 2 3; do
    expect_success "shard $i/3" "${R[@]}" --endpoint "$URL" --shard "$i/3" --out "$TMP/s$i" -q
done
expect_success "merge the shards" "$DSA_BIN" merge "$TMP/m.jsonl" "$TMP"/s{1,2,3}/run-001.jsonl
"$DSA_PYTHON" - "$F" "$TMP/m.jsonl" <<'PY' && ok "merged shards = the unsharded run" || not_ok "merged shards = the unsharded run"
import json, sys
V = {"latency_ms", "ttft_ms"}
def load(p):
    L = open(p).read().splitlines()
    recs = sorted((json.loads(l) for l in L[1:]), key=lambda r: r["id"])
    return json.loads(L[0])["match"], [{k: v for k, v in r.items() if k not in V} for r in recs]
(m1, r1), (m2, r2) = load(sys.argv[1]), load(sys.argv[2])
assert m1 == m2 and len(r1) == 8 and r1 == r2
PY

# compare, report and plan read its runs as they are
expect_success "compare two RULER runs" "$DSA_BIN" compare "$TMP/a" "$TMP/c"
grep -q '4k' "$TMP/out" && ok "compare prints the length bin" || not_ok "compare prints the length bin"
expect_success "report md" "$DSA_BIN" report "$TMP/a" "$TMP/c" --format md
grep -q '^### RULER: candidate vs baseline' "$TMP/out" && ok "report titled RULER" || { not_ok "report titled RULER"; head -3 "$TMP/out" | sed 's/^/#   /'; }
expect_success "plan from RULER runs" "$DSA_BIN" plan --from "$TMP/a" --bin 4k

# in-process: the needles' tokens in the selection
expect_success "in-process run (CPU)" "$DSA_BIN" ruler --backend inprocess --device cpu \
    --tasks niah_single_2,niah_multikey_1 --lengths 4k --limit 1 --topk 512 --max-query 4 \
    --out "$TMP/i" -q
"$DSA_PYTHON" - "$TMP/i/run-001.jsonl" <<'PY' && ok "in-process records: recall@k, needle retention" || not_ok "in-process records: recall@k, needle retention"
import json, sys
L = open(sys.argv[1]).read().splitlines()
h = json.loads(L[0])
assert h["match"]["backend"] == "inprocess" and h["backend"]["device"] == "cpu", h["match"]
# the needles' retrieval structure is planted in the proxy: named as for MRCR rows
assert h["match"]["proxy"] == "proxy-v2" and h["backend"]["proxy"] == "proxy-v2", h
recs = [json.loads(l) for l in L[1:]]
assert [r["id"] for r in recs] == ["niah_single_2/4k/0000", "niah_multikey_1/4k/0000"]
for r in recs:
    assert r["status"] == "ok" and 0 < r["score"] <= 1 and r["query_tokens"] == 4, r
    assert r["needle_tokens"] > 0 and 0 <= r["needle_retention"] <= 1, r
    assert r["needle_retention_golden"] >= 0.9, r  # the planted needle is what golden keeps
# multikey_1 holds three needles of other keys: distractors
assert recs[1]["distractor_tokens"] > 0 and recs[0]["distractor_tokens"] == 0, recs
PY
cp "$TMP/out" "$TMP/i.out"
"$DSA_PYTHON" - "$TMP/i/run-001.jsonl" "$TMP/i.out" <<'PY' && ok "in-process summary: recall@k and needle retention by length" || { not_ok "in-process summary: recall@k and needle retention by length"; sed 's/^/#   /' "$TMP/i.out"; }
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()[1:]]
out = open(sys.argv[2]).read().splitlines()
n = len(recs)
mean = lambda k: sum(r[k] for r in recs) / n
want = ["%-6s %5s %12s %8s %15s" % ("bin", "rows", "recall@k", "needle", "needle(golden)"),
        "%-6s %5d %12.4f %8.3f %15.3f" % ("4k", n, mean("score"), mean("needle_retention"),
                                           mean("needle_retention_golden"))]
assert out[:2] == want, (out, want)
assert out[2].startswith("µs per context token: "), out
PY

# bad input: one line, the documented exit code, nothing written
expect_code 2 "unknown task" "$DSA_BIN" ruler --endpoint "$URL" --out "$TMP/x" --tasks niah_single_9
grep -qx "dsa-eval: unknown RULER task 'niah_single_9' (see docs/ruler.md \"Tasks\")" "$TMP/err" \
    && ok "unknown task: one line" || { not_ok "unknown task: one line"; sed 's/^/#   /' "$TMP/err"; }
expect_code 2 "unknown length" "$DSA_BIN" ruler --endpoint "$URL" --out "$TMP/x" --lengths 3k
expect_code 3 "missing haystack" "$DSA_BIN" ruler --endpoint "$URL" --out "$TMP/x" --haystack "$TMP/none.txt"
grep -q "^dsa-eval: cannot use haystack '$TMP/none.txt': " "$TMP/err" && ok "missing haystack: one line" \
    || { not_ok "missing haystack: one line"; sed 's/^/#   /' "$TMP/err"; }
expect_code 2 "--limit 0" "$DSA_BIN" ruler --endpoint "$URL" --out "$TMP/x" --limit 0
[ ! -e "$TMP/x" ] && ok "refused runs write nothing" || not_ok "refused runs write nothing"
done_testing
