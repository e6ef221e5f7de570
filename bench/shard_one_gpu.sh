#!/bin/bash
# A sharded in-process run on one GPU (docs/runfiles.md "Sharding"): the unsharded run, then
# --shard 1/2 and 2/2 one after the other and both at once on the same GPU, each pair merged;
# prints the wall times and whether the merged records (id, bin, score, selection_sha256, needle
# retention, recall_last) equal the unsharded run's.
#   bench/shard_one_gpu.sh [DSA_EVAL [WORKDIR]]     (default: build/dsa-eval, /tmp/w)
# The H200 run of bench/RESULTS.md carried a CUDA build and its shared libraries in .devrt/.
# SPDX-License-Identifier: GPL-3.0-or-later
export PYTHONUNBUFFERED=1
[ -d "$PWD/.devrt/lib" ] && export LD_LIBRARY_PATH=$PWD/.devrt/lib
E=${1:-$PWD/.devrt/dsa-eval}; [ -x "$E" ] || E=$PWD/build/dsa-eval
W=${2:-/tmp/w}; mkdir -p $W
nvidia-smi -L 2>/dev/null; nproc; $E version | head -2
$E datasets synth mrcr --needles 8 --bins 8k,16k,32k,64k,128k,256k --per-bin 1 --seed 7 -o $W/s.jsonl
ls -la $W/s.jsonl
t() { local s=$(date +%s.%N); "$@" > $W/last.out 2>&1; local rc=$?; echo "rc=$rc wall $(python3 -c "import sys;print(round(float(sys.argv[1])-float(sys.argv[2]),2))" $(date +%s.%N) $s) s: ${*: -1}"; tail -12 $W/last.out; }
t $E mrcr --backend inprocess --device cuda --dataset $W/s.jsonl -q --out $W/all
t $E mrcr --backend inprocess --device cuda --dataset $W/s.jsonl -q --shard 1/2 --out $W/s1
t $E mrcr --backend inprocess --device cuda --dataset $W/s.jsonl -q --shard 2/2 --out $W/s2
s=$(date +%s.%N)
CUDA_VISIBLE_DEVICES=0 $E mrcr --backend inprocess --device cuda --dataset $W/s.jsonl -q --shard 1/2 --out $W/p1 > $W/p1.out 2>&1 &
CUDA_VISIBLE_DEVICES=0 $E mrcr --backend inprocess --device cuda --dataset $W/s.jsonl -q --shard 2/2 --out $W/p2 > $W/p2.out 2>&1 &
wait; echo "pair at once on one GPU: wall $(python3 -c "import sys;print(round(float(sys.argv[1])-float(sys.argv[2]),2))" $(date +%s.%N) $s) s"
t $E merge $W/m.jsonl $W/s1/run-001.jsonl $W/s2/run-001.jsonl
t $E merge $W/mp.jsonl $W/p1/run-001.jsonl $W/p2/run-001.jsonl
python3 - $W <<'PY'
import json, sys
w = sys.argv[1]
def recs(p):
    out = {}
    for i, l in enumerate(open(p)):
        if i == 0: continue
        r = json.loads(l)
        out[r["id"]] = (r.get("bin"), r.get("score"), r.get("selection_sha256"), r.get("needle_retention"), r.get("recall_last"))
    return out
a = recs(w + "/all/run-001.jsonl")
import glob
for m in ("m", "mp"):
    b = recs(w + "/" + m + ".jsonl")
    print(m, "ids", len(a), len(b), "equal records", a == b)
s1 = recs(w + "/s1/run-001.jsonl"); s2 = recs(w + "/s2/run-001.jsonl")
print("shard sizes", len(s1), len(s2), "disjoint", not (set(s1) & set(s2)))
for k in sorted(a): print(k, a[k])
PY
$E compare $W/all $W/m.jsonl 2>&1 | tail -12
