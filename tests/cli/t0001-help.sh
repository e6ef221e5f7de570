#!/usr/bin/env bash
# Every command answers --help with exit 0 and a usage line; bad invocations exit 2.
. "$(dirname "$0")/lib.sh"

expect_success "dsa-eval --version" "$DSA_BIN" --version
grep -q '^dsa-eval [0-9]' "$TMP/out" && ok "version line" || not_ok "version line"
expect_success "dsa-eval --help" "$DSA_BIN" --help
for cmd in $("$DSA_BIN" --help | awk '/^commands:/{f=1; next} f && NF {print $1}'); do
    expect_success "$cmd --help" "$DSA_BIN" "$cmd" --help
    grep -q '^usage: dsa-eval' "$TMP/out" && ok "$cmd --help prints usage" || not_ok "$cmd --help prints usage"
done
expect_code 2 "no command" "$DSA_BIN"
expect_code 2 "unknown command" "$DSA_BIN" frobnicate
grep -q "'frobnicate' is not a dsa-eval command" "$TMP/err" && ok "unknown command message" || not_ok "unknown command message"
expect_code 2 "unknown option" "$DSA_BIN" version --frob
done_testing
