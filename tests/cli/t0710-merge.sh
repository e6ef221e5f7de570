#!/usr/bin/env bash
# dsa-eval merge: shard run files of one run become the run file of the unsharded run;
# mismatched headers, duplicate ids, repeated shards and plain score files are refused.
. "$(dirname "$0")/lib.sh"

hdr() { # hdr SHARD [MODEL]
    printf '{"command":["dsa-eval","mrcr"],"created":"2026-11-30T12:00:00Z","dsa_eval_run":1,"eval":"mrcr","match":{"model":"%s","seed":1,"shard":"%s"},"run":1,"tool":{"git":"t","version":"0.1.0"}}\n' "${2:-m}" "$1"
}
rec() { # rec ID SCORE
    printf '{"bin":"≤8K","bin_tokens":8192,"error":null,"id":"%s","score":%s,"status":"ok"}\n' "$1" "$2"
}
{ hdr 1/2; rec n2/r0000 1.0; rec n2/r0002 0.5; } >"$TMP/s1.jsonl"
{ hdr 2/2; rec n2/r0001 0.25; rec n2/r0003 0.75; } >"$TMP/s2.jsonl"

expect_success "merge two shards" "$DSA_BIN" merge "$TMP/all.jsonl" "$TMP/s1.jsonl" "$TMP/s2.jsonl"
want=$(printf '%s\n' \
  '{"command":["dsa-eval","mrcr"],"created":"2026-11-30T12:00:00Z","dsa_eval_run":1,"eval":"mrcr","match":{"model":"m","seed":1},"merged_from":[{"file":"'"$TMP"'/s1.jsonl","records":2,"shard":"1/2"},{"file":"'"$TMP"'/s2.jsonl","records":2,"shard":"2/2"}],"run":1,"tool":{"git":"t","version":"0.1.0"}}'
  rec n2/r0000 1.0; rec n2/r0002 0.5; rec n2/r0001 0.25; rec n2/r0003 0.75)
expect_eq "merged file, exact bytes" "$(cat "$TMP/all.jsonl")" "$want"
grep -q "merged 4 records from 2 files" "$TMP/err" && ok "merge note" || not_ok "merge note"

expect_code 2 "existing OUT is kept without --force" "$DSA_BIN" merge "$TMP/all.jsonl" "$TMP/s1.jsonl" "$TMP/s2.jsonl"
grep -q "exists; use --force" "$TMP/err" && ok "exists message" || not_ok "exists message"
expect_success "--force replaces OUT" "$DSA_BIN" merge --force "$TMP/all.jsonl" "$TMP/s2.jsonl" "$TMP/s1.jsonl"
expect_eq "inputs keep their order" "$(sed -n 2p "$TMP/all.jsonl")" "$(rec n2/r0001 0.25)"
expect_code 2 "OUT as an input" "$DSA_BIN" merge --force "$TMP/s1.jsonl" "$TMP/s1.jsonl" "$TMP/s2.jsonl"
expect_code 2 "too few arguments" "$DSA_BIN" merge "$TMP/x.jsonl"

{ hdr 2/2; rec n2/r0002 0.25; } >"$TMP/dup.jsonl"
expect_code 3 "duplicate id refused" "$DSA_BIN" merge "$TMP/d.jsonl" "$TMP/s1.jsonl" "$TMP/dup.jsonl"
grep -q "id 'n2/r0002' is in both '$TMP/s1.jsonl' and '$TMP/dup.jsonl'" "$TMP/err" && ok "duplicate message" || not_ok "duplicate message"
[ ! -e "$TMP/d.jsonl" ] && ok "nothing written on error" || not_ok "nothing written on error"

{ hdr 2/2 other; rec n2/r0001 0.25; } >"$TMP/other.jsonl"
expect_code 6 "other model refused" "$DSA_BIN" merge "$TMP/d.jsonl" "$TMP/s1.jsonl" "$TMP/other.jsonl"
grep -q 'not shards of the same run (different model: "m" vs "other")' "$TMP/err" && ok "mismatch message" || not_ok "mismatch message"

{ hdr 1/3; rec n2/r0009 0.25; } >"$TMP/of3.jsonl"
expect_code 6 "other shard count refused" "$DSA_BIN" merge "$TMP/d.jsonl" "$TMP/s1.jsonl" "$TMP/of3.jsonl"

{ hdr 1/2; rec n2/r0007 0.25; } >"$TMP/same.jsonl"
expect_code 3 "same shard twice refused" "$DSA_BIN" merge "$TMP/d.jsonl" "$TMP/s1.jsonl" "$TMP/same.jsonl"

printf '{"id":"q0","bin":"all","score":1}\n' >"$TMP/plain.jsonl"
expect_code 3 "plain score file refused" "$DSA_BIN" merge "$TMP/d.jsonl" "$TMP/s1.jsonl" "$TMP/plain.jsonl"

expect_success "one shard of two: merged with a warning" "$DSA_BIN" merge "$TMP/part.jsonl" "$TMP/s1.jsonl"
grep -q "warning: merging 1 of 2 shards" "$TMP/err" && ok "incomplete warning" || not_ok "incomplete warning"

{ hdr 2/2; rec n2/r0001 0.25; printf '{"bin":"≤8K","id":"n2/r00'; } >"$TMP/torn.jsonl"
expect_success "torn last line of a shard is dropped" "$DSA_BIN" merge "$TMP/t.jsonl" "$TMP/s1.jsonl" "$TMP/torn.jsonl"
expect_eq "records of the torn shard" "$(wc -l <"$TMP/t.jsonl")" "4"
grep -q "ignoring the torn last line 3" "$TMP/err" && ok "torn warning" || not_ok "torn warning"
expect_code 3 "missing input" "$DSA_BIN" merge "$TMP/m.jsonl" "$TMP/s1.jsonl" "$TMP/nope.jsonl"
done_testing
