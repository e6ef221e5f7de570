#!/usr/bin/env bash
# mrcr reads the shipped samples embedded in the binary (--dataset sample:<name>) from any
# directory, against an endpoint as well as in-process.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/srvlib.sh"

start_server || { not_ok "test server starts"; done_testing; exit 1; }
cd "$TMP" || exit 1
rows=$(grep -c . "$DSA_SRC/datasets/samples/mrcr-synth-2needle-tiny.jsonl")
expect_success "endpoint run over sample:mrcr-synth-2needle-tiny.jsonl" "$DSA_BIN" mrcr \
    --endpoint "$SERVER_URL" --dataset sample:mrcr-synth-2needle-tiny.jsonl --needles 2 \
    --out ep -q
expect_eq "one record per sample row" "$(($(grep -c . ep/run-001.jsonl) - 1))" "$rows"
expect_eq "the server answers every shipped row exactly" \
    "$(grep -c '"exact":true' ep/run-001.jsonl)" "$rows"
expect_code 3 "unknown sample: exit 3" "$DSA_BIN" mrcr --endpoint "$SERVER_URL" \
    --dataset sample:nope --out ep2 -q
grep -q "'sample:nope' is not a shipped sample" "$TMP/err" && ok "unknown sample names the known ones" ||
    not_ok "unknown sample names the known ones"
done_testing
