#!/bin/bash
# One device call for a merged main on the H200 (bench/RESULTS.md "Merged main on the H200"):
# kernels check and sanitizers, traces runs on CUDA against the CPU, an in-process mrcr on CUDA
# up to 1M, kernels bench. Run from the repository root with .devrt/ holding a CUDA build of
# dsa-eval (.devrt/dsa-eval) and the shared libraries it needs (.devrt/lib); logs go to $OUT.
# SPDX-License-Identifier: GPL-3.0-or-later
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/.devrt/lib PYTHONUNBUFFERED=1
E=$PWD/.devrt/dsa-eval; W=/tmp/w; mkdir -p $W; S=compute-sanitizer
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; $E version | head -2
s0=$(date +%s)
$E kernels check > $OUT/check.txt 2>&1; echo "check rc=$?"; tail -1 $OUT/check.txt; grep -E 'FAIL' $OUT/check.txt | head -5
for k in logits_decode topk; do
  timeout 120 $S --tool memcheck $E kernels check --quick --reruns 1 -k $k > $W/mc.txt 2>&1; echo "memcheck $k rc=$?"; grep -E 'ERROR SUMMARY|passed' $W/mc.txt | tail -2
done
timeout 120 $S --tool racecheck $E kernels check --quick --reruns 0 -k logits_decode > $W/rc.txt 2>&1; echo "racecheck decode rc=$?"; grep -E 'RACECHECK SUMMARY|passed' $W/rc.txt | tail -2
echo "t=$(( $(date +%s) - s0 )) s"
for f in traces-ruler traces-ruler-glm; do
  for d in cpu cuda; do $E ruler --backend inprocess --device $d --traces tests/data/$f --topk 512 -q --out $W/$f-$d > $W/o.txt 2>&1; echo "ruler $f $d rc=$?"; sed -n 2,3p $W/o.txt; done
  $E compare $W/$f-cpu $W/$f-cuda 2>&1 | grep -i 'bit-identical\|identical' | head -2
done
for d in cpu cuda; do $E mrcr --backend inprocess --device $d --traces tests/data/traces -q --out $W/mt-$d > $W/o.txt 2>&1; echo "mrcr traces $d rc=$?"; tail -3 $W/o.txt; done
$E compare $W/mt-cpu $W/mt-cuda 2>&1 | grep -i 'identical' | head -2
echo "t=$(( $(date +%s) - s0 )) s"
$E datasets synth mrcr --needles 8 --bins 8k,16k,32k,64k,128k,256k,512k,1m --per-bin 1 --seed 7 -o $W/s.jsonl
a=$(date +%s.%N); $E mrcr --backend inprocess --device cuda --dataset $W/s.jsonl -q --out $W/e2e > $OUT/e2e.txt 2>&1; echo "e2e rc=$? wall $(python3 -c "import sys;print(round(float(sys.argv[1])-float(sys.argv[2]),2))" $(date +%s.%N) $a) s"; cat $OUT/e2e.txt
cp $W/e2e/run-001.jsonl $OUT/e2e-run.jsonl
echo "t=$(( $(date +%s) - s0 )) s"
$E kernels bench -k S3a > $OUT/bench.txt 2>&1; $E kernels bench -k layer >> $OUT/bench.txt 2>&1; $E kernels bench -k S1 >> $OUT/bench.txt 2>&1; echo "bench rc=$?"; cat $OUT/bench.txt
echo "t=$(( $(date +%s) - s0 )) s"
