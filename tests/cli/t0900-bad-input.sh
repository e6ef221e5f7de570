#!/usr/bin/env bash
# Hostile and careless input to every command: each case exits with the documented status
# (README "Exit codes") and says why in exactly one "dsa-eval: " error line on stderr (a
# usage error may add its usage block); records already written survive. Cases marked "(fixed)"
# were broken before the bad-input sweep.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/srvlib.sh"

# bad CODE TITLE MESSAGE CMD...: exit CODE, one error line, and it contains MESSAGE
bad() {
    local code=$1 title=$2 msg=$3; shift 3
    expect_code "$code" "$title" "$@"
    local n
    # warnings (a torn last line dropped) may come before the one error line
    n=$(grep '^dsa-eval: ' "$TMP/err" | grep -vc '^dsa-eval: warning: ')
    if [ "$n" -eq 1 ] && grep -qF -- "$msg" "$TMP/err" &&
        ! grep -qiE 'sanitizer|runtime error' "$TMP/err"; then
        ok "$title: one line"
    else
        not_ok "$title: one line naming '$msg'"; sed 's/^/#   /' "$TMP/err" | head -5
    fi
}

cd "$TMP" || exit 1
S=sample:mrcr-synth-2needle-tiny.jsonl
: >empty
printf '\n' >nl
printf 'a\0b\n' >nul
printf '{"response":"\xff\xfe","answer":"a","random_string_to_prepend":"a"}\n' >badutf
printf '{"response":' >trunc
head -c 2000 /dev/zero | tr '\0' '\207' >bin
mkdir dir
# a 50 MB line
{ printf '{"response":"'; head -c 50000000 /dev/zero | tr '\0' a; printf '","answer":"a","random_string_to_prepend":"a"}\n'; } >huge

# ---- grade
bad 3 "grade mrcr: missing file" "cannot open 'missing'" "$DSA_BIN" grade mrcr missing
bad 3 "grade mrcr: a directory" "cannot read 'dir': Is a directory" "$DSA_BIN" grade mrcr dir
bad 3 "grade mrcr: unreadable /proc file" "cannot read '/proc/self/mem'" "$DSA_BIN" grade mrcr /proc/self/mem
bad 3 "grade mrcr: empty file" "no input lines in 'empty'" "$DSA_BIN" grade mrcr empty
bad 3 "grade mrcr: a single newline" "cannot parse line 1 of 'nl'" "$DSA_BIN" grade mrcr nl
bad 3 "grade mrcr: binary garbage" "cannot parse line 1 of 'bin'" "$DSA_BIN" grade mrcr bin
bad 3 "grade mrcr: NUL byte" "cannot parse line 1 of 'nul'" "$DSA_BIN" grade mrcr nul
bad 3 "grade mrcr: invalid UTF-8" "unable to decode byte 0xff" "$DSA_BIN" grade mrcr badutf
bad 3 "grade mrcr: truncated JSON" "cannot parse line 1 of 'trunc'" "$DSA_BIN" grade mrcr trunc
expect_code 0 "grade mrcr: a 50 MB line" "$DSA_BIN" grade mrcr huge
g='{"response":"a","answer":"a","random_string_to_prepend":"a"}'
printf '%s\n%s\n{"response":5,"answer":"a","random_string_to_prepend":"a"}\n%s\n' "$g" "$g" "$g" >g3
bad 3 "grade mrcr: wrong type on line 3" "line 3 of 'g3': \"response\" must be a string" \
    "$DSA_BIN" grade mrcr g3
expect_eq "grade mrcr: the lines before the bad one are written" "$(grep -c '"line"' out)" 2
bad 3 "grade gsm8k: missing file (fixed: was exit 5)" "cannot open 'missing'" \
    "$DSA_BIN" grade gsm8k missing
bad 3 "grade gsm8k: a directory (fixed: was exit 5)" "Is a directory" "$DSA_BIN" grade gsm8k dir
bad 3 "grade gsm8k: empty file (fixed: was exit 0)" "no input lines in 'empty'" \
    "$DSA_BIN" grade gsm8k empty
bad 3 "grade gsm8k: binary garbage" "cannot parse line 1 of 'bin'" "$DSA_BIN" grade gsm8k bin
bad 3 "grade gsm8k: wrong type" "\"output\" must be a string" \
    "$DSA_BIN" grade gsm8k <<<'{"output":5}'
printf '%s\n' "$g" >g1
bad 5 "grade mrcr: stdout full (fixed: was a success note too)" \
    "cannot write to standard output: No space left on device" \
    sh -c '"$0" grade mrcr g1 >/dev/full' "$DSA_BIN"
bad 5 "grade gsm8k: stdout full (fixed)" "cannot write to standard output" \
    bash -c '"$0" grade gsm8k >/dev/full <<<"{\"output\":\"18\"}"' "$DSA_BIN"
for i in $(seq 1 3000); do printf '%s\n' "$g"; done >many
"$DSA_BIN" grade mrcr many 2>"$TMP/err" | head -c 1 >/dev/null
# a reader that stops (| head) ends the output quietly, as git does: SIGPIPE's 141, no message
expect_eq "grade mrcr: SIGPIPE stops quietly (fixed: graded on; then exit 5 and a message)" \
    "${PIPESTATUS[0]} $(grep -c '^dsa-eval: ' "$TMP/err") $(grep -c 'Broken pipe' "$TMP/err")" "141 0 0"
bad 2 "grade: unknown eval" "" "$DSA_BIN" grade nope

# ---- datasets
bad 3 "datasets info: missing file (fixed: was two lines)" "cannot open 'missing'" \
    "$DSA_BIN" datasets info missing
bad 3 "datasets info: a directory (fixed: was two lines)" "Is a directory" \
    "$DSA_BIN" datasets info dir
bad 3 "datasets info: empty" "'empty' is empty: no MRCR rows" "$DSA_BIN" datasets info empty
bad 3 "datasets info --verify: truncated" "cannot parse line 1 of 'trunc'" \
    "$DSA_BIN" datasets info --verify trunc
bad 3 "datasets info: a 50 MB line" "line 1 of 'huge': missing \"n_needles\"" \
    "$DSA_BIN" datasets info huge
expect_success "datasets info: the README's spelling sample:mrcr-synth-8needle (fixed: was exit 3)" \
    "$DSA_BIN" datasets info sample:mrcr-synth-8needle
bad 3 "datasets info: unknown sample" "'sample:nope' is not a shipped sample" \
    "$DSA_BIN" datasets info sample:nope
bad 2 "synth: --per-bin 0 (fixed: said 'not out of range')" "--per-bin must be 1..100000, not 0" \
    "$DSA_BIN" datasets synth mrcr --per-bin 0 -o x.jsonl
bad 2 "synth: --bins 7k" "'7k' is not an MRCR bin edge" "$DSA_BIN" datasets synth mrcr --bins 7k -o x.jsonl
bad 2 "synth: --needles 0" "'0' is not a needle count" "$DSA_BIN" datasets synth mrcr --needles 0 -o x.jsonl
bad 5 "synth: -o DIR (fixed: was a rename error naming a temp file)" \
    "cannot write 'dir': Is a directory" "$DSA_BIN" datasets synth mrcr -o dir
[ -d dir ] && [ -z "$(ls dir)" ] && [ -z "$(ls | grep tmp-)" ] && ok "synth: -o DIR left no temp file" ||
    not_ok "synth: -o DIR left no temp file"
bad 5 "synth: -o in a missing folder" "cannot create" "$DSA_BIN" datasets synth mrcr -o /proc/x/y.jsonl
bad 5 "synth: stdout full" "No space left on device" \
    sh -c '"$0" datasets synth mrcr -o - >/dev/full' "$DSA_BIN"
"$DSA_BIN" datasets synth mrcr --per-bin 20 -o - 2>"$TMP/err" | head -c 1 >/dev/null
expect_eq "synth: SIGPIPE stops quietly (fixed: was two lines, then one)" \
    "${PIPESTATUS[0]} $(grep -c '^dsa-eval: ' "$TMP/err") $(grep -c 'Broken pipe' "$TMP/err")" "141 0 0"
# a device or FIFO as -o is written in place, never replaced by a renamed temp file (it
# used to rename a temp file over /dev/full when run as root)
mkfifo fifo
timeout 20 cat fifo >fifo.out &
catpid=$!
expect_success "synth: -o FIFO (fixed)" "$DSA_BIN" datasets synth mrcr -o fifo
wait "$catpid"
[ -p fifo ] && ok "synth: the FIFO is still a FIFO" || not_ok "synth: the FIFO is still a FIFO"
expect_eq "synth: the rows went through the FIFO" "$(grep -c '"n_needles"' fifo.out)" 5
bad 2 "fetch: --page-rows 0" "--page-rows must be 1..100" "$DSA_BIN" datasets fetch mrcr --page-rows 0
bad 4 "fetch: unreachable mirror" "cannot fetch" \
    "$DSA_BIN" datasets fetch mrcr --base-url file:///nonexistent --hub-url file:///nonexistent

# ---- run files for compare, report, plan, merge
start_server || { not_ok "test server starts"; done_testing; exit 1; }
M=("$DSA_BIN" mrcr --endpoint "$SERVER_URL" --dataset "$S" --needles 2 -q)
expect_success "mrcr endpoint run" "${M[@]}" --out m1
hdr=$(head -1 m1/run-001.jsonl)
rec=$(sed -n 2p m1/run-001.jsonl)
bad 2 "mrcr: --runs 0" "must be in range" "${M[@]}" --out m2 --runs 0
bad 2 "mrcr: --concurrency 0" "must be in range" "${M[@]}" --out m2 --concurrency 0
bad 2 "mrcr: --limit -1" "must be in range" "${M[@]}" --out m2 --limit -1
bad 2 "mrcr: --bins 7k" "'7k' is not an MRCR bin edge" "${M[@]}" --out m2 --bins 7k
bad 3 "mrcr: --needles 3" "pass the filters (--needles 3)" "${M[@]}" --out m2 --needles 3
bad 2 "mrcr: no --endpoint, before the (missing) dataset" "--endpoint URL is required" \
    env DSA_EVAL_CACHE="$TMP/nocache" "$DSA_BIN" mrcr --out m2
bad 2 "mrcr: --timeout nan (fixed: was accepted)" "number out of range: 'nan'" \
    "${M[@]}" --out m2 --timeout nan
bad 2 "mrcr: --extra-body not an object" "--extra-body is not a JSON object" \
    "${M[@]}" --out m2 --extra-body '[1]'
bad 3 "mrcr: empty dataset" "'empty' is empty" "${M[@]}" --out m2 --dataset empty
bad 3 "mrcr: dataset is a directory" "dataset 'dir' is not a file" "${M[@]}" --out m2 --dataset dir
echo x >afile
bad 5 "mrcr: --out is a file" "cannot create directory 'afile'" "${M[@]}" --out afile
bad 5 "mrcr: --out under /proc" "cannot create directory '/proc/x'" "${M[@]}" --out /proc/x
bad 4 "mrcr: unreachable endpoint" "cannot reach" "$DSA_BIN" mrcr --endpoint http://127.0.0.1:1 \
    --dataset "$S" --needles 2 -q --out m3 --retries 0
mkdir gb && head -c 3000 /dev/zero | tr '\0' '\207' >gb/run-001.jsonl
bad 3 "mrcr: garbage run file in --out" "'gb/run-001.jsonl' is not a dsa-eval run file" "${M[@]}" --out gb
mkdir gt && { echo "$hdr"; echo "$rec"; printf '%s' "${rec%??????????}"; } >gt/run-001.jsonl
expect_success "mrcr: a torn last line is redone" "${M[@]}" --out gt
grep -q "dropped the torn last line 3" "$TMP/err" && ok "torn line warning" || not_ok "torn line warning"
expect_eq "mrcr: the finished record survived, the torn one was redone" \
    "$(sed -n 2p gt/run-001.jsonl) $(grep -c '"status":"ok"' gt/run-001.jsonl)" "$rec 2"
mkdir gd && { echo "$hdr"; echo "$rec"; echo "$rec"; } >gd/run-001.jsonl
bad 3 "mrcr: duplicate id in a run file" "duplicate id" "${M[@]}" --out gd
expect_eq "mrcr: a refused run file is left as it was" "$(grep -c . gd/run-001.jsonl)" 3
bad 2 "mrcr inprocess: --topk 100" "--topk must be 512, 1024 or 2048" \
    "$DSA_BIN" mrcr --backend inprocess --device cpu --dataset "$S" --needles 2 --out i1 --topk 100
bad 3 "mrcr inprocess: no row passes the filters (fixed: was exit 0)" "pass the filters" \
    "$DSA_BIN" mrcr --backend inprocess --device cpu --dataset "$S" --needles 8 --out i1 -q
[ ! -e i1 ] && ok "mrcr inprocess: nothing written" || not_ok "mrcr inprocess: nothing written"

# a GSM8K run file beside the MRCR one
mkdir gs
printf '%s\n' '{"command":["dsa-eval","gsm8k"],"created":"2026-11-30T12:00:00Z","dsa_eval_run":1,"eval":"gsm8k","match":{"model":"m"},"run":1,"tool":{"git":"t","version":"0.1.0"}}' \
    '{"bin":"all","bin_tokens":0,"error":null,"id":"q0000","score":1.0,"status":"ok","output":"18","correct":true}' \
    '{"bin":"all","bin_tokens":0,"error":null,"id":"q0001","score":1.0,"status":"ok","output":"3","correct":true}' >gs/run-001.jsonl

# ---- compare / report / plan
cp -r m1 m1b
bad 3 "compare: missing" "cannot open 'missing'" "$DSA_BIN" compare m1 missing
bad 3 "compare: empty directory" "no run files (*.jsonl) in 'dir'" "$DSA_BIN" compare m1 dir
bad 3 "compare: binary garbage" "'bin' is not a dsa-eval run file" "$DSA_BIN" compare m1 bin
bad 3 "compare: GSM8K vs MRCR (fixed: said 'bin label all is reserved')" \
    "'gs' holds gsm8k runs but 'm1' holds mrcr runs" "$DSA_BIN" compare gs m1
bad 3 "report: MRCR vs GSM8K (fixed)" "runs of different evals cannot be compared" \
    "$DSA_BIN" report m1 gs
# an in-process MRCR run (recall@k) beside an endpoint MRCR run (grader score)
mkdir ip
"$DSA_PYTHON" -c 'import json,sys; h=json.loads(sys.argv[1]); h["backend"]={"kind":sys.argv[2]}
print(json.dumps(h, ensure_ascii=False)); print(sys.argv[3])' "$hdr" inprocess "$rec" >ip/run-001.jsonl
mkdir ep
"$DSA_PYTHON" -c 'import json,sys; h=json.loads(sys.argv[1]); h["backend"]={"kind":sys.argv[2]}
print(json.dumps(h, ensure_ascii=False)); print(sys.argv[3])' "$hdr" endpoint "$rec" >ep/run-001.jsonl
bad 3 "compare: in-process vs endpoint MRCR" \
    "'ip' holds inprocess runs but 'ep' holds endpoint runs" "$DSA_BIN" compare ip ep
{ echo "$hdr"; echo "$rec" | sed 's/"score":[0-9.e+-]*/"score":"x"/'; } >wrongscore
bad 3 "compare: score of the wrong type" "\"score\" must be a number or null" \
    "$DSA_BIN" compare m1 wrongscore
{ echo "$hdr"; echo "$rec" | sed 's/"id":"[^"]*"/"id":5/'; } >wrongid
bad 3 "compare: id of the wrong type" "\"id\" must be a string" "$DSA_BIN" compare m1 wrongid
{ echo "$hdr"; echo "$rec"; echo "$rec"; } >dup
bad 3 "compare: duplicate ids" "line 3 of 'dup': duplicate id" "$DSA_BIN" compare m1 dup
printf '{"id":"a","bin":"≤8K","score":0.5}\n' >p8
printf '{"id":"a","bin":"≤16K","score":0.5}\n' >p16
bad 3 "compare: mismatched bins" "sample 'a' is in bin '≤16K' here but in bin '≤8K'" \
    "$DSA_BIN" compare p8 p16
bad 2 "compare: --resamples 0" "--resamples must be between" "$DSA_BIN" compare m1 m1b --resamples 0
bad 2 "compare: --resamples -1" "--resamples must be between" "$DSA_BIN" compare m1 m1b --resamples -1
bad 2 "compare: --confidence 1.5" "--confidence must be in [0.5, 1)" \
    "$DSA_BIN" compare m1 m1b --confidence 1.5
bad 2 "compare: --fail-if-worse nan (fixed: was accepted and ignored)" "number out of range" \
    "$DSA_BIN" compare m1 m1b --fail-if-worse nan
bad 5 "compare: stdout full" "cannot write to standard output" \
    sh -c '"$0" compare m1 m1b >/dev/full' "$DSA_BIN"
bad 5 "compare: stdout closed" "cannot write to standard output" \
    sh -c '"$0" compare m1 m1b >&-' "$DSA_BIN"
bad 3 "report CMP.json: missing (fixed: said 'unable to open … (line -1)')" \
    "cannot open 'missing': No such file or directory" "$DSA_BIN" report missing
bad 3 "report CMP.json: a directory (fixed)" "'dir' is a directory" "$DSA_BIN" report dir
"$DSA_BIN" compare m1 m1b --json >cmp.json 2>/dev/null
head -c 100 cmp.json >cmptrunc.json
bad 3 "report CMP.json: truncated" "cannot parse 'cmptrunc.json'" "$DSA_BIN" report cmptrunc.json
echo '{"dsa_eval_compare":1,"bins":5}' >cmpwrong.json
bad 3 "report CMP.json: wrong types" "is not a comparison document" "$DSA_BIN" report cmpwrong.json
bad 5 "report: -o DIR" "cannot write 'dir': Is a directory" "$DSA_BIN" report m1 m1b -o dir
bad 5 "report: stdout full" "No space left on device" sh -c '"$0" report m1 m1b >/dev/full' "$DSA_BIN"
bad 3 "plan: empty file (fixed: was a table of n/a and exit 0)" "no records in 'empty'" \
    "$DSA_BIN" plan --from empty
bad 2 "plan: --runs 0" "--runs must be between 1 and 100" "$DSA_BIN" plan --from m1 --runs 0
bad 3 "plan: unknown bin" "no bin '7k'" "$DSA_BIN" plan --from m1 --bin 7k

# ---- merge
bad 3 "merge: torn only line" "" "$DSA_BIN" merge mo.jsonl trunc
bad 3 "merge: duplicate ids" "duplicate id" "$DSA_BIN" merge mo.jsonl dup
bad 3 "merge: a plain score file" "is not a dsa-eval run file" "$DSA_BIN" merge mo.jsonl p8
[ ! -e mo.jsonl ] && ok "merge: nothing written on error" || not_ok "merge: nothing written on error"
bad 5 "merge: OUT under /proc" "cannot create" "$DSA_BIN" merge /proc/x m1/run-001.jsonl

# ---- kernels
bad 2 "kernels check: -k matching nothing (fixed: was a clean pass)" "no case matches -k 'nonesuch'" \
    "$DSA_BIN" kernels check --device cpu -k nonesuch
bad 2 "kernels check: --reruns -2 (fixed)" "--reruns must be >= 0" \
    "$DSA_BIN" kernels check --device cpu --reruns -2
bad 4 "kernels check: plugin that is not ELF" "cannot load kernels" \
    "$DSA_BIN" kernels check --kernels /etc/passwd
bad 3 "kernels trace: missing" "cannot read trace 'missing'" "$DSA_BIN" kernels trace missing --device cpu
bad 3 "kernels trace: a directory (fixed: said 'No such device')" \
    "cannot read trace 'dir': Is a directory" "$DSA_BIN" kernels trace dir --device cpu
bad 3 "kernels trace: empty" "empty file" "$DSA_BIN" kernels trace empty --device cpu
bad 3 "kernels trace: garbage" "does not fit the file" "$DSA_BIN" kernels trace bin --device cpu
bad 5 "--help: stdout full (fixed: was exit 0)" "cannot write to standard output" \
    sh -c '"$0" --help >/dev/full' "$DSA_BIN"
done_testing
