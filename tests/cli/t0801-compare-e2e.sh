#!/bin/bash
# End to end: `dsa-eval mrcr` against two dsa-test-servers (a "baseline" and a "candidate" that
# answers wrong more often), then `compare`, `report` and `plan` on the run folders it wrote.
# The per-bin numbers are recomputed here from the run files (Python) and must match.
# SPDX-License-Identifier: GPL-3.0-or-later
. "$DSA_SRC/tests/cli/lib.sh"
. "$DSA_SRC/tests/cli/srvlib.sh"
require_python

DS=$TMP/ds.jsonl
expect_success "make a synthetic dataset" \
    "$DSA_BIN" datasets synth mrcr --needles 8 --bins 8k,16k,32k --per-bin 12 --seed 5 -o "$DS"
start_server --seed 7 --mrcr-wrong 0.2 || { echo "Bail out! server"; exit 1; }
URL_MAIN=$SERVER_URL
start_server --seed 7 --mrcr-wrong 0.5 || { echo "Bail out! server"; exit 1; }
URL_PR=$SERVER_URL
for side in main pr; do
    url=$([ $side = main ] && echo "$URL_MAIN" || echo "$URL_PR")
    expect_success "mrcr run, $side" "$DSA_BIN" mrcr --endpoint "$url" --dataset "$DS" --needles 8 \
        --runs 2 --concurrency 4 --seed 11 --out "$TMP/$side" -q
done

expect_success "compare the two run folders" "$DSA_BIN" compare "$TMP/main" "$TMP/pr" --json
cp "$TMP/out" "$TMP/cmp.json"
DIR=$TMP "$DSA_PYTHON" - <<'PY' && ok "per-bin means and differences equal a recomputation" || not_ok "per-bin means and differences equal a recomputation"
import glob, json, os, math
from collections import defaultdict
d = os.environ["DIR"]
doc = json.load(open(d + "/cmp.json"))
def load(side):
    runs = []
    for f in sorted(glob.glob(f"{d}/{side}/run-*.jsonl")):
        runs.append([json.loads(l) for l in open(f).read().splitlines()[1:]])
    return runs
B, C = load("main"), load("pr")
assert len(B) == 2 and len(C) == 2
def means(runs):
    acc = defaultdict(list); bins = {}
    for run in runs:
        for r in run:
            bins[r["id"]] = (r["bin_tokens"], r["bin"])
            if r["status"] == "ok":
                acc[r["id"]].append(r["score"])
    return {k: sum(v) / len(v) for k, v in acc.items()}, bins
mb, bins = means(B); mc, _ = means(C)
ids = sorted(set(mb) & set(mc))
labels = [l for _, l in sorted(set(bins.values()))]
assert [x["bin"] for x in doc["bins"]] == labels + ["all"], [x["bin"] for x in doc["bins"]]
for row in doc["bins"]:
    sel = [i for i in ids if row["bin"] in ("all", bins[i][1])]
    db = [mb[i] for i in sel]; dc = [mc[i] for i in sel]; dd = [c - b for b, c in zip(db, dc)]
    n = len(dd); mean = sum(dd) / n
    se = math.sqrt(sum((x - mean) ** 2 for x in dd) / (n - 1) / n)
    assert row["n"] == n, (row["bin"], row["n"], n)
    for k, v in (("base", sum(db) / n), ("cand", sum(dc) / n), ("diff", mean), ("se", se)):
        assert abs(row[k] - v) < 1e-12, (row["bin"], k, row[k], v)
    assert row["runs_base"] == 2 and row["runs_cand"] == 2 and len(row["runs"]) == 2
    assert row["ci"][0] <= row["diff"] <= row["ci"][1]
assert doc["eval"] == "mrcr"
assert doc["latency"] is None or doc["latency"]["n"] > 0
PY
expect_success "text output" "$DSA_BIN" compare "$TMP/main" "$TMP/pr"
grep -q '^Difference is the paired per-sample mean with a 95% bootstrap CI (percentile, B=10000, seed=1, taus2).$' "$TMP/out" \
    && ok "method line" || not_ok "method line"
grep -q '^  run 2 vs 2 ' "$TMP/out" && ok "per-run rows" || not_ok "per-run rows"
expect_success "markdown report" "$DSA_BIN" report "$TMP/main" "$TMP/pr" --label-base main --label-cand PR
grep -q '^| context | ≤8K | ≤16K | ≤32K | all |$' "$TMP/out" && ok "md table header" || not_ok "md table header"
grep -q '^- main: `' "$TMP/out" && ok "md setup block names the baseline" || not_ok "md setup block names the baseline"
expect_success "html report" "$DSA_BIN" report "$TMP/main" "$TMP/pr" --format html -o "$TMP/r.html"
[ "$(grep -o 'class="pt-diff"' "$TMP/r.html" | wc -l)" -eq 4 ] && ok "html: 4 difference points" || not_ok "html: 4 difference points"
expect_success "plan from the baseline runs" "$DSA_BIN" plan --from "$TMP/main" --detect 0.05
grep -q '^≤16K ' "$TMP/out" && ok "plan lists the bins" || not_ok "plan lists the bins"
done_testing
