#!/usr/bin/env bash
# dsa-test-server speaks the vLLM dialect (and SGLang's): exact endpoint shapes, MRCR answers
# checked against the independent Python reference (srvref.py), SSE framing, usage, both error
# shapes, every fault kind, /metrics counters, over-context 400s, auth, request log, shutdown.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/srvlib.sh"
require_python

# ---------------------------------------------------------------- startup and basic endpoints
expect_code 2 "non-loopback --host is refused" "$DSA_TEST_SERVER" --host 0.0.0.0 --port 0
grep -q "loopback only" "$TMP/err" && ok "refusal names loopback" || not_ok "refusal names loopback"
expect_code 2 "bad --fault kind" "$DSA_TEST_SERVER" --fault frob
expect_code 2 "acceptance length beyond K+1" "$DSA_TEST_SERVER" --spec-tokens 2 --acceptance-length 3.5

start_server --model m1 --max-model-len 4096 --spec-tokens 3 --acceptance-length 3.0 \
    --per-request-spec-decode-metrics detailed \
    --log-requests "$TMP/requests.jsonl" --server-version 0.11.0 && ok "server starts on a free port" \
    || not_ok "server starts on a free port"

curl -s -o "$TMP/health" -w '%{http_code} %{size_download}' "$SERVER_URL/health" >"$TMP/code"
expect_eq "/health is 200 with an empty body" "$(cat "$TMP/code")" "200 0"
expect_eq "/version" "$(curl -s "$SERVER_URL/version")" '{"version":"0.11.0"}'

py "/v1/models has vLLM's shape" <<'PY'
import os, json, srvref
st, h, b = srvref.http(os.environ["SERVER_URL"] + "/v1/models")
d = json.loads(b)
assert st == 200 and h["content-type"] == "application/json", (st, h)
assert list(d) == ["object", "data"] and d["object"] == "list" and len(d["data"]) == 1
card = d["data"][0]
assert list(card) == ["id", "object", "created", "owned_by", "root", "parent", "max_model_len", "permission"], list(card)
assert (card["id"], card["object"], card["owned_by"], card["root"], card["parent"], card["max_model_len"]) == \
    ("m1", "model", "vllm", "m1", None, 4096), card
assert card["permission"][0]["object"] == "model_permission"
PY

py "/tokenize counts as the documented tokenizer (prompt and chat forms)" <<'PY'
import os, json, srvref
url = os.environ["SERVER_URL"] + "/tokenize"
texts = ["Hello world, this is tokenization!", "", "   ", "ünïcode wörds ab12cd34 ... x\n\ny ",
         "supercalifragilisticexpialidocious", "a,b;c" * 50]
for t in texts:
    st, _, b = srvref.http(url, {"model": "m1", "prompt": t, "return_token_strs": True})
    d = json.loads(b)
    assert st == 200, b
    assert d["count"] == srvref.count(t) and d["max_model_len"] == 4096, (t, d)
    assert d["tokens"] == srvref.token_ids(t), t
    assert d["token_strs"] == srvref.pieces(t) and "".join(d["token_strs"]) == t, t
msgs = srvref.mrcr_conversation()
st, _, b = srvref.http(url, {"model": "m1", "messages": msgs, "add_generation_prompt": True})
d = json.loads(b)
assert d["count"] == srvref.chat_count(msgs) == len(d["tokens"]), d["count"]
PY

# ---------------------------------------------------------------- chat completions, MRCR
py "MRCR question answered with prefix + the k-th needle, for every k" <<'PY'
import os, json, srvref
url = os.environ["SERVER_URL"] + "/v1/chat/completions"
for k in (1, 2, 3, 4):
    msgs = srvref.mrcr_conversation(n_needles=4, k=k, filler=2, seed=k)
    want, dec = srvref.mrcr_answer(msgs)
    assert not any(dec.values())
    # the k-th "write a poem about tapirs" answer, found independently of srvref's matcher
    needles = [msgs[i + 1]["content"] for i in range(1, len(msgs) - 1) if msgs[i]["content"] == "write a poem about tapirs"]
    assert want == "AbCdEfGhIj" + needles[k - 1]
    st, h, b = srvref.http(url, {"model": "m1", "messages": msgs, "max_tokens": 1000, "temperature": 0})
    d = json.loads(b)
    assert st == 200 and h["content-type"] == "application/json", (st, b)
    assert d["choices"][0]["message"]["content"] == want, (k, d["choices"][0]["message"]["content"][:80])
    assert d["object"] == "chat.completion" and d["id"].startswith("chatcmpl-") and d["model"] == "m1"
    assert d["choices"][0]["finish_reason"] == "stop" and d["choices"][0]["stop_reason"] is None
    u = d["usage"]
    assert u["prompt_tokens"] == srvref.chat_count(msgs), u
    assert u["completion_tokens"] == srvref.count(want) + 1 and u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"], u
PY

py "chat stream: role chunk, token deltas, finish on the last delta, usage chunk, [DONE]" <<'PY'
import os, json, srvref
url = os.environ["SERVER_URL"] + "/v1/chat/completions"
msgs = srvref.mrcr_conversation(k=2)
body = {"model": "m1", "messages": msgs, "max_tokens": 1000, "temperature": 0}
_, _, plain = srvref.http(url, body)
plain = json.loads(plain)
st, h, raw = srvref.http(url, dict(body, stream=True, stream_options={"include_usage": True}))
assert st == 200 and h["content-type"] == "text/event-stream; charset=utf-8", h
ev = srvref.sse_events(raw)
assert ev[-1] == "[DONE]"
chunks = [json.loads(e) for e in ev[:-1]]
assert all(c["object"] == "chat.completion.chunk" and c["id"] == chunks[0]["id"] for c in chunks)
assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
usage = chunks[-1]
assert usage["choices"] == [] and usage["usage"] == {k: plain["usage"][k] for k in ("prompt_tokens", "completion_tokens", "total_tokens")}, usage
deltas = chunks[1:-1]
text = "".join(c["choices"][0]["delta"]["content"] for c in deltas)
assert text == plain["choices"][0]["message"]["content"]
assert [c["choices"][0]["delta"]["content"] for c in deltas] == srvref.pieces(text)
assert all(c["choices"][0]["finish_reason"] is None for c in deltas[:-1])
assert deltas[-1]["choices"][0]["finish_reason"] == "stop" and deltas[-1]["choices"][0]["stop_reason"] is None
# continuous_usage_stats: every chunk carries the running counts
_, _, raw = srvref.http(url, dict(body, stream=True, stream_options={"include_usage": True, "continuous_usage_stats": True}))
cs = [json.loads(e) for e in srvref.sse_events(raw)[:-1]]
running = [c["usage"]["completion_tokens"] for c in cs[:-1]]
assert running == list(range(len(running) - 1)) + [plain["usage"]["completion_tokens"]], running
assert all(c["usage"]["total_tokens"] == c["usage"]["prompt_tokens"] + c["usage"]["completion_tokens"] for c in cs)
# without stream_options: no usage chunk
_, _, raw = srvref.http(url, dict(body, stream=True))
ev = srvref.sse_events(raw)
assert all(json.loads(e)["choices"] for e in ev[:-1]) and ev[-1] == "[DONE]"
PY

py "max_tokens cuts with finish_reason length; stop strings stop" <<'PY'
import os, json, srvref
url = os.environ["SERVER_URL"] + "/v1/chat/completions"
msgs = srvref.mrcr_conversation(k=1)
want, _ = srvref.mrcr_answer(msgs)
d = json.loads(srvref.http(url, {"model": "m1", "messages": msgs, "max_tokens": 5})[2])
c = d["choices"][0]
assert c["finish_reason"] == "length" and c["message"]["content"] == "".join(srvref.pieces(want)[:5]), c
assert d["usage"]["completion_tokens"] == 5
d = json.loads(srvref.http(url, {"model": "m1", "messages": msgs, "max_tokens": 500, "stop": ["snouts", "zzz"]})[2])
c = d["choices"][0]
assert c["finish_reason"] == "stop" and c["stop_reason"] == "snouts" and c["message"]["content"] == want[:want.index("snouts")], c
PY

py "/v1/completions: text_completion shape, default max_tokens 16, stream, return_token_ids" <<'PY'
import os, json, srvref
url = os.environ["SERVER_URL"] + "/v1/completions"
body = {"model": "m1", "prompt": "Question: what is 2+2?\nAnswer:", "max_tokens": 1000, "temperature": 0, "seed": 42}
st, _, b = srvref.http(url, body)
d = json.loads(b)
assert st == 200 and d["object"] == "text_completion" and d["id"].startswith("cmpl-"), d
c = d["choices"][0]
assert list(c)[:3] == ["index", "text", "logprobs"] and c["finish_reason"] == "stop", c
assert d["usage"]["prompt_tokens"] == srvref.count(body["prompt"])
again = json.loads(srvref.http(url, body)[2])
assert again["choices"][0]["text"] == c["text"], "answers must be deterministic"
d16 = json.loads(srvref.http(url, {"model": "m1", "prompt": body["prompt"]})[2])
assert d16["usage"]["completion_tokens"] <= 16
st, h, raw = srvref.http(url, dict(body, stream=True, stream_options={"include_usage": True}, return_token_ids=True))
ev = srvref.sse_events(raw)
chunks = [json.loads(e) for e in ev[:-1]]
assert ev[-1] == "[DONE]" and chunks[-1]["choices"] == [] and chunks[-1]["object"] == "text_completion"
text = "".join(x["choices"][0]["text"] for x in chunks[:-1])
assert text == c["text"] and chunks[-2]["choices"][0]["finish_reason"] == "stop"
ids = sum((x["choices"][0]["token_ids"] for x in chunks[:-1]), [])
assert ids == srvref.token_ids(text)
PY

# ---------------------------------------------------------------- errors
py "errors: vLLM nested shape, 404 model, bad JSON, stream_options without stream" <<'PY'
import os, json, srvref
url = os.environ["SERVER_URL"] + "/v1/chat/completions"
st, _, b = srvref.http(url, {"model": "nope", "messages": [{"role": "user", "content": "hi"}]})
assert st == 404 and json.loads(b) == {"error": {"message": "The model `nope` does not exist.", "type": "NotFoundError", "param": None, "code": 404}}, b
st, _, b = srvref.http(url, b"{not json")
e = json.loads(b)["error"]
assert st == 400 and e["code"] == 400 and e["type"] == "BadRequestError", b
st, _, b = srvref.http(url, {"model": "m1", "messages": [{"role": "user", "content": "hi"}], "stream_options": {"include_usage": True}})
assert st == 400 and "stream=True" in json.loads(b)["error"]["message"]
st, _, b = srvref.http(os.environ["SERVER_URL"] + "/nope")
assert st == 404 and json.loads(b) == {"detail": "Not Found"}
st, _, b = srvref.http(url, method="GET")
assert st == 405
PY

py "over-context: vLLM's 400 messages with the token counts" <<'PY'
import os, json, srvref
url = os.environ["SERVER_URL"] + "/v1/chat/completions"
long = [{"role": "user", "content": "word " * 5000}]
n = srvref.chat_count(long)
st, _, b = srvref.http(url, {"model": "m1", "messages": long, "max_tokens": 10})
assert st == 400, st
assert json.loads(b) == {"error": {"message": f"This model's maximum context length is 4096 tokens. However, your request has {n} input tokens. Please reduce the length of the input messages.", "type": "BadRequestError", "param": None, "code": 400}}, b
short = [{"role": "user", "content": "word " * 3000}]
n = srvref.chat_count(short)
st, _, b = srvref.http(url, {"model": "m1", "messages": short, "max_tokens": 4096 - n + 1})
assert st == 400 and json.loads(b)["error"]["message"] == f"'max_tokens' or 'max_completion_tokens' is too large: {4096 - n + 1}. This model's maximum context length is 4096 tokens and your request has {n} input tokens ({4096 - n + 1} > 4096 - {n}).", b
st, _, b = srvref.http(url, {"model": "m1", "messages": short, "max_tokens": 4096 - n})
assert st == 200, b
PY

# ---------------------------------------------------------------- faults by header
fault() { curl -s -o "$TMP/body" -D "$TMP/hdr" -w '%{http_code}' -H "X-DSA-Fault: $1" \
    "$SERVER_URL/v1/chat/completions" -d "{\"model\":\"m1\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]${2:-}}"; }
expect_eq "fault 500" "$(fault 500)" 500
grep -q '"type":"InternalServerError"' "$TMP/body" && ok "500 carries a nested error" || not_ok "500 carries a nested error"
expect_eq "fault 503" "$(fault 503)" 503
grep -qi '^Retry-After: 1' "$TMP/hdr" && ok "503 has Retry-After" || not_ok "503 has Retry-After"
expect_eq "fault 429" "$(fault 429)" 429
grep -qi '^Retry-After: 1' "$TMP/hdr" && ok "429 has Retry-After" || not_ok "429 has Retry-After"
fault reset >/dev/null; rc=$?
[ "$rc" -eq 56 ] || [ "$rc" -eq 52 ] && ok "fault reset: curl sees a reset ($rc)" || not_ok "fault reset: curl exit $rc"
curl -s -m 1 -o /dev/null -H "X-DSA-Fault: stall" "$SERVER_URL/v1/chat/completions" -d '{"messages":[{"role":"user","content":"x"}]}'
expect_eq "fault stall: the client times out" "$?" 28
fault truncate ',"stream":true' >/dev/null; rc=$?
expect_eq "fault truncate (stream): curl sees a short chunked body" "$rc" 18
fault truncate >/dev/null; rc=$?
expect_eq "fault truncate (plain): curl sees a short body" "$rc" 18
expect_eq "fault malformed: 200" "$(fault malformed)" 200
"$DSA_PYTHON" -c 'import json,sys; json.load(open(sys.argv[1]))' "$TMP/body" 2>/dev/null \
    && not_ok "malformed body is not JSON" || ok "malformed body is not JSON"
expect_eq "fault content-type: 200" "$(fault content-type)" 200
grep -qi '^Content-Type: text/html' "$TMP/hdr" && ok "content-type fault sends text/html" || not_ok "content-type fault sends text/html"
expect_eq "fault error-nested" "$(fault error-nested)" 500
expect_eq "nested body" "$(cat "$TMP/body")" '{"error":{"message":"injected fault","type":"InternalServerError","param":null,"code":500}}'
expect_eq "fault error-flat" "$(fault error-flat)" 500
expect_eq "flat body" "$(cat "$TMP/body")" '{"object":"error","message":"injected fault","type":"InternalServerError","param":null,"code":500}'
expect_eq "fault stream-error: 200" "$(fault stream-error ',"stream":true')" 200
tail -c 200 "$TMP/body" | grep -q '^data: {"error":{"message":"injected fault".*}}$' && tail -1 "$TMP/body" | grep -q . ; \
    [ "$(tail -n 2 "$TMP/body" | head -1)" = "data: [DONE]" ] && grep -q '^data: {"error"' "$TMP/body" \
    && ok "stream-error: an error event then [DONE]" || not_ok "stream-error: an error event then [DONE]"
expect_eq "unknown X-DSA-Fault is a 400" "$(fault frob)" 400

# ---------------------------------------------------------------- metrics
py "/metrics: prometheus_client layout and counters advancing as configured (K=3, L=3)" <<'PY'
import os, json, re, srvref
base = os.environ["SERVER_URL"]
def scrape():
    st, h, b = srvref.http(base + "/metrics")
    assert st == 200 and h["content-type"] == "text/plain; version=0.0.4; charset=utf-8", h
    return b.decode()
text = scrape()
before = srvref.parse_metrics(text)
# layout: every sample's family has # HELP and # TYPE right before; _created gauge blocks
lines = text.split("\n")
assert lines[-1] == ""
for name in ["vllm:spec_decode_num_drafts", "vllm:spec_decode_num_draft_tokens",
             "vllm:spec_decode_num_accepted_tokens", "vllm:spec_decode_num_accepted_tokens_per_pos"]:
    i = lines.index(f"# TYPE {name}_total counter")
    assert lines[i - 1].startswith(f"# HELP {name}_total ")
    assert f"# TYPE {name}_created gauge" in lines
for l in lines:
    if l.startswith("vllm:spec_decode_num_accepted_tokens_per_pos_total{"):
        assert re.fullmatch(r'vllm:spec_decode_num_accepted_tokens_per_pos_total\{engine="0",model_name="m1",position="[0-2]"\} [0-9]+\.0', l), l
    if l and not l.startswith("#"):
        v = l.rsplit(" ", 1)[1]
        assert v == srvref.float_to_go(float(v)), l
url = base + "/v1/chat/completions"
expect = {"drafts": 0, "draft_tokens": 0, "accepted": 0, "per_pos": [0, 0, 0]}
for k in (1, 2, 3):
    msgs = srvref.mrcr_conversation(k=k, seed=10 + k)
    d = json.loads(srvref.http(url, {"model": "m1", "messages": msgs, "max_tokens": 1000})[2])
    c = srvref.spec_counts([1.0, 1.0, 0.0], d["usage"]["completion_tokens"])
    sd = d["metrics"]["speculative_decoding"]
    assert (sd["num_spec_steps"], sd["num_draft_tokens"], sd["num_accepted_draft_tokens"], sd["num_spec_tokens"]) == \
        (c["drafts"], c["draft_tokens"], c["accepted"], 3), (sd, c)
    assert sd["mean_acceptance_length"] == 3.0 and sd["per_step_accepted"] == [2] * c["drafts"], sd
    for key in ("drafts", "draft_tokens", "accepted"):
        expect[key] += c[key]
    expect["per_pos"] = [a + b for a, b in zip(expect["per_pos"], c["per_pos"])]
after = srvref.parse_metrics(scrape())
D = lambda n: srvref.metric_sum(after, n) - srvref.metric_sum(before, n)
dD, dT, dA = D("vllm:spec_decode_num_drafts_total"), D("vllm:spec_decode_num_draft_tokens_total"), D("vllm:spec_decode_num_accepted_tokens_total")
assert (dD, dT, dA) == (expect["drafts"], expect["draft_tokens"], expect["accepted"]), (dD, dT, dA, expect)
assert dD > 0 and 1 + dA / dD == 3.0, 1 + dA / dD
for p in range(3):
    key = ("vllm:spec_decode_num_accepted_tokens_per_pos_total", (("engine", "0"), ("model_name", "m1"), ("position", str(p))))
    assert after[key] - before.get(key, 0) == expect["per_pos"][p], p
PY

py "floatToGoString: the created timestamps and large counters are formatted as Python does" <<'PY'
import os, srvref
text = srvref.http(os.environ["SERVER_URL"] + "/metrics")[2].decode()
created = [l for l in text.split("\n") if l.startswith("vllm:spec_decode_num_drafts_created{")]
v = created[0].rsplit(" ", 1)[1]
assert "e+09" in v and v == srvref.float_to_go(float(v)), v
PY

# The exposition byte for byte against prometheus_client's own generate_latest, fed the same
# values (scripts/setup.sh installs python3-prometheus-client; skipped where it is missing).
if "$DSA_PYTHON" -c 'import prometheus_client' 2>/dev/null; then
py "/metrics equals prometheus_client.generate_latest for the same values" <<'PY'
import os, re, time, srvref
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
text = srvref.http(os.environ["SERVER_URL"] + "/metrics")[2].decode()
vals = srvref.parse_metrics(text)
def v(name, **labels):
    labels.setdefault("engine", "0"); labels.setdefault("model_name", "m1")
    return vals[(name, tuple(sorted(labels.items())))]
created = v("vllm:prompt_tokens_created")
reg = CollectorRegistry()
real_time = time.time
time.time = lambda: created
try:
    L = ["model_name", "engine"]
    g = Gauge("vllm:num_requests_running", "Number of requests in model execution batches.", L, registry=reg)
    g.labels("m1", "0").set(v("vllm:num_requests_running"))
    for base, doc in [("vllm:prompt_tokens", "Number of prefill tokens processed."),
                      ("vllm:generation_tokens", "Number of generation tokens processed.")]:
        Counter(base, doc, L, registry=reg).labels("m1", "0").inc(v(base + "_total"))
    c = Counter("vllm:request_success", "Count of successfully processed requests.", L + ["finished_reason"], registry=reg)
    for r in ("stop", "length", "abort"):
        c.labels("m1", "0", r).inc(v("vllm:request_success_total", finished_reason=r))
    bounds = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0]
    h = Histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", L, buckets=bounds, registry=reg).labels("m1", "0")
    prev = 0
    for b in bounds + [float("inf")]:
        cum = v("vllm:e2e_request_latency_seconds_bucket", le=srvref.float_to_go(b))
        for _ in range(int(cum - prev)):
            h.observe(b if b != float("inf") else 1e9)
        prev = cum
    h._sum.set(v("vllm:e2e_request_latency_seconds_sum"))
    for base, doc in [("vllm:spec_decode_num_drafts", "Number of spec decoding drafts."),
                      ("vllm:spec_decode_num_draft_tokens", "Number of draft tokens."),
                      ("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.")]:
        Counter(base, doc, L, registry=reg).labels("m1", "0").inc(v(base + "_total"))
    pp = Counter("vllm:spec_decode_num_accepted_tokens_per_pos", "Accepted tokens per draft position.", L + ["position"], registry=reg)
    for p in range(3):
        pp.labels("m1", "0", str(p)).inc(v("vllm:spec_decode_num_accepted_tokens_per_pos_total", position=str(p)))
finally:
    time.time = real_time
want = generate_latest(reg).decode()
got = text[text.index("# HELP vllm:"):]
if got != want:
    import difflib
    print("".join(list(difflib.unified_diff(want.splitlines(True), got.splitlines(True), "prometheus_client", "server"))[:40]))
    raise SystemExit(1)
PY
else
    not_ok "/metrics equals prometheus_client.generate_latest (python3-prometheus-client not installed: scripts/setup.sh installs it)"
fi

# ---------------------------------------------------------------- request log
py "request log: exact body bytes, bearer recorded as a flag, never the key" <<'PY'
import os, json, srvref
body = b'{"model":"m1","messages":[{"role":"user","content":"log me \\u00e9"}],"max_tokens":3}'
srvref.http(os.environ["SERVER_URL"] + "/v1/chat/completions", body, headers={"Authorization": "Bearer sekrit-123"})
log = [json.loads(l) for l in open(os.environ["TMP"] + "/requests.jsonl")]
last = log[-1]
assert last["path"] == "/v1/chat/completions" and last["method"] == "POST"
assert last["body"].encode() == body and last["bearer"] is True, last
assert "sekrit" not in open(os.environ["TMP"] + "/requests.jsonl").read()
assert not any(k.lower() == "authorization" for k in last["headers"])
PY

# ---------------------------------------------------------------- concurrency and determinism
py "1024 concurrent requests: every answer equals the sequential one" <<'PY'
import os, json, srvref, threading
url = os.environ["SERVER_URL"] + "/v1/chat/completions"
distinct = [srvref.mrcr_conversation(k=1 + i % 3, seed=100 + i) for i in range(16)]
convs = [distinct[i % 16] for i in range(1024)]
seq = {}
for i in range(16):
    seq[i] = json.loads(srvref.http(url, {"model": "m1", "messages": convs[i], "max_tokens": 1000})[2])["choices"][0]["message"]["content"]
got = [None] * 1024
barrier = threading.Barrier(1024, timeout=60)
def run(i):
    barrier.wait()
    got[i] = json.loads(srvref.http(url, {"model": "m1", "messages": convs[i], "max_tokens": 1000}, timeout=120)[2])["choices"][0]["message"]["content"]
ts = [threading.Thread(target=run, args=(i,)) for i in range(1024)]
for t in ts: t.start()
for t in ts: t.join()
assert all(got[i] == seq[i % 16] for i in range(1024)), sum(got[i] != seq[i % 16] for i in range(1024))
PY

stop_server; expect_eq "SIGTERM: clean exit" "$?" 0

# ---------------------------------------------------------------- the synthetic generator's rows
start_server --model m1 --max-model-len 1000000 && ok "server with a 1M context" || not_ok "server with a 1M context"
py "MRCR rows of the synthetic generator (datasets/samples) are answered with their exact answer" <<'PY'
import os, json, glob, srvref
url = os.environ["SERVER_URL"] + "/v1/chat/completions"
files = sorted(glob.glob(os.environ["DSA_SRC"] + "/datasets/samples/mrcr-*.jsonl"))
assert files, "no datasets/samples/mrcr-*.jsonl"
rows = 0
for f in files:
    for line in open(f):
        row = json.loads(line)
        msgs = json.loads(row["prompt"])
        st, _, b = srvref.http(url, {"model": "m1", "messages": msgs, "max_tokens": 4096, "temperature": 0}, timeout=60)
        assert st == 200, b
        got = json.loads(b)["choices"][0]["message"]["content"]
        assert got == row["answer"], (f, rows, got[:60], row["answer"][:60])
        assert srvref.mrcr_answer(msgs)[0] == row["answer"]
        rows += 1
assert rows >= 11, rows
print(rows, "rows answered exactly")
PY

# a 1 MB conversation (curl sends "Expect: 100-continue") is answered like a small one
PYTHONPATH="$DSA_SRC/tests/cli" "$DSA_PYTHON" - "$TMP" <<'PY'
import json, sys, srvref
m = srvref.mrcr_conversation(n_needles=8, filler=700, k=5)
json.dump({"model": "m1", "messages": m, "max_tokens": 1000}, open(sys.argv[1] + "/big.json", "w"))
open(sys.argv[1] + "/big.want", "w").write(srvref.mrcr_answer(m)[0])
PY
curl -s "$SERVER_URL/v1/chat/completions" -H 'Content-Type: application/json' --data-binary @"$TMP/big.json" >"$TMP/big.out"
"$DSA_PYTHON" -c 'import json,sys; a=json.load(open(sys.argv[1]))["choices"][0]["message"]["content"]; sys.exit(a != open(sys.argv[2]).read())' \
    "$TMP/big.out" "$TMP/big.want" && ok "1 MB conversation answered exactly" || not_ok "1 MB conversation answered exactly"
stop_server

# ---------------------------------------------------------------- MRCR decisions and builds
start_server --model m1 --seed 7 --mrcr-wrong "600:0,inf:0.4" --mrcr-garble 0.25 \
    && ok "server with wrong/garble rates" || not_ok "server with wrong/garble rates"
URL_BASE=$SERVER_URL; PID_BASE=$SERVER_PID
start_server --model m1 --seed 7 --mrcr-wrong "600:0,inf:0.4" --mrcr-garble 0.25 --build pr1 --build-fraction 0.2 \
    && ok "second build" || not_ok "second build"
URL_PR=$SERVER_URL
SERVER_URL=$URL_BASE URL_PR=$URL_PR py "wrong/garble/build decisions equal the reference for 60 conversations" <<'PY'
import os, json, srvref
n = {"wrong": 0, "garbled": 0, "build_changed": 0, "differ": 0}
for i in range(60):
    msgs = srvref.mrcr_conversation(n_needles=2 + i % 5, k=1 + i % 2, filler=1 + i % 3, seed=1000 + i)
    base = json.loads(srvref.http(os.environ["SERVER_URL"] + "/v1/chat/completions", {"model": "m1", "messages": msgs, "max_tokens": 4000})[2])["choices"][0]["message"]["content"]
    pr = json.loads(srvref.http(os.environ["URL_PR"] + "/v1/chat/completions", {"model": "m1", "messages": msgs, "max_tokens": 4000})[2])["choices"][0]["message"]["content"]
    want, dec = srvref.mrcr_answer(msgs, seed=7, wrong="600:0,inf:0.4", garble="0.25")
    want_pr, dec_pr = srvref.mrcr_answer(msgs, seed=7, wrong="600:0,inf:0.4", garble="0.25", build="pr1", build_fraction=0.2)
    assert base == want, (i, dec, base[:60], want[:60])
    assert pr == want_pr, (i, dec_pr)
    assert (base != pr) == dec_pr["build_changed"]
    for k in ("wrong", "garbled"):
        n[k] += dec[k]
    n["build_changed"] += dec_pr["build_changed"]
assert all(n[k] > 0 for k in ("wrong", "garbled", "build_changed")), n
print(n)
PY
stop_server "$PID_BASE"; expect_eq "base build exits 0" "$?" 0
stop_server; expect_eq "pr build exits 0" "$?" 0

# ---------------------------------------------------------------- faults by rate
start_server --model m1 --fault 503:first && ok "server with --fault 503:first" || not_ok "server with --fault 503:first"
b='{"model":"m1","messages":[{"role":"user","content":"retry me"}]}'
expect_eq "first arrival of a body: 503" "$(curl -s -o /dev/null -w '%{http_code}' "$SERVER_URL/v1/chat/completions" -d "$b")" 503
expect_eq "the retry succeeds" "$(curl -s -o /dev/null -w '%{http_code}' "$SERVER_URL/v1/chat/completions" -d "$b")" 200
stop_server
start_server --model m1 --fault 'error-flat:match=PoisonPill' && ok "server with a match= rule" || not_ok "server with a match= rule"
b='{"model":"m1","messages":[{"role":"user","content":"this carries PoisonPill"}]}'
expect_eq "a matching body fails" "$(curl -s -o /dev/null -w '%{http_code}' "$SERVER_URL/v1/chat/completions" -d "$b")" 500
expect_eq "... on every attempt" "$(curl -s -w ' %{http_code}' "$SERVER_URL/v1/chat/completions" -d "$b")" \
    '{"object":"error","message":"injected fault","type":"InternalServerError","param":null,"code":500} 500'
expect_eq "other bodies pass" "$(curl -s -o /dev/null -w '%{http_code}' "$SERVER_URL/v1/chat/completions" -d '{"messages":[{"role":"user","content":"x"}]}')" 200
stop_server
start_server --model m1 --fault 500:0.4 --fault reset:0.2 --fault-seed 99 && ok "server with fault rates" || not_ok "server with fault rates"
py "fault rates follow the documented seeded decision (parity with the reference)" <<'PY'
import os, json, srvref, http.client
seen = {"500": 0, "reset": 0, "ok": 0}
for i in range(40):
    body = json.dumps({"model": "m1", "messages": [{"role": "user", "content": f"q{i}"}]}).encode()
    h = srvref.fnv1a64(body)
    for attempt in range(2):
        x = h ^ srvref.splitmix64(attempt)
        want = "500" if srvref.decide_u(99, x, "fault:500") < 0.4 else "reset" if srvref.decide_u(99, x, "fault:reset") < 0.2 else "ok"
        try:
            st, _, _ = srvref.http(os.environ["SERVER_URL"] + "/v1/chat/completions", body)
            got = "500" if st == 500 else "ok" if st == 200 else str(st)
        except (ConnectionError, http.client.HTTPException, OSError):
            got = "reset"
        assert got == want, (i, attempt, got, want)
        seen[got] += 1
assert all(seen.values()), seen
PY
stop_server; expect_eq "exit 0 after resets" "$?" 0

# ---------------------------------------------------------------- auth
start_server --model m1 --require-api-key k3y && ok "server with an API key" || not_ok "server with an API key"
expect_eq "no key: 401" "$(curl -s -w ' %{http_code}' "$SERVER_URL/v1/models")" '{"error":"Unauthorized"} 401'
expect_eq "wrong key: 401" "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer nope' "$SERVER_URL/v1/models")" 401
expect_eq "right key: 200" "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer k3y' "$SERVER_URL/v1/models")" 200
expect_eq "/health needs no key" "$(curl -s -o /dev/null -w '%{http_code}' "$SERVER_URL/health")" 200
stop_server

# ---------------------------------------------------------------- SGLang dialect
start_server --dialect sglang --model m2 --max-model-len 2048 --spec-tokens 3 --acceptance-rates 1,0.5,0 \
    && ok "sglang dialect starts" || not_ok "sglang dialect starts"
py "sglang: flat errors, owned_by, matched_stop, no default usage, /generate meta_info" <<'PY'
import os, json, srvref
base = os.environ["SERVER_URL"]
card = json.loads(srvref.http(base + "/v1/models")[2])["data"][0]
assert card["owned_by"] == "sglang" and card["id"] == "m2"
st, _, b = srvref.http(base + "/v1/chat/completions", {"model": "zz", "messages": [{"role": "user", "content": "x"}]})
e = json.loads(b)
assert st == 404 and e["object"] == "error" and e["code"] == 404 and "error" not in e, e
msgs = srvref.mrcr_conversation(k=2)
want, _ = srvref.mrcr_answer(msgs)
d = json.loads(srvref.http(base + "/v1/chat/completions", {"model": "m2", "messages": msgs, "max_tokens": 500})[2])
c = d["choices"][0]
assert c["message"]["content"] == want and c["matched_stop"] == 1 and "stop_reason" not in c, c
_, _, raw = srvref.http(base + "/v1/chat/completions", {"model": "m2", "messages": msgs, "max_tokens": 500, "stream": True, "stream_options": {}})
ev = srvref.sse_events(raw)
assert all(json.loads(x)["choices"] for x in ev[:-1]), "include_usage must default to false"
long = [{"role": "user", "content": "w " * 3000}]
st, _, b = srvref.http(base + "/v1/chat/completions", {"model": "m2", "messages": long, "max_tokens": 5})
assert st == 400 and json.loads(b)["object"] == "error" and "maximum context length of 2048" in json.loads(b)["message"], b
g = json.loads(srvref.http(base + "/generate", {"text": "Question: 1+1?\nAnswer:", "sampling_params": {"max_new_tokens": 64, "temperature": 0}})[2])
m = g["meta_info"]
C = m["completion_tokens"]
sc = srvref.spec_counts([1.0, 0.5, 0.0], C)
assert m["prompt_tokens"] == srvref.count("Question: 1+1?\nAnswer:")
assert m["spec_verify_ct"] == sc["drafts"] and m["spec_accepted_drafts"] == m["spec_num_correct_drafts"] == sc["accepted"], (m, sc)
assert m["spec_num_proposed_drafts"] == 3 * sc["drafts"] and m["spec_accept_length"] == C / sc["drafts"]
assert m["finish_reason"]["type"] in ("stop", "length") and g["text"]
_, _, raw = srvref.http(base + "/generate", {"text": "Question: 1+1?\nAnswer:", "sampling_params": {"max_new_tokens": 64}, "stream": True})
ev = srvref.sse_events(raw)
assert ev[-1] == "[DONE]" and json.loads(ev[-2])["text"] == g["text"]
info = json.loads(srvref.http(base + "/get_server_info")[2])
assert info["version"] and info["context_length"] == 2048
al = info["internal_states"][0]["avg_spec_accept_length"]
# served so far: the chat request twice (plain and streamed) and the /generate request twice
chat = srvref.spec_counts([1.0, 0.5, 0.0], d["usage"]["completion_tokens"])
assert al == 1 + (chat["accepted"] + sc["accepted"]) / (chat["drafts"] + sc["drafts"]), (al, sc, chat)
assert json.loads(srvref.http(base + "/get_model_info")[2])["model_path"] == "m2"
PY
stop_server; expect_eq "sglang server exits 0" "$?" 0

# --inflight-log: three requests held 600 ms at once show as 3, before and after as 0
start_server --delay-ms 600 --inflight-log "$TMP/inflight.txt" || { echo "Bail out! server"; exit 1; }
py "--inflight-log counts the requests held" <<'PY'
import os, threading, time, srvref
base = os.environ["SERVER_URL"]
body = {"model": "dsa-test-model", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
time.sleep(0.1)
ts = [threading.Thread(target=srvref.http, args=(base + "/v1/chat/completions", body)) for _ in range(3)]
for t in ts: t.start()
for t in ts: t.join()
time.sleep(0.1)
s = [tuple(map(float, l.split())) for l in open(os.environ["TMP"] + "/inflight.txt") if l.count(" ") == 1]
n = [c for _, c in s]
assert max(n) == 3 and n[0] == 0 and n[-1] == 0, n
assert all(b[0] > a[0] for a, b in zip(s, s[1:])), "times must increase"
held3 = sum(s[i + 1][0] - s[i][0] for i in range(len(s) - 1) if s[i][1] == 3)
assert 0.3 < held3 < 0.8, held3
PY
stop_server; expect_eq "server with --inflight-log exits 0" "$?" 0

# (under -DDSA_SANITIZE=ON the server itself is instrumented: nothing may be reported)
grep -E "Sanitizer|runtime error" "$TMP/server.log" | head -5 | sed 's/^/#   /'
grep -qE "Sanitizer|runtime error" "$TMP/server.log" && not_ok "no sanitizer report from the servers" \
    || ok "no sanitizer report from the servers"

done_testing
