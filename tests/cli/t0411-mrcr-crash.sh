#!/bin/bash
# dsa-eval mrcr interrupted and resumed: kill -9 at random points (>= 20 times across a
# two-run job), then the same command to the end; the run files hold exactly the records of
# an uninterrupted run (same ids, outputs and scores), once each. SIGINT exits 130 and
# resumes the same way.
# SPDX-License-Identifier: GPL-3.0-or-later
. "$DSA_SRC/tests/cli/lib.sh"
. "$DSA_SRC/tests/cli/srvlib.sh"
require_python

DS=$TMP/ds.jsonl
expect_success "make a synthetic dataset" \
    "$DSA_BIN" datasets synth mrcr --needles 8 --bins 8k,16k --per-bin 16 --seed 5 -o "$DS"
run() { # run OUTDIR [extra options]
    local out=$1; shift
    "$DSA_BIN" mrcr --endpoint "$SERVER_URL" --dataset "$DS" --runs 2 --concurrency 2 \
        --out "$out" -q "$@"
}

# the reference on a server without delay (answers do not depend on timing)
start_server --seed 3 --mrcr-wrong 0.4 || { echo "Bail out! server"; exit 1; }
expect_code 0 "reference run" run "$TMP/ref"
stop_server
# latency per answer, so that kills land while requests are in flight
start_server --seed 3 --mrcr-wrong 0.4 --delay-ms 200 || { echo "Bail out! server"; exit 1; }

kills=0
attempts=0
RANDOM=42 # the kill points are reproducible
while [ $kills -lt 24 ] && [ $attempts -lt 200 ]; do
    attempts=$((attempts + 1))
    # the binary itself in the background (not a function's subshell): kill -9 must hit it
    "$DSA_BIN" mrcr --endpoint "$SERVER_URL" --dataset "$DS" --runs 2 --concurrency 2 \
        --out "$TMP/crash" -q >/dev/null 2>&1 &
    pid=$!
    sleep "0.$(printf '%03d' $((RANDOM % 400 + 20)))"
    if kill -9 $pid 2>/dev/null; then
        kills=$((kills + 1))
    fi
    wait $pid 2>/dev/null
    # once the job finished uninterrupted, start over so every kill hits a live run
    if [ $kills -lt 24 ] && [ -s "$TMP/crash/run-002.jsonl" ] &&
        [ "$(wc -l <"$TMP/crash/run-002.jsonl")" -ge 33 ]; then
        break
    fi
done
expect_eq "killed at least 20 times" "$([ $kills -ge 20 ] && echo yes || echo "no ($kills)")" yes
expect_code 0 "the rerun finishes the job" run "$TMP/crash"

REF=$TMP/ref CRASH=$TMP/crash py "after the kills: exactly the records of the uninterrupted run" <<'EOF'
import json, os
for i in (1, 2):
    def load(d):
        lines = open("%s/run-%03d.jsonl" % (d, i)).read().split("\n")
        assert lines[-1] == "", "file does not end with a newline"
        head = json.loads(lines[0])
        assert head["dsa_eval_run"] == 1 and head["run"] == i
        recs = [json.loads(l) for l in lines[1:-1]]
        ids = [r["id"] for r in recs]
        assert len(ids) == len(set(ids)), "duplicate ids in %s" % d
        return {r["id"]: r for r in recs}
    ref, got = load(os.environ["REF"]), load(os.environ["CRASH"])
    assert len(ref) == 32 and set(ref) == set(got), sorted(set(ref) ^ set(got))
    for k in ref:
        for key in ("status", "score", "output", "prefix_hit", "exact", "bin", "bin_tokens"):
            assert ref[k][key] == got[k][key], (i, k, key)
EOF

# Ctrl-C: exit 130, finished records kept, a rerun completes (a slower server, so that the
# signal lands mid-run)
stop_server
start_server --seed 3 --mrcr-wrong 0.4 --delay-ms 150 || { echo "Bail out! server"; exit 1; }
"$DSA_BIN" mrcr --endpoint "$SERVER_URL" --dataset "$DS" --runs 2 --concurrency 2 \
    --out "$TMP/int" -q >/dev/null 2>"$TMP/int.err" &
pid=$!
sleep 1
kill -INT $pid
wait $pid
expect_eq "SIGINT exits 130" "$?" 130
n=$(($(cat "$TMP"/int/run-*.jsonl 2>/dev/null | wc -l)))
expect_code 0 "rerun after SIGINT finishes" run "$TMP/int"
REF=$TMP/ref CRASH=$TMP/int py "after SIGINT: the records of the uninterrupted run" <<'EOF'
import json, os
for i in (1, 2):
    ref = [json.loads(l) for l in open("%s/run-%03d.jsonl" % (os.environ["REF"], i)).read().splitlines()[1:]]
    got = [json.loads(l) for l in open("%s/run-%03d.jsonl" % (os.environ["CRASH"], i)).read().splitlines()[1:]]
    assert len(got) == len({r["id"] for r in got}) == 32
    assert {r["id"]: r["score"] for r in ref} == {r["id"]: r["score"] for r in got}
EOF
echo "# $n lines were on disk at the interrupt"

done_testing
