#!/usr/bin/env bash
# scripts/capture_traces.py without torch: its MRCR reading (ids and bins as dsa-eval's reader
# gives them), rendering and trimming reproduce what the H200 capture wrote into the fixture
# (tests/data/traces: the manifest's spans and the trace's token ids).
. "$(dirname "$0")/lib.sh"
require_python
cat >"$TMP/check.py" <<'PY'
import json, struct, sys
sys.path.insert(0, sys.argv[1] + "/scripts")
import capture_traces as c

src, data = sys.argv[1], sys.argv[2]
rows = list(c.mrcr_rows(src + "/datasets/samples/mrcr-synth-8needle.jsonl"))
print("ids", " ".join(r[0] for r in rows))
print("bins", " ".join(c.BIN_LABELS[r[1]] for r in rows))
tok = c.WordTokenizer(4096)
rid, b, msgs, nm = rows[0]
msgs, nm = c.trim(msgs, nm, 2300, tok)
ids, needle, question = c.render(msgs, nm, tok)
man = json.loads(open(data + "/traces/manifest.jsonl").read())
print("manifest", man["id"] == rid, man["bin"] == c.BIN_LABELS[b], man["needle"] == needle,
      man["question"] == question, man["context_tokens"] == len(ids))
blob = open(data + "/traces/n8_r0000.safetensors", "rb").read()
n = struct.unpack("<Q", blob[:8])[0]
h = json.loads(blob[8:8 + n])
lo, hi = h["tokens"]["data_offsets"]
stored = list(struct.unpack("<%di" % ((hi - lo) // 4), blob[8 + n + lo:8 + n + hi]))
print("tokens", stored == ids, len(stored))
PY
expect_success "script helpers without torch" "$DSA_PYTHON" "$TMP/check.py" "$DSA_SRC" "$DSA_DATA"
grep -q '^ids n8/r0000 n8/r0001 n8/r0002 n8/r0003 n8/r0004 n8/r0005 n8/r0006 n8/r0007 n8/r0008$' "$TMP/out" && ok "row ids as dsa-eval numbers them" || not_ok "row ids as dsa-eval numbers them"
grep -q '^bins ≤8K ≤8K ≤8K ≤16K ≤16K ≤16K ≤32K ≤32K ≤32K$' "$TMP/out" && ok "bins from the rows' bin field" || not_ok "bins from the rows' bin field"
grep -q '^manifest True True True True True$' "$TMP/out" && ok "trimmed row: the fixture's id, bin, spans and length" || not_ok "trimmed row: the fixture's id, bin, spans and length"
grep -q '^tokens True 2259$' "$TMP/out" && ok "the fixture's token ids, re-tokenized here" || not_ok "the fixture's token ids, re-tokenized here"
done_testing
