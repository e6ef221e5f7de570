#!/usr/bin/env bash
# dsa-eval mrcr --backend inprocess on the CPU reference: records and header keys, a variant
# run compared with compare, resume, determinism of the selection hash, bad options.
. "$(dirname "$0")/lib.sh"
DS="$DSA_SRC/datasets/samples/mrcr-synth-2needle-tiny.jsonl"
run() { "$DSA_BIN" mrcr --backend inprocess --device cpu --dataset "$DS" --needles 2 --max-query 4 "$@"; }

export DSA_THREADS=2
expect_success "fp32 run" run --out "$TMP/fp32"
unset DSA_THREADS
# the time per context token by stage: in every record, summing to its total, and in the table
grep -Eq '^µs per context token: [0-9.]+ = proxy [0-9.]+ \+ S1 [0-9.]+ \+ S2 [0-9.]+ \+ S3 [0-9.]+ \+ S4 [0-9.]+ \+ golden [0-9.]+ \+ host [0-9.]+$' "$TMP/out" \
    && ok "summary prints the time per stage" || { not_ok "summary prints the time per stage"; sed 's/^/#   /' "$TMP/out"; }
"$DSA_PYTHON" - "$TMP/fp32/run-001.jsonl" <<'PY' && ok "records time each stage" || not_ok "records time each stage"
import json, sys
keys = ["proxy", "s1_k_prep", "s2_q_prep", "s3_logits", "s4_topk", "golden", "host"]
for line in open(sys.argv[1]).readlines()[1:]:
    r = json.loads(line)
    st = r["stage_us_per_token"]
    assert sorted(st) == sorted(keys + ["total"]), st
    assert all(st[k] >= 0 for k in keys) and st["s3_logits"] > 0 and st["golden"] > 0, st
    assert abs(sum(st[k] for k in keys) - st["total"]) <= 1e-9 * st["total"], st
    # the stages cover the selection call, which elapsed_ms times from outside
    assert st["total"] * r["context_tokens"] / 1e3 <= r["elapsed_ms"] * 1.001 + 0.01, (st, r)
PY
grep -q '^≤8K *2 ' "$TMP/out" && ok "summary row" || not_ok "summary row"
F="$TMP/fp32/run-001.jsonl"
expect_eq "records" "$(tail -n +2 "$F" | wc -l | tr -d ' ')" "2"
for key in '"score":' '"needle_retention":' '"selection_sha256":"' '"recall_last":' '"bin":"≤8K"' '"status":"ok"' '"context_tokens":'; do
    tail -n 1 "$F" | grep -q "$key" && ok "record has $key" || not_ok "record has $key"
done
for key in '"backend":"inprocess"' '"weights":"f32"' '"device":"cpu"' '"name":"cpu-reference"' '"git":'; do
    head -n 1 "$F" | grep -q "$key" && ok "header has $key" || not_ok "header has $key"
done
head -n 1 "$F" | grep -q '"proxy":"proxy-v2"' && ok "header names the proxy model" || not_ok "header names the proxy model"
grep -q '^mrcr in-process on the proxy model (proxy-v2, seed 1; no model weights): ' "$TMP/out" && ok "summary says proxy" || not_ok "summary says proxy"
# the planted retrieval structure: the golden selection keeps the needle (kernels/proxy.h), and
# the other reply to the same request (the 2nd needle) is counted as distractor tokens
for r in 2 3; do
    g=$(sed -n "${r}p" "$F" | grep -o '"needle_retention_golden":[0-9.]*' | cut -d: -f2)
    awk -v g="$g" 'BEGIN { exit !(g != "" && g >= 0.95) }' && ok "row $r: golden keeps the needle ($g)" || not_ok "row $r: golden keeps the needle ($g)"
    d=$(sed -n "${r}p" "$F" | grep -o '"distractor_tokens":[0-9]*' | cut -d: -f2)
    [ "${d:-0}" -gt 0 ] && ok "row $r: distractor tokens ($d)" || not_ok "row $r: distractor tokens ($d)"
done
expect_success "bf16 run" run --variant weights=bf16 --out "$TMP/bf16"
head -n 1 "$TMP/bf16/run-001.jsonl" | grep -q '"weights":"bf16"' && ok "variant in header" || not_ok "variant in header"
expect_success "compare fp32 bf16" "$DSA_BIN" compare "$TMP/fp32" "$TMP/bf16"
grep -q 'difference' "$TMP/out" && ok "compare prints differences" || not_ok "compare prints differences"
# a bf16-sized effect is never rounded to zero: no "-0.000 [-0.000, +0.000]", no "MDE80 0.000"
grep -Eq '[-+]0\.000 \[[-+]0\.000, [-+]0\.000\]|MDE80 0\.000( |$)' "$TMP/out" \
    && { not_ok "fp32 vs bf16: no effect rounded to zero"; sed 's/^/#   /' "$TMP/out"; } || ok "fp32 vs bf16: no effect rounded to zero"
# one thread here, two for the first run: the reference's output never depends on the count
export DSA_THREADS=1
expect_success "rerun into a new dir" run --out "$TMP/again"
unset DSA_THREADS
# the rows take seconds each: a progress meter with an ETA (a line per 10 % off a terminal)
grep -Eq '^mrcr in-process  2/2  100% .* ETA ' "$TMP/err" && ok "in-process progress meter" \
    || { not_ok "in-process progress meter"; sed 's/^/#   /' "$TMP/err"; }
expect_eq "same selection hashes" "$(grep -o '"selection_sha256":"[0-9a-f]*"' "$TMP/again/run-001.jsonl")" "$(grep -o '"selection_sha256":"[0-9a-f]*"' "$F")"
# and the golden side too: recall against it and its needle retention, to the last digit
expect_eq "same scores (1 vs 2 threads)" "$(grep -Eo '"(score|recall_last|needle_retention_golden)":[^,]*' "$TMP/again/run-001.jsonl")" "$(grep -Eo '"(score|recall_last|needle_retention_golden)":[^,]*' "$F")"
cp "$F" "$TMP/before"
expect_success "resume" run --out "$TMP/fp32"
cmp -s "$F" "$TMP/before" && ok "resume adds nothing" || not_ok "resume adds nothing"
grep -qx "dsa-eval: resuming: 2 of 2 samples already done in '$F': nothing left to do" "$TMP/err" \
    && ok "resume says so" || { not_ok "resume says so"; sed 's/^/#   /' "$TMP/err"; }
# --json is honoured in-process too: the summary document, no text table
expect_success "in-process --json" run --out "$TMP/fp32" --json
"$DSA_PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["dsa_eval_summary"] == 1 and d["rows"], d' "$TMP/out" \
    && ok "in-process --json prints the summary document" || { not_ok "in-process --json prints the summary document"; head -5 "$TMP/out" | sed 's/^/#   /'; }
# the summary's µs per token is total time over total tokens of the records it covers
"$DSA_PYTHON" - "$TMP/out" "$F" <<'PY' && ok "--json summary: time per stage" || not_ok "--json summary: time per stage"
import json, sys
d = json.load(open(sys.argv[1]))
recs = [json.loads(l) for l in open(sys.argv[2]).readlines()[1:]]
tok = sum(r["context_tokens"] for r in recs)
row = [r for r in d["rows"] if r["bin"] == "all"][0]["pooled"]["stage_us_per_token"]
for k, v in row.items():
    want = sum(r["stage_us_per_token"][k] * r["context_tokens"] for r in recs) / tok
    assert abs(v - want) <= 1e-9 * max(want, 1e-9), (k, v, want)
PY
# the row filters in the header: match.filters as the endpoint writes it, no masks
head -n 1 "$F" | "$DSA_PYTHON" -c '
import json, sys
m = json.loads(sys.stdin.readline())["match"]
assert m["filters"] == {"needles": "2", "bins": None, "max_bin": None, "limit": 0}, m
assert not {"bins_mask", "needles_mask", "limit"} & set(m), m' && ok "header: match.filters" \
    || not_ok "header: match.filters"
# a run file of an older build (tests/data/runs): the filters as masks in its match; with this
# build's kernel identity in place of that build's, it resumes (nothing to do) and is unchanged,
# and other filters are refused
mkdir -p "$TMP/old"
"$DSA_PYTHON" - "$DSA_DATA/runs/mrcr-inprocess-masks.jsonl" "$F" "$TMP/old/run-001.jsonl" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
h, now = json.loads(lines[0]), json.loads(open(sys.argv[2]).readline())
assert h["match"]["bins_mask"] == 0 and h["match"]["needles_mask"] == 4, h["match"]
for side in ("match", "backend"):
    h[side]["kernels"] = now["match"]["kernels"]
lines[0] = json.dumps(h, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
open(sys.argv[3], "w").write("\n".join(lines) + "\n")
PY
cp "$TMP/old/run-001.jsonl" "$TMP/old.before"
expect_success "old-format run file resumes" run --out "$TMP/old"
grep -qx "dsa-eval: resuming: 2 of 2 samples already done in '$TMP/old/run-001.jsonl': nothing left to do" \
    "$TMP/err" && ok "old format: nothing left to do" || { not_ok "old format: nothing left to do"; sed 's/^/#   /' "$TMP/err"; }
cmp -s "$TMP/old/run-001.jsonl" "$TMP/old.before" && ok "old format: file unchanged" \
    || not_ok "old format: file unchanged"
expect_code 6 "old format, another --limit: refused" run --limit 1 --out "$TMP/old"
grep -q "(different limit: 0 vs 1)" "$TMP/err" && ok "old format: the key named" \
    || { not_ok "old format: the key named"; sed 's/^/#   /' "$TMP/err"; }
expect_code 6 "other variant into the same dir" run --variant rope=interleaved --out "$TMP/fp32"
expect_code 2 "unknown variant" run --variant weights=fp8 --out "$TMP/x"
grep -q "unknown variant 'weights=fp8'" "$TMP/err" && ok "variant message" || not_ok "variant message"
expect_code 2 "bad topk" run --topk 100 --out "$TMP/x"
if ! "$DSA_BIN" kernels check --device cuda -k none >/dev/null 2>&1; then
    expect_code 4 "no cuda" run --device cuda --out "$TMP/x"
fi
done_testing
