#!/bin/bash
# bench_window.sh: does `dsa-eval mrcr --concurrency C` keep its window full? dsa-test-server
# holds every generation answer --delay-ms and samples, every 10 ms, how many requests it holds
# (--inflight-log). Printed: the share of the run's wall time (first to last sample with a
# request held) with >= 90 % of C held, the longest stretch below that, and the client's CPU
# seconds (user + system, /usr/bin/time) per request. The records are checked for 'ok' status.
# "phases" splits the wall time: the ramp before the window first holds 90 %, the drain after it
# last does, and the share held between them (the refills after answers).
# Reference, same run: bench_curl_ref (a plain libcurl multi loop, same concurrency) sends the
# very bodies the server logged (--log-requests) to a fresh server with the same delay; its
# CPU per request, its window (the same --inflight-log measure) and the ratio are printed. $DSA_EVAL replaces BUILD_DIR/dsa-eval (to time
# another build against the same reference); $TIME replaces /usr/bin/time (GNU time). NOREF=1
# skips the reference (and the request log it replays): for long runs that measure the window only.
#
#   bench/bench_window.sh BUILD_DIR [ROWS] [CONCURRENCY] [DELAY_MS] [BIN]
# defaults: 3000 rows, concurrency 1000, 2000 ms, bin 8k
# SPDX-License-Identifier: GPL-3.0-or-later
set -euo pipefail
B=$(cd "${1:?build dir}" && pwd)
ROWS=${2:-3000} C=${3:-1000} DELAY=${4:-2000} BIN=${5:-8k}
T=$(mktemp -d /tmp/bench_window.XXXXXX)
trap 'kill $SRV 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
PER=$(((ROWS + 2) / 3))
LOGREQ=(--log-requests "$T/req.jsonl"); [ -z "${NOREF:-}" ] || LOGREQ=()
"$B/dsa-eval" datasets synth mrcr --needles 2,4,8 --bins "$BIN" --per-bin "$PER" --seed 1 \
    -o "$T/ds.jsonl" >/dev/null
"$B/tests/dsa-test-server" --port 0 --port-file "$T/port" --delay-ms "$DELAY" \
    --max-connections $((C + 64)) --inflight-log "$T/inflight.txt" "${LOGREQ[@]}" 2>/dev/null &
SRV=$!
for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.05; done
"${TIME:-/usr/bin/time}" -f "%U %S %M" -o "$T/time" ${WRAP:-} "${DSA_EVAL:-$B/dsa-eval}" mrcr --endpoint "http://127.0.0.1:$(cat "$T/port")" \
    --dataset "$T/ds.jsonl" --needles 2,4,8 --bins "$BIN" -c "$C" --max-tokens 256 -q \
    -o "$T/run" >/dev/null
kill $SRV; wait $SRV 2>/dev/null || true
rm -f "$T/port"
if [ -n "${NOREF:-}" ]; then # the window only: no reference run, no per-POST ratio
    touch "$T/inflight-ref.txt" "$T/ref" "$T/req.jsonl"
else
"$B/tests/dsa-test-server" --port 0 --port-file "$T/port" --delay-ms "$DELAY" \
    --max-connections $((C + 64)) --inflight-log "$T/inflight-ref.txt" 2>/dev/null &
SRV=$!
for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.05; done
"$B/bench/bench_curl_ref" "$T/req.jsonl" "http://127.0.0.1:$(cat "$T/port")" "$C" >"$T/ref"
kill $SRV; wait $SRV 2>/dev/null || true
fi
python3 - "$T" "$C" <<'PY'
import glob, json, os, sys
t, c = sys.argv[1], int(sys.argv[2])
def window(name):
    s = [tuple(map(float, l.split())) for l in open(t + name) if l.count(" ") == 1]
    held = [i for i, (_, n) in enumerate(s) if n > 0]
    s = s[held[0]:held[-1] + 1]
    dt = [s[i + 1][0] - s[i][0] for i in range(len(s) - 1)]
    wall = sum(dt)
    full = sum(d for d, (_, n) in zip(dt, s) if n >= 0.9 * c)
    gap = cur = 0.0
    for d, (_, n) in zip(dt, s):
        cur = 0.0 if n >= 0.9 * c else cur + d
        gap = max(gap, cur)
    return full, wall, gap
def phases(name):
    # where the time below 0.9 C lies: before the window first fills (ramp), after it last
    # held (drain), and between (refill after answers): the share held in the middle part
    s = [tuple(map(float, l.split())) for l in open(t + name) if l.count(" ") == 1]
    held = [i for i, (_, n) in enumerate(s) if n > 0]
    s = s[held[0]:held[-1] + 1]
    full = [i for i, (_, n) in enumerate(s) if n >= 0.9 * c]
    if not full:
        return "never >= %d held" % (0.9 * c)
    a, b = full[0], full[-1]
    mid = [s[i + 1][0] - s[i][0] for i in range(a, b)]
    mfull = sum(d for d, i in zip(mid, range(a, b)) if s[i][1] >= 0.9 * c)
    return "ramp %.2f s, drain %.2f s, between them %.1f %% of %.2f s held >= %d" % (
        s[a][0] - s[0][0], s[-1][0] - s[b][0], 100 * mfull / max(sum(mid), 1e-9), sum(mid), 0.9 * c)
full, wall, gap = window("/inflight.txt")
recs = [json.loads(l) for f in glob.glob(t + "/run/run-*.jsonl") for l in open(f).read().splitlines()[1:]]
ok = sum(r["status"] == "ok" for r in recs)
u, sy, rss = open(t + "/time").read().split()
n = max(len(recs), 1)
print("window: %.1f %% of %.2f s wall with >= %d held (longest gap %.2f s); %d records, %d ok; "
      "client CPU %.3f s = %.0f us/request, max RSS %d MB" % (100 * full / wall, wall, 0.9 * c, gap,
      len(recs), ok, float(u) + float(sy), 1e6 * (float(u) + float(sy)) / n, int(rss) // 1024))
if os.path.getsize(t + "/ref") == 0:  # NOREF=1
    print("phases: client %s" % phases("/inflight.txt"))
    sys.exit(0)
rfull, rwall, rgap = window("/inflight-ref.txt")
posts = sum(1 for l in open(t + "/req.jsonl") if l.startswith('{"method":"POST"'))
ref = open(t + "/ref").read().split()
ref_us = float(ref[ref.index("us/request") - 1])
us = 1e6 * (float(u) + float(sy)) / posts
print("client CPU per POST %.0f us (%d POSTs: /tokenize and chat); %s; ratio %.2fx"
      % (us, posts, open(t + "/ref").read().strip(), us / ref_us))
print("reference window: %.1f %% of %.2f s wall with >= %d held (longest gap %.2f s)"
      % (100 * rfull / rwall, rwall, 0.9 * c, rgap))
print("phases: client %s; reference %s" % (phases("/inflight.txt"), phases("/inflight-ref.txt")))
PY
