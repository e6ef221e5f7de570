#!/usr/bin/env bash
# dsa-eval datasets fetch, without the network: file:// mirrors of the HF rows API, the Hub
# API and the GSM8K repository (layouts in docs/datasets.md "fetch"). Resume of a partial
# .part file, checksum mismatches (exit 3), revision drift (exit 3), no network (exit 4).
# SPDX-License-Identifier: GPL-3.0-or-later
. "$(dirname "$0")/lib.sh"

export DSA_EVAL_CACHE="$TMP/cache"
unset DSA_EVAL_HF_BASE DSA_EVAL_HUB_BASE DSA_EVAL_GSM8K_BASE
REV=f4c69fae7cf81f7ca26b9fee34b392a50f6b8a1d
COMMIT=3101c7d5072418e28b9008a6636bde82a006892c

# --- GSM8K from a file:// copy of the repository layout
# tests/data/gsm8k holds the whole test split and the first 5 rows of train (README there): the
# pinned train checksum cannot match that subset, so the full fetch is of the test split, and a
# fetch of the subset as train must be refused with the checksum message.
gsm="$DSA_DATA/gsm8k"
[ -f "$gsm/test.jsonl" ] || { echo "Bail out! no '$gsm/test.jsonl'"; exit 1; }
{
    mkdir -p "$TMP/gh/$COMMIT/grade_school_math/data"
    ln -s "$gsm/test.jsonl" "$gsm/train.jsonl" "$TMP/gh/$COMMIT/grade_school_math/data/"
    dest="$DSA_EVAL_CACHE/gsm8k/$COMMIT"
    expect_success "fetch gsm8k" "$DSA_BIN" datasets fetch gsm8k --split test --base-url "file://$TMP/gh"
    expect_eq "prints the cached path" "$(cat "$TMP/out")" "$dest/test.jsonl"
    expect_code 3 "a train split that is not the pinned one: exit 3" \
        "$DSA_BIN" datasets fetch gsm8k --split train --base-url "file://$TMP/gh"
    grep -q "downloaded with sha256 5cf05b0c.*, expected 17f347dc" "$TMP/err" &&
        ok "train checksum message" || not_ok "train checksum message"
    [ ! -e "$dest/train.jsonl" ] && ok "refused train not kept" || not_ok "refused train not kept"
    cmp -s "$dest/test.jsonl" "$gsm/test.jsonl" && ok "test.jsonl byte-identical" || not_ok "test.jsonl byte-identical"
    grep -q '"sha256": "3730d312f6e3440559ace48831e51066acaca737f6eabec99bccb9e4b3c39d14"' \
        "$dest/test.jsonl.meta.json" && ok "sha256 recorded" || not_ok "sha256 recorded"
    expect_success "fetch again reuses" "$DSA_BIN" datasets fetch gsm8k --split test --base-url "file://$TMP/nowhere"
    grep -q "up to date (sha256 verified)" "$TMP/err" && ok "reuse verified" || not_ok "reuse verified"
    # resume: a .part holding the first 1000 bytes completes to the right file
    rm "$dest/test.jsonl" "$dest/test.jsonl.meta.json"
    head -c 1000 "$gsm/test.jsonl" >"$dest/test.jsonl.part"
    DSA_EVAL_GSM8K_BASE="file://$TMP/gh" expect_success "resume gsm8k" "$DSA_BIN" datasets fetch gsm8k --split test
    grep -q "resuming '.*test.jsonl.part' at byte 1000" "$TMP/err" && ok "resumed at byte 1000" || not_ok "resumed at byte 1000"
    cmp -s "$dest/test.jsonl" "$gsm/test.jsonl" && ok "resumed file byte-identical" || not_ok "resumed file byte-identical"
    [ ! -e "$dest/test.jsonl.part" ] && ok "no .part left" || not_ok "no .part left"
    # a corrupted cache is refused on reuse
    echo >>"$dest/test.jsonl"
    expect_code 3 "corrupted cache: exit 3" "$DSA_BIN" datasets fetch gsm8k --split test --base-url "file://$TMP/gh"
    grep -q "does not match its recorded sha256" "$TMP/err" && ok "corrupted cache message" || not_ok "corrupted cache message"
    # a mirror serving other bytes: checksum mismatch, exit 3, the download removed
    rm "$dest/test.jsonl" "$dest/test.jsonl.meta.json"
    mkdir -p "$TMP/bad/$COMMIT/grade_school_math/data"
    sed '1s/Janet/Jane/' "$gsm/test.jsonl" >"$TMP/bad/$COMMIT/grade_school_math/data/test.jsonl"
    expect_code 3 "checksum mismatch: exit 3" "$DSA_BIN" datasets fetch gsm8k --split test --base-url "file://$TMP/bad"
    grep -q "downloaded with sha256 .*, expected 3730d312" "$TMP/err" && ok "checksum message" || not_ok "checksum message"
    [ ! -e "$dest/test.jsonl" ] && [ ! -e "$dest/test.jsonl.part" ] && ok "bad download not kept" || not_ok "bad download not kept"
    DSA_EVAL_GSM8K_BASE="file://$TMP/gh" expect_success "fetch test again" "$DSA_BIN" datasets fetch gsm8k --split test
    expect_success "info on the fetched file" "$DSA_BIN" datasets info "$dest/test.jsonl"
    grep -q "^revision  openai/grade-school-math@$COMMIT test.jsonl" "$TMP/out" && ok "gsm8k info revision" || not_ok "gsm8k info revision"
    grep -q "^rows      1319" "$TMP/out" && ok "gsm8k info rows" || not_ok "gsm8k info rows"
}

# --- no network: fails fast naming the URL, exit 4
DSA_EVAL_CACHE="$TMP/empty-cache" expect_code 4 "no network: gsm8k" "$DSA_BIN" datasets fetch gsm8k \
    --base-url http://127.0.0.1:9
grep -q "cannot fetch 'http://127.0.0.1:9/$COMMIT/grade_school_math/data/test.jsonl'" "$TMP/err" &&
    ok "no network message names the URL" || not_ok "no network message names the URL"
expect_code 4 "no network: mrcr" "$DSA_BIN" datasets fetch mrcr --hub-url http://127.0.0.1:9 --base-url http://127.0.0.1:9
grep -q "cannot fetch 'http://127.0.0.1:9/api/datasets/openai/mrcr'" "$TMP/err" &&
    ok "mrcr no network message" || not_ok "mrcr no network message"

# --- MRCR from file:// /rows pages: BASE/rows/<offset>-<length>.json, Hub at BASE/api/datasets/openai/mrcr
require_python
"$DSA_PYTHON" - "$TMP" "$REV" <<'PY'
import json, os, sys
tmp, rev = sys.argv[1], sys.argv[2]
block_to_bin = [5, 2, 6, 3, 0, 7, 4, 1]
rows = []
for r in range(800):
    k = block_to_bin[r // 100]
    lo, hi = (4096 << k if k else 4096), 8192 << k
    msgs = json.dumps([{"role": "user", "content": f"row {r} caf\u00e9"},
                       {"role": "user", "content": "Prepend abcdefghij to the 1st (1 indexed) poem about x."}])
    rows.append({"prompt": msgs, "answer": "abcdefghijX", "random_string_to_prepend": "abcdefghij",
                 "n_needles": 8, "desired_msg_index": 1, "total_messages": 2,
                 "n_chars": int((lo + (hi - lo) * (0.2 + 0.006 * (r % 100))) * 4.85),
                 "date_added": "04-12-2025"})
os.makedirs(f"{tmp}/hf/rows")
for o in range(0, 800, 4):
    page = {"features": [], "rows": [{"row_idx": 1600 + o + i, "row": rows[o + i], "truncated_cells": []}
                                     for i in range(4)],
            "num_rows_total": 2400, "num_rows_per_page": 100, "partial": False}
    open(f"{tmp}/hf/rows/{1600 + o}-4.json", "w").write(json.dumps(page))
with open(f"{tmp}/expected-8needle.jsonl", "w") as f:
    for r in rows:
        f.write(json.dumps(r, separators=(",", ":"), ensure_ascii=False) + "\n")
for name, sha in (("hub", rev), ("hub2", "0" * 40)):
    os.makedirs(f"{tmp}/{name}/api/datasets/openai")
    open(f"{tmp}/{name}/api/datasets/openai/mrcr", "w").write(json.dumps({"id": "openai/mrcr", "sha": sha}))
PY
mdest="$DSA_EVAL_CACHE/mrcr/$REV"
expect_success "fetch mrcr --needles 8" "$DSA_BIN" datasets fetch mrcr --needles 8 \
    --base-url "file://$TMP/hf" --hub-url "file://$TMP/hub"
expect_eq "prints the cached path" "$(cat "$TMP/out")" "$mdest/8needle.jsonl"
cmp -s "$mdest/8needle.jsonl" "$TMP/expected-8needle.jsonl" && ok "rows written as HF-schema JSONL in file order" ||
    not_ok "rows written as HF-schema JSONL in file order"
grep -q "\"revision\": \"$REV\"" "$mdest/8needle.jsonl.meta.json" && ok "revision recorded" || not_ok "revision recorded"
expect_success "info on fetched rows" "$DSA_BIN" datasets info "$mdest/8needle.jsonl"
grep -q "^revision  $REV" "$TMP/out" && ok "info shows the revision" || not_ok "info shows the revision"
grep -q "^bins      official" "$TMP/out" && ok "info: official bins" || not_ok "info: official bins"
expect_success "fetch again: reuse without network" "$DSA_BIN" datasets fetch mrcr --needles 8 \
    --base-url http://127.0.0.1:9 --hub-url http://127.0.0.1:9
# resume: 10 whole rows (not a page boundary) and a torn 11th
cp "$mdest/8needle.jsonl" "$TMP/full.jsonl"
rm "$mdest/8needle.jsonl" "$mdest/8needle.jsonl.meta.json"
{ head -n 10 "$TMP/full.jsonl"; sed -n 11p "$TMP/full.jsonl" | head -c 50; } >"$mdest/8needle.jsonl.part"
DSA_EVAL_HF_BASE="file://$TMP/hf" DSA_EVAL_HUB_BASE="file://$TMP/hub" \
    expect_success "resume mrcr" "$DSA_BIN" datasets fetch mrcr --page-rows 4
grep -q "resuming '.*8needle.jsonl.part' at row 10" "$TMP/err" && ok "resumed at row 10" || not_ok "resumed at row 10"
cmp -s "$mdest/8needle.jsonl" "$TMP/full.jsonl" && ok "resumed file identical" || not_ok "resumed file identical"
# checksum on reuse
sed -i '5s/row 4/row 5/' "$mdest/8needle.jsonl"
expect_code 3 "corrupted mrcr cache: exit 3" "$DSA_BIN" datasets fetch mrcr --base-url "file://$TMP/hf" --hub-url "file://$TMP/hub"
grep -q "does not match its recorded sha256" "$TMP/err" && ok "mrcr checksum message" || not_ok "mrcr checksum message"
expect_code 0 "info still reads it" "$DSA_BIN" datasets info "$mdest/8needle.jsonl"
grep -q "^revision  unknown" "$TMP/out" && ok "revision unknown when the sha256 differs" || not_ok "revision unknown when the sha256 differs"
# revision drift: the Hub says main moved
rm -r "$mdest"
expect_code 3 "revision drift: exit 3" "$DSA_BIN" datasets fetch mrcr --base-url "file://$TMP/hf" --hub-url "file://$TMP/hub2"
grep -q "openai/mrcr is now at revision 0000000000000000000000000000000000000000, not $REV" "$TMP/err" &&
    ok "revision drift message" || not_ok "revision drift message"
# a missing page (mirror incomplete): exit 4, the rows so far kept for a resume
mkdir "$TMP/hf-cut"; cp -r "$TMP/hf/rows" "$TMP/hf-cut/"; rm "$TMP/hf-cut/rows/1640-4.json"
expect_code 4 "missing page: exit 4" "$DSA_BIN" datasets fetch mrcr --base-url "file://$TMP/hf-cut" --hub-url "file://$TMP/hub"
expect_eq "40 rows kept in the .part" "$(wc -l <"$mdest/8needle.jsonl.part" | tr -d ' ')" 40
expect_success "resume from the full mirror" "$DSA_BIN" datasets fetch mrcr --base-url "file://$TMP/hf" --hub-url "file://$TMP/hub"
cmp -s "$mdest/8needle.jsonl" "$TMP/full.jsonl" && ok "completed file identical" || not_ok "completed file identical"
# a page whose rows are not the expected ones: the layout check
rm -r "$mdest"; cp -r "$TMP/hf" "$TMP/hf-bad"
sed -i 's/"row_idx": 1601/"row_idx": 1605/' "$TMP/hf-bad/rows/1600-4.json"
expect_code 3 "wrong row_idx: exit 3" "$DSA_BIN" datasets fetch mrcr --base-url "file://$TMP/hf-bad" --hub-url "file://$TMP/hub"
grep -q "is not the complete 8-needle row_idx 1601" "$TMP/err" && ok "row_idx message" || not_ok "row_idx message"
expect_code 2 "fetch mrcr --needles 3" "$DSA_BIN" datasets fetch mrcr --needles 3
expect_code 2 "fetch nothing" "$DSA_BIN" datasets fetch
expect_code 2 "fetch unknown" "$DSA_BIN" datasets fetch imagenet
done_testing
