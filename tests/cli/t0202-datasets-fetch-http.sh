#!/usr/bin/env bash
# dsa-eval datasets fetch over real HTTP, against a local stand-in for the HF rows API, the Hub
# API and GitHub raw (a small python http.server): the query strings sent, retry after a 503,
# a 404 page, GSM8K resume through an HTTP Range request, and a server that ignores Range.
# SPDX-License-Identifier: GPL-3.0-or-later
. "$(dirname "$0")/lib.sh"

require_python
[ -f "$DSA_DATA/gsm8k/test.jsonl" ] || { echo "Bail out! no '$DSA_DATA/gsm8k/test.jsonl'"; exit 1; }
export DSA_EVAL_CACHE="$TMP/cache"
unset DSA_EVAL_HF_BASE DSA_EVAL_HUB_BASE DSA_EVAL_GSM8K_BASE
REV=f4c69fae7cf81f7ca26b9fee34b392a50f6b8a1d
COMMIT=3101c7d5072418e28b9008a6636bde82a006892c

# the rows behind the pages: 800 official-layout 8-needle rows, pages of 4 as files
"$DSA_PYTHON" - "$TMP" <<'PY'
import json, os, sys
tmp = sys.argv[1]
block_to_bin = [5, 2, 6, 3, 0, 7, 4, 1]
os.makedirs(f"{tmp}/pages")
rows = []
for r in range(800):
    k = block_to_bin[r // 100]
    lo, hi = (4096 << k if k else 4096), 8192 << k
    rows.append({"prompt": json.dumps([{"role": "user", "content": f"row {r}"}]), "answer": "abcdefghijX",
                 "random_string_to_prepend": "abcdefghij", "n_needles": 8, "desired_msg_index": 1,
                 "total_messages": 1, "n_chars": int((lo + (hi - lo) * (0.2 + 0.006 * (r % 100))) * 4.85),
                 "date_added": "04-12-2025"})
for o in range(0, 800, 4):
    json.dump({"rows": [{"row_idx": 1600 + o + i, "row": rows[o + i], "truncated_cells": []} for i in range(4)],
               "num_rows_total": 2400, "num_rows_per_page": 100, "partial": False},
              open(f"{tmp}/pages/{1600 + o}-4.json", "w"))
with open(f"{tmp}/expected.jsonl", "w") as f:
    for r in rows:
        f.write(json.dumps(r, separators=(",", ":"), ensure_ascii=False) + "\n")
PY

cat >"$TMP/server.py" <<'PY'
import http.server, json, os, sys, urllib.parse
tmp, rev, commit, gsm = sys.argv[1:5]
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def send(self, code, body, headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        with open(f"{tmp}/requests.log", "a") as log:
            log.write(f"{self.path} range={self.headers.get('Range')}\n")
        if u.path == "/api/datasets/openai/mrcr":
            return self.send(200, json.dumps({"id": "openai/mrcr", "sha": rev}).encode())
        if u.path == "/rows":
            q = urllib.parse.parse_qs(u.query)
            if (q.get("dataset"), q.get("config"), q.get("split")) != (["openai/mrcr"], ["default"], ["train"]):
                return self.send(400, b'{"error":"bad parameters"}')
            o, l = q["offset"][0], q["length"][0]
            flag = f"{tmp}/fail-once-{o}"
            if os.path.exists(flag):
                os.remove(flag)
                return self.send(503, b'{"error":"try later"}')
            p = f"{tmp}/pages/{o}-{l}.json"
            if not os.path.exists(p):
                return self.send(404, b'{"error":"no such page"}')
            return self.send(200, open(p, "rb").read(), [("Content-Type", "application/json")])
        if u.path == f"/{commit}/grade_school_math/data/test.jsonl":
            data = open(gsm, "rb").read()
            rng = self.headers.get("Range")
            if rng and not os.path.exists(f"{tmp}/ignore-range"):
                start = int(rng.split("=")[1].split("-")[0])
                return self.send(206, data[start:], [("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")])
            return self.send(200, data)
        self.send(404, b"not found")
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
open(f"{tmp}/port.tmp", "w").write(str(s.server_address[1]))
os.rename(f"{tmp}/port.tmp", f"{tmp}/port")
s.serve_forever()
PY
"$DSA_PYTHON" "$TMP/server.py" "$TMP" "$REV" "$COMMIT" "$DSA_DATA/gsm8k/test.jsonl" &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 100); do [ -f "$TMP/port" ] && break; sleep 0.1; done
URL="http://127.0.0.1:$(cat "$TMP/port")"

mdest="$DSA_EVAL_CACHE/mrcr/$REV"
touch "$TMP/fail-once-1640"
expect_success "fetch mrcr over http" "$DSA_BIN" datasets fetch mrcr --base-url "$URL" --hub-url "$URL"
cmp -s "$mdest/8needle.jsonl" "$TMP/expected.jsonl" && ok "rows identical" || not_ok "rows identical"
grep -q '^/rows?dataset=openai%2Fmrcr&config=default&split=train&offset=1600&length=4 ' "$TMP/requests.log" &&
    ok "rows API query string" || not_ok "rows API query string"
expect_eq "200 pages, one retried" "$(grep -c '^/rows?' "$TMP/requests.log")" 201
grep -q "HTTP 503; retrying in 1 s" "$TMP/err" && ok "503 retried" || not_ok "503 retried"

rm -r "$mdest"
mv "$TMP/pages/1700-4.json" "$TMP/1700-4.json"
expect_code 4 "a 404 page: exit 4" "$DSA_BIN" datasets fetch mrcr --base-url "$URL" --hub-url "$URL"
grep -q "cannot fetch '$URL/rows?dataset=openai%2Fmrcr&config=default&split=train&offset=1700&length=4': HTTP 404" "$TMP/err" &&
    ok "404 message names the URL" || not_ok "404 message names the URL"
expect_eq "rows before the missing page kept" "$(wc -l <"$mdest/8needle.jsonl.part" | tr -d ' ')" 100
mv "$TMP/1700-4.json" "$TMP/pages/"
expect_success "resume over http" "$DSA_BIN" datasets fetch mrcr --base-url "$URL" --hub-url "$URL"
cmp -s "$mdest/8needle.jsonl" "$TMP/expected.jsonl" && ok "resumed rows identical" || not_ok "resumed rows identical"

gdest="$DSA_EVAL_CACHE/gsm8k/$COMMIT"
mkdir -p "$gdest"
head -c 1000 "$DSA_DATA/gsm8k/test.jsonl" >"$gdest/test.jsonl.part"
: >"$TMP/requests.log"
expect_success "gsm8k resume over http (Range)" "$DSA_BIN" datasets fetch gsm8k --split test --base-url "$URL"
grep -q "range=bytes=1000-" "$TMP/requests.log" && ok "Range: bytes=1000- sent" || not_ok "Range: bytes=1000- sent"
cmp -s "$gdest/test.jsonl" "$DSA_DATA/gsm8k/test.jsonl" && ok "resumed gsm8k identical" ||
    not_ok "resumed gsm8k identical"
rm "$gdest"/test.jsonl*
head -c 1000 "$DSA_DATA/gsm8k/test.jsonl" | tr 'a-z' 'A-Z' >"$gdest/test.jsonl.part"
touch "$TMP/ignore-range"
expect_success "a server that ignores Range" "$DSA_BIN" datasets fetch gsm8k --split test --base-url "$URL"
grep -q "does not serve byte ranges; downloading it from the start" "$TMP/err" && ok "restart noted" ||
    not_ok "restart noted"
cmp -s "$gdest/test.jsonl" "$DSA_DATA/gsm8k/test.jsonl" && ok "whole file taken, stale .part bytes dropped" ||
    not_ok "whole file taken, stale .part bytes dropped"
done_testing
