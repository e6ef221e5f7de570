#!/usr/bin/env bash
# The traces runs on the one run loop: their header's row filters in match.filters (as the proxy
# runs write them, docs/runfiles.md "MRCR's row filters"), and a traces run file of an older build
# (tests/data/runs/mrcr-traces-masks.jsonl: the filters as masks) still resumes, unchanged;
# --shard, merge and --runs as the loop has them.
# SPDX-License-Identifier: GPL-3.0-or-later
. "$(dirname "$0")/lib.sh"
require_python

R="$TMP/runs"
run() { "$DSA_BIN" mrcr --backend inprocess --device cpu --traces "$DSA_DATA/traces" -q "$@"; }
expect_success "mrcr --traces" run --out "$R/a"
F="$R/a/run-001.jsonl"
head -n 1 "$F" | "$DSA_PYTHON" -c '
import json, sys
m = json.loads(sys.stdin.readline())["match"]
assert m["filters"] == {"needles": "8", "bins": None, "max_bin": None, "limit": 0}, m
assert not {"bins_mask", "needles_mask", "limit"} & set(m), m' && ok "mrcr header: match.filters, no masks" \
    || not_ok "mrcr header: match.filters, no masks"
expect_success "ruler --traces" "$DSA_BIN" ruler --backend inprocess --device cpu --traces "$DSA_DATA/traces-ruler" --topk 512 --tasks niah_multikey_3 --out "$R/r" -q
head -n 1 "$R/r/run-001.jsonl" | "$DSA_PYTHON" -c '
import json, sys
m = json.loads(sys.stdin.readline())["match"]
assert m["filters"] == {"tasks": "niah_multikey_3", "lengths": "all", "limit": 10}, m
assert not {"lengths_mask", "tasks_mask", "limit"} & set(m), m' && ok "ruler header: match.filters" \
    || not_ok "ruler header: match.filters"
expect_success "gsm8k --mtp 2 --traces" "$DSA_BIN" gsm8k --backend inprocess --device cpu --mtp 2 --topk 2048 --traces "$DSA_DATA/traces" --out "$R/g" -q
head -n 1 "$R/g/run-001.jsonl" | "$DSA_PYTHON" -c '
import json, sys
m = json.loads(sys.stdin.readline())["match"]
assert m["mtp"] == 2 and not {"filters", "bins_mask", "needles_mask", "limit"} & set(m), m' \
    && ok "gsm8k header: mtp, no filters" || not_ok "gsm8k header: mtp, no filters"

# the older build's file, with this build's kernel identity in place of that build's
mkdir -p "$TMP/old"
"$DSA_PYTHON" - "$DSA_DATA/runs/mrcr-traces-masks.jsonl" "$F" "$TMP/old/run-001.jsonl" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
h, now = json.loads(lines[0]), json.loads(open(sys.argv[2]).readline())
assert h["match"]["bins_mask"] == 0 and h["match"]["needles_mask"] == 256, h["match"]
assert h["backend"]["source"] == "traces" and "filters" not in h["match"], h
for side in ("match", "backend"):
    h[side]["kernels"] = now["match"]["kernels"]
lines[0] = json.dumps(h, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
open(sys.argv[3], "w").write("\n".join(lines) + "\n")
PY
cp "$TMP/old/run-001.jsonl" "$TMP/old.before"
"$DSA_BIN" mrcr --backend inprocess --device cpu --traces "$DSA_DATA/traces" --out "$TMP/old" >"$TMP/out" 2>"$TMP/err"
expect_eq "old traces file resumes" "$?" "0"
grep -qx "dsa-eval: resuming: 1 of 1 samples already done in '$TMP/old/run-001.jsonl': nothing left to do" \
    "$TMP/err" && ok "old format: nothing left to do" || { not_ok "old format: nothing left to do"; sed 's/^/#   /' "$TMP/err"; }
cmp -s "$TMP/old/run-001.jsonl" "$TMP/old.before" && ok "old format: file unchanged" \
    || not_ok "old format: file unchanged"
grep -q -E '^≤8K +1 +0\.9960 +0\.9960 +1\.0000 +0\.878 +0\.878 +0\.878$' "$TMP/out" \
    && ok "old format: the summary of its record" || { not_ok "old format: the summary of its record"; sed 's/^/#   /' "$TMP/out"; }
expect_code 6 "old format, another --limit: refused" run --limit 1 --out "$TMP/old"
grep -q "(different limit: 0 vs 1)" "$TMP/err" && ok "old format: the key named" \
    || { not_ok "old format: the key named"; sed 's/^/#   /' "$TMP/err"; }
expect_code 6 "new format, another --limit: refused" run --limit 1 --out "$R/a"
grep -q "different filters" "$TMP/err" && ok "new format: the key named" \
    || { not_ok "new format: the key named"; sed 's/^/#   /' "$TMP/err"; }

# the loop's --shard: the one row's shard runs it, the other has none; merge gives the run
for s in 1 2; do expect_success "shard $s/2" run --shard "$s/2" --out "$R/s$s"; done
expect_eq "one record over both shards" "$(cat "$R"/s1/run-001.jsonl "$R"/s2/run-001.jsonl | grep -c '"id":"n8/r0000"')" "1"
expect_success "merge the shards" "$DSA_BIN" merge "$R/m.jsonl" "$R/s1/run-001.jsonl" "$R/s2/run-001.jsonl"
"$DSA_PYTHON" - "$R/m.jsonl" "$F" <<'PY' && ok "merged = unsharded (match, records but their times)" || not_ok "merged = unsharded (match, records but their times)"
import json, sys
def read(p):
    lines = open(p).read().splitlines()
    recs = [json.loads(l) for l in lines[1:]]
    for r in recs:
        r.pop("elapsed_ms"), r.pop("stage_us_per_token")
    return json.loads(lines[0])["match"], sorted(json.dumps(r, sort_keys=True) for r in recs)
m, u = read(sys.argv[1]), read(sys.argv[2])
assert m == u and len(u[1]) == 1, (m, u)
PY
expect_code 2 "--runs 2 on traces" run --runs 2 --out "$R/n"
grep -q "^dsa-eval: --runs N does not apply to --traces" "$TMP/err" && ok "--runs message" || not_ok "--runs message"

# a traces folder that is not there: one line that names the manifest, exit 3, for each eval
for e in mrcr ruler gsm8k; do
    expect_code 3 "$e --traces /nonexistent" "$DSA_BIN" "$e" --backend inprocess --device cpu \
        --traces "$TMP/nonexistent" --out "$R/none-$e"
    expect_eq "$e --traces /nonexistent: one line" "$(cat "$TMP/err")" \
        "dsa-eval: cannot read traces manifest '$TMP/nonexistent/manifest.jsonl': No such file or directory"
done
done_testing
