#!/usr/bin/env bash
# dsa-eval gsm8k: prompt hashes (spec vectors), full runs against the test server with
# synthetic MTP (acceptance length and a per-position profile recovered exactly), resume,
# the prompt modes and dialects, exit codes, and output identity between two server builds.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/srvlib.sh"

D="$DSA_DATA/gsm8k"
if [ ! -f "$D/test.jsonl" ] || [ ! -f "$D/train.jsonl" ]; then
    echo "Bail out! no GSM8K data under $D"
    exit 1
fi
G=("$DSA_BIN" gsm8k --data "$D")
h() { sha256sum | cut -d' ' -f1; }

# ---- prompts: docs/gsm8k.md "Prompt test vectors" (each prompt then one NUL byte)
expect_eq "vllm5 first-32 prompts" "$("${G[@]}" --print-prompts --limit 32 | h)" \
    5469eda54a031a728e0bb7f47e458dfe8609a12e9e4fa22a92180e2b719a7d17
expect_eq "cot8 first-32 prompts" "$("${G[@]}" --print-prompts --prompt cot8 --limit 32 | h)" \
    cec5f6bde7691f6aa0ada15ac07df43e700f39a75757dc77f911da6c9251e3c3
expect_eq "sglang5 first-32 prompts" "$("${G[@]}" --print-prompts --prompt sglang5 --limit 32 | h)" \
    c9c6fb65da332690a9a22453cb3f324aa94dfefd3244a4dc515de0c4f1898034
expect_eq "vllm5 test[0] prompt" "$("${G[@]}" --print-prompts --limit 1 | head -c -1 | h)" \
    ea821015b5b035b5699391cb903e1dc2ba0bfff20e99caa72f169af47609249e
expect_eq "cot8 test[0] prompt" "$("${G[@]}" --print-prompts --prompt cot8 --limit 1 | head -c -1 | h)" \
    901fead9abd2535b6d0610c3c90125f38cad81678c4b2b98ec8fb818e3948bde
expect_eq "sglang5 test[0] prompt" \
    "$("${G[@]}" --print-prompts --prompt sglang5 --limit 1 | head -c -1 | h)" \
    239293754edb5e2d547ccb32b43fbd975ae92f8fccd62c05014dd101d39278bd
expect_eq "--print-prompts --prompt cot8 --limit 3 writes 3 NUL bytes" \
    "$("${G[@]}" --print-prompts --prompt cot8 --limit 3 | tr -cd '\0' | wc -c | tr -d ' ')" 3

# ---- usage and data errors
expect_code 2 "no endpoint" "${G[@]}" --limit 2
expect_code 2 "unknown prompt mode" "${G[@]}" --print-prompts --prompt posix
expect_code 2 "unknown extraction" "${G[@]}" --print-prompts --extract posix
expect_code 2 "bad --extra-body" "${G[@]}" --print-prompts --extra-body '[1]'
expect_code 3 "missing data folder" "$DSA_BIN" gsm8k --data "$TMP/none" --print-prompts
grep -q "no GSM8K test split at '$TMP/none/test.jsonl'" "$TMP/err" && ok "missing data message" \
    || not_ok "missing data message"
# (the in-process backend itself is tested by t0702-gsm8k-inprocess.sh)
expect_code 2 "unknown backend" "${G[@]}" --backend nonesuch --limit 2
expect_code 2 "in-process needs --out" "${G[@]}" --backend inprocess --limit 2
grep -q "out DIR is required with --backend inprocess" "$TMP/err" && ok "inprocess message" \
    || not_ok "inprocess message"

# ---- a full run with synthetic MTP: acceptance length 3.0 with 3 draft tokens
start_server --gsm8k-data "$D/test.jsonl" --spec-tokens 3 --acceptance-length 3.0 \
    || { not_ok "server starts"; done_testing; exit 1; }
MAIN_URL=$SERVER_URL
expect_success "run --mtp --expect-mtp" "${G[@]}" --endpoint "$MAIN_URL" --mtp --expect-mtp \
    --limit 32 --out "$TMP/main" -q
cp "$TMP/out" "$TMP/main.out"
grep -q '^acceptance length   3.0000   ' "$TMP/main.out" && ok "AL 3.0000 measured" \
    || { not_ok "AL 3.0000 measured"; sed 's/^/#   /' "$TMP/main.out"; }
grep -q '^per position        1.0000 1.0000 0.0000$' "$TMP/main.out" && ok "per-position 1,1,0" \
    || not_ok "per-position 1,1,0"
grep -q '^draft acceptance    0.6667   ' "$TMP/main.out" && ok "draft acceptance 2/3" \
    || not_ok "draft acceptance 2/3"
grep -q '^accuracy            1.0000 ± 0.0000   (32/32 correct, vllm' "$TMP/main.out" \
    && ok "the gold-answering server scores 32/32" || not_ok "the gold-answering server scores 32/32"
grep -q '^invalid answers     0.0000 ' "$TMP/main.out" && ok "no invalid answers" \
    || not_ok "no invalid answers"
RUN="$TMP/main/run-001.jsonl"
expect_eq "run file: header + 32 records" "$(wc -l <"$RUN" | tr -d ' ')" 33

# the records carry what the issue lists; prompt hashes equal --print-prompts' prompts
"${G[@]}" --print-prompts --limit 32 >"$TMP/prompts.bin"
py "records: keys, prompt sha256, exact outputs, summary" <<PYEOF
import hashlib, json
lines = open("$RUN", encoding="utf-8").read().splitlines()
recs = [json.loads(l) for l in lines[1:]]
prompts = open("$TMP/prompts.bin", "rb").read().split(b"\0")[:-1]
test = [json.loads(l) for l in open("$D/test.jsonl")]
assert len(recs) == 32
for r in recs:
    i = r["idx"]
    assert r["id"] == "q%04d" % i and r["status"] == "ok" and r["bin"] == "all"
    assert r["prompt_sha256"] == hashlib.sha256(prompts[i]).hexdigest()
    for k in ("output", "finish_reason", "completion_tokens", "extract", "pred", "gold", "correct"):
        assert k in r, k
    # the test server answers with the gold solution, cut at the "Question" stop string
    assert r["output"] == " " + test[i]["answer"] + "\n\n", (i, r["output"])
    assert r["finish_reason"] == "stop" and r["correct"] is True and r["score"] == 1
    assert r["retries"] == 0, r  # like mrcr records: attempts beyond the first
    assert r["gold"] == test[i]["answer"].split("#### ")[-1].replace(",", "").strip()
s = json.load(open("$TMP/main/run-001.summary.json"))
assert s["accuracy"] == 1.0 and s["graded"] == 32 and s["invalid"] == 0
m = s["mtp"]
assert m["acceptance_length"] == 3.0 and m["per_position_rate"] == [1.0, 1.0, 0.0], m
assert m["drafts"] > 0 and m["accepted"] == 2 * m["drafts"] and m["source"] == "metrics"
t = s["throughput"]  # questions/s and output tokens/s over this attempt's wall time
assert t["sent"] == 32 and t["wall_s"] > 0, t
assert abs(t["questions_per_s"] - 32 / t["wall_s"]) < 1e-9 * t["questions_per_s"], t
assert t["completion_tokens"] == sum(r["completion_tokens"] for r in recs), t
assert abs(t["output_tokens_per_s"] - t["completion_tokens"] / t["wall_s"]) < 1e-6, t
PYEOF
grep -Eq '^throughput          [0-9]+\.[0-9]{2} questions/s, [0-9]+\.[0-9] output tokens/s, wall [0-9]+\.[0-9] s \(32 sent\)$' "$TMP/main.out" \
    && ok "throughput line" || not_ok "throughput line"

# resume: nothing left to send
expect_success "rerun resumes" "${G[@]}" --endpoint "$MAIN_URL" --limit 32 --out "$TMP/main" -q
grep -q '32 graded (0 sent, 32 resumed, 0 failed)' "$TMP/out" && ok "nothing sent again" \
    || not_ok "nothing sent again"
expect_eq "run file unchanged" "$(wc -l <"$RUN" | tr -d ' ')" 33
# ... and says so, and shows the stored acceptance length, not "n/a (no drafts during the run)"
expect_success "rerun with --mtp, nothing left" "${G[@]}" --endpoint "$MAIN_URL" --mtp --limit 32 --out "$TMP/main"
grep -qx "dsa-eval: resuming: 32 of 32 samples already done in '$RUN': nothing left to do" "$TMP/err" \
    && ok "resume note" || { not_ok "resume note"; sed 's/^/#   /' "$TMP/err"; }
grep -qx 'acceptance length   3.0000   (stored: measured by an earlier attempt of this run)' "$TMP/out" \
    && ok "the stored acceptance length" || { not_ok "the stored acceptance length"; sed 's/^/#   /' "$TMP/out"; }
grep -q 'no drafts during the run' "$TMP/out" && not_ok "no 'n/a (no drafts)'" || ok "no 'n/a (no drafts)'"
expect_eq "the summary file keeps the measured length" \
    "$("$DSA_PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["mtp"]["acceptance_length"])' "$TMP/main/run-001.summary.json")" 3.0
# --json: the summary document instead of the text
expect_success "gsm8k --json" "${G[@]}" --endpoint "$MAIN_URL" --mtp --limit 32 --out "$TMP/main" --json -q
py "--json prints the summary document" <<PYEOF
import json
s = json.load(open("$TMP/out"))
assert s["eval"] == "gsm8k" and s["accuracy"] == 1.0 and s["graded"] == 32, s
assert s["mtp"]["acceptance_length"] == 3.0 and s["throughput"]["sent"] == 0, s
PYEOF
expect_code 6 "another prompt mode is another run" "${G[@]}" --endpoint "$MAIN_URL" --limit 32 \
    --prompt cot8 --out "$TMP/main" -q

# ---- another server build: exactly one known output differs (question 7)
start_server --gsm8k-data "$D/test.jsonl" --spec-tokens 3 --acceptance-length 3.0 --build pr \
    || not_ok "second server starts"
PR_URL=$SERVER_URL
expect_success "run against the other build" "${G[@]}" --endpoint "$PR_URL" --mtp --limit 32 \
    --out "$TMP/pr" -q
grep -q '^accuracy            0.9688 ± 0.0312   (31/32 correct' "$TMP/out" \
    && ok "the changed question is wrong" || { not_ok "the changed question is wrong"; sed 's/^/#   /' "$TMP/out"; }
if "$DSA_BIN" --help | grep -q '^    compare '; then
    expect_code 0 "compare main main" "$DSA_BIN" compare "$TMP/main" "$TMP/main"
    grep -q 'same outputs (32/32) and the same acceptance length (3.0000)' "$TMP/out" \
        && ok "identity verdict" || not_ok "identity verdict"
    expect_code 1 "compare main pr" "$DSA_BIN" compare "$TMP/main" "$TMP/pr"
    grep -q '^identical outputs   31/32$' "$TMP/out" && ok "31/32 identical" || not_ok "31/32 identical"
    grep -q '^first difference    question q0007 at byte ' "$TMP/out" && ok "first difference q0007" \
        || not_ok "first difference q0007"
    grep -q 'McNemar exact p 1.0000 (1 vs 0)' "$TMP/out" && ok "McNemar" || not_ok "McNemar"
fi
py "exactly question 7 differs, at the final answer" <<PYEOF
import json
a = [json.loads(l) for l in open("$TMP/main/run-001.jsonl").read().splitlines()[1:]]
b = [json.loads(l) for l in open("$TMP/pr/run-001.jsonl").read().splitlines()[1:]]
diff = [x["idx"] for x, y in zip(a, b) if x["output"] != y["output"]]
assert diff == [7], diff
assert b[7]["pred"] == str(int(a[7]["gold"]) + 1)
PYEOF

# ---- two replicas: requests spread over both, /metrics of both summed
expect_success "two endpoints" "${G[@]}" --endpoint "$MAIN_URL" --endpoint "$PR_URL" --mtp \
    --expect-mtp --limit 8 -c 2 -q
grep -q '^acceptance length   3.0000   ' "$TMP/out" && ok "AL over two servers" \
    || { not_ok "AL over two servers"; sed 's/^/#   /' "$TMP/out"; }
expect_code 4 "unreachable server" "${G[@]}" --endpoint http://127.0.0.1:1 --limit 2 --retries 0
grep -q "cannot reach 'http://127.0.0.1:1/v1/models'" "$TMP/err" && ok "unreachable message" \
    || not_ok "unreachable message"

# ---- a per-position profile is recovered exactly: the expected counters are recomputed
# from each record's completion_tokens with the server's documented synthetic schedule
start_server --gsm8k-data "$D/test.jsonl" --spec-tokens 3 --acceptance-rates 0.9,0.6,0.3 \
    || not_ok "profile server starts"
expect_success "profile run" "${G[@]}" --endpoint "$SERVER_URL" --mtp --limit 16 --concurrency 4 \
    --out "$TMP/profile" -q
py "per-position rates recovered exactly" <<PYEOF
import json
rates = [0.9, 0.6, 0.3]
def vdc(n):
    v, f = 0.0, 0.5
    while n:
        if n & 1: v += f
        n >>= 1; f *= 0.5
    return v
steps = acc = 0; pos = [0, 0, 0]
for l in open("$TMP/profile/run-001.jsonl").read().splitlines()[1:]:
    c = json.loads(l)["completion_tokens"]; made = 1 if c > 0 else 0; s = 0
    while made < c:
        u = vdc(s + 1); n = 0
        while n < 3 and u < rates[n]: n += 1
        steps += 1; acc += n; made += 1 + n; s += 1
        for i in range(n): pos[i] += 1
m = json.load(open("$TMP/profile/run-001.summary.json"))["mtp"]
assert m["drafts"] == steps and m["accepted"] == acc and m["accepted_per_pos"] == pos, (m, steps, acc, pos)
assert m["acceptance_length"] == 1 + acc / steps
assert m["per_position_rate"] == [p / steps for p in pos]
print("AL %.4f per position %s" % (1 + acc / steps, [round(p / steps, 4) for p in pos]))
PYEOF

# ---- all 1319 questions: every extraction of every output equals CPython's
expect_success "full test split, 8 in flight" "${G[@]}" --endpoint "$MAIN_URL" --limit 0 -c 8 \
    --out "$TMP/all" -q
py "extractions of 1319 outputs equal CPython re" <<PYEOF
import json, subprocess
recs = [json.loads(l) for l in open("$TMP/all/run-001.jsonl").read().splitlines()[1:]]
assert len(recs) == 1319
inp = "".join(json.dumps({"text": r["output"]}) + "\n" for r in recs)
out = subprocess.run(["$DSA_PYTHON", "$DSA_SRC/tests/data/gsm8k_extract_ref.py"], input=inp,
                     capture_output=True, text=True, check=True).stdout.splitlines()
for r, o in zip(recs, out):
    o = json.loads(o)
    for m in ("vllm", "cot-strict", "gsm8k-strict", "flexible"):
        assert r["extract"][m] == o[m], (r["idx"], m, r["extract"][m], o[m])
# the gold-answering server misses only where its answer was cut (256 tokens, or a "Question"
# inside the solution)
assert all(r["correct"] or r["finish_reason"] == "length" or len(r["output"]) < 4 for r in recs)
PYEOF

# ---- prompt modes and dialects
expect_success "cot8 run" "${G[@]}" --endpoint "$MAIN_URL" --prompt cot8 --limit 8 -q
grep -q '(8/8 correct, cot-strict' "$TMP/out" && ok "cot8 scores 8/8 with cot-strict" \
    || { not_ok "cot8 scores 8/8 with cot-strict"; sed 's/^/#   /' "$TMP/out"; }
expect_success "chat run" "${G[@]}" --endpoint "$MAIN_URL" --prompt chat --limit 4 -q \
    --extra-body '{"chat_template_kwargs":{"thinking":false}}'
grep -q '(4/4 correct, vllm' "$TMP/out" && ok "chat scores 4/4" || not_ok "chat scores 4/4"
start_server --dialect sglang --gsm8k-data "$D/test.jsonl" --spec-tokens 3 \
    --acceptance-length 3.0 || not_ok "sglang server starts"
expect_success "sglang /generate run" "${G[@]}" --endpoint "$SERVER_URL" --mtp --expect-mtp \
    --prompt sglang5 --limit 8 -q
grep -q '^acceptance length   3.0000   ' "$TMP/out" && ok "AL 3.0000 from meta_info" \
    || { not_ok "AL 3.0000 from meta_info"; sed 's/^/#   /' "$TMP/out" "$TMP/err"; }
grep -q '(8/8 correct, vllm' "$TMP/out" && ok "sglang5 scores 8/8" || not_ok "sglang5 scores 8/8"

# ---- the exact requests: greedy parameters, stop strings, the prompt bytes, extra body
start_server --gsm8k-data "$D/test.jsonl" --log-requests "$TMP/requests.jsonl" \
    || not_ok "logging server starts"
expect_success "completions request" "${G[@]}" --endpoint "$SERVER_URL" --limit 1 -q
expect_success "chat request" "${G[@]}" --endpoint "$SERVER_URL" --limit 1 -q --prompt chat \
    --no-token-ids --max-tokens 64 --seed 7 --extra-body '{"chat_template_kwargs":{"thinking":false}}'
expect_success "cot8 request" "${G[@]}" --endpoint "$SERVER_URL" --limit 1 -q --prompt cot8
py "request bodies" <<PYEOF
import json
reqs = [json.loads(l) for l in open("$TMP/requests.jsonl")]
gen = [r for r in reqs if r["method"] == "POST"]
assert [r["path"] for r in gen] == ["/v1/completions", "/v1/chat/completions", "/v1/completions"]
prompts = open("$TMP/prompts.bin", "rb").read().split(b"\0")
test = [json.loads(l) for l in open("$D/test.jsonl")]
b = json.loads(gen[0]["body"])
assert b == {"model": "dsa-test-model", "prompt": prompts[0].decode(), "max_tokens": 256,
             "temperature": 0, "top_p": 1, "seed": 42, "return_token_ids": True,
             "stop": ["Question", "Assistant:", "<|separator|>"]}, b
c = json.loads(gen[1]["body"])
assert c == {"model": "dsa-test-model", "max_completion_tokens": 64, "temperature": 0,
             "top_p": 1, "seed": 7, "stop": ["Question", "Assistant:", "<|separator|>"],
             "messages": [{"role": "user", "content": "Question: " + test[0]["question"] + "\nAnswer:"}],
             "chat_template_kwargs": {"thinking": False}}, c
d = json.loads(gen[2]["body"])
assert d["stop"] == ["Q:", "</s>", "<|im_end|>"] and d["prompt"].endswith("Q: " + test[0]["question"] + "\nA:")
PYEOF

# ---- an API key: from a file or the environment, never written
start_server --gsm8k-data "$D/test.jsonl" --require-api-key s3cret || not_ok "keyed server starts"
printf 's3cret\n' >"$TMP/key"
expect_code 4 "no key: refused" "${G[@]}" --endpoint "$SERVER_URL" --limit 1 -q
expect_success "--api-key-file" "${G[@]}" --endpoint "$SERVER_URL" --limit 1 -q \
    --api-key-file "$TMP/key" --out "$TMP/keyed"
DSA_EVAL_API_KEY=s3cret expect_success "\$DSA_EVAL_API_KEY" "${G[@]}" --endpoint "$SERVER_URL" \
    --limit 1 -q
grep -q s3cret "$TMP/keyed/run-001.jsonl" "$TMP/keyed/run-001.summary.json" \
    && not_ok "the key is not written" || ok "the key is not written"
expect_code 2 "unreadable key file" "${G[@]}" --endpoint "$SERVER_URL" --limit 1 -q \
    --api-key-file "$TMP/nokey"

# ---- streaming gives the same bytes
expect_success "--stream run" "${G[@]}" --endpoint "$MAIN_URL" --stream --limit 4 --out "$TMP/stream" -q
py "streamed outputs equal the non-streamed ones" <<PYEOF
import json
a = [json.loads(l) for l in open("$TMP/main/run-001.jsonl").read().splitlines()[1:5]]
b = [json.loads(l) for l in open("$TMP/stream/run-001.jsonl").read().splitlines()[1:]]
assert [x["output"] for x in a] == [x["output"] for x in b]
PYEOF

# ---- failed requests are recorded, not graded; exit 1
start_server --gsm8k-data "$D/test.jsonl" --fault 500 || not_ok "failing server starts"
expect_code 1 "every request fails" "${G[@]}" --endpoint "$SERVER_URL" --retries 0 --limit 3 \
    --out "$TMP/failed" -q
grep -q '3 of 3 questions failed' "$TMP/err" && ok "failed message" || not_ok "failed message"
expect_eq "failed records" "$(grep -c '"status":"failed"' "$TMP/failed/run-001.jsonl")" 3

# ---- Ctrl-C: what finished is on disk, exit 130, a rerun finishes the rest
start_server --gsm8k-data "$D/test.jsonl" --delay-ms 100 || not_ok "slow server starts"
"${G[@]}" --endpoint "$SERVER_URL" --limit 32 --out "$TMP/int" -q >"$TMP/int.out" 2>"$TMP/int.err" &
pid=$!
sleep 1.2
kill -INT $pid
wait $pid
expect_eq "interrupted exit 130" "$?" 130
n=$(($(wc -l <"$TMP/int/run-001.jsonl") - 1))
[ "$n" -gt 0 ] && [ "$n" -lt 32 ] && ok "some records on disk ($n)" || not_ok "some records on disk ($n)"
expect_success "rerun finishes" "${G[@]}" --endpoint "$SERVER_URL" --limit 32 --out "$TMP/int" -q
grep -q "32 graded ($((32 - n)) sent, $n resumed, 0 failed)" "$TMP/out" && ok "resumed $n" \
    || { not_ok "resumed $n"; sed 's/^/#   /' "$TMP/out"; }

# ---- no speculative decoding
start_server --gsm8k-data "$D/test.jsonl" || not_ok "plain server starts"
expect_code 4 "--expect-mtp without spec decoding" "${G[@]}" --endpoint "$SERVER_URL" \
    --expect-mtp --limit 2 -q
grep -q "expect-mtp: the spec-decode counters did not move\|expect-mtp: the server exposes no" \
    "$TMP/err" && ok "clear message" || { not_ok "clear message"; sed 's/^/#   /' "$TMP/err"; }
expect_success "--mtp without spec decoding is only a note" "${G[@]}" --endpoint "$SERVER_URL" \
    --mtp --limit 2
grep -q '^acceptance length   n/a' "$TMP/out" && ok "n/a" || not_ok "n/a"
# ---- acceptance length with statistics, end to end: two servers that send vLLM's per-request
# spec-decode metrics, synthetic AL 3.0 and 2.5; compare pairs the requests and bootstraps
start_server --gsm8k-data "$D/test.jsonl" --spec-tokens 3 --acceptance-length 3.0 \
    --per-request-spec-decode-metrics summary || not_ok "per-request server A starts"
AL_A=$SERVER_URL
start_server --gsm8k-data "$D/test.jsonl" --spec-tokens 3 --acceptance-length 2.5 \
    --per-request-spec-decode-metrics summary || not_ok "per-request server B starts"
AL_B=$SERVER_URL
expect_success "per-request run A" "${G[@]}" --endpoint "$AL_A" --mtp --limit 16 --out "$TMP/alA" -q
expect_success "per-request run B" "${G[@]}" --endpoint "$AL_B" --mtp --limit 16 --out "$TMP/alB" -q
expect_code 1 "compare: --fail-if-al-drops 0.05 sees the drop" "$DSA_BIN" compare "$TMP/alA" "$TMP/alB" --fail-if-al-drops 0.05
grep -q "regression: the acceptance length dropped by more than 5%" "$TMP/err" && ok "AL drop message" \
    || { not_ok "AL drop message"; sed 's/^/#   /' "$TMP/err"; }
"$DSA_BIN" compare "$TMP/alA" "$TMP/alB" --json >"$TMP/al.json"
py "per-request acceptance: the counters' figures, paired, with CIs" <<PYEOF
import json
doc = json.load(open("$TMP/al.json"))
al = doc["acceptance"]
recs = lambda d: [json.loads(l) for l in open(d + "/run-001.jsonl").read().splitlines()[1:]]
a, b = recs("$TMP/alA"), recs("$TMP/alB")
sa = json.load(open("$TMP/alA/run-001.summary.json"))["mtp"]
sb = json.load(open("$TMP/alB/run-001.summary.json"))["mtp"]
assert al["source"] == "per-request" and al["n"] == 16, al
# the ratio estimator over the requests equals what the /metrics deltas gave for the run
assert abs(al["base"] - sa["acceptance_length"]) < 1e-12 and abs(al["cand"] - sb["acceptance_length"]) < 1e-12, (al, sa, sb)
assert al["ratio_ci"][0] <= al["ratio"] <= al["ratio_ci"][1] and al["ratio_ci"][1] < 0.95, al
assert al["diff_ci"][0] <= al["diff"] <= al["diff_ci"][1] < 0, al
PYEOF
expect_code 0 "the same server twice: no drop" "$DSA_BIN" compare "$TMP/alA" "$TMP/alA" --fail-if-al-drops 0.01
grep -q '^  ratio       1.0000 \[1.0000, 1.0000\]  (+0.0%)$' "$TMP/out" && ok "AL ratio 1 [1, 1]" \
    || { not_ok "AL ratio 1 [1, 1]"; sed 's/^/#   /' "$TMP/out"; }
done_testing
