#!/bin/bash
# bundle_runtime.sh BUILD_DIR OUT.txz: packs dsa-eval, dsa-test-server and bench_curl_ref of a
# build (stripped), the shared libraries they need that a newer distribution may lack, and GNU
# time into one archive, for a machine that has none of the build's packages (the H200 machine
# of bench/cpu_host_device.sh). Unpacked to R, R/build/ holds wrappers with the build tree's
# names (dsa-eval, tests/dsa-test-server, bench/bench_curl_ref) that set LD_LIBRARY_PATH=R/lib
# for themselves only, so the host's own programs (python3, scipy) keep the host's libraries.
# glibc, libstdc++ and libgcc_s stay the host's: they are backward compatible.
# SPDX-License-Identifier: GPL-3.0-or-later
set -euo pipefail
B=$(cd "${1:?build dir}" && pwd) OUTF=$(realpath -m "${2:?output .txz}")
R=$(mktemp -d /tmp/bundle.XXXXXX); trap 'rm -rf "$R"' EXIT
mkdir -p "$R/lib" "$R/bin" "$R/real" "$R/build/tests" "$R/build/bench"
bins=("$B/dsa-eval" "$B/tests/dsa-test-server" "$B/bench/bench_curl_ref")
for b in "${bins[@]}"; do ldd "$b" | awk '$3 ~ /^\// {print $3}'; done | sort -u |
    grep -vE 'libc\.so|libm\.so|libresolv|libstdc\+\+|libgcc_s|ld-linux' | xargs -I{} cp -L {} "$R/lib/"
for b in "${bins[@]}"; do cp "$b" "$R/real/"; done
strip "$R"/real/*
cp /usr/bin/time "$R/bin/time"
for p in dsa-eval tests/dsa-test-server bench/bench_curl_ref; do
    printf '#!/bin/sh\nR=$(cd "$(dirname "$0")" && pwd)\nwhile [ ! -d "$R/real" ]; do R=$(dirname "$R"); done\nLD_LIBRARY_PATH="$R/lib" exec "$R/real/%s" "$@"\n' \
        "$(basename $p)" >"$R/build/$p"
    chmod +x "$R/build/$p"
done
tar -cJf "$OUTF" -C "$R" .
echo "bundle_runtime: $OUTF ($(du -h "$OUTF" | cut -f1))"
