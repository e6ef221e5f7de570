#!/usr/bin/env bash
# dsa-eval compare / report / plan on the small checked-in runs of tests/data/compare:
# golden outputs (exact bytes), reproducibility, per-bin stream independence, exit codes,
# parity of the deterministic numbers with a Python recomputation, HTML in headless Chromium.
# Regenerate the goldens (after checking the change is intended) with DSA_UPDATE_GOLDEN=1.
. "$(dirname "$0")/lib.sh"
cd "$DSA_SRC" || exit 1
D=tests/data/compare
G=$D/golden

# golden NAME CMD...: stdout of CMD equals $G/NAME byte for byte
golden() {
    local name=$1; shift
    "$@" >"$TMP/g.out" 2>"$TMP/g.err"
    if [ -n "${DSA_UPDATE_GOLDEN:-}" ]; then cp "$TMP/g.out" "$G/$name"; fi
    if cmp -s "$TMP/g.out" "$G/$name"; then ok "golden $name"; else
        not_ok "golden $name"; diff "$G/$name" "$TMP/g.out" | head -20 | sed 's/^/#   /'; fi
}

golden compare-aa.txt "$DSA_BIN" compare $D/main $D/pr --baseline-aa $D/main-again
golden compare-aa.json "$DSA_BIN" compare $D/main $D/pr --baseline-aa $D/main-again --json
golden compare-runs.txt "$DSA_BIN" compare $D/main3 $D/pr3
golden compare-plain-bca.txt "$DSA_BIN" compare $D/plain/base.jsonl $D/plain/cand.jsonl --ci bca --rng mt19937 --seed 7
golden compare-gsm8k.txt "$DSA_BIN" compare $D/gsm8k/main.jsonl $D/gsm8k/pr.jsonl
golden report-runs.md "$DSA_BIN" report $D/main3 $D/pr3 --baseline-aa $D/main-again --label-base main --label-cand "PR #5"
golden report-aa.md "$DSA_BIN" report $D/main $D/pr --baseline-aa $D/main-again
golden report-gsm8k.md "$DSA_BIN" report $D/gsm8k/main.jsonl $D/gsm8k/pr.jsonl --format md
golden report-runs.csv "$DSA_BIN" report $D/main3 $D/pr3 --format csv
golden report-aa.json "$DSA_BIN" report $D/main $D/pr --format json
golden compare-episode256k.txt "$DSA_BIN" compare $D/episode256k/main $D/episode256k/pr
golden plan-runs.txt "$DSA_BIN" plan --from $D/main3 --detect 0.02
golden plan-one.txt "$DSA_BIN" plan --from $D/main/run-001.jsonl --bin 16k --detect 0.02 --runs 3

# the seed's 256K episode: run 1 alone shows a significant drop, the three runs pooled do not
"$DSA_BIN" compare $D/episode256k/main $D/episode256k/pr --json >"$TMP/ep.json"
if [ -n "${DSA_PYTHON:-}" ]; then
    if "$DSA_PYTHON" - "$TMP/ep.json" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))["bins"][0]
assert b["bin"] == "≤256K" and b["n"] == 94
r1 = b["runs"][0]
assert r1["diff"] < -0.04 and r1["ci"][1] < 0, r1          # run 1: CI wholly below zero
assert b["ci"][0] < 0 < b["ci"][1], b["ci"]                 # pooled: CI across zero
assert b["run_effect"]["disagree"] and b["two_level"]["ci"][0] < 0 < b["two_level"]["ci"][1]
PY
    then ok "256K episode: one run negative, pooled across zero"; else not_ok "256K episode: one run negative, pooled across zero"; fi
else
    not_ok "256K episode (python not available: scripts/setup.sh installs it)"
fi

# reproducible: the same inputs and seed give the same bytes; another seed moves the CIs
"$DSA_BIN" compare $D/main3 $D/pr3 --json >"$TMP/a.json"
"$DSA_BIN" compare $D/main3 $D/pr3 --json >"$TMP/b.json"
cmp -s "$TMP/a.json" "$TMP/b.json" && ok "byte-identical reruns" || not_ok "byte-identical reruns"
"$DSA_BIN" compare $D/main3 $D/pr3 --json --seed 2 >"$TMP/c.json"
cmp -s "$TMP/a.json" "$TMP/c.json" && not_ok "--seed changes the CIs" || ok "--seed changes the CIs"

# nor on the number of threads
for t in 1 2 5 8; do
    "$DSA_BIN" compare $D/main3 $D/pr3 --baseline-aa $D/main-again --json --threads $t >"$TMP/t$t.json"
done
cmp -s "$TMP/t1.json" "$TMP/t2.json" && cmp -s "$TMP/t1.json" "$TMP/t5.json" \
    && cmp -s "$TMP/t1.json" "$TMP/t8.json" \
    && ok "byte-identical with 1, 2, 5 and 8 threads" || not_ok "byte-identical with 1, 2, 5 and 8 threads"
# the rows whose runs disagree carry a two-level CI, computed beside the rest on its own stream
grep -q '"two_level"' "$TMP/t1.json" && ok "the two-level CI is part of the compared output" \
    || not_ok "the two-level CI is part of the compared output"

# a bin's numbers do not depend on which other bins are present (one stream per bin)
mkdir -p "$TMP/b16" "$TMP/c16"
for s in main pr; do
    out=$([ $s = main ] && echo "$TMP/b16" || echo "$TMP/c16")
    { head -1 $D/$s/run-001.jsonl; grep '"bin": "≤16K"' $D/$s/run-001.jsonl; } >"$out/run-001.jsonl"
done
"$DSA_BIN" compare "$TMP/b16" "$TMP/c16" | sed -n '/^≤16K/,/^$/p' | grep difference >"$TMP/one"
"$DSA_BIN" compare $D/main $D/pr | sed -n '/^≤16K/,/^$/p' | grep difference >"$TMP/all"
[ -s "$TMP/one" ] && cmp -s "$TMP/one" "$TMP/all" && ok "bin stream independent of other bins" \
    || not_ok "bin stream independent of other bins"

# a report from a saved document equals the report computed from the runs
"$DSA_BIN" compare $D/main $D/pr --baseline-aa $D/main-again --json >"$TMP/cmp.json"
"$DSA_BIN" report "$TMP/cmp.json" >"$TMP/from-doc.md"
cmp -s "$TMP/from-doc.md" $G/report-aa.md && ok "report from compare --json" || not_ok "report from compare --json"

# exit codes: 1 regression / differing GSM8K outputs, 2 usage, 3 bad input
expect_code 1 "--fail-if-worse flags a regression" "$DSA_BIN" compare $D/main3 $D/pr3 --fail-if-worse 0.01
grep -q "regression: the CI of bin '≤8K' lies wholly below -0.01" "$TMP/err" && ok "regression message" || not_ok "regression message"
expect_code 0 "--fail-if-worse with a wide margin" "$DSA_BIN" compare $D/main3 $D/pr3 --fail-if-worse 0.5
expect_code 1 "GSM8K outputs differ" "$DSA_BIN" compare $D/gsm8k/main.jsonl $D/gsm8k/pr-diff.jsonl
grep -q "same 31/32 (first difference: 'q0017', .* at byte 4); acceptance length 3.4904 vs 3.4711" "$TMP/out" \
    && ok "GSM8K identity line" || not_ok "GSM8K identity line"
expect_code 2 "one run set" "$DSA_BIN" compare $D/main
expect_code 2 "bad --ci" "$DSA_BIN" compare $D/main $D/pr --ci basic
expect_code 2 "bad --resamples" "$DSA_BIN" compare $D/main $D/pr --resamples 5
expect_code 2 "bad report format" "$DSA_BIN" report $D/main $D/pr --format pdf
expect_code 2 "plan without --from" "$DSA_BIN" plan --detect 0.02
expect_code 3 "missing run set" "$DSA_BIN" compare $D/nope $D/pr
mkdir -p "$TMP/empty"
expect_code 3 "directory without run files" "$DSA_BIN" compare "$TMP/empty" $D/pr
grep -q "no run files (\*.jsonl) in" "$TMP/err" && ok "empty directory message" || not_ok "empty directory message"
printf '{"id": "a", "bin": "8k", "score": 1}\n{"id": "b", "bin": "8k", "score": "x"}\n' >"$TMP/bad.jsonl"
expect_code 3 "score must be a number" "$DSA_BIN" compare "$TMP/bad.jsonl" $D/plain/cand.jsonl
grep -q "line 2 of '$TMP/bad.jsonl': \"score\" must be a number" "$TMP/err" && ok "bad score message" || not_ok "bad score message"
printf '{"id": "a", "bin": "8k", "score": 1}\n{"id": "a", "bin": "8k", "score": 0}\n' >"$TMP/dup.jsonl"
expect_code 3 "duplicate id" "$DSA_BIN" compare "$TMP/dup.jsonl" $D/plain/cand.jsonl
# the message names the first line, in file order, whose id was seen before
printf '{"id": "b", "score": 1}\n{"id": "a", "score": 1}\n{"id": "c", "score": 1}\n{"id": "a", "score": 0}\n{"id": "b", "score": 0}\n{"id": "b", "score": 0}\n' >"$TMP/dup3.jsonl"
expect_code 3 "duplicate ids" "$DSA_BIN" compare "$TMP/dup3.jsonl" $D/plain/cand.jsonl
grep -qx "dsa-eval: line 4 of '$TMP/dup3.jsonl': duplicate id 'a'" "$TMP/err" && ok "first duplicate in file order" || not_ok "first duplicate in file order"
printf '{"id": "a", "score": 1}\n{"id": "b", "score": "x"}\n{"id": "a", "score": 0}\n' >"$TMP/dup4.jsonl"
expect_code 3 "an earlier bad line wins" "$DSA_BIN" compare "$TMP/dup4.jsonl" $D/plain/cand.jsonl
grep -q "line 2 of '$TMP/dup4.jsonl': \"score\" must be a number" "$TMP/err" && ok "earlier error before the duplicate" || not_ok "earlier error before the duplicate"
printf '{"id": "a", "bin": "8k", "score": 1}\n{"id": "b", "bin": "8k", "sc' >"$TMP/torn.jsonl"
printf '{"id": "a", "bin": "8k", "score": 1}\n{"id": "b", "bin": "8k", "score": 0}\n' >"$TMP/ok.jsonl"
expect_code 0 "torn last line is ignored" "$DSA_BIN" compare "$TMP/torn.jsonl" "$TMP/ok.jsonl"
printf '{"id": "a", "bin": "8k", "score": 1}\n{"id": "a2", "bin": "16k", nope}\n{"id": "b", "bin": "8k", "score": 0}\n' >"$TMP/mid.jsonl"
expect_code 3 "unparsable line" "$DSA_BIN" compare "$TMP/mid.jsonl" "$TMP/ok.jsonl"
grep -q "cannot parse line 2 of '$TMP/mid.jsonl'" "$TMP/err" && ok "unparsable line message" || not_ok "unparsable line message"
# the sides' files are read on --threads threads, but their messages come out in file order and
# the first bad file ends the comparison, exactly as when they are read one after another
mkdir -p "$TMP/par/base" "$TMP/par/cand"
cp "$TMP/torn.jsonl" "$TMP/par/base/run-001.jsonl"
cp "$TMP/mid.jsonl" "$TMP/par/base/run-002.jsonl"
printf '{"id": "a", nope}\n' >"$TMP/par/base/run-003.jsonl"
cp "$TMP/torn.jsonl" "$TMP/par/cand/run-001.jsonl"
for t in 1 2 8; do
    expect_code 3 "bad run files, --threads $t" "$DSA_BIN" compare "$TMP/par/base" "$TMP/par/cand" --threads $t
    cp "$TMP/err" "$TMP/par/err$t"
done
expect_eq "messages: the torn line of run 1, then run 2's error, nothing after" "$(cat "$TMP/par/err1")" \
"dsa-eval: warning: ignoring the torn last line 2 of '$TMP/par/base/run-001.jsonl' (interrupted write)
$(grep "cannot parse line 2 of '$TMP/par/base/run-002.jsonl'" "$TMP/par/err1")"
cmp -s "$TMP/par/err1" "$TMP/par/err2" && cmp -s "$TMP/par/err1" "$TMP/par/err8" && ok "the same messages with 1, 2 and 8 threads" || not_ok "the same messages with 1, 2 and 8 threads"
printf '{"id": "a", "bin": "8k", "score": 1}\n' >"$TMP/b1.jsonl"
printf '{"id": "a", "bin": "16k", "score": 1}\n' >"$TMP/c1.jsonl"
expect_code 3 "sample in two bins" "$DSA_BIN" compare "$TMP/b1.jsonl" "$TMP/c1.jsonl"
: >"$TMP/empty1.jsonl"
expect_code 3 "nothing paired" "$DSA_BIN" compare "$TMP/empty1.jsonl" "$TMP/ok.jsonl"
grep -q "no sample is paired between" "$TMP/err" && ok "nothing paired message" || not_ok "nothing paired message"
expect_code 5 "report -o into a missing directory" "$DSA_BIN" report $D/main $D/pr -o "$TMP/no/such/dir/r.md"

# parity: means, difference, SE and MDE80 of every bin recomputed from the raw files
if [ -n "${DSA_PYTHON:-}" ] && "$DSA_PYTHON" -c 'import numpy' 2>/dev/null; then
    "$DSA_BIN" compare $D/main $D/pr --json >"$TMP/p.json"
    if "$DSA_PYTHON" - "$TMP/p.json" $D/main/run-001.jsonl $D/pr/run-001.jsonl <<'PY'
import json, sys, math
import numpy as np
doc = json.load(open(sys.argv[1]))
def load(p):
    recs = [json.loads(l) for l in open(p, encoding="utf-8")][1:]
    return {r["id"]: r for r in recs}
b, c = load(sys.argv[2]), load(sys.argv[3])
ids = [i for i in b if b[i]["status"] == "ok" and i in c and c[i]["status"] == "ok"]
bins = sorted({b[i]["bin"] for i in ids}, key=lambda l: b[[i for i in ids if b[i]["bin"] == l][0]]["bin_tokens"])
assert [x["bin"] for x in doc["bins"]] == bins + ["all"], [x["bin"] for x in doc["bins"]]
for row in doc["bins"]:
    sel = [i for i in ids if row["bin"] in ("all", b[i]["bin"])]
    bb = np.array([b[i]["score"] for i in sel]); cc = np.array([c[i]["score"] for i in sel])
    d = cc - bb
    se = d.std(ddof=1) / math.sqrt(len(d))
    for k, v in (("n", len(d)), ("base", bb.mean()), ("cand", cc.mean()), ("diff", d.mean()),
                 ("se", se), ("mde80", 2.8015852181 * se)):
        assert abs(row[k] - v) <= 1e-12, (row["bin"], k, row[k], v)
    lo, hi = row["ci"]
    assert lo <= row["diff"] <= hi
PY
    then ok "python parity of the deterministic numbers"; else not_ok "python parity of the deterministic numbers"; fi
else
    not_ok "python parity of the deterministic numbers (numpy not available: scripts/setup.sh installs it)"
fi


# ---- issue #11: outputs tell the truth at a glance ----------------------------------------
# plain score files made here with known outcomes per bin (python's random, seeded):
#   8k worse (every candidate score 0.1 lower), 16k identical, 24k every sample excluded
#   (an empty bin), 32k zero-mean noise (no change), 64k five samples (n too small);
#   nochange/: two bins of zero-mean noise; tiny/: a +1e-4 shift (a bf16-sized effect)
if [ -n "${DSA_PYTHON:-}" ]; then
"$DSA_PYTHON" - "$TMP" <<'PY'
import json, os, random, sys
t = sys.argv[1]
rng = random.Random(11)
def write(path, recs):
    with open(path, "w") as f:
        for r in recs:
            f.write(json.dumps(r) + "\n")
def pair(name, spec):
    os.makedirs(os.path.join(t, name), exist_ok=True)
    B, C = [], []
    for label, tokens, n, kind in spec:
        for i in range(n):
            rid = "%s/%03d" % (label, i)
            b = rng.uniform(0.3, 0.9)
            e = 0.05 * (1 if i % 2 else -1) * rng.uniform(0.5, 1.0) if kind == "noise" else 0
            # zero-mean noise: pairs of samples carry +e and -e
            if kind == "noise" and i % 2:
                e = -B_last_e
            B_last_e = e
            c = {"worse": b - 0.1, "same": b, "noise": b + e, "small": b + e,
                 "tiny": b + 1e-4 + (2e-5 if i % 2 else -2e-5), "excl": b}[kind]
            st = "excluded" if kind == "excl" else "ok"
            B.append({"id": rid, "bin": label, "bin_tokens": tokens, "score": b, "status": st})
            C.append({"id": rid, "bin": label, "bin_tokens": tokens, "score": c, "status": st})
    write(os.path.join(t, name, "base.jsonl"), B)
    write(os.path.join(t, name, "cand.jsonl"), C)
pair("verdict", [("8k", 8192, 200, "worse"), ("16k", 16384, 200, "same"),
                 ("24k", 24576, 50, "excl"), ("32k", 32768, 200, "noise"),
                 ("64k", 65536, 5, "noise")])
pair("nochange", [("8k", 8192, 200, "noise"), ("16k", 16384, 300, "noise")])
pair("tiny", [("all", 0, 400, "tiny")])
# GSM8K runs with per-request speculative-decoding counts: vLLM's metrics.speculative_decoding
# on the baseline, SGLang's meta_info names on the candidate (acceptance about 2.5 vs 2.3)
def gsm(path, p, sglang):
    h = {"dsa_eval_run": 1, "match": {}, "eval": "gsm8k", "dataset": {"name": "gsm8k"},
         "mtp": {"acceptance_length": 2.5 if p > 0.47 else 2.3}}
    with open(path, "w") as f:
        f.write(json.dumps(h) + "\n")
        for i in range(64):
            r = random.Random(i * 7 + (1 if sglang else 0))
            steps = 20 + (i * 13) % 30
            acc = sum(1 for _ in range(steps * 3) if r.random() < p)
            spec = ({"spec_verify_ct": steps, "spec_accepted_drafts": acc} if sglang else
                    {"num_spec_steps": steps, "num_draft_tokens": 3 * steps,
                     "num_accepted_draft_tokens": acc})
            f.write(json.dumps({"id": "q%04d" % i, "bin": "all", "score": 1, "output": "x%d" % i,
                                "prompt_sha256": "%064d" % i, "spec": spec}) + "\n")
gsm(os.path.join(t, "al-base.jsonl"), 0.50, False)
gsm(os.path.join(t, "al-cand.jsonl"), 0.44, True)
PY
else
    echo "Bail out! python3 is required by this test (scripts/setup.sh installs it)"; exit 1
fi
V=$TMP/verdict
expect_code 0 "a verdict never changes the exit status" "$DSA_BIN" compare $V/base.jsonl $V/cand.jsonl
cp "$TMP/out" "$TMP/verdict.txt"
grep -qx "verdict     worse in 8k (all .*)" "$TMP/verdict.txt" && ok "overall verdict: worse in 8k" || not_ok "overall verdict: worse in 8k"
for want in "worse" "no change detected (identical)" "no change detected (MDE80 0.0[0-9]*)" "inconclusive (n too small)"; do
    grep -qx "  verdict     $want" "$TMP/verdict.txt" && ok "bin verdict: $want" || not_ok "bin verdict: $want"
done
grep -q "^  difference  0 (identical: all 200 paired differences are 0)$" "$TMP/verdict.txt" \
    && ok "an exact zero says identical" || not_ok "an exact zero says identical"
grep -q "MDE80 0.000\|+0.000 \[+0.000, +0.000\]" "$TMP/verdict.txt" && not_ok "no 'MDE80 0.000'" || ok "no 'MDE80 0.000'"
"$DSA_BIN" compare $V/base.jsonl $V/cand.jsonl --json >"$TMP/verdict.json"
# the rule of docs/compare.md "Verdicts", recomputed from the document's own numbers
if "$DSA_PYTHON" - "$TMP/verdict.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for b in doc["bins"]:
    v = b["verdict"]
    ci = b.get("ci")
    if ci and b.get("degenerate") and b["diff"] == 0:
        want = ("no change detected", "identical")
    else:
        tl = b.get("two_level")
        dis = b.get("run_effect", {}).get("disagree", False)
        if dis and tl and tl["ci"]:
            ci = tl["ci"]
        if b["n"] == 0:
            want = ("inconclusive", "no paired samples")
        elif not ci or b["n"] < 2:
            want = ("inconclusive", "n too small")
        elif ci[1] < 0 or ci[0] > 0:
            want = ("worse" if ci[1] < 0 else "better", None)
        elif dis:
            want = ("inconclusive", "runs disagree")
        elif b["n"] < 30:
            want = ("inconclusive", "n too small")
        else:
            want = ("no change detected", None)
    assert (v["verdict"], v["reason"]) == want, (b["bin"], v, want)
assert [b["verdict"]["verdict"] for b in doc["bins"]] == ["worse", "no change detected", "inconclusive", "no change detected", "inconclusive", "worse"], [b["verdict"] for b in doc["bins"]]
assert doc["verdict"]["verdict"] == "worse"
PY
then ok "verdicts follow the documented rule"; else not_ok "verdicts follow the documented rule"; fi
"$DSA_BIN" report $V/base.jsonl $V/cand.jsonl >"$TMP/verdict.md"
head -1 "$TMP/verdict.md" | grep -qx '\*\*Comparison: worse in 8k (all .*)\*\*' && ok "md: the verdict line comes first" || not_ok "md: the verdict line comes first"
grep -q '^| verdict | worse | no change detected (identical) | inconclusive (no paired samples) | no change detected (MDE80 ' "$TMP/verdict.md" \
    && ok "md: verdict row per bin" || not_ok "md: verdict row per bin"
"$DSA_BIN" report $V/base.jsonl $V/cand.jsonl --format csv >"$TMP/verdict.csv"
expect_eq "csv: one verdict row per bin" "$(grep -c '^[^,]*,verdict_' "$TMP/verdict.csv")" 6
grep -q '^8k,verdict_worse,' "$TMP/verdict.csv" && ok "csv: verdict_worse" || not_ok "csv: verdict_worse"
N=$TMP/nochange
"$DSA_BIN" compare $N/base.jsonl $N/cand.jsonl --json >"$TMP/nc.json"
"$DSA_BIN" report $N/base.jsonl $N/cand.jsonl >"$TMP/nc.md"
want=$("$DSA_PYTHON" - "$TMP/nc.json" <<'PY'
import json, math, sys
doc = json.load(open(sys.argv[1]))
b = max(doc["bins"], key=lambda b: b["mde80"])
dec = max(3, 1 - math.floor(math.log10(b["mde80"])))
print("**Comparison: no change detected in any bin (largest MDE80 %.*f at %s)**" % (dec, b["mde80"], b["bin"]))
PY
)
expect_eq "md: no change in any bin, the largest MDE80 named" "$(head -1 "$TMP/nc.md")" "$want"
# a 1e-4 effect prints as such, with two significant digits of its CI width
"$DSA_BIN" compare $TMP/tiny/base.jsonl $TMP/tiny/cand.jsonl >"$TMP/tiny.txt"
"$DSA_BIN" compare $TMP/tiny/base.jsonl $TMP/tiny/cand.jsonl --json >"$TMP/tiny.json"
if "$DSA_PYTHON" - "$TMP/tiny.txt" "$TMP/tiny.json" <<'PY'
import json, re, sys
txt = open(sys.argv[1]).read()
b = json.load(open(sys.argv[2]))["bins"][-1]
m = re.search(r"^  difference  ([-+][0-9.]+) \[([-+][0-9.]+), ([-+][0-9.]+)\]  SE ([0-9.]+)  MDE80 ([0-9.]+)", txt, re.M)
assert m, txt
d, lo, hi, se, mde = (float(x) for x in m.groups())
w = b["ci"][1] - b["ci"][0]
assert abs(d - b["diff"]) <= 0.05 * w and abs(lo - b["ci"][0]) <= 0.05 * w and abs(hi - b["ci"][1]) <= 0.05 * w, m.groups()
assert d != 0 and se != 0 and mde != 0, m.groups()
assert abs(se - b["se"]) <= 0.05 * b["se"] and abs(mde - b["mde80"]) <= 0.05 * b["mde80"], m.groups()
assert abs(b["diff"] - 1e-4) < 1e-9
PY
then ok "a 1e-4 difference, its CI, SE and MDE80 print with 2 significant digits"; else not_ok "a 1e-4 difference, its CI, SE and MDE80 print with 2 significant digits"; sed -n '/^all/,$p' "$TMP/tiny.txt" | sed 's/^/#   /'; fi
# the GSM8K report tells the truth about identical outputs (it said "different outputs 31/32")
"$DSA_BIN" report $D/gsm8k/main.jsonl $D/gsm8k/pr-diff.jsonl >"$TMP/gd.md"
grep -q "GSM8K: outputs differ, 31/32 identical" "$TMP/gd.md" && ok "md: 31/32 identical, said as such" || not_ok "md: 31/32 identical, said as such"
grep -q "different outputs" "$TMP/gd.md" && not_ok "md: no 'different outputs 31/32'" || ok "md: no 'different outputs 31/32'"
# the permutation note is said once per output, not once per bin
expect_eq "text: the runs note once" "$(grep -c 'cannot reach' $G/compare-runs.txt)" 1
expect_eq "md: the runs note once" "$(grep -c 'cannot reach' $G/report-runs.md)" 1
# plan on greedy runs: identical runs plan by samples (it said "runs needed 1", "MDE 0.000");
# one run plans by samples too (it asked for 305 runs); an over-context bin says why it has
# no figure; the README's `plan --from runs/main --bin 256k --detect 0.02` gives figures
mkdir -p "$TMP/g3"
for i in 1 2 3; do cp $D/gsm8k/main.jsonl "$TMP/g3/run-00$i.jsonl"; done
expect_success "plan on three identical greedy runs" "$DSA_BIN" plan --from "$TMP/g3" --detect 0.02
grep -q "^all  *32    3  0.875     0.336  runs identical (greedy): more runs do not help; MDE80 0.235 with these 32 samples, 4431 samples to detect 0.020$" "$TMP/out" \
    && ok "plan: identical runs plan by samples" || not_ok "plan: identical runs plan by samples"
grep -q "MDE 0.000\| 0.000 0.000" "$TMP/out" && not_ok "plan: no MDE 0.000" || ok "plan: no MDE 0.000"
"$DSA_BIN" plan --from "$TMP/g3" --detect 0.02 --json >"$TMP/g3.json"
if "$DSA_PYTHON" - "$TMP/g3.json" $D/gsm8k/main.jsonl <<'PY'
import json, math, statistics, sys
b = json.load(open(sys.argv[1]))["bins"][0]
s = [json.loads(l)["score"] for l in list(open(sys.argv[2]))[1:]]
v, z = statistics.variance(s), 2.8015852181
assert b["mode"] == "samples" and b["identical_runs"] and "runs_needed" not in b, b
assert abs(b["mde_n"] - z * math.sqrt(2 * v / len(s))) < 1e-12, b
assert b["samples_needed"] == math.ceil(z * z * 2 * v / 0.02 ** 2), b
PY
then ok "plan: per-sample figures match a Python recomputation"; else not_ok "plan: per-sample figures match a Python recomputation"; fi
expect_success "plan from one run" "$DSA_BIN" plan --from $D/main/run-001.jsonl --detect 0.02
grep -q "runs needed *$\|  *[0-9][0-9][0-9] *0\.[0-9]" "$TMP/out" && not_ok "plan: one run asks for samples, not hundreds of runs" \
    || ok "plan: one run asks for samples, not hundreds of runs"
grep -q "^all .* one run†; MDE80 0.088 with these 35 samples, 684 samples to detect 0.020$" "$TMP/out" \
    && ok "plan: one run plans by samples" || not_ok "plan: one run plans by samples"
expect_success "plan: an over-context bin" "$DSA_BIN" plan --from $V/base.jsonl --bin 24k --detect 0.02
grep -q "^24k  *0    1  n/a: all 50 samples are over the served context (excluded)$" "$TMP/out" \
    && ok "plan: an over-context bin says why it has no figure" || not_ok "plan: an over-context bin says why it has no figure"
expect_success "plan: the README's --bin 256k example" "$DSA_BIN" plan --from $D/episode256k/main --bin 256k --detect 0.02
grep -q "^≤256K  *94    3  0.471 .*  *5  0.041 0.029" "$TMP/out" && ok "plan --bin 256k gives figures" || not_ok "plan --bin 256k gives figures"

# one PR body: MRCR pair + a saved GSM8K comparison, one verdict line each, collapsed blocks
"$DSA_BIN" compare $D/gsm8k/main.jsonl $D/gsm8k/pr.jsonl --json >"$TMP/g.json"
expect_success "report of two comparisons" "$DSA_BIN" report $D/main3 $D/pr3 "$TMP/g.json"
cp "$TMP/out" "$TMP/pr.md"
expect_eq "one PR body: a verdict line per eval first" "$(head -2 "$TMP/pr.md" | cut -c1-16)" "**MRCR 8-needle:
**GSM8K: no chan"
expect_eq "one PR body: a collapsed block per eval" "$(grep -c '^<details><summary>' "$TMP/pr.md")" 2
grep -q '^| all | pooled (3 vs 3) |' "$TMP/pr.md" && ok "one PR body: per-run rows inside" || not_ok "one PR body: per-run rows inside"
"$DSA_BIN" report $D/main3 $D/pr3 "$TMP/g.json" --format html -o "$TMP/pr.html"
expect_eq "one HTML page: a verdict line and a section per eval" \
    "$(grep -c '^<li class="verdict">' "$TMP/pr.html") $(grep -c '^<section id="cmp' "$TMP/pr.html")" "2 2"
# acceptance length with statistics: per-request counts paired by id, bootstrap CIs of the
# difference and the ratio, --fail-if-al-drops (it was "2.4961 vs 2.3118 ... differ", exit 0)
A=$TMP/al-base.jsonl; B=$TMP/al-cand.jsonl
expect_code 0 "an acceptance drop alone keeps exit 0" "$DSA_BIN" compare $A $B
grep -Eq '^  ratio       0\.[0-9]{4} \[0\.[0-9]{4}, 0\.[0-9]{4}\]  \(-[0-9.]+%\)$' "$TMP/out" \
    && ok "text: the ratio with its CI" || not_ok "text: the ratio with its CI"
grep -q '^acceptance length   A 2.5000   B 2.3000   differ$' "$TMP/out" && ok "the GSM8K identity block stays" || not_ok "the GSM8K identity block stays"
expect_code 1 "--fail-if-al-drops 0.05" "$DSA_BIN" compare $A $B --fail-if-al-drops 0.05
grep -q "regression: the acceptance length dropped by more than 5% (ratio 0.9" "$TMP/err" \
    && ok "--fail-if-al-drops message" || not_ok "--fail-if-al-drops message"
expect_code 0 "--fail-if-al-drops 0.2" "$DSA_BIN" compare $A $B --fail-if-al-drops 0.2
expect_code 2 "--fail-if-al-drops out of range" "$DSA_BIN" compare $A $B --fail-if-al-drops 1.5
expect_code 1 "--fail-if-al-drops without acceptance lengths" "$DSA_BIN" compare $D/main $D/pr --fail-if-al-drops 0.05
"$DSA_BIN" compare $A $B --json >"$TMP/al.json"
if "$DSA_PYTHON" - "$TMP/al.json" $A $B <<'PY'
import json, sys
import numpy as np
doc = json.load(open(sys.argv[1]))
al = doc["acceptance"]
def counts(p):
    out = {}
    for l in list(open(p))[1:]:
        r = json.loads(l); s = r["spec"]
        d = s.get("num_spec_steps", s.get("spec_verify_ct"))
        a = s.get("num_accepted_draft_tokens", s.get("spec_accepted_drafts"))
        out[r["id"]] = (d, a)
    return out
b, c = counts(sys.argv[2]), counts(sys.argv[3])
ids = list(b)
D = np.array([[b[i][0], b[i][1], c[i][0], c[i][1]] for i in ids], dtype=float)
alb, alc = 1 + D[:, 1].sum() / D[:, 0].sum(), 1 + D[:, 3].sum() / D[:, 2].sum()
assert al["source"] == "per-request" and al["n"] == 64, al
for k, v in (("base", alb), ("cand", alc), ("diff", alc - alb), ("ratio", alc / alb)):
    assert abs(al[k] - v) < 1e-12, (k, al[k], v)
# a numpy paired percentile bootstrap (its own generator): the ends agree within the
# Monte Carlo error of B = 10000 (a tenth of the interval's width)
rng = np.random.default_rng(0)
idx = rng.integers(0, 64, size=(10000, 64))
S = D[idx].sum(axis=1)
rb, rc = 1 + S[:, 1] / S[:, 0], 1 + S[:, 3] / S[:, 2]
for key, reps in (("diff_ci", rc - rb), ("ratio_ci", rc / rb), ("base_ci", rb), ("cand_ci", rc)):
    lo, hi = np.percentile(reps, [2.5, 97.5])
    w = hi - lo
    assert abs(al[key][0] - lo) < 0.1 * w and abs(al[key][1] - hi) < 0.1 * w, (key, al[key], lo, hi)
assert al["ratio_ci"][1] < 0.95
PY
then ok "acceptance length: point values exact, CIs agree with a numpy bootstrap"; else not_ok "acceptance length: point values exact, CIs agree with a numpy bootstrap"; fi
"$DSA_BIN" report $A $B >"$TMP/al.md"
head -1 "$TMP/al.md" | grep -Eq '^\*\*GSM8K: .*; acceptance length -[0-9.]+% \[-[0-9.]+%, -[0-9.]+%\]\*\*$' \
    && ok "md: the acceptance change in the verdict line" || not_ok "md: the acceptance change in the verdict line"
grep -q '^Acceptance length (64 paired requests, per-request draft counts, 95% paired bootstrap CIs): baseline ' "$TMP/al.md" \
    && ok "md: the acceptance sentence" || not_ok "md: the acceptance sentence"
expect_eq "csv: four acceptance rows" "$("$DSA_BIN" report $A $B --format csv | grep -c '^acceptance,')" 4
"$DSA_BIN" report $A $B --format html -o "$TMP/al.html"
expect_eq "html: the acceptance plot, one point per side" "$(grep -o 'class="al-[a-z]*"' "$TMP/al.html" | sort | tr '\n' ' ')" 'class="al-base" class="al-cand" '
# counters only (no per-request counts): the values without a CI, still shown
"$DSA_BIN" compare $D/gsm8k/main.jsonl $D/gsm8k/pr-diff.jsonl >"$TMP/alc.txt"
grep -q "^acceptance length: from the runs' counters (no per-request counts: no CI)$" "$TMP/alc.txt" \
    && ok "counters only: said so" || not_ok "counters only: said so"

expect_code 2 "an unpaired run set" "$DSA_BIN" report $D/main3 $D/pr3 $D/main
expect_code 2 "csv takes one comparison" "$DSA_BIN" report $D/main3 $D/pr3 "$TMP/g.json" --format csv

# HTML: self-contained (no http(s) resource), renders in headless Chromium, and the plots have
# one point per bin and side (score plot) and per bin (difference plot)
"$DSA_BIN" report $D/main3 $D/pr3 --format html -o "$TMP/r.html"
grep -Eq '(src|href)="https?:' "$TMP/r.html" && not_ok "html is self-contained" || ok "html is self-contained"
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -n "$CHROMIUM" ]; then
    flags="--headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update --disable-sync --no-first-run --user-data-dir=$TMP/chrome"
    timeout 120 "$CHROMIUM" $flags --dump-dom "file://$TMP/r.html" >"$TMP/dom.html" 2>/dev/null
    nb=$(grep -o 'class="pt-base"' "$TMP/dom.html" | wc -l)
    nc=$(grep -o 'class="pt-cand"' "$TMP/dom.html" | wc -l)
    nd=$(grep -o 'class="pt-diff"' "$TMP/dom.html" | wc -l)
    expect_eq "chromium: score plot points (4 bins x 2 sides)" "$nb+$nc" "4+4"
    expect_eq "chromium: difference plot points" "$nd" "4"
    grep -q '<polygon class="band"' "$TMP/dom.html" && ok "chromium: CI band" || not_ok "chromium: CI band"
    timeout 120 "$CHROMIUM" $flags --screenshot="$TMP/r.png" --window-size=900,1400 "file://$TMP/r.html" >/dev/null 2>&1
    [ -s "$TMP/r.png" ] && ok "chromium: screenshot" || not_ok "chromium: screenshot"
    # issue #11 item 7, on the rendered DOM: nice ticks, score CIs inside [0, 1], a gap (two
    # band pieces) around the empty 24k bin, plots that scale with the page, and the rendered
    # text carrying the verdicts (and, for GSM8K, McNemar and the outputs line)
    "$DSA_BIN" report $V/base.jsonl $V/cand.jsonl --format html -o "$TMP/v.html"
    "$DSA_BIN" report $D/gsm8k/main.jsonl $D/gsm8k/pr-diff.jsonl --format html -o "$TMP/gh.html"
    timeout 120 "$CHROMIUM" $flags --dump-dom "file://$TMP/v.html" >"$TMP/v.dom" 2>/dev/null
    timeout 120 "$CHROMIUM" $flags --dump-dom "file://$TMP/gh.html" >"$TMP/gh.dom" 2>/dev/null
    if "$DSA_PYTHON" - "$TMP/v.dom" "$TMP/gh.dom" <<'PY'
import math, re, sys
from html.parser import HTMLParser
class P(HTMLParser):
    def __init__(self):
        super().__init__(); self.text = []; self.skip = 0; self.svgs = []; self.cur = None
    def handle_starttag(self, tag, a):
        a = dict(a)
        if tag in ("style", "title"): self.skip += 1
        if tag == "svg":
            self.cur = {"attrs": a, "ticks": [], "bars": [], "grid": [], "polys": 0}
            self.svgs.append(self.cur)
        if self.cur is None: return
        if tag == "line" and a.get("class") == "grid": self.cur["grid"].append(float(a["y1"]))
        if tag == "line" and a.get("class", "").startswith("bar "):
            self.cur["bars"].append((float(a["y1"]), float(a["y2"])))
        if tag == "polygon": self.cur["polys"] += 1
        self.tick = tag == "text" and a.get("text-anchor") == "end"
    def handle_endtag(self, tag):
        if tag in ("style", "title"): self.skip -= 1
        if tag == "svg": self.cur = None
    def handle_data(self, d):
        if getattr(self, "tick", False) and self.cur is not None:
            self.cur["ticks"].append(d.strip()); self.tick = False
        if not self.skip: self.text.append(d)
def parse(path):
    p = P(); p.feed(open(path, encoding="utf-8").read()); return p
v, g = parse(sys.argv[1]), parse(sys.argv[2])
for p in (v, g):
    for svg in p.svgs:
        assert "width" not in svg["attrs"] and "viewbox" in svg["attrs"], svg["attrs"]
        t = [float(x) for x in svg["ticks"]]
        steps = {round(b - a, 12) for a, b in zip(t, t[1:])}
        assert len(steps) == 1, t
        step = steps.pop(); m = step / 10 ** math.floor(math.log10(step))
        assert min(abs(m - k) for k in (1, 2, 5, 10)) < 1e-9, (t, step)
        assert all(abs(x / step - round(x / step)) < 1e-9 for x in t), t
        top, bottom = min(svg["grid"]), max(svg["grid"])
        assert all(top - 0.05 <= y <= bottom + 0.05 for bar in svg["bars"] for y in bar), svg["bars"]
    scores = p.svgs[0]
    assert float(scores["ticks"][-1]) <= 1 and float(scores["ticks"][0]) >= 0, scores["ticks"]
assert v.svgs[1]["polys"] == 2, v.svgs[1]["polys"]
vt, gt = " ".join(" ".join(v.text).split()), " ".join(" ".join(g.text).split())
assert "Comparison: worse in 8k (all" in vt and "verdict worse no change detected (identical)" in vt, vt[:400]
assert "McNemar exact p = 1.0000" in gt and "outputs differ, 31/32 identical" in gt, gt[:600]
assert "GSM8K: no change detected (MDE80" in gt, gt[:300]
PY
    then ok "chromium: nice ticks, CIs within the score range, gaps, scaling plots, every statistic in the text"
    else not_ok "chromium: nice ticks, CIs within the score range, gaps, scaling plots, every statistic in the text"; fi
else
    for t in "score plot points" "difference plot points" "CI band" "screenshot" "issue 11 html"; do
        not_ok "chromium: $t (chromium not installed: scripts/setup.sh installs it)"
    done
fi
done_testing
