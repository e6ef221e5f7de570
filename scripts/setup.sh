#!/usr/bin/env bash
# Installs the build and test dependencies (Debian 12 / Ubuntu 22.04+), then configures and
# builds dsa-eval into ./build. Usage: scripts/setup.sh [extra cmake args...]
# DSA_SKIP_APT=1 skips the package installation (for machines that already have them).
set -euo pipefail
cd "$(dirname "$0")/.."

# The test references are part of the test suite, not options: every test runs and none is
# skipped (CPython difflib/re/json, numpy and scipy, prometheus_client, and a headless browser
# that renders the HTML report).
packages=(build-essential g++ cmake pkg-config git
          libcurl4-openssl-dev libjansson-dev libyajl-dev libsimdjson-dev libpcre2-dev libgsl-dev libssl-dev
          libmicrohttpd-dev libcmocka-dev libicu-dev zlib1g-dev curl openssl
          python3 python3-numpy python3-scipy python3-prometheus-client)

if [ "${DSA_SKIP_APT:-0}" != 1 ]; then
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO=sudo
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    # Debian names the browser chromium; Ubuntu's deb of that name is chromium-browser
    if apt-cache show chromium >/dev/null 2>&1; then packages+=(chromium); else packages+=(chromium-browser); fi
    $SUDO apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
fi

# nvcc is optional: with it the CUDA kernels are built for sm_90a as well
if [ -z "${CUDACXX:-}" ] && ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
    export CUDACXX=/usr/local/cuda/bin/nvcc
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build build -j"$(nproc)"
echo "dsa-eval: built ./build/dsa-eval"
