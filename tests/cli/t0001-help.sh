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
# typos get a suggestion (adjacent transpositions count as one edit); values name the option
expect_code 2 "mistyped command" "$DSA_BIN" comapre a b
grep -qx "dsa-eval: 'comapre' is not a dsa-eval command; did you mean 'compare'?" "$TMP/err" \
    && ok "did you mean 'compare'" || not_ok "did you mean 'compare'"
expect_code 2 "mistyped option" "$DSA_BIN" mrcr --endpiont http://x --out "$TMP/o"
grep -qx "dsa-eval: unknown option: '--endpiont'; did you mean '--endpoint'?" "$TMP/err" \
    && ok "did you mean '--endpoint'" || not_ok "did you mean '--endpoint'"
expect_code 2 "far-off option" "$DSA_BIN" compare --zzzzzz a b
grep -q "did you mean" "$TMP/err" && not_ok "no suggestion for a far-off option" || ok "no suggestion for a far-off option"
expect_code 2 "bad number" "$DSA_BIN" mrcr --runs three
grep -qx "dsa-eval: --runs: expected a number: 'three'" "$TMP/err" && ok "bad value names the option" \
    || not_ok "bad value names the option"
expect_code 2 "bad number, --opt=value form" "$DSA_BIN" compare a b --resamples=lots
grep -qx "dsa-eval: --resamples: expected a number: 'lots'" "$TMP/err" && ok "bad --opt=value names the option" \
    || not_ok "bad --opt=value names the option"
# a stray argument to a command that takes none: one line naming it and the command's help
for cmd in mrcr ruler; do
    expect_code 2 "$cmd: stray argument" "$DSA_BIN" "$cmd" stray --out "$TMP/o"
    grep -qx "dsa-eval: unexpected argument 'stray' (see 'dsa-eval $cmd --help')" "$TMP/err" \
        && ok "$cmd: the stray argument named" || not_ok "$cmd: the stray argument named"
done

# a reader that stops early (| head) ends the output quietly, as git does: no message, and
# the shell sees SIGPIPE (141), not the I/O error status 5
# (the reader is gone before the first write: `true` exits while the writer sleeps)
{ sleep 0.5; "$DSA_BIN" compare "$DSA_DATA/compare/main3" "$DSA_DATA/compare/pr3" --resamples 100 2>"$TMP/pipe.err"
  echo "rc=$?" >"$TMP/pipe.rc"; } | true
expect_eq "closed stdout: no message" "$(cat "$TMP/pipe.err")" ""
expect_eq "closed stdout: status of SIGPIPE" "$(cat "$TMP/pipe.rc")" "rc=141"
done_testing
