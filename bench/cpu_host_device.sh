#!/bin/bash
# cpu_host_device.sh BUNDLE.txz [ROWS_8K]: issue #16 measured on a host with cores to spare (the
# H200 machine: 16 cores): the window and client CPU per POST (bench_window.sh, ≤8K at
# concurrency 1000 and ≤128K at 100, twice each), `compare --threads` 1 vs 2 against scipy
# (bench_compare_cmd.py) and the in-process CPU reference with DSA_THREADS 1, 2 and 16
# (bench_inproc_cmd.py). BUNDLE: bench/bundle_runtime.sh of a build. Logs also go to $OUT.
# SPDX-License-Identifier: GPL-3.0-or-later
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
R=/tmp/rt; mkdir -p $R; tar -xJf "${1:?bundle}" -C $R
export TIME=$R/bin/time DSA_PYTHON=python3
nproc; uptime; cat /etc/os-release | head -2; python3 -c "import scipy; print('scipy', scipy.__version__)"
$R/build/dsa-eval version | head -1 || exit 1
s0=$(date +%s)
ROWS=${2:-3000}
for a in "$ROWS 1000 2000 8k" "150 100 2000 128k" "$ROWS 1000 2000 8k" "150 100 2000 128k"; do
  echo "== bench_window.sh $a"; bash bench/bench_window.sh $R/build $a 2>&1 | tail -5; echo "t=$(( $(date +%s) - s0 ))"
done 2>&1 | tee $OUT/window.txt
echo "== compare"; python3 bench/bench_compare_cmd.py --build $R/build --rounds 3 2>&1 | tee $OUT/compare.txt
echo "t=$(( $(date +%s) - s0 ))"
echo "== inproc"; python3 bench/bench_inproc_cmd.py --config 1t:$R/build/dsa-eval:1 --config 2t:$R/build/dsa-eval:2 --config 16t:$R/build/dsa-eval:16 --rounds 3 2>&1 | tee $OUT/inproc.txt
echo "t=$(( $(date +%s) - s0 ))"
