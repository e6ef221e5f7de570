#!/usr/bin/env bash
# dsa-eval datasets: synth mrcr (determinism, shipped samples), info, bad input exit codes.
# SPDX-License-Identifier: GPL-3.0-or-later
. "$(dirname "$0")/lib.sh"

# --- synth: the issue's example, deterministic
expect_success "synth mrcr" "$DSA_BIN" datasets synth mrcr --needles 8 --bins 8k,16k,32k \
    --per-bin 5 --seed 1 -o "$TMP/a.jsonl"
expect_success "synth mrcr again" "$DSA_BIN" datasets synth mrcr --needles 8 --bins 8k,16k,32k \
    --per-bin 5 --seed 1 -o "$TMP/b.jsonl"
cmp -s "$TMP/a.jsonl" "$TMP/b.jsonl" && ok "same seed, same bytes" || not_ok "same seed, same bytes"
expect_success "synth seed 2" "$DSA_BIN" datasets synth mrcr --needles 8 --bins 8k,16k,32k \
    --per-bin 5 --seed 2 -o "$TMP/c.jsonl"
cmp -s "$TMP/a.jsonl" "$TMP/c.jsonl" && not_ok "other seed, other bytes" || ok "other seed, other bytes"
expect_eq "15 rows" "$(wc -l <"$TMP/a.jsonl" | tr -d ' ')" 15
expect_success "synth to stdout" "$DSA_BIN" datasets synth mrcr --needles 8 --bins 8k,16k,32k \
    --per-bin 5 --seed 1 -o -
cmp -s "$TMP/out" "$TMP/a.jsonl" && ok "stdout = file" || not_ok "stdout = file"
expect_success "synth --max-bin" "$DSA_BIN" datasets synth mrcr --needles 2,4 --max-bin 16k \
    --per-bin 1 -o "$TMP/m.jsonl"
expect_eq "--max-bin 16k: 2 needle counts x 2 bins" "$(wc -l <"$TMP/m.jsonl" | tr -d ' ')" 4

# --- SIGINT during a long synth: exit 130, no output and no temporary file left
"$DSA_BIN" datasets synth mrcr --bins 1m --per-bin 200 -o "$TMP/int.jsonl" 2>"$TMP/err" &
pid=$!
sleep 1
kill -INT "$pid"
wait "$pid"
expect_eq "synth interrupted: exit 130" "$?" 130
[ ! -e "$TMP/int.jsonl" ] && ! ls "$TMP"/int.jsonl.tmp* >/dev/null 2>&1 && ok "no partial synth output" ||
    not_ok "no partial synth output"

# --- info
expect_success "info" "$DSA_BIN" datasets info "$TMP/a.jsonl"
sha=$(sha256sum "$TMP/a.jsonl" | cut -d' ' -f1)
grep -q "^sha256    $sha\$" "$TMP/out" && ok "info sha256" || not_ok "info sha256"
grep -q '^bins      explicit' "$TMP/out" && ok "info bin source" || not_ok "info bin source"
grep -q '^      8      5      5      5     15$' "$TMP/out" && ok "info table" || {
    not_ok "info table"; sed 's/^/#   /' "$TMP/out"; }
grep -q '≤8K   ≤16K   ≤32K  total' "$TMP/out" && ok "info labels" || not_ok "info labels"

expect_success "info --verify" "$DSA_BIN" datasets info --verify "$TMP/a.jsonl"
grep -q '^          answer = prefix + messages\[desired_msg_index+1\]: 15/15$' "$TMP/out" &&
    ok "verify: needle invariant on every synthetic row" || not_ok "verify: needle invariant on every synthetic row"
grep -q '^          total_messages = len(messages): 15/15$' "$TMP/out" && ok "verify: total_messages" ||
    not_ok "verify: total_messages"

# --- the shipped samples are exactly what the documented commands make
cmds=$(grep -E '^    dsa-eval datasets synth mrcr ' "$DSA_SRC/datasets/samples/README.md")
[ -n "$cmds" ] && ok "samples README has commands" || not_ok "samples README has commands"
while read -r _ rest; do
    out=$(sed -E 's/.* -o ([^ ]+).*/\1/' <<<"$rest")
    name=$(basename "$out")
    args=$(sed -E 's/ -o [^ ]+//' <<<"$rest")
    # shellcheck disable=SC2086
    "$DSA_BIN" $args -o "$TMP/$name" 2>"$TMP/err"
    cmp -s "$TMP/$name" "$DSA_SRC/$out" && ok "sample $name regenerates byte-identical" ||
        not_ok "sample $name regenerates byte-identical"
    size=$(stat -c %s "$DSA_SRC/$out")
    [ "$size" -lt 1048576 ] && ok "sample $name < 1 MB ($size B)" || not_ok "sample $name < 1 MB"
done <<<"$cmds"

# --- the embedded samples: the binary carries the shipped bytes
for f in "$DSA_SRC"/datasets/samples/*.jsonl; do
    name=$(basename "$f")
    expect_success "info sample:$name" "$DSA_BIN" datasets info "sample:$name"
    grep -q "^sha256    $(sha256sum "$f" | cut -d' ' -f1)\$" "$TMP/out" &&
        ok "embedded $name = shipped file" || not_ok "embedded $name = shipped file"
done
expect_code 3 "unknown sample" "$DSA_BIN" datasets info sample:nope.jsonl

# --- bad input: one line naming file and line, exit 3
printf '' >"$TMP/empty.jsonl"
expect_code 3 "empty file" "$DSA_BIN" datasets info "$TMP/empty.jsonl"
grep -q "^dsa-eval: '.*empty.jsonl' is empty" "$TMP/err" && ok "empty message" || not_ok "empty message"
head -n 2 "$TMP/a.jsonl" >"$TMP/t.jsonl"
head -c 300 "$TMP/a.jsonl" | tail -c +1 >>"$TMP/t.jsonl"
expect_code 3 "truncated last row" "$DSA_BIN" datasets info "$TMP/t.jsonl"
grep -q "^dsa-eval: cannot parse line 3 of '.*t.jsonl'" "$TMP/err" && ok "truncated message names line 3" ||
    not_ok "truncated message names line 3"
[ "$(wc -l <"$TMP/err")" -eq 1 ] && ok "one line" || not_ok "one line"
sed '2s/"prompt":"\[/"prompt":"[[/' "$TMP/a.jsonl" >"$TMP/p.jsonl"
expect_code 0 "a broken prompt passes info" "$DSA_BIN" datasets info "$TMP/p.jsonl"
expect_code 3 "a broken prompt fails info --verify" "$DSA_BIN" datasets info --verify "$TMP/p.jsonl"
grep -q "^dsa-eval: line 2 of '.*p.jsonl': \"prompt\" is not a JSON message list" "$TMP/err" &&
    ok "broken prompt message" || not_ok "broken prompt message"
sed '2s/"n_needles":8/"n_needles":"8"/' "$TMP/a.jsonl" >"$TMP/w.jsonl"
expect_code 3 "wrong type" "$DSA_BIN" datasets info "$TMP/w.jsonl"
grep -q "^dsa-eval: line 2 of '.*w.jsonl': \"n_needles\" must be an integer" "$TMP/err" &&
    ok "wrong type message" || not_ok "wrong type message"
printf '{"n_needles":8,"n_chars":5,"bin":"8k","x":"\xff"}\n' >"$TMP/u.jsonl"
expect_code 3 "invalid UTF-8" "$DSA_BIN" datasets info "$TMP/u.jsonl"
expect_code 3 "missing file" "$DSA_BIN" datasets info "$TMP/nope.jsonl"
expect_code 2 "bad bins" "$DSA_BIN" datasets synth mrcr --bins 12k -o "$TMP/x.jsonl"
grep -q "'12k' is not an MRCR bin edge" "$TMP/err" && ok "bad bin message" || not_ok "bad bin message"
[ ! -e "$TMP/x.jsonl" ] && ok "no output on usage error" || not_ok "no output on usage error"
expect_code 2 "synth without -o" "$DSA_BIN" datasets synth mrcr
expect_code 2 "unknown subcommand" "$DSA_BIN" datasets frob
expect_code 2 "no subcommand" "$DSA_BIN" datasets
expect_success "datasets --help" "$DSA_BIN" datasets --help

# --- official block map: 800 rows in the openai/mrcr order; a shuffled order fails
require_python
{
    "$DSA_PYTHON" - "$TMP" <<'PY'
import json, sys
tmp = sys.argv[1]
block_to_bin = [5, 2, 6, 3, 0, 7, 4, 1]
msgs = json.dumps([{"role": "user", "content": "x"}])
def rows(order):
    out = []
    for r in range(800):
        k = block_to_bin[order[r // 100]]
        lo, hi = (4096 << k if k else 4096), 8192 << k
        n_chars = int((lo + (hi - lo) * (0.2 + 0.006 * (r % 100))) * 4.85)
        out.append(json.dumps({"prompt": msgs, "answer": "abcdefghijX", "random_string_to_prepend": "abcdefghij",
                               "n_needles": 8, "desired_msg_index": 1, "total_messages": 1,
                               "n_chars": n_chars, "date_added": "04-12-2025"}))
    return "\n".join(out) + "\n"
open(f"{tmp}/official.jsonl", "w").write(rows(list(range(8))))
open(f"{tmp}/shuffled.jsonl", "w").write(rows([4, 1, 2, 3, 0, 5, 6, 7]))
PY
    expect_success "info official layout" "$DSA_BIN" datasets info "$TMP/official.jsonl"
    grep -q '^bins      official' "$TMP/out" && ok "official bins" || not_ok "official bins"
    grep -q '^      8    100    100    100    100    100    100    100    100    800$' "$TMP/out" &&
        ok "100 rows per bin" || { not_ok "100 rows per bin"; sed 's/^/#   /' "$TMP/out"; }
    expect_code 3 "shuffled layout fails the sanity check" "$DSA_BIN" datasets info "$TMP/shuffled.jsonl"
    grep -q "not in the official openai/mrcr layout" "$TMP/err" && ok "sanity check message" ||
        not_ok "sanity check message"
}
done_testing
