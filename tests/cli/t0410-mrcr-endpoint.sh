#!/bin/bash
# dsa-eval mrcr against dsa-test-server: scores equal what the server was configured to
# produce (computed independently here with srvref.mrcr_answer and CPython difflib), the same
# with --stream, with two endpoints and under every fault kind (identical records, retries
# counted); exact request bodies; API key never stored; over-context exclusion (pre-count and
# 400 path) and failed samples reported per bin and never scored; --retry-failed sends exactly
# the failed rows again (no duplicate ids, ok rows byte-identical); exit codes.
# SPDX-License-Identifier: GPL-3.0-or-later
. "$DSA_SRC/tests/cli/lib.sh"
. "$DSA_SRC/tests/cli/srvlib.sh"
require_python

DS=$TMP/ds.jsonl
expect_success "make a synthetic dataset" \
    "$DSA_BIN" datasets synth mrcr --needles 2,8 --bins 8k,16k --per-bin 5 --seed 3 -o "$DS"

SEED=7
SRV_OPTS=(--seed $SEED --mrcr-wrong 0.3 --mrcr-garble 0.3)
start_server "${SRV_OPTS[@]}" --log-requests "$TMP/req.jsonl" || { echo "Bail out! server"; exit 1; }
URL1=$SERVER_URL

# check_run DIR TITLE [python-extra]: every record's output and score equal the reference,
# and the summary's per-bin means equal the reference means.
check_run() {
    local dir=$1 title=$2
    DIR=$dir DS=$DS SEED=$SEED LIMIT=${LIMIT:-0} py "$title" <<'EOF'
import difflib, glob, json, os, srvref
from collections import defaultdict
rows = {}
per = defaultdict(int)
kept = defaultdict(int)
limit = int(os.environ["LIMIT"])
for line in open(os.environ["DS"]):
    r = json.loads(line)
    n = r["n_needles"]; rid = "n%d/r%04d" % (n, per[n]); per[n] += 1
    kept[n, r["bin"]] += 1
    if limit and kept[n, r["bin"]] > limit:
        continue
    rows[rid] = r
def grade(resp, answer, prefix):
    if not resp.startswith(prefix):
        return 0.0
    return difflib.SequenceMatcher(None, resp[len(prefix):], answer[len(prefix):]).ratio()
seed = int(os.environ["SEED"])
expect = {}
for rid, r in rows.items():
    text, _ = srvref.mrcr_answer(json.loads(r["prompt"]), seed=seed, wrong="0.3", garble="0.3")
    expect[rid] = (text, grade(text, r["answer"], r["random_string_to_prepend"]))
files = sorted(glob.glob(os.environ["DIR"] + "/run-*.jsonl"))
assert files, "no run files"
for f in files:
    lines = open(f).read().splitlines()
    recs = [json.loads(l) for l in lines[1:]]
    ids = [x["id"] for x in recs]
    assert len(ids) == len(set(ids)), "duplicate ids in " + f
    assert set(ids) == set(rows), (f, sorted(set(rows) ^ set(ids)))
    for x in recs:
        text, score = expect[x["id"]]
        assert x["status"] == "ok", x
        assert x["output"] == text, (x["id"], x["output"][:80], text[:80])
        assert x["score"] == score, (x["id"], x["score"], score)
        assert x["prefix_hit"] == text.startswith(rows[x["id"]]["random_string_to_prepend"])
        assert x["exact"] == (score == 1.0)
# the per-bin means of the summary (--json output) against the reference means
summ = json.load(open(os.environ["DIR"] + "/summary.json"))
want = defaultdict(list)
for rid, (t, s) in expect.items():
    r = rows[rid]
    want[(r["n_needles"], r["bin"])].append(s)
if limit:
    want = {k: v[:limit] for k, v in want.items()}
checked = 0
for row in summ["rows"]:
    if row.get("total") or "needles" not in row:
        continue
    key = (row["needles"], {8192: "8k", 16384: "16k"}[row["bin_tokens"]])
    ws = want[key]
    for run in row["runs"]:
        assert run["scored"] == len(ws), (key, run)
        assert abs(run["mean"] - sum(ws) / len(ws)) < 1e-12, (key, run["mean"], sum(ws) / len(ws))
    checked += 1
assert checked == 4, checked
assert any(0 < s < 1 for t, s in expect.values()), "the fault-free reference has no partial scores"
EOF
}

# bins in the synthetic file are labels like "8k": make sure the reference uses those
"$DSA_PYTHON" -c "import json,sys; r=json.loads(open('$DS').readline()); assert r['bin'] in ('8k','16k'), r['bin']" \
    || echo "# the synthetic rows changed their bin labels"

OUT=$TMP/clean
"$DSA_BIN" mrcr --endpoint "$URL1" --dataset "$DS" --needles 2,8 --runs 2 --concurrency 4 \
    --seed 11 --out "$OUT" --json -q >"$OUT.json" 2>"$TMP/err"
expect_eq "clean run exits 0" "$?" 0
mkdir -p "$OUT" && cp "$OUT.json" "$OUT/summary.json"
check_run "$OUT" "clean run: outputs, scores and per-bin means equal the reference"

# exact request bodies: messages verbatim, parameters merged, model added
DS=$DS LOG=$TMP/req.jsonl py "request bodies: messages verbatim, max_tokens/temperature/seed" <<'EOF'
import json, os
prompts = [json.loads(json.loads(l)["prompt"]) for l in open(os.environ["DS"])]
chats = [json.loads(l) for l in open(os.environ["LOG"])]
chats = [c for c in chats if c["path"] == "/v1/chat/completions"]
assert len(chats) == 2 * len(prompts), len(chats)
for c in chats:
    b = json.loads(c["body"])
    assert set(b) == {"messages", "max_tokens", "temperature", "seed", "model"}, sorted(b)
    assert b["messages"] in prompts
    assert b["max_tokens"] == 4096 and b["temperature"] == 0 and b["seed"] == 11
    assert b["model"] == "dsa-test-model"
toks = [json.loads(l) for l in open(os.environ["LOG"]) if '"/tokenize"' in l]
assert toks, "no /tokenize pre-count"
b = json.loads(toks[0]["body"])
assert b["add_generation_prompt"] is True and b["messages"] in prompts and b["model"]
EOF

# --dataset openai/mrcr: the fetched layout <cache>/mrcr/<revision>/<N>needle.jsonl, one
# file per needle count; ids and records equal those of the single file
REV=f4c69fae7cf81f7ca26b9fee34b392a50f6b8a1d
mkdir -p "$TMP/cache/mrcr/$REV"
grep '"n_needles":2' "$DS" >"$TMP/cache/mrcr/$REV/2needle.jsonl"
grep '"n_needles":8' "$DS" >"$TMP/cache/mrcr/$REV/8needle.jsonl"
OUT=$TMP/cached
DSA_EVAL_CACHE=$TMP/cache "$DSA_BIN" mrcr --endpoint "$URL1" --needles 2,8 --runs 2 \
    --concurrency 4 --seed 11 --out "$OUT" --json -q >"$OUT.json" 2>"$TMP/err"
expect_eq "--dataset openai/mrcr from the cache: exit 0" "$?" 0
cp "$OUT.json" "$OUT/summary.json"
check_run "$OUT" "--dataset openai/mrcr: the same records as the single file"
expect_code 3 "openai/mrcr not fetched: exit 3" env DSA_EVAL_CACHE=$TMP/nocache "$DSA_BIN" mrcr \
    --endpoint "$URL1" --needles 4 --out "$TMP/x" -q
grep -q "datasets fetch mrcr --needles 4" "$TMP/err" && ok "the error says how to fetch it" ||
    not_ok "the error says how to fetch it"

OUT=$TMP/stream
"$DSA_BIN" mrcr --endpoint "$URL1" --dataset "$DS" --needles 2,8 --runs 2 --concurrency 3 \
    --stream --out "$OUT" --json -q >"$OUT.json" 2>"$TMP/err"
expect_eq "--stream run exits 0" "$?" 0
cp "$OUT.json" "$OUT/summary.json"
check_run "$OUT" "--stream: the same outputs and scores"
DIR=$OUT py "--stream: ttft_ms and decode_ms recorded" <<'EOF'
import json, os
for l in open(os.environ["DIR"] + "/run-001.jsonl").read().splitlines()[1:]:
    x = json.loads(l)
    assert x["ttft_ms"] is not None and x["ttft_ms"] >= 0 and x["decode_ms"] >= 0, x["id"]
    assert x["usage"]["completion_tokens"] > 0
EOF

start_server "${SRV_OPTS[@]}" || { echo "Bail out! server 2"; exit 1; }
URL2=$SERVER_URL
OUT=$TMP/two
"$DSA_BIN" mrcr --endpoint "$URL1" --endpoint "$URL2/v1" --dataset "$DS" --needles 2,8 \
    --runs 2 --concurrency 6 --out "$OUT" --json -q >"$OUT.json" 2>"$TMP/err"
expect_eq "two endpoints exit 0" "$?" 0
cp "$OUT.json" "$OUT/summary.json"
check_run "$OUT" "two endpoints: the same outputs and scores"
n0=$(grep -c '"endpoint":0' "$OUT/run-001.jsonl" "$OUT/run-002.jsonl" | awk -F: '{s+=$2} END {print s}')
n1=$(grep -c '"endpoint":1' "$OUT/run-001.jsonl" "$OUT/run-002.jsonl" | awk -F: '{s+=$2} END {print s}')
if [ "$n0" -ge 8 ] && [ "$n1" -ge 8 ]; then ok "two endpoints share the work ($n0/$n1)"; else
    not_ok "two endpoints share the work ($n0/$n1)"; fi

# every fault kind, on each body's first arrival: the retry succeeds, records are identical
for kind in 500 503 429 reset truncate malformed content-type error-nested error-flat stall \
    stream-error; do
    stream=""
    quiet=""
    case $kind in stream-error | truncate) stream=--stream ;; 503) quiet=--no-quiet ;; esac
    start_server "${SRV_OPTS[@]}" --fault "$kind:first" --retry-after 0 --stall-seconds 5 ||
        { not_ok "fault $kind: server"; continue; }
    OUT=$TMP/fault-$kind
    "$DSA_BIN" mrcr --endpoint "$SERVER_URL" --dataset "$DS" --needles 2,8 --runs 1 \
        --limit 2 --concurrency 4 --timeout 1 $stream --out "$OUT" --json ${quiet:--q} \
        >"$OUT.json" 2>"$TMP/err"
    rc=$?
    stop_server
    expect_eq "fault $kind: exit 0" "$rc" 0
    if [ "$kind" = 503 ]; then
        # the progress line (stderr is not a terminal: plain lines) ends with all 8 rows done
        # and the 8 retries counted
        tail -1 "$TMP/err" | grep -Eq '^mrcr run 1/1 +8/8 +100% .* retries +8 +errors +0$' &&
            ok "progress on stderr counts rows and retries" ||
            { not_ok "progress on stderr counts rows and retries"; tail -2 "$TMP/err" | sed 's/^/#   /'; }
    fi
    cp "$OUT.json" "$OUT/summary.json"
    LIMIT=2 check_run "$OUT" "fault $kind: records identical to a clean run"
    # reset: libcurl itself resends a request once when a reused keep-alive connection dies
    # before any byte of the answer, so such rows show 0 retries of ours
    DIR=$OUT KIND=$kind py "fault $kind: every row retried once" <<'EOF'
import json, os
recs = [json.loads(l) for l in open(os.environ["DIR"] + "/run-001.jsonl").read().splitlines()[1:]]
ok = (0, 1) if os.environ["KIND"] == "reset" else (1,)
assert all(x["retries"] in ok for x in recs), [(x["id"], x["retries"]) for x in recs]
assert os.environ["KIND"] == "reset" or sum(x["retries"] for x in recs) == len(recs)
EOF
done

# over-context: rows whose prompt + max_tokens exceed the context are excluded, never scored
MAXLEN=$("$DSA_PYTHON" - "$DS" <<'EOF'
import json, sys
sys.path.insert(0, __import__("os").environ["DSA_SRC"] + "/tests/cli")
import srvref
c = sorted(srvref.chat_count(json.loads(json.loads(l)["prompt"])) for l in open(sys.argv[1]))
print(c[len(c) // 2] + 1000)   # about half the rows fit with --max-tokens 1000
EOF
)
SGL_URL=""
start_server "${SRV_OPTS[@]}" --max-model-len "$MAXLEN" --dialect sglang && SGL_URL=$SERVER_URL
start_server "${SRV_OPTS[@]}" --max-model-len "$MAXLEN" || { echo "Bail out! server"; exit 1; }
# pre-count: vLLM /tokenize; 400: vLLM's over-context error; sglang: detected from owned_by,
# no chat /tokenize, SGLang's error phrasing in the flat error shape
for mode in pre-count 400 sglang; do
    extra=""
    url=$SERVER_URL
    [ $mode = 400 ] && extra=--no-count-tokens
    [ $mode = sglang ] && url=$SGL_URL
    OUT=$TMP/ctx-$mode
    "$DSA_BIN" mrcr --endpoint "$url" --dataset "$DS" --needles 2,8 --max-tokens 1000 \
        $extra --out "$OUT" --json -q >"$OUT.json" 2>"$TMP/err"
    expect_eq "over-context ($mode): exit 0" "$?" 0
    DIALECT=vllm
    [ $mode = sglang ] && DIALECT=sglang
    DIALECT=$DIALECT DIR=$OUT DS=$DS MAXLEN=$MAXLEN SEED=$SEED py "over-context ($mode): the expected rows excluded, per bin" <<'EOF'
import json, os, srvref
from collections import Counter, defaultdict
maxlen = int(os.environ["MAXLEN"])
per = defaultdict(int); want = set(); bins = {}; counts = {}; rows_prompt = {}
for line in open(os.environ["DS"]):
    r = json.loads(line); n = r["n_needles"]; rid = "n%d/r%04d" % (n, per[n]); per[n] += 1
    bins[rid] = r["bin"]
    counts[rid] = srvref.chat_count(json.loads(r["prompt"]))
    rows_prompt[rid] = r["prompt"]
    if counts[rid] + 1000 > maxlen:
        want.add(rid)
assert 0 < len(want) < len(bins), len(want)
recs = [json.loads(l) for l in open(os.environ["DIR"] + "/run-001.jsonl").read().splitlines()[1:]]
got = {x["id"] for x in recs if x["status"] == "excluded"}
assert got == want, sorted(got ^ want)
for x in recs:
    if x["status"] == "excluded":
        assert x["score"] is None and x["error"].startswith("over_context"), x
        assert x["prompt_tokens"] == counts[x["id"]], (x["prompt_tokens"], counts[x["id"]])
    else:
        assert x["status"] == "ok" and isinstance(x["score"], float)
        text, _ = srvref.mrcr_answer(json.loads(rows_prompt[x["id"]]), seed=int(os.environ["SEED"]),
                                     wrong="0.3", garble="0.3")
        assert x["output"] == text
head = json.loads(open(os.environ["DIR"] + "/run-001.jsonl").readline())
assert head["backend"]["dialect"] == os.environ["DIALECT"], head["backend"]
summ = json.load(open(os.environ["DIR"] + ".json"))
assert sorted(e["id"] if isinstance(e, dict) else e for e in summ["excluded"]) == sorted(want), summ["excluded"]
exc = Counter()
for row in summ["rows"]:
    if not row.get("total") and "needles" in row:
        exc[row["needles"], row["bin_tokens"]] = row["pooled"]["excluded"]
wantc = Counter()
for rid in want:
    wantc[int(rid[1]), {"8k": 8192, "16k": 16384}[bins[rid]]] += 1
assert +exc == +wantc, (exc, wantc)
EOF
done
stop_server

# failed samples: 503 on about half the bodies and no retries → recorded failed, not scored
start_server "${SRV_OPTS[@]}" --fault 503:0.5 --fault-seed 5 --retry-after 0 || exit 1
OUT=$TMP/failed
"$DSA_BIN" mrcr --endpoint "$SERVER_URL" --dataset "$DS" --needles 2,8 --retries 0 \
    --out "$OUT" --json -q >"$OUT.json" 2>"$TMP/err"
expect_eq "failed samples: exit 1" "$?" 1
DIR=$OUT DS=$DS SEED=$SEED py "failed samples: listed, never scored; the others scored right" <<'EOF'
import difflib, json, os, srvref
recs = [json.loads(l) for l in open(os.environ["DIR"] + "/run-001.jsonl").read().splitlines()[1:]]
failed = [x for x in recs if x["status"] == "failed"]
assert 0 < len(failed) < len(recs), len(failed)
for x in failed:
    assert x["score"] is None and x["error"].startswith("HTTP 503") and x["http_code"] == 503, x
summ = json.load(open(os.environ["DIR"] + ".json"))
ids = sorted(e["id"] if isinstance(e, dict) else e for e in summ["failed"])
assert ids == sorted(x["id"] for x in failed), (ids, [x["id"] for x in failed])
total = [r for r in summ["rows"] if r.get("total") and r.get("needles") is None]
assert total[-1]["pooled"]["failed"] == len(failed), total[-1]
assert total[-1]["pooled"]["scored"] == len(recs) - len(failed)
EOF
stop_server

# --retry-failed: against a healthy server a plain rerun leaves the failed rows failed (exit 1,
# nothing sent); with --retry-failed they are sent again and scored, the rows that were ok
# stay byte-identical, no id appears twice
grep '"status":"ok"' "$OUT/run-001.jsonl" >"$TMP/ok-before"
start_server "${SRV_OPTS[@]}" --log-requests "$TMP/req-retry.jsonl" || exit 1
expect_code 1 "a plain rerun keeps the failed rows: exit 1" "$DSA_BIN" mrcr \
    --endpoint "$SERVER_URL" --dataset "$DS" --needles 2,8 --retries 0 --out "$OUT" -q
if ! grep -q /v1/models "$TMP/req-retry.jsonl" || grep -q chat/completions "$TMP/req-retry.jsonl"; then
    not_ok "a plain rerun sends no row"; else ok "a plain rerun sends no row"; fi
# a rerun says so (it resumed silently)
"$DSA_BIN" mrcr --endpoint "$SERVER_URL" --dataset "$DS" --needles 2,8 --retries 0 --out "$OUT" \
    >/dev/null 2>"$TMP/err"
grep -Eqx "dsa-eval: resuming: ([0-9]+) of \1 samples already done in '$OUT/run-001.jsonl': nothing left to do" "$TMP/err" \
    && ok "a rerun says it resumes, with nothing left to do" \
    || { not_ok "a rerun says it resumes, with nothing left to do"; sed 's/^/#   /' "$TMP/err"; }
"$DSA_BIN" mrcr --endpoint "$SERVER_URL" --dataset "$DS" --needles 2,8 --retries 0 \
    --retry-failed --out "$OUT" --json >"$OUT.json" 2>"$TMP/err"
expect_eq "--retry-failed against a healthy server: exit 0" "$?" 0
grep -Eq "^dsa-eval: '.*run-001.jsonl': [0-9]+ failed samples? will run again \(--retry-failed\)$" \
    "$TMP/err" && ok "--retry-failed says how many rows run again" ||
    { not_ok "--retry-failed says how many rows run again"; sed 's/^/#   /' "$TMP/err"; }
cp "$OUT.json" "$OUT/summary.json"
check_run "$OUT" "--retry-failed: every row scored as the reference, no duplicate ids"
if grep -Fxvf "$OUT/run-001.jsonl" "$TMP/ok-before" | grep -q .; then
    not_ok "--retry-failed keeps the rows that were ok byte-identical"
else ok "--retry-failed keeps the rows that were ok byte-identical"; fi
DIR=$OUT LOG=$TMP/req-retry.jsonl OKB=$TMP/ok-before py "--retry-failed sends only the failed rows" <<'EOF'
import json, os
recs = [json.loads(l) for l in open(os.environ["DIR"] + "/run-001.jsonl").read().splitlines()[1:]]
sent = [l for l in open(os.environ["LOG"]) if '"/v1/chat/completions"' in l]
ok_before = open(os.environ["OKB"]).read().splitlines()
assert len(sent) == len(recs) - len(ok_before) > 0, (len(sent), len(recs), len(ok_before))
EOF
expect_code 2 "--retry-failed with --backend inprocess: exit 2" "$DSA_BIN" mrcr \
    --backend inprocess --retry-failed --dataset "$DS" --out "$TMP/x"
grep -q "^dsa-eval: --retry-failed is for --backend endpoint" "$TMP/err" &&
    ok "--retry-failed with inprocess: says why" || not_ok "--retry-failed with inprocess: says why"
stop_server

# API key: sent as a bearer token, never written to run files or messages
start_server "${SRV_OPTS[@]}" --require-api-key sk-test-0123456789 --log-requests "$TMP/req-key.jsonl" || exit 1
OUT=$TMP/key
DSA_EVAL_API_KEY=sk-test-0123456789 "$DSA_BIN" mrcr --endpoint "$SERVER_URL" --dataset "$DS" \
    --needles 2 --limit 1 --extra-body '{"chat_template_kwargs":{"enable_thinking":false},"top_p":1}' \
    --out "$OUT" >"$TMP/out" 2>"$TMP/err"
expect_eq "api key from DSA_EVAL_API_KEY: exit 0" "$?" 0
if grep -rq "sk-test-0123456789" "$OUT" "$TMP/out" "$TMP/err"; then
    not_ok "the API key is not in run files or output"; else ok "the API key is not in run files or output"; fi
LOG=$TMP/req-key.jsonl py "api key sent as bearer; --extra-body merged into the body" <<'EOF'
import json, os
reqs = [json.loads(l) for l in open(os.environ["LOG"])]
assert reqs and all(r["bearer"] for r in reqs), [r.get("bearer") for r in reqs]
chats = [json.loads(r["body"]) for r in reqs if r["path"] == "/v1/chat/completions"]
assert chats and all(b["chat_template_kwargs"] == {"enable_thinking": False} and b["top_p"] == 1
                     for b in chats)
EOF
echo sk-test-0123456789 >"$TMP/keyfile"
expect_code 0 "--api-key-file" "$DSA_BIN" mrcr --endpoint "$SERVER_URL" --dataset "$DS" \
    --needles 2 --limit 1 --api-key-file "$TMP/keyfile" --out "$TMP/key2" -q
expect_code 4 "a wrong key is exit 4" env DSA_EVAL_API_KEY=wrong "$DSA_BIN" mrcr \
    --endpoint "$SERVER_URL" --dataset "$DS" --needles 2 --out "$TMP/key3" -q
if grep -q "wrong" "$TMP/err"; then not_ok "the wrong key is not echoed"; else ok "the wrong key is not echoed"; fi
stop_server

# --insecure is loud (on plain http it changes nothing else)
expect_code 0 "--insecure runs" "$DSA_BIN" mrcr --endpoint "$URL1" --dataset "$DS" --needles 2 \
    --limit 1 --insecure --out "$TMP/insecure" -q
grep -q "warning: --insecure: TLS certificates are NOT verified" "$TMP/err" &&
    ok "--insecure warns even with -q" || not_ok "--insecure warns even with -q"

# exit codes
expect_code 4 "unreachable endpoint: exit 4" "$DSA_BIN" mrcr --endpoint http://127.0.0.1:1 \
    --retries 0 --dataset "$DS" --out "$TMP/x" -q
expect_code 2 "no --out: exit 2" "$DSA_BIN" mrcr --endpoint "$URL1" --dataset "$DS"
expect_code 2 "bad --extra-body: exit 2" "$DSA_BIN" mrcr --endpoint "$URL1" --dataset "$DS" \
    --out "$TMP/x" --extra-body '[1]'
expect_code 3 "missing dataset: exit 3" "$DSA_BIN" mrcr --endpoint "$URL1" \
    --dataset "$TMP/nope.jsonl" --out "$TMP/x"
# (the in-process backend itself is tested by t0701-mrcr-inprocess.sh)
expect_code 2 "--backend inprocess --device tpu: exit 2" "$DSA_BIN" mrcr --backend inprocess \
    --device tpu --dataset "$DS" --out "$TMP/x"
if grep -q "unknown device 'tpu'" "$TMP/err"; then ok "inprocess names the bad device"; else not_ok "inprocess names the bad device"; fi
expect_code 6 "resume with other parameters: exit 6" "$DSA_BIN" mrcr --endpoint "$URL1" \
    --dataset "$DS" --needles 2,8 --runs 2 --seed 12 --out "$TMP/clean" -q

done_testing
