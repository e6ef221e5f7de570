#!/bin/bash
# Hostile peers and bad bytes: what a server returns round-trips through the run file (U+0000
# included), every output file is whole or absent, temporary files of killed runs are removed
# by the next run, secrets reach no output, memory stays under --max-memory, and inputs that
# cannot mean anything are refused with the reason. Each case failed before it was fixed.
# SPDX-License-Identifier: GPL-3.0-or-later
. "$DSA_SRC/tests/cli/lib.sh"
. "$DSA_SRC/tests/cli/srvlib.sh"
require_python
cd "$TMP" || exit 1
S=sample:mrcr-synth-2needle-tiny.jsonl
D=$DSA_DATA/gsm8k

# ---- U+0000 in a model's output: stored escaped, read back, resumed, compared, graded alike
start_server --fault nul --gsm8k-data "$D/test.jsonl" --log-requests "$TMP/req.jsonl" ||
    { echo "Bail out! server"; exit 1; }
M=("$DSA_BIN" mrcr --endpoint "$SERVER_URL" --dataset "$S" --needles 2 -q)
sent() { grep -c '"path":"/v1/chat/completions"' "$TMP/req.jsonl"; }
expect_success "nul: mrcr run" "${M[@]}" --out nul
n1=$(sent)
expect_success "nul: the rerun resumes it" "${M[@]}" --out nul
expect_eq "nul: the rerun sent nothing (was: exit 5, the file unreadable)" "$(sent)" "$n1"
expect_success "nul: --limit 1 run" "${M[@]}" --out nul1 --limit 1
n1=$(sent)
expect_success "nul: --limit 1 rerun" "${M[@]}" --out nul1 --limit 1
expect_eq "nul: --limit 1 record kept, not resent (was: a torn line, resent every run)" \
    "$(sent) $(grep -c '"status":"ok"' nul1/run-001.jsonl)" "$n1 1"
expect_success "nul: compare reads it" "$DSA_BIN" compare nul nul
DS=$DSA_SRC/datasets/samples/mrcr-synth-2needle-tiny.jsonl \
    py "nul: stored outputs hold U+0000 and each score is difflib's of that very string" <<'PYEOF'
import difflib, json, os
rows, per = {}, {}
for line in open(os.environ["DS"]):
    r = json.loads(line)
    n = r["n_needles"]
    rows["n%d/r%04d" % (n, per.get(n, 0))] = r
    per[n] = per.get(n, 0) + 1
recs = [json.loads(l) for l in open(os.environ["TMP"] + "/nul/run-001.jsonl").read().splitlines()[1:]]
assert recs and all("\0" in r["output"] for r in recs), recs
for x in recs:
    r = rows[x["id"]]
    p = r["random_string_to_prepend"]
    assert x["output"].startswith(p), x["id"]
    want = difflib.SequenceMatcher(None, x["output"][len(p):], r["answer"][len(p):]).ratio()
    assert x["score"] == want, (x["id"], x["score"], want)
PYEOF
G=("$DSA_BIN" gsm8k --endpoint "$SERVER_URL" --data "$D" --limit 2 -q)
expect_success "nul: gsm8k run" "${G[@]}" --out gnul
expect_success "nul: gsm8k rerun" "${G[@]}" --out gnul
expect_eq "nul: gsm8k records kept" "$(grep -c '"id"' gnul/run-001.jsonl)" 2
expect_code 0 "nul: gsm8k compare sees identical outputs" "$DSA_BIN" compare gnul gnul
expect_success "nul: grade gsm8k reads the run file" "$DSA_BIN" grade gsm8k -q gnul/run-001.jsonl
cp "$TMP/out" graded.jsonl
py "nul: grade gsm8k sees the stored outputs (U+0000 in them) as the run did" <<'PYEOF'
import json, os
t = os.environ["TMP"]
recs = [json.loads(l) for l in open(t + "/gnul/run-001.jsonl").read().splitlines()[1:]]
graded = [json.loads(l) for l in open(t + "/graded.jsonl")]
assert recs and all("\0" in r["output"] for r in recs), recs
assert [g["pred"] for g in graded] == [r["pred"] for r in recs], (graded, [r["pred"] for r in recs])
PYEOF

# ---- every output file whole or not at all; temp files of killed runs removed next time
expect_success "atomic: report md" "$DSA_BIN" report nul nul -o rep.md
cp rep.md rep.before
# a file-size limit kills the writer mid-file (SIGXFSZ), as a full disk or a kill would stop it
(ulimit -f 1; "$DSA_BIN" report nul nul --format html -o rep.md >/dev/null 2>&1)
expect_eq "atomic: report -o killed mid-write leaves the old report whole" \
    "$(cmp -s rep.md rep.before && echo same)" same
sh -c 'exit 0' & dead=$!
wait "$dead"
for f in rep.md syn.jsonl merged.jsonl; do echo partial >"$f.tmp-$dead"; done
expect_success "tmp: the next report removes the killed one's temp file" \
    "$DSA_BIN" report nul nul -o rep.md
expect_eq "tmp: rep.md.tmp-PID gone" "$(ls rep.md.tmp-* 2>/dev/null | wc -l)" 0
expect_success "tmp: synth" "$DSA_BIN" datasets synth mrcr --needles 2 --per-bin 1 -o syn.jsonl
expect_eq "tmp: syn.jsonl.tmp-PID gone" "$(ls syn.jsonl.tmp-* 2>/dev/null | wc -l)" 0
expect_success "tmp: merge" "$DSA_BIN" merge merged.jsonl nul/run-001.jsonl
expect_eq "tmp: merged.jsonl.tmp-PID gone" "$(ls merged.jsonl.tmp-* 2>/dev/null | wc -l)" 0
echo partial >"nul/run-001.jsonl.tmp-$dead"
expect_success "tmp: a resumed run" "${M[@]}" --out nul
expect_eq "tmp: the run file's temp gone" "$(ls nul/*.tmp-* 2>/dev/null | wc -l)" 0
stop_server

# ---- secrets: a canary key and URL password reach no file, report, document or message
C=$TMP/canary
mkdir -p "$C"
start_server --require-api-key CANARYKEY1 --gsm8k-data "$D/test.jsonl" --log-requests "$TMP/reqk.jsonl" ||
    { echo "Bail out! server"; exit 1; }
U=${SERVER_URL/http:\/\//http://alice:CANARYPW2@}
export DSA_EVAL_API_KEY=CANARYKEY1
step=0
# run CMD...: stdout and stderr of every step are kept for the grep at the end
run() { step=$((step + 1)); "$@" >"$C/$step.out" 2>"$C/$step.err"; echo $? >"$C/$step.rc"; }
run "$DSA_BIN" mrcr --endpoint "$U" --dataset "$S" --needles 2 --out "$C/a"
expect_eq "canary: mrcr with user-info and key ran" "$(cat "$C/$step.rc")" 0
run "$DSA_BIN" mrcr --endpoint="$U/v1" --dataset "$S" --needles 2 --out "$C/b" --json
run "$DSA_BIN" gsm8k --endpoint "$U" --data "$D" --limit 2 --out "$C/g"
expect_eq "canary: gsm8k ran" "$(cat "$C/$step.rc")" 0
run "$DSA_BIN" compare "$C/a" "$C/b"
run "$DSA_BIN" compare "$C/a" "$C/b" --json
for f in md html csv json; do run "$DSA_BIN" report "$C/a" "$C/b" --format $f -o "$C/report.$f"; done
run "$DSA_BIN" plan --from "$C/a" --detect 0.1
run "$DSA_BIN" merge "$C/m.jsonl" "$C/a/run-001.jsonl"
# errors that name the endpoint
run "$DSA_BIN" mrcr --endpoint "http://alice:CANARYPW2@127.0.0.1:1" --dataset "$S" --needles 2 \
    --out "$C/c" --retries 0
expect_eq "canary: unreachable endpoint exits 4" "$(cat "$C/$step.rc")" 4
run "$DSA_BIN" mrcr --endpoint "ftp://alice:CANARYPW2@host" --dataset "$S" --needles 2 --out "$C/c"
DSA_EVAL_API_KEY=WRONGKEY run "$DSA_BIN" mrcr --endpoint "$U" --dataset "$S" --needles 2 --out "$C/c"
expect_eq "canary: a refused key exits 4" "$(cat "$C/$step.rc")" 4
DSA_EVAL_CACHE=$C/cache run "$DSA_BIN" datasets fetch gsm8k --base-url "http://alice:CANARYPW2@127.0.0.1:1"
expect_eq "canary: fetch from an unreachable mirror exits 4" "$(cat "$C/$step.rc")" 4
grep -rqF "alice:***@" "$C"/a/run-001.jsonl && ok "canary: the URL is recorded as alice:***@" ||
    not_ok "canary: the URL is recorded as alice:***@"
leaks=$(grep -rlaE "CANARYKEY1|CANARYPW2" "$C" | sed "s|$C/||" | tr '\n' ' ')
expect_eq "canary: no file, report, document or message holds a secret" "$leaks" ""
unset DSA_EVAL_API_KEY

# run files written before URLs were masked: compare, report and merge mask them when they show them
O=$TMP/oldpw
mkdir -p "$O/a" "$O/b"
for s in a b; do
    sed 's|"http://localhost:8000"|"http://bob:OLDPW3@localhost:8000"|g' \
        "$DSA_DATA/compare/main/run-001.jsonl" >"$O/$s/run-001.jsonl"
done
grep -q OLDPW3 "$O/a/run-001.jsonl" && ok "old run file: holds a password" || not_ok "old run file: holds a password"
"$DSA_BIN" compare "$O/a" "$O/b" --json >"$O/cmp.json" 2>&1
"$DSA_BIN" compare "$O/a" "$O/b" >"$O/cmp.txt" 2>&1
for f in md html csv json; do "$DSA_BIN" report "$O/a" "$O/b" --format $f >"$O/report.$f" 2>&1; done
"$DSA_BIN" report "$O/cmp.json" --format md >"$O/report2.md" 2>&1
"$DSA_BIN" merge "$O/m.jsonl" "$O/a/run-001.jsonl" >"$O/merge.out" 2>&1
grep -qF 'bob:***@localhost' "$O/cmp.json" && ok "old run file: compare --json shows bob:***@" ||
    not_ok "old run file: compare --json shows bob:***@"
expect_eq "old run file: no compare, report or merge output shows its password" \
    "$(grep -laF OLDPW3 "$O"/cmp.* "$O"/report* "$O"/merge.out "$O"/m.jsonl | sed "s|$O/||" | tr '\n' ' ')" ""

# a key with CR/LF would inject a header: refused (exit 2) before any request
DSA_EVAL_API_KEY=$'k\r\nX-Injected: yes' expect_code 2 "key with CR/LF refused" \
    "$DSA_BIN" mrcr --endpoint "$SERVER_URL" --dataset "$S" --needles 2 --out crlf
grep -q "control character" "$TMP/err" && ok "key with CR/LF: says why" || not_ok "key with CR/LF: says why"
printf 'k\rX-Injected: yes\n' >keyfile
expect_code 2 "key file with CR refused" "$DSA_BIN" mrcr --endpoint "$SERVER_URL" --dataset "$S" \
    --needles 2 --out crlf --api-key-file keyfile
expect_eq "key with CR/LF: nothing written" "$(ls crlf 2>/dev/null | wc -l)" 0
expect_eq "key with CR/LF: no request reached the server, no header was injected" \
    "$(grep -c '/crlf\|X-Injected\|x-injected' "$TMP/reqk.jsonl")" 0
stop_server

# core dumps are off while a key is held
start_server --fault stall --stall-seconds 30 || { echo "Bail out! server"; exit 1; }
DSA_EVAL_API_KEY=k "$DSA_BIN" mrcr --endpoint "$SERVER_URL" --dataset "$S" --needles 2 -q \
    --out core --retries 0 >/dev/null 2>&1 &
pid=$!
for i in $(seq 1 100); do [ -s core/run-001.jsonl ] && break; sleep 0.05; done
expect_eq "core dumps off while a key is held" \
    "$(awk '/^Max core file size/ {print $5, $6}' /proc/$pid/limits)" "0 0"
kill -TERM $pid
wait $pid
stop_server

# ---- numbers no server can mean: an INT64_MAX token count excludes the row (it overflowed and
# the row was sent); a max_model_len of -1, 0 or a string is refused (it was accepted)
printf '{"count":9223372036854775807,"max_model_len":163840,"tokens":[]}' >tok-huge.json
start_server --canned /tokenize=tok-huge.json --log-requests "$TMP/req5.jsonl" ||
    { echo "Bail out! server"; exit 1; }
expect_success "tokenize INT64_MAX: run" "$DSA_BIN" mrcr --endpoint "$SERVER_URL" --dataset "$S" \
    --needles 2 -q --out huge
expect_eq "tokenize INT64_MAX: every row excluded, none sent" \
    "$(grep -c '"status":"excluded"' huge/run-001.jsonl) $(grep -c chat/completions "$TMP/req5.jsonl")" \
    "2 0"
stop_server
for v in -1 0 '"8192"'; do
    printf '{"object":"list","data":[{"id":"m","object":"model","owned_by":"vllm","max_model_len":%s}]}' \
        "$v" >models.json
    start_server --canned /v1/models=models.json || { echo "Bail out! server"; exit 1; }
    expect_code 4 "max_model_len $v refused" "$DSA_BIN" mrcr --endpoint "$SERVER_URL" \
        --dataset "$S" --needles 2 -q --out mml
    grep -qF "\"max_model_len\" must be a positive integer, not $v" "$TMP/err" &&
        ok "max_model_len $v: says why" || { not_ok "max_model_len $v: says why"; cat "$TMP/err"; }
    stop_server
done

# ---- traces that cannot mean anything: refused with exit 3 and the reason (an all-NaN q
# scored recall 1.0000 with exit 0; a duplicate key or overlapping offsets were accepted)
MK=$DSA_SRC/tests/cli/make_trace.py
for bad in nan-q:"holds NaN or Inf" inf-k:"holds NaN or Inf" duplicate:"duplicate object key" \
    overlap:"overlap (data_offsets)"; do
    kind=${bad%%:*} why=${bad#*:}
    "$DSA_PYTHON" "$MK" "$TMP/$kind.safetensors" 100 2 64 "$kind"
    expect_code 3 "trace ($kind) refused" "$DSA_BIN" kernels trace "$TMP/$kind.safetensors" --device cpu
    grep -qF "$why" "$TMP/err" && ok "trace ($kind): says why" || { not_ok "trace ($kind): says why"; cat "$TMP/err"; }
done

# ---- scores no eval can produce: refused with the reason (they gave 300-digit means, a plan
# of nan and y="-inf" in the HTML)
printf '{"id":"a","bin":"8k","score":1e308}\n{"id":"b","bin":"8k","score":-1e308}\n' >huge.jsonl
printf '{"id":"a","bin":"8k","score":0.5}\n{"id":"b","bin":"8k","score":0.25}\n' >fine.jsonl
expect_code 3 "score 1e308: compare refuses" "$DSA_BIN" compare huge.jsonl fine.jsonl
grep -qF "outside 0..1" "$TMP/err" && ok "score 1e308: says why" || not_ok "score 1e308: says why"
expect_code 3 "score 1e308: plan refuses" "$DSA_BIN" plan --from huge.jsonl --detect 0.1
expect_code 3 "score 1e308: report refuses" "$DSA_BIN" report fine.jsonl huge.jsonl --format html -o h.html
expect_eq "score 1e308: no report written" "$(ls h.html* 2>/dev/null | wc -l)" 0

# ---- failed records always say why; bad input leaves no header-only run file
start_server --fault bad-utf8-400 || { echo "Bail out! server"; exit 1; }
expect_code 1 "4xx with a body that is not UTF-8: the samples fail" "$DSA_BIN" mrcr \
    --endpoint "$SERVER_URL" --dataset "$S" --needles 2 -q --out u8
py "4xx not UTF-8: every failed record has a reason (was: \"error\": null)" <<'PYEOF'
import json, os
recs = [json.loads(l) for l in open(os.environ["TMP"] + "/u8/run-001.jsonl").read().splitlines()[1:]]
assert recs and all(r["status"] == "failed" for r in recs), recs
assert all(r["error"] == "HTTP 400: {\"error\":{\"message\":\"bad ?? bytes\"}}" for r in recs), recs
PYEOF
"$DSA_BIN" datasets synth mrcr --needles 2 --per-bin 2 -o ds.jsonl
"$DSA_PYTHON" - <<'PYEOF'
import json
rows = [json.loads(l) for l in open("ds.jsonl")]
rows[1]["answer"] = 5
open("badrow.jsonl", "w").write("".join(json.dumps(r) + "\n" for r in rows))
PYEOF
expect_code 3 "a dataset row of the wrong type: exit 3" "$DSA_BIN" mrcr --endpoint "$SERVER_URL" \
    --dataset badrow.jsonl --needles 2 -q --out badrow
grep -qF "line 2 of 'badrow.jsonl': \"answer\" must be a string" "$TMP/err" &&
    ok "wrong type: names file and line" || not_ok "wrong type: names file and line"
expect_eq "wrong type: no header-only run file left behind" "$(ls badrow 2>/dev/null | wc -l)" 0
stop_server

# ---- one memory budget: peak RSS under each hostile server stays under --max-memory, the
# sample fails with the reason, the run goes on (an endless stream grew ~110 MB/s, a 3.7 MB
# gzip body reached 1.96 GB, 2M models took 1.4 GB)
# peak CMD...: runs CMD, prints its peak RSS in KiB (getrusage of the child) and exit status
peak() {
    "$DSA_PYTHON" -c 'import resource, subprocess, sys
rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=open(sys.argv[0] + ".err", "w")).returncode
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, rc)' "$@"
}
BUDGET=64
for fault in endless-stream gzip-bomb; do
    start_server --fault "$fault" || { echo "Bail out! server"; exit 1; }
    for st in --stream --no-stream; do
        rm -rf mem
        read -r kib rc < <(peak "$DSA_BIN" mrcr --endpoint "$SERVER_URL" --dataset "$S" \
            --needles 2 --out mem -q --max-memory ${BUDGET}M -c 2 --retries 0 $st)
        expect_eq "memory: $fault $st: the run finishes, samples failed (exit 1)" "$rc" 1
        [ "$kib" -lt $((BUDGET * 1024)) ] && ok "memory: $fault $st: peak RSS $kib KiB < ${BUDGET} MiB" ||
            not_ok "memory: $fault $st: peak RSS $kib KiB < ${BUDGET} MiB"
        expect_eq "memory: $fault $st: every sample failed with the reason" \
            "$(grep -c '"error":"response exceeds its share of --max-memory (32 MiB of 64 MiB)' mem/run-001.jsonl)" 2
    done
    stop_server
done
"$DSA_PYTHON" - <<'PYEOF'
import json
with open("models-huge.json", "w") as f:
    f.write('{"object":"list","data":[')
    f.write(",".join('{"id":"m%d","object":"model","owned_by":"vllm","max_model_len":8192}' % i
                     for i in range(300000)))
    f.write("]}")
with open("metrics-huge.txt", "w") as f:
    for i in range(300000):
        f.write('vllm:x_total{model_name="m",i="%d"} %d\n' % (i, i))
PYEOF
start_server --canned /v1/models=models-huge.json || { echo "Bail out! server"; exit 1; }
read -r kib rc < <(peak "$DSA_BIN" mrcr --endpoint "$SERVER_URL" --dataset "$S" --needles 2 \
    --out memm -q --max-memory ${BUDGET}M)
expect_eq "memory: 300K models: refused (exit 4)" "$rc" 4
[ "$kib" -lt $((BUDGET * 1024)) ] && ok "memory: 300K models: peak RSS $kib KiB < ${BUDGET} MiB" ||
    not_ok "memory: 300K models: peak RSS $kib KiB < ${BUDGET} MiB"
stop_server
start_server --canned /metrics=metrics-huge.txt --gsm8k-data "$D/test.jsonl" ||
    { echo "Bail out! server"; exit 1; }
read -r kib rc < <(peak "$DSA_BIN" gsm8k --endpoint "$SERVER_URL" --data "$D" --limit 1 --mtp \
    --out memg -q --max-memory ${BUDGET}M)
[ "$kib" -lt $((BUDGET * 1024)) ] && ok "memory: 300K series: peak RSS $kib KiB < ${BUDGET} MiB (exit $rc)" ||
    not_ok "memory: 300K series: peak RSS $kib KiB < ${BUDGET} MiB (exit $rc)"
stop_server
expect_code 2 "memory: --max-memory nonsense refused" "$DSA_BIN" mrcr --endpoint http://127.0.0.1:1 \
    --dataset "$S" --out x --max-memory lots

# ---- TLS with a private CA (made here with openssl): refused without it, accepted with
# --cacert or the variables docs/endpoint.md names (they were ignored), --insecure warns
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key \
    -out ca.pem -days 2 -subj /CN=dsa-test-ca 2>/dev/null &&
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout srv.key \
        -out srv.csr -subj /CN=localhost 2>/dev/null &&
    printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n' >ext &&
    openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 2 \
        -extfile ext 2>/dev/null || { echo "Bail out! openssl could not make the test CA"; exit 1; }
start_server --tls-cert srv.pem --tls-key srv.key || { echo "Bail out! https server"; exit 1; }
HTTPS=https://localhost:$SERVER_PORT
NOCA=(env -u CURL_CA_BUNDLE -u SSL_CERT_FILE)
MT=("$DSA_BIN" mrcr --endpoint "$HTTPS" --dataset "$S" --needles 2 -q)
T=("${NOCA[@]}" "${MT[@]}")
expect_code 4 "tls: a private CA is refused without --cacert" "${T[@]}" --out tls0 --retries 0
grep -qF "SSL certificate problem" "$TMP/err" && ok "tls: says why" || not_ok "tls: says why"
expect_success "tls: --cacert accepts it" "${T[@]}" --out tls1 --cacert ca.pem
expect_eq "tls: --cacert run scored" "$(grep -c '"status":"ok"' tls1/run-001.jsonl)" 2
expect_success "tls: \$CURL_CA_BUNDLE accepts it" "${NOCA[@]}" CURL_CA_BUNDLE="$TMP/ca.pem" \
    "${MT[@]}" --out tls2
expect_success "tls: \$SSL_CERT_FILE accepts it" "${NOCA[@]}" SSL_CERT_FILE="$TMP/ca.pem" \
    "${MT[@]}" --out tls3
expect_success "tls: --insecure accepts it" "${T[@]}" --out tls4 --insecure
grep -qF "warning: --insecure: TLS certificates are NOT verified" "$TMP/err" && ok "tls: --insecure warns" ||
    not_ok "tls: --insecure warns"
expect_code 2 "tls: an unreadable --cacert" "${T[@]}" --out tls5 --cacert missing.pem
stop_server

done_testing
