# Shared helpers for the CLI tests (sourced). TAP output: "ok N - title" / "not ok N - title".
# Environment from ctest: DSA_BIN (the binary), DSA_SRC, DSA_SHARED, DSA_BUILD, DSA_PYTHON,
# DSA_TEST_SERVER.
set -u
: "${DSA_BIN:?run through ctest}"
tap_n=0
tap_failed=0
TMP=$(mktemp -d "${TMPDIR:-/tmp}/dsa-cli.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

ok() { tap_n=$((tap_n + 1)); echo "ok $tap_n - $1"; }
not_ok() { tap_n=$((tap_n + 1)); tap_failed=$((tap_failed + 1)); echo "not ok $tap_n - $1"; }

# expect_success TITLE CMD...: the command exits 0
expect_success() {
    local title=$1; shift
    if "$@" >"$TMP/out" 2>"$TMP/err"; then ok "$title"; else
        not_ok "$title (exit $?)"; sed 's/^/#   /' "$TMP/err" | head -20; fi
}
# expect_code CODE TITLE CMD...: the command exits with CODE
expect_code() {
    local code=$1 title=$2; shift 2
    "$@" >"$TMP/out" 2>"$TMP/err"; local got=$?
    if [ "$got" -eq "$code" ]; then ok "$title"; else
        not_ok "$title (exit $got, want $code)"; sed 's/^/#   /' "$TMP/err" | head -20; fi
}
# expect_eq TITLE GOT WANT
expect_eq() {
    if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1"; echo "#   got:  $2"; echo "#   want: $3"; fi
}
done_testing() {
    echo "1..$tap_n"
    [ "$tap_failed" -eq 0 ]
}
