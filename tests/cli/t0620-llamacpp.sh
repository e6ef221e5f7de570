#!/usr/bin/env bash
# llama.cpp's llama-server dialect (issue #7) against dsa-test-server --dialect llamacpp:
# the server's bodies byte for byte (the quoted llama-server over-context and auth errors),
# detection from /v1/models without --dialect, the per-slot context from meta.n_ctx, exact
# request bodies (/apply-template then /tokenize, chat without stream_options), over-context
# rows excluded with their counts (pre-count and 400 paths, never retried), a refused key
# fatal with exit 4, MRCR scores and server timings recorded, streaming with usage+timings
# in the final chunk, and GSM8K --mtp: the acceptance length recovered exactly from the
# llamacpp: counters and equal to the timings.draft_n sums.
# SPDX-License-Identifier: GPL-3.0-or-later
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/srvlib.sh"
require_python

# The test server's llamacpp chat template and counts, restated (docs/test-server.md).
cat >"$TMP/llref.py" <<'EOF'
import json, urllib.request, srvref
def render(messages):
    out = ""
    for m in messages:
        c = m.get("content")
        if isinstance(c, list):
            c = "".join(p["text"] for p in c)
        out += "<|im_start|>" + m["role"] + "\n" + (c or "") + "<|im_end|>\n"
    return out + "<|im_start|>assistant\n"
def count(messages):        # tokenized with add_special: BOS first
    return 1 + srvref.count(render(messages))
def dumps(v):               # jansson JSON_COMPACT, insertion order, UTF-8 kept
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)
def http(url, body=None, key=None):
    req = urllib.request.Request(url, data=None if body is None else body.encode(),
                                 method="GET" if body is None else "POST")
    if key:
        req.add_header("Authorization", "Bearer " + key)
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
def log(path):
    return [json.loads(l) for l in open(path)]
EOF
# py with llref importable too
lpy() {
    local title=$1
    if TMP="$TMP" PYTHONPATH="$DSA_SRC/tests/cli:$TMP" SERVER_URL="${SERVER_URL:-}" \
        "$DSA_PYTHON" - >"$TMP/py.out" 2>&1; then
        ok "$title"
    else
        not_ok "$title"; sed 's/^/#   /' "$TMP/py.out" | tail -20
    fi
}
D="$DSA_DATA/gsm8k"
[ -f "$D/test.jsonl" ] && [ -f "$D/train.jsonl" ] || { echo "Bail out! no GSM8K data under $D"; exit 1; }

DS=$TMP/ds.jsonl
expect_success "make a synthetic dataset" \
    "$DSA_BIN" datasets synth mrcr --needles 2,8 --bins 8k,16k --per-bin 3 --seed 3 -o "$DS"
# a context about half the rows fit into with --max-tokens 1000
NCTX=$(PYTHONPATH="$DSA_SRC/tests/cli:$TMP" "$DSA_PYTHON" - "$DS" <<'EOF'
import json, sys, llref
c = sorted(llref.count(json.loads(json.loads(l)["prompt"])) for l in open(sys.argv[1]))
print(c[len(c) // 2] + 1000)
EOF
)
SRV=(--dialect llamacpp --seed 7 --mrcr-wrong 0.3 --mrcr-garble 0.3 --max-model-len "$NCTX")

# ---- the server's bodies
start_server --dialect llamacpp --max-model-len 512 --require-api-key sk-good ||
    { echo "Bail out! server"; exit 1; }
lpy "llamacpp test server: the quoted llama-server bodies, byte for byte" <<'EOF'
import json, os, llref
u = os.environ["SERVER_URL"]
# over-context, with the numbers of the issue's example: 'word ' * 1200 is 1201 tokens + BOS
st, b = llref.http(u + "/v1/completions", llref.dumps({"prompt": "word " * 1200}), "sk-good")
assert st == 400, st
assert b == ('{"error":{"code":400,"message":"request (1202 tokens) exceeds the available context '
             'size (512 tokens), try increasing it","type":"exceed_context_size_error",'
             '"n_prompt_tokens":1202,"n_ctx":512}}'), b
# a refused key: /v1/models and /health stay open, as llama-server's public endpoints
for path in ("/props", "/metrics", "/tokenize", "/v1/chat/completions"):
    st, b = llref.http(u + path, None if path in ("/props", "/metrics") else "{}", "sk-bad")
    assert st == 401, (path, st)
    assert b == '{"error":{"message":"Invalid API Key","type":"authentication_error","code":401}}', b
st, b = llref.http(u + "/v1/models")
card = json.loads(b)["data"][0]
assert st == 200 and card["owned_by"] == "llamacpp", b
assert card["meta"]["n_ctx"] == 512 and card["meta"]["n_ctx_train"] == 163840, card
assert list(card) == ["id", "object", "created", "owned_by", "meta"], list(card)
st, b = llref.http(u + "/props", None, "sk-good")
p = json.loads(b)
assert p["default_generation_settings"]["n_ctx"] == 512 and p["build_info"] == "b6940-dsatest", p
# /metrics needs llama-server's --metrics
st, b = llref.http(u + "/metrics", None, "sk-good")
assert st == 501 and json.loads(b)["error"]["type"] == "not_supported_error", (st, b)
EOF
stop_server

start_server "${SRV[@]}" --metrics --log-requests "$TMP/req.jsonl" || { echo "Bail out! server"; exit 1; }
URL=$SERVER_URL
lpy "llamacpp stream: usage and timings in the final chunk without stream_options, then [DONE]" <<'EOF'
import json, os, urllib.request, llref, srvref
u = os.environ["SERVER_URL"]
msgs = [{"role": "user", "content": "Tell me about the sea."}]
body = llref.dumps({"messages": msgs, "max_tokens": 6, "stream": True})
raw = urllib.request.urlopen(urllib.request.Request(u + "/v1/chat/completions", body.encode())).read()
ev = srvref.sse_events(raw)
assert ev[-1] == "[DONE]", ev[-1]
last = json.loads(ev[-2])
assert list(last) == ["choices", "created", "id", "model", "system_fingerprint", "object",
                      "usage", "timings"], list(last)
assert last["choices"][0]["delta"] == {} and last["choices"][0]["finish_reason"] == "length"
n = llref.count(msgs)
assert last["usage"] == {"completion_tokens": 6, "prompt_tokens": n, "total_tokens": n + 6}, last
t = last["timings"]
assert t["prompt_n"] == n and t["prompt_ms"] == 0.25 * n and t["predicted_n"] == 6, t
assert t["predicted_ms"] == 75.0 and "draft_n" not in t, t     # no draft model: no draft fields
first = json.loads(ev[0])["choices"][0]["delta"]
assert first == {"role": "assistant", "content": None}, first
assert all("usage" not in json.loads(e) for e in ev[:-2])
EOF

# ---- MRCR: detected from /v1/models, pre-count through /apply-template + /tokenize
OUT=$TMP/mrcr
: >"$TMP/req.jsonl"
"$DSA_BIN" mrcr --endpoint "$URL" --dataset "$DS" --needles 2,8 --max-tokens 1000 -c 3 \
    --out "$OUT" -q >"$TMP/mrcr.out" 2>"$TMP/err"
expect_eq "mrcr against llamacpp without --dialect: exit 0" "$?" 0
check_mrcr() { # DIR TITLE LOG MODE: records and request bodies against the reference
    DIR=$1 LOG=$3 MODE=$4 DS=$DS NCTX=$NCTX lpy "$2" <<'EOF'
import difflib, json, os, glob, llref, srvref
from collections import defaultdict, Counter
nctx, mode = int(os.environ["NCTX"]), os.environ["MODE"]
rows, per = {}, defaultdict(int)
for line in open(os.environ["DS"]):
    r = json.loads(line)
    n = r["n_needles"]; rows["n%d/r%04d" % (n, per[n])] = r; per[n] += 1
f = glob.glob(os.environ["DIR"] + "/run-001.jsonl")[0]
lines = open(f).read().splitlines()
hdr, recs = json.loads(lines[0]), [json.loads(l) for l in lines[1:]]
be = hdr["backend"]
assert be["dialect"] == "llamacpp" and be["max_model_len"] == nctx, be
assert be["servers"][0]["version"] == "b6940-dsatest" and be["servers"][0]["owned_by"] == "llamacpp"
assert sorted(x["id"] for x in recs) == sorted(rows)
for x in recs:
    msgs = json.loads(rows[x["id"]]["prompt"])
    n = llref.count(msgs)
    # pre-count: prompt + max_tokens must fit; the 400 path: llama-server refuses n >= n_ctx
    over = n + 1000 > nctx if mode != "400" else n >= nctx
    if over:
        assert x["status"] == "excluded" and x["score"] is None, x
        assert x["prompt_tokens"] == n and x["max_model_len"] == nctx, (x, n)
        assert x["error"] == "over_context: %d prompt tokens + 1000 > %d" % (n, nctx), x
        continue
    text, _ = srvref.mrcr_answer(msgs, seed=7, wrong="0.3", garble="0.3")
    r = rows[x["id"]]
    p = r["random_string_to_prepend"]
    score = difflib.SequenceMatcher(None, text[len(p):], r["answer"][len(p):]).ratio() \
        if text.startswith(p) else 0.0
    assert x["status"] == "ok" and x["output"] == text and x["score"] == score, x["id"]
    assert x["prompt_tokens"] == n, (x["prompt_tokens"], n)
    t = x["timings"]        # the server-side split next to the client's latency_ms
    c = x["completion_tokens"]
    assert t == {"cache_n": 0, "prompt_n": n, "prompt_ms": 0.25 * n, "predicted_n": c,
                 "predicted_ms": 12.5 * c}, t
    assert x["latency_ms"] > 0
    if mode == "stream":
        assert x["ttft_ms"] is not None and x["decode_ms"] is not None, x
assert any(x["status"] == "excluded" for x in recs) and any(x["status"] == "ok" for x in recs)
# exact request bodies, in the server's log
log = llref.log(os.environ["LOG"])
chat = Counter(e["body"] for e in log if e["path"] == "/v1/chat/completions")
tmpl = Counter(e["body"] for e in log if e["path"] == "/apply-template")
tok = Counter(e["body"] for e in log if e["path"] == "/tokenize")
for rid, r in rows.items():
    msgs = json.loads(r["prompt"])
    n = llref.count(msgs)
    if mode == "400":
        assert not tmpl and not tok
    else:
        assert tmpl[llref.dumps({"messages": msgs})] == 1, rid
        want = llref.dumps({"content": llref.render(msgs), "add_special": True,
                            "parse_special": True})
        assert tok[want] == 1, rid
    body = {"messages": msgs, "max_tokens": 1000, "temperature": 0.0, "model": "dsa-test-model"}
    if mode == "stream":
        body["stream"] = True             # and no stream_options: llama-server sends usage anyway
    sent = chat[llref.dumps(body)]
    # excluded by the pre-count: never sent; by a 400: sent once, never retried
    want = (0 if n + 1000 > nctx else 1) if mode != "400" else 1
    assert sent == want, (rid, sent, want)
assert sum(chat.values()) == sum(1 for r in rows.values()
                                 if mode == "400" or llref.count(json.loads(r["prompt"])) + 1000 <= nctx)
EOF
}
check_mrcr "$OUT" "mrcr pre-count: detection, exclusions with counts, scores, timings, exact bodies" \
    "$TMP/req.jsonl" precount

: >"$TMP/req.jsonl"
"$DSA_BIN" mrcr --endpoint "$URL" --dialect llamacpp --dataset "$DS" --needles 2,8 \
    --max-tokens 1000 --no-count-tokens --retries 3 --out "$TMP/mrcr400" -q >/dev/null 2>"$TMP/err"
expect_eq "mrcr 400 path: exit 0" "$?" 0
check_mrcr "$TMP/mrcr400" "mrcr 400 path: exceed_context_size_error excluded with its counts, not retried" \
    "$TMP/req.jsonl" 400

: >"$TMP/req.jsonl"
"$DSA_BIN" mrcr --endpoint "$URL" --dataset "$DS" --needles 2,8 --max-tokens 1000 --stream \
    --out "$TMP/mrcrs" -q >/dev/null 2>"$TMP/err"
expect_eq "mrcr --stream: exit 0" "$?" 0
check_mrcr "$TMP/mrcrs" "mrcr --stream: same records, usage and timings from the final chunk" \
    "$TMP/req.jsonl" stream
stop_server

# ---- a refused key: fatal, exit 4, the endpoint named, no retries, nothing recorded
start_server "${SRV[@]}" --require-api-key sk-good --log-requests "$TMP/auth.jsonl" ||
    { echo "Bail out! server"; exit 1; }
expect_code 4 "wrong key: exit 4" env DSA_EVAL_API_KEY=sk-bad "$DSA_BIN" mrcr \
    --endpoint "$SERVER_URL" --dataset "$DS" --needles 2,8 --out "$TMP/auth1" -q
expect_eq "wrong key: the message names the endpoint and the server's reason" "$(cat "$TMP/err")" \
    "dsa-eval: '$SERVER_URL' refused the API key (HTTP 401: Invalid API Key); set DSA_EVAL_API_KEY or --api-key-file"
expect_code 4 "wrong key (gsm8k): exit 4" env DSA_EVAL_API_KEY=sk-bad \
    "$DSA_BIN" gsm8k --endpoint "$SERVER_URL" --limit 2 --data "$D" -q
# past the probe (dialect openai asks nothing but /v1/models): the first 401 stops the run
: >"$TMP/auth.jsonl"
expect_code 4 "wrong key mid-run: exit 4" env DSA_EVAL_API_KEY=sk-bad "$DSA_BIN" mrcr \
    --endpoint "$SERVER_URL" --dialect openai --dataset "$DS" --needles 2,8 -c 1 --retries 5 \
    --out "$TMP/auth2" -q
AUTH="$TMP/auth2" LOG="$TMP/auth.jsonl" \
    lpy "wrong key mid-run: one request, no retry, no record" <<'EOF'
import glob, os, llref
log = [e for e in llref.log(os.environ["LOG"]) if e["path"] != "/v1/models"]
assert len(log) == 1 and log[0]["path"] == "/v1/chat/completions" and log[0]["bearer"], log
for f in glob.glob(os.environ["AUTH"] + "/run-*.jsonl"):
    assert len(open(f).read().splitlines()) <= 1, f     # the header at most
EOF
grep -q "refused the API key (HTTP 401: Invalid API Key)" "$TMP/err" &&
    ok "wrong key mid-run: the same clear message" || not_ok "wrong key mid-run: the same clear message"
expect_success "right key: mrcr runs" env DSA_EVAL_API_KEY=sk-good "$DSA_BIN" mrcr \
    --endpoint "$SERVER_URL" --dataset "$DS" --needles 2 --limit 1 --out "$TMP/auth3" -q
stop_server

# ---- an older build: no meta.n_ctx in /v1/models, the context comes from /props
start_server "${SRV[@]}" --old-models || { echo "Bail out! server"; exit 1; }
expect_success "old /v1/models: mrcr runs" "$DSA_BIN" mrcr --endpoint "$SERVER_URL" \
    --dataset "$DS" --needles 2 --limit 1 --out "$TMP/old" -q
expect_eq "old /v1/models: the context from /props" \
    "$(head -1 "$TMP/old/run-001.jsonl" | "$DSA_PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["backend"]["max_model_len"])')" \
    "$NCTX"
stop_server

# ---- GSM8K --mtp: acceptance length from the llamacpp: counters, cross-checked with timings
{
    RATES=0.9,0.6,0.3
    start_server --dialect llamacpp --metrics --spec-tokens 3 --acceptance-rates $RATES \
        --gsm8k-data "$D/test.jsonl" --max-model-len 8192 --log-requests "$TMP/g.jsonl" ||
        { echo "Bail out! server"; exit 1; }
    for s in plain stream; do
        extra=""
        [ $s = stream ] && extra=--stream
        "$DSA_BIN" gsm8k --endpoint "$SERVER_URL" --data "$D" --mtp --expect-mtp --limit 12 \
            $extra --out "$TMP/g-$s" >"$TMP/g-$s.out" 2>"$TMP/err"
        expect_eq "gsm8k --mtp ($s): exit 0" "$?" 0
        RATES=$RATES DIR=$TMP/g-$s \
            lpy "gsm8k --mtp ($s): AL exact from llamacpp: counters, equal to the timings sums" <<'EOF'
import json, os, srvref
rates = [float(x) for x in os.environ["RATES"].split(",")]
d = os.environ["DIR"]
recs = [json.loads(l) for l in open(d + "/run-001.jsonl").read().splitlines()[1:]]
assert len(recs) == 12 and all(r["status"] == "ok" and r["correct"] for r in recs)
D = T = A = 0
P = [0, 0, 0]
for r in recs:
    sc = srvref.spec_counts(rates, r["completion_tokens"])
    D += sc["drafts"]; T += sc["draft_tokens"]; A += sc["accepted"]
    P = [a + b for a, b in zip(P, sc["per_pos"])]
    t = r["timings"]
    assert t.get("draft_n", 0) == sc["draft_tokens"], (t, sc)
    assert t.get("draft_n_accepted", 0) == sc["accepted"], (t, sc)
    assert t["predicted_n"] == r["completion_tokens"] and t["prompt_n"] == r["prompt_tokens"]
m = json.load(open(d + "/run-001.summary.json"))["mtp"]
assert m["drafts"] == D and m["draft_tokens"] == T and m["accepted"] == A, (m, D, T, A)
assert m["acceptance_length"] == 1 + A / D, (m["acceptance_length"], 1 + A / D)
assert m["accepted_per_pos"] == P, (m["accepted_per_pos"], P)
assert m["timings"] == {"responses": 12, "draft_n": T, "draft_n_accepted": A, "agree": True}, m
txt = open(d + ".out").read()
assert "acceptance length   %.4f" % (1 + A / D) in txt and "timings cross-check agrees" in txt, txt
EOF
    done
    LOG="$TMP/g.jsonl" lpy "gsm8k bodies: /v1/completions, no stream_options" <<'EOF'
import json, os, llref
log = [e for e in llref.log(os.environ["LOG"]) if e["path"] == "/v1/completions"]
assert len(log) == 24
for e in log:
    b = json.loads(e["body"])
    assert list(b)[:6] == ["prompt", "max_tokens", "temperature", "top_p", "seed", "stop"], b
    assert "stream_options" not in b and b["model"] == "dsa-test-model"
assert sum(json.loads(e["body"]).get("stream", False) for e in log) == 12
EOF
    stop_server
    # per-request acceptance length from timings: a second server with lower acceptance; compare
    # pairs the 12 requests (steps = predicted_n - 1 - draft_n_accepted) and bootstraps
    start_server --dialect llamacpp --metrics --spec-tokens 3 --acceptance-rates 0.5,0.2,0 \
        --gsm8k-data "$D/test.jsonl" --max-model-len 8192 || { echo "Bail out! server"; exit 1; }
    "$DSA_BIN" gsm8k --endpoint "$SERVER_URL" --data "$D" --mtp --limit 12 --out "$TMP/g-low" -q \
        >/dev/null 2>"$TMP/err"
    expect_eq "gsm8k --mtp (lower acceptance): exit 0" "$?" 0
    "$DSA_BIN" compare "$TMP/g-plain" "$TMP/g-low" --json >"$TMP/al.json"
    A=$TMP/g-plain B=$TMP/g-low J=$TMP/al.json \
        lpy "compare: per-request acceptance length from llama.cpp timings, with CIs" <<'EOF'
import json, os
recs = lambda d: [json.loads(l) for l in open(d + "/run-001.jsonl").read().splitlines()[1:]]
def al(d):
    t = [r["timings"] for r in recs(d)]
    return 1 + sum(x["draft_n_accepted"] for x in t) / sum(x["predicted_n"] - 1 - x["draft_n_accepted"] for x in t)
al_doc = json.load(open(os.environ["J"]))["acceptance"]
assert al_doc["source"] == "per-request" and al_doc["n"] == 12, al_doc
a, b = al(os.environ["A"]), al(os.environ["B"])
assert abs(al_doc["base"] - a) < 1e-12 and abs(al_doc["cand"] - b) < 1e-12, (al_doc, a, b)
# within a last step's overshoot of the counters' figure
m = lambda d: json.load(open(d + "/run-001.summary.json"))["mtp"]["acceptance_length"]
print("# per-request AL %.4f %.4f, counters %.4f %.4f" % (a, b, m(os.environ["A"]), m(os.environ["B"])))
assert abs(a - m(os.environ["A"])) < 0.1 and abs(b - m(os.environ["B"])) < 0.1, (a, b)
assert al_doc["diff_ci"][0] <= al_doc["diff"] <= al_doc["diff_ci"][1] < 0, al_doc
assert al_doc["ratio_ci"][1] < 1, al_doc
EOF
    expect_code 1 "compare --fail-if-al-drops 0.05 (llama.cpp timings): exit 1" "$DSA_BIN" \
        compare "$TMP/g-plain" "$TMP/g-low" --fail-if-al-drops 0.05
    stop_server
    # a small per-slot context
: the prompts that do not fit are excluded with their counts
    start_server --dialect llamacpp --gsm8k-data "$D/test.jsonl" --max-model-len 800 \
        --log-requests "$TMP/gx.jsonl" || { echo "Bail out! server"; exit 1; }
    "$DSA_BIN" gsm8k --endpoint "$SERVER_URL" --data "$D" --limit 12 --out "$TMP/gx" \
        >"$TMP/gx.out" 2>"$TMP/err"
    expect_eq "gsm8k over context: exit 0" "$?" 0
    "$DSA_BIN" gsm8k --data "$D" --print-prompts --limit 12 >"$TMP/gx.prompts"
    DIR=$TMP/gx LOG=$TMP/gx.jsonl lpy "gsm8k over context: excluded (not failed, not retried), counts recorded" <<'EOF'
import json, os, srvref
d = os.environ["DIR"]
prompts = open(d + ".prompts", encoding="utf-8").read().split("\0")[:12]
recs = {r["idx"]: r for r in map(json.loads, open(d + "/run-001.jsonl").read().splitlines()[1:])}
n_exc = 0
for i, p in enumerate(prompts):
    n = 1 + srvref.count(p)
    r = recs[i]
    if n >= 800:
        n_exc += 1
        assert r["status"] == "excluded" and r["score"] is None, r
        assert r["prompt_tokens"] == n and r["max_model_len"] == 800, r
        assert r["error"] == "over_context: %d prompt tokens, context 800" % n, r
    else:
        assert r["status"] == "ok" and r["prompt_tokens"] == n, r
assert 0 < n_exc < 12, n_exc
s = json.load(open(d + "/run-001.summary.json"))
assert s["excluded"] == n_exc and s["failed"] == 0 and s["graded"] == 12 - n_exc, s
assert "%d excluded over context" % n_exc in open(d + ".out").read()
log = [e for e in map(json.loads, open(os.environ["LOG"])) if e["path"] == "/v1/completions"]
assert len(log) == 12, len(log)      # one request per question: no retry
EOF
    stop_server
    # without llama-server's --metrics: the 501 says how to fix it, and the timings still
    # give the draft acceptance
    start_server --dialect llamacpp --spec-tokens 3 --acceptance-rates $RATES \
        --gsm8k-data "$D/test.jsonl" || { echo "Bail out! server"; exit 1; }
    "$DSA_BIN" gsm8k --endpoint "$SERVER_URL" --data "$D" --mtp --limit 4 --out "$TMP/gt" \
        >"$TMP/gt.out" 2>"$TMP/err"
    expect_eq "gsm8k --mtp without --metrics: exit 0" "$?" 0
    RATES=$RATES DIR=$TMP/gt lpy "gsm8k --mtp without --metrics: draft acceptance from timings" <<'EOF'
import json, os, srvref
rates = [float(x) for x in os.environ["RATES"].split(",")]
d = os.environ["DIR"]
recs = [json.loads(l) for l in open(d + "/run-001.jsonl").read().splitlines()[1:]]
T = A = 0
for r in recs:
    sc = srvref.spec_counts(rates, r["completion_tokens"])
    T += sc["draft_tokens"]; A += sc["accepted"]
m = json.load(open(d + "/run-001.summary.json"))["mtp"]
assert m["measured"] is False and "acceptance_length" not in m, m
assert m["timings"] == {"responses": 4, "draft_n": T, "draft_n_accepted": A,
                        "draft_acceptance_rate": A / T}, (m, T, A)
assert "draft acceptance    %.4f   (%d / %d draft tokens, from timings)" % (A / T, A, T) \
    in open(d + ".out").read()
EOF
    expect_code 4 "gsm8k --expect-mtp without --metrics: exit 4" "$DSA_BIN" gsm8k \
        --endpoint "$SERVER_URL" --data "$D" --expect-mtp --limit 1 -q
    grep -q "Start it with \`--metrics\`" "$TMP/err" && ok "the error says to start it with --metrics" ||
        { not_ok "the error says to start it with --metrics"; sed 's/^/#   /' "$TMP/err"; }
    stop_server
}
done_testing
