# Shared helpers for the CLI tests (sourced). TAP output: "ok N - title" / "not ok N - title".
# Environment from ctest: DSA_BIN (the binary), DSA_SRC, DSA_DATA (tests/data), DSA_BUILD,
# DSA_PYTHON, DSA_TEST_SERVER.
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
# require_python [MODULE...]: the test references are required, never skipped: without python3
# (or one of the modules) the script bails out, which ctest counts as a failure
require_python() {
    if [ -z "${DSA_PYTHON:-}" ]; then
        echo "Bail out! python3 is required by this test (scripts/setup.sh installs it)"; exit 1
    fi
    local m
    for m in "$@"; do
        "$DSA_PYTHON" -c "import $m" 2>/dev/null ||
            { echo "Bail out! python3 module '$m' is required (scripts/setup.sh installs it)"; exit 1; }
    done
}
done_testing() {
    echo "1..$tap_n"
    [ "$tap_failed" -eq 0 ]
}
