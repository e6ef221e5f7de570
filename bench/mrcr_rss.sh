#!/bin/bash
# Peak RSS of `dsa-eval mrcr` over 256K-token prompts against dsa-test-server: the client
# must hold about one prompt per request in flight plus the records, not the dataset, so
# the peak stays flat when the dataset grows 4x. Reference in the same run: the size of
# one prompt (the largest row of the file) and of the whole dataset.
#   bench/mrcr_rss.sh [BUILD_DIR]     (default: build)
# SPDX-License-Identifier: GPL-3.0-or-later
set -eu
BUILD=${1:-build}
BIN=$BUILD/dsa-eval
SRV=$BUILD/tests/dsa-test-server
T=$(mktemp -d /tmp/mrcr_rss.XXXXXX)
trap 'kill $SP 2>/dev/null; rm -rf "$T"' EXIT
"$SRV" --port 0 --port-file "$T/port" --max-model-len 1048576 2>/dev/null &
SP=$!
for i in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.05; done
URL=http://127.0.0.1:$(cat "$T/port")
printf 'baseline: dsa-eval version, peak RSS %s MB\n' \
    "$(/usr/bin/time -f %M "$BIN" version 2>&1 >/dev/null | awk '{printf "%.1f", $1 / 1024}')"
printf '%-34s %10s %12s %14s %14s\n' "run" "rows" "dataset MB" "largest row MB" "peak RSS MB"
for rows in 2 8 32; do
    "$BIN" datasets synth mrcr --needles 8 --bins 256k --per-bin $rows --seed 1 -o "$T/ds$rows.jsonl"
    ds_mb=$(awk -v b=$(stat -c %s "$T/ds$rows.jsonl") 'BEGIN {printf "%.1f", b / 1048576}')
    row_mb=$(awk '{ if (length($0) > m) m = length($0) } END {printf "%.1f", m / 1048576}' "$T/ds$rows.jsonl")
    cs="1 4"
    [ $rows = 32 ] && cs=1
    for c in $cs; do
        rm -rf "$T/out"
        /usr/bin/time -f %M -o "$T/rss" "$BIN" mrcr --endpoint "$URL" --dataset "$T/ds$rows.jsonl" \
            --concurrency $c --out "$T/out" -q >/dev/null
        rss=$(awk '{printf "%.1f", $1 / 1024}' "$T/rss")
        printf '%-34s %10s %12s %14s %14s\n' "mrcr 256K bin, concurrency $c" $rows "$ds_mb" "$row_mb" "$rss"
    done
done
