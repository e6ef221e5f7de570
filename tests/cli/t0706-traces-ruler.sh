#!/usr/bin/env bash
# RULER traces (tests/data/traces-ruler and traces-ruler-glm: transformers' DeepseekV32 and GlmMoeDsa
# on an H200, bench/RESULTS.md "RULER traces"): `datasets synth ruler` writes the prompts `ruler`
# sends; the capture script, run here without torch, re-derives the fixtures' token ids and spans
# from them; `ruler --backend inprocess --traces` on the CPU reproduces the model's own top-512
# with the fp64 golden selection on every row, and the C reference's fp8 selection hashes to what
# the CUDA kernels gave on the H200 (701b5170…, 01b2d461…); compare reads two such runs.
# SPDX-License-Identifier: GPL-3.0-or-later
. "$(dirname "$0")/lib.sh"
require_python

# the samples as a file: the same prompts (input_sha256) as ruler's own records
S="$TMP/mk3.jsonl"
expect_success "datasets synth ruler" "$DSA_BIN" datasets synth ruler --tasks niah_multikey_3 --lengths 4k --limit 2 -o "$S"
expect_eq "two samples" "$(wc -l <"$S")" "2"
expect_success "ruler in-process on the same samples" "$DSA_BIN" ruler --backend inprocess --device cpu --tasks niah_multikey_3 --lengths 4k --limit 2 --out "$TMP/rp" -q
for id in 0000 0001; do
    got=$(grep -F "\"niah_multikey_3/4k/$id\"" "$S" | grep -o '"input_sha256":"[0-9a-f]*"')
    [ -n "$got" ] && grep -qF "$got" <<<"$(grep -F "niah_multikey_3/4k/$id" "$TMP/rp/run-001.jsonl")" &&
        ok "$id: the file's prompt is the one ruler sends" || not_ok "$id: the file's prompt is the one ruler sends"
done
grep -qF '"input_sha256":"8c14945e75f5363f96f056482d1bbadd0ad10d35826f135dd515eb808aa1f8f2"' "$S" &&
    ok "the fixture's prompt, made here" || not_ok "the fixture's prompt, made here"
expect_success "synth ruler to stdout" "$DSA_BIN" datasets synth ruler --tasks vt --lengths 4k --limit 1 -o -
"$DSA_PYTHON" -c '
import json, sys
r = json.loads(open(sys.argv[1]).readline())
p = r["prompt"].encode()
assert r["eval"] == "ruler" and r["task"] == "vt" and r["bin"] == "4k" and r["bin_tokens"] == 4096, r["id"]
assert [n["kind"] for n in r["needles"]] == ["answer"] * 5, r["needles"]
assert p[r["needles"][0]["bytes"][0]:r["needles"][0]["bytes"][1]].startswith(b"VAR "), r["needles"][0]
q = r["question"]["bytes"]
assert p[q[0]:q[1]].startswith(b"\nQuestion: Find all variables") and q[1] == len(p), q
assert r["question"]["tokens"][1] == r["tokens"] and r["answer_prefix"]["bytes"][0] > q[0]
' "$TMP/out" && ok "vt: needles, question and answer prefix where the file says" || not_ok "vt: needles, question and answer prefix where the file says"
expect_code 2 "synth ruler: unknown task" "$DSA_BIN" datasets synth ruler --tasks nope -o "$TMP/x.jsonl"
grep -q "^dsa-eval: unknown RULER task 'nope'" "$TMP/err" && ok "unknown task message" || not_ok "unknown task message"
expect_code 3 "synth ruler: unreadable haystack" "$DSA_BIN" datasets synth ruler --haystack "$TMP/none.txt" -o "$TMP/x.jsonl"
[ -e "$TMP/x.jsonl" ] && not_ok "no file after a failure" || ok "no file after a failure"

# the capture script's RULER reading (no torch): the fixtures' spans and token ids
cat >"$TMP/check.py" <<'PY'
import json, struct, sys
sys.path.insert(0, sys.argv[1] + "/scripts")
import capture_traces as c

samples, data = sys.argv[2], sys.argv[3]
class A: pass
a = A(); a.dataset = samples; a.trim = False; a.max_tokens = 8192
assert c.is_ruler(samples)
rows = list(c.dataset_rows(a, c.WordTokenizer(4096)))
for (fields, ids), d in zip(rows, ["traces-ruler", "traces-ruler-glm"]):
    man = json.loads(open(data + "/" + d + "/manifest.jsonl").read())
    same = all(man[k] == fields[k] for k in ("id", "bin", "task", "needles", "distractors", "question", "input_sha256"))
    blob = open(data + "/" + d + "/" + man["file"], "rb").read()
    n = struct.unpack("<Q", blob[:8])[0]
    lo, hi = json.loads(blob[8:8 + n])["tokens"]["data_offsets"]
    stored = list(struct.unpack("<%di" % ((hi - lo) // 4), blob[8 + n + lo:8 + n + hi]))
    print(d, man["id"], same, stored == ids, len(ids), man["context_tokens"] == len(ids))
PY
expect_success "script helpers on the samples file" "$DSA_PYTHON" "$TMP/check.py" "$DSA_SRC" "$S" "$DSA_DATA"
grep -q '^traces-ruler niah_multikey_3/4k/0000 True True 1890 True$' "$TMP/out" && ok "DeepSeek fixture: spans and tokens re-derived" || not_ok "DeepSeek fixture: spans and tokens re-derived"
grep -q '^traces-ruler-glm niah_multikey_3/4k/0001 True True 1890 True$' "$TMP/out" && ok "GLM fixture: spans and tokens re-derived" || not_ok "GLM fixture: spans and tokens re-derived"

# ruler --backend inprocess --traces: the model's selection, the stack's agreement, the H200's hash
R="$TMP/runs"
expect_success "ruler --traces (DeepSeek-V3.2)" "$DSA_BIN" ruler --backend inprocess --device cpu --traces "$DSA_DATA/traces-ruler" --topk 512 --out "$R/a"
grep -q "^ruler in-process on traces '$DSA_DATA/traces-ruler' (model: tiny-random DeepseekV32 (transformers 5.17.0, seed 1, 2 layers, hidden 256)): cpu-reference on cpu, rope=neox,.*heads=64, top-512" "$TMP/out" && ok "summary names the checkpoint" || not_ok "summary names the checkpoint"
grep -q -E '^4k +1 +0\.9741 +0\.9741 +1\.0000 +0\.321 +0\.286 +0\.286$' "$TMP/out" && ok "length row: recall, agreement, golden = model, needle retention" || { not_ok "length row"; sed 's/^/#   /' "$TMP/out"; }
rec=$(sed -n 2p "$R/a/run-001.jsonl")
for kv in '"id":"niah_multikey_3/4k/0000"' '"bin":"4k"' '"bin_tokens":4096' '"task":"niah_multikey_3"' '"model_agreement":0.97412109375' '"model_agreement_golden":1.0' '"needle_tokens":28' '"context_tokens":1890' '"query_tokens":4' '"topk":512' '"selection_sha256":"701b5170b6451b23d45acaadef0fb016a325ccf2db713fb0b4306b3b6ca05985"' '"selection_sha256":"6b31e84bb3ec1b52abf763e5c6ca0c885703dde6722c159223d1c1bc8f76da2a"' '"needle_retention_model":0.2857142857142857'; do
    grep -qF "$kv" <<<"$rec" && ok "record has $kv" || not_ok "record has $kv"
done
hdr=$(head -1 "$R/a/run-001.jsonl")
grep -qF '"eval":"ruler"' <<<"$hdr" && grep -qF '"source":"traces"' <<<"$hdr" && ok "header: ruler on traces" || not_ok "header: ruler on traces"
expect_success "ruler --traces (GLM-5.x)" "$DSA_BIN" ruler --backend inprocess --device cpu --traces "$DSA_DATA/traces-ruler-glm" --topk 512 --out "$R/g"
grep -q -E '^4k +1 +0\.9717 +0\.9717 +1\.0000 ' "$TMP/out" && ok "GLM: golden = model, agreement" || not_ok "GLM: golden = model, agreement"
grep -q "rope=interleaved,.*heads=32, top-512" "$TMP/out" && ok "GLM: layout and heads from the file" || not_ok "GLM: layout and heads from the file"
grep -qF '"selection_sha256":"01b2d461abc33ad28c1237c613d7d4fd658d80375a7ab9f26f9b0e4e2a5e470d"' "$R/g/run-001.jsonl" && ok "GLM: the H200's selection hash" || not_ok "GLM: the H200's selection hash"
expect_success "resume is a no-op" "$DSA_BIN" ruler --backend inprocess --device cpu --traces "$DSA_DATA/traces-ruler" --topk 512 --out "$R/a"
expect_eq "still one record" "$(wc -l <"$R/a/run-001.jsonl")" "2"
expect_success "--json" "$DSA_BIN" ruler --backend inprocess --device cpu --traces "$DSA_DATA/traces-ruler" --topk 512 --out "$R/j" --json -q
"$DSA_PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["rows"][0]["bin"] == "4k" and d["rows"][0]["pooled"]["scored"] == 1, d' "$TMP/out" &&
    ok "--json prints the summary document" || { not_ok "--json prints the summary document"; sed 's/^/#   /' "$TMP/out"; }
expect_success "bf16 weights on the traces" "$DSA_BIN" ruler --backend inprocess --device cpu --traces "$DSA_DATA/traces-ruler" --topk 512 --variant weights=bf16 --out "$R/b" -q
expect_success "compare two builds on RULER traces" "$DSA_BIN" compare "$R/a" "$R/b"
grep -q '^4k  n 1 used' "$TMP/out" && ok "compare pairs by id within the length" || not_ok "compare pairs by id within the length"
grep -q 'selections  [01]/1 samples select bit-identical top-k sets' "$TMP/out" && ok "compare reads the selections" || not_ok "compare reads the selections"

# several needle ranges (multivalue, vt, cwe rows) count as their union: overlapping ones once
mkdir -p "$TMP/two"
cp "$DSA_DATA/traces-ruler/niah_multikey_3_4k_0000.safetensors" "$TMP/two/"
printf '{"id": "niah_multikey_3/4k/0000", "bin": "4k", "file": "niah_multikey_3_4k_0000.safetensors", "needles": [[1450, 1460], [1428, 1456]]}\n' >"$TMP/two/manifest.jsonl"
expect_success "two overlapping needle ranges" "$DSA_BIN" ruler --backend inprocess --device cpu --traces "$TMP/two" --topk 512 --out "$R/two" -q
grep -qF '"needle_tokens":32' "$R/two/run-001.jsonl" && ok "needle tokens: the union [1428, 1460)" || not_ok "needle tokens: the union [1428, 1460)"

# the filters and bad input
expect_code 3 "--tasks that match no row" "$DSA_BIN" ruler --backend inprocess --device cpu --traces "$DSA_DATA/traces-ruler" --tasks vt --out "$R/c"
grep -q "no rows of '.*manifest.jsonl' pass the filters (--tasks, --lengths, --limit)" "$TMP/err" && ok "no rows message" || not_ok "no rows message"
expect_code 3 "an MRCR manifest" "$DSA_BIN" ruler --backend inprocess --device cpu --traces "$DSA_DATA/traces" --out "$R/d"
grep -q "\"bin\" is not one of the RULER lengths" "$TMP/err" && ok "MRCR manifest message" || not_ok "MRCR manifest message"
mkdir -p "$TMP/bad"
printf '{"id": "niah_multikey_3/8k/0000", "bin": "4k", "file": "x.safetensors"}\n' >"$TMP/bad/manifest.jsonl"
expect_code 3 "an id of another length" "$DSA_BIN" ruler --backend inprocess --device cpu --traces "$TMP/bad" --out "$R/e"
grep -q "is not a RULER sample id (task/length/index) of the row's \"bin\"" "$TMP/err" && ok "id message" || not_ok "id message"
printf '{"id": "niah_multikey_3/4k/0000", "bin": "4k", "file": "x.safetensors", "needles": [[5, 2]]}\n' >"$TMP/bad/manifest.jsonl"
expect_code 3 "a malformed needles list" "$DSA_BIN" ruler --backend inprocess --device cpu --traces "$TMP/bad" --out "$R/e"
grep -q '"needles" must be null or a list of \[lo, hi\]' "$TMP/err" && ok "needles message" || not_ok "needles message"
expect_code 2 "--traces needs --backend inprocess" "$DSA_BIN" ruler --traces "$DSA_DATA/traces-ruler" --endpoint http://127.0.0.1:9 --out "$R/f"
expect_code 2 "--traces with --seed" "$DSA_BIN" ruler --backend inprocess --traces "$DSA_DATA/traces-ruler" --seed 3 --out "$R/f"
grep -q "^dsa-eval: --traces DIR replaces --haystack and --seed" "$TMP/err" && ok "--seed message" || not_ok "--seed message"
done_testing
