#!/usr/bin/env bash
# --shard i/n: the shards of a run split its samples by id (disjoint, every sample once), and
# `dsa-eval merge` of the shard files gives the unsharded run file up to record order — for
# mrcr and gsm8k, against the test server and in-process on the CPU reference. Bad --shard
# values are usage errors, and a resume keeps to its shard.
# SPDX-License-Identifier: GPL-3.0-or-later
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/srvlib.sh"
require_python

D="$DSA_DATA/gsm8k"
[ -f "$D/test.jsonl" ] || { echo "Bail out! no GSM8K data under $D"; exit 1; }
DS=$TMP/ds.jsonl
expect_success "make a synthetic dataset" \
    "$DSA_BIN" datasets synth mrcr --needles 2,8 --bins 8k,16k --per-bin 4 --seed 5 -o "$DS"
start_server --seed 3 --mrcr-wrong 0.3 --gsm8k-data "$D/test.jsonl" \
    || { echo "Bail out! server"; exit 1; }

# same_run TITLE UNSHARDED MERGED: the same match (the merged one has no "shard") and the same
# records once the timing fields, which differ between any two runs, are left out
same_run() {
    "$DSA_PYTHON" - "$2" "$3" <<'PY' && ok "$1" || not_ok "$1"
import json, sys
VOLATILE = {"latency_ms", "ttft_ms", "decode_ms", "elapsed_ms", "stage_us_per_token", "timings"}
def load(p):
    lines = open(p, encoding="utf-8").read().splitlines()
    head = json.loads(lines[0])
    recs = sorted((json.loads(l) for l in lines[1:]), key=lambda r: r["id"])
    return head, [{k: v for k, v in r.items() if k not in VOLATILE} for r in recs]
(h1, r1), (h2, r2) = load(sys.argv[1]), load(sys.argv[2])
assert "shard" not in h2["match"], h2["match"]
assert h1["match"] == h2["match"], (h1["match"], h2["match"])
assert len(r1) > 1 and r1 == r2, (len(r1), len(r2))
PY
}

# check NAME N CMD...: the unsharded run into $TMP/NAME-all, N shards into $TMP/NAME-I, merged
check() {
    local name=$1 n=$2 i files=()
    shift 2
    expect_success "$name: unsharded" "$@" --out "$TMP/$name-all"
    for i in $(seq 1 "$n"); do
        expect_success "$name: shard $i/$n" "$@" --shard "$i/$n" --out "$TMP/$name-$i"
        head -n 1 "$TMP/$name-$i/run-001.jsonl" | grep -q "\"shard\":\"$i/$n\"" \
            && ok "$name: shard $i/$n in the header's match" || not_ok "$name: shard $i/$n in the header's match"
        files+=("$TMP/$name-$i/run-001.jsonl")
    done
    local per=""
    for f in "${files[@]}"; do per="$per $(($(wc -l <"$f") - 1))"; done
    echo "# $name records per shard:$per"
    expect_success "$name: merge" "$DSA_BIN" merge "$TMP/$name-merged.jsonl" "${files[@]}"
    same_run "$name: merged shards = the unsharded run" "$TMP/$name-all/run-001.jsonl" \
        "$TMP/$name-merged.jsonl"
}

check mrcr-endpoint 3 "$DSA_BIN" mrcr --endpoint "$SERVER_URL" --dataset "$DS" --needles 2,8 -q
check gsm8k-endpoint 3 "$DSA_BIN" gsm8k --endpoint "$SERVER_URL" --data "$D" --limit 12 -q
check mrcr-inprocess 2 "$DSA_BIN" mrcr --backend inprocess --device cpu --dataset "$DS" \
    --needles 2 --bins 8k --limit 3 --max-query 2 --topk 512 -q
check gsm8k-inprocess 2 "$DSA_BIN" gsm8k --backend inprocess --device cpu --data "$D" --mtp 1 \
    --limit 5 -q

# the split is by id alone: a shard of a longer run holds the same ids of the shorter one
"$DSA_BIN" gsm8k --endpoint "$SERVER_URL" --data "$D" --limit 24 --shard 2/3 --out "$TMP/long" -q
ids() { tail -n +2 "$1" | grep -o '"id":"[^"]*"' | sort; }
expect_eq "shard 2/3 of --limit 24 extends shard 2/3 of --limit 12" \
    "$(ids "$TMP/long/run-001.jsonl" | head -n "$(ids "$TMP/gsm8k-endpoint-2/run-001.jsonl" | wc -l)")" \
    "$(ids "$TMP/gsm8k-endpoint-2/run-001.jsonl")"
# a resume stays in its shard: another shard of the same folder is another run
expect_code 6 "another shard into the same folder: exit 6" "$DSA_BIN" gsm8k --endpoint "$SERVER_URL" \
    --data "$D" --limit 12 --shard 1/3 --out "$TMP/gsm8k-endpoint-2" -q
grep -q 'different shard: "1/3" vs "2/3"\|different shard: "2/3" vs "1/3"' "$TMP/err" \
    && ok "the mismatch names the shard" || { not_ok "the mismatch names the shard"; sed 's/^/#   /' "$TMP/err"; }
expect_success "rerun of a shard resumes" "$DSA_BIN" gsm8k --endpoint "$SERVER_URL" --data "$D" \
    --limit 12 --shard 2/3 --out "$TMP/gsm8k-endpoint-2"
grep -q "nothing left to do" "$TMP/err" && ok "shard resume: nothing left to do" \
    || { not_ok "shard resume: nothing left to do"; sed 's/^/#   /' "$TMP/err"; }

for bad in 0/2 3/2 1/0 2 a/b 1/2x -1/2; do
    expect_code 2 "--shard $bad refused" "$DSA_BIN" mrcr --endpoint "$SERVER_URL" --dataset "$DS" \
        --shard "$bad" --out "$TMP/bad"
    grep -qx "dsa-eval: --shard '$bad' is not i/n with 1 <= i <= n (e.g. 1/4)" "$TMP/err" \
        && ok "--shard $bad: one line" || { not_ok "--shard $bad: one line"; sed 's/^/#   /' "$TMP/err"; }
done
[ ! -e "$TMP/bad" ] && ok "a refused --shard writes nothing" || not_ok "a refused --shard writes nothing"
done_testing
