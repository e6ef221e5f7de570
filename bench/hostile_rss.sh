#!/bin/bash
# Peak RSS of `dsa-eval mrcr` against dsa-test-server's hostile modes, under one memory
# budget (--max-memory): an endless stream, an endless body, gzip bombs (streamed and not)
# and a model list of 300,000 entries. Reference in the same run: the RSS of `dsa-eval
# version` (libraries loaded, nothing done) and the budget itself; "of budget" is peak/budget.
#   bench/hostile_rss.sh [BUILD_DIR] [BUDGET_MIB] [CONCURRENCY]   (default: build 256 8)
# SPDX-License-Identifier: GPL-3.0-or-later
set -eu
BUILD=${1:-build}
BUDGET=${2:-256}
C=${3:-8}
BIN=$BUILD/dsa-eval
SRV=$BUILD/tests/dsa-test-server
T=$(mktemp -d /tmp/hostile_rss.XXXXXX)
SP=
trap '[ -n "$SP" ] && kill $SP 2>/dev/null; rm -rf "$T"' EXIT
serve() {
    rm -f "$T/port"
    "$SRV" --port 0 --port-file "$T/port" "$@" 2>/dev/null &
    SP=$!
    for i in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.05; done
    URL=http://127.0.0.1:$(cat "$T/port")
}
python3 -c 'import sys
sys.stdout.write("{\"object\":\"list\",\"data\":[" + ",".join(
    "{\"id\":\"m%d\",\"object\":\"model\",\"owned_by\":\"vllm\",\"max_model_len\":8192}" % i
    for i in range(300000)) + "]}")' >"$T/models.json"
"$BIN" datasets synth mrcr --needles 2 --bins 8k --per-bin 8 -o "$T/ds.jsonl"
base=$(/usr/bin/time -f %M "$BIN" version 2>&1 >/dev/null)
printf 'reference: dsa-eval version %.1f MB; --max-memory %d MiB, --concurrency %d\n' \
    "$(echo "$base / 1024" | bc -l)" "$BUDGET" "$C"
printf '%-28s %10s %12s %10s\n' "hostile server" "exit" "peak RSS MB" "of budget"
row() {
    local title=$1
    shift
    rm -rf "$T/out"
    set +e
    /usr/bin/time -f %M -o "$T/rss" "$BIN" mrcr --endpoint "$URL" --dataset "$T/ds.jsonl" \
        --needles 2 --out "$T/out" -q --retries 0 -c "$C" --max-memory "${BUDGET}M" "$@" \
        >/dev/null 2>&1
    local rc=$?
    set -e
    local kb
    kb=$(tail -1 "$T/rss")
    printf '%-28s %10s %12.1f %10.2f\n' "$title" $rc "$(echo "$kb / 1024" | bc -l)" \
        "$(echo "$kb / 1024 / $BUDGET" | bc -l)"
}
for f in endless-stream gzip-bomb; do
    serve --fault $f
    row "$f, --stream" --stream
    row "$f, whole body"
    kill $SP
    wait $SP 2>/dev/null || true
done
serve --canned "/v1/models=$T/models.json"
row "300,000 models"
