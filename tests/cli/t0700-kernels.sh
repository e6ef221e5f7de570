#!/usr/bin/env bash
# dsa-eval kernels check: the C reference against its fp64 golden (what CI runs), the filter,
# a plugin build of the reference against the built-in one, and bad invocations.
. "$(dirname "$0")/lib.sh"

expect_success "kernels check --device cpu --quick" "$DSA_BIN" kernels check --device cpu --quick
grep -q '^kernels check: cpu-reference on cpu vs the fp64 golden model' "$TMP/out" && ok "header line" || not_ok "header line"
grep -q ' 0 failed, 0 skipped$' "$TMP/out" && ok "no failure" || not_ok "no failure"
n=$(grep -c ' PASS ' "$TMP/out")
[ "$n" -ge 70 ] && ok "many cases ($n)" || not_ok "many cases ($n)"
for stage in k_prep q_prep logits_decode logits_prefill topk; do
    grep -q "^$stage .* PASS " "$TMP/out" && ok "stage $stage passes" || not_ok "stage $stage passes"
done

expect_success "filter -k topk/k=512" "$DSA_BIN" kernels check --device cpu --quick -k topk/k=512
expect_eq "filter keeps 5 rows" "$(grep -c '^topk ' "$TMP/out")" "5"
expect_eq "filter keeps only topk" "$(grep -c -E '^(k_prep|q_prep|logits)' "$TMP/out")" "0"

if [ -n "${DSA_TEST_PLUGIN:-}" ]; then
    expect_success "--kernels plugin vs the reference" "$DSA_BIN" kernels check --kernels "$DSA_TEST_PLUGIN" --quick -k logits_prefill/M=4 --reruns 3
    grep -q 'test-plugin (cpu reference copy) on cpu vs the C reference' "$TMP/out" && ok "plugin named" || not_ok "plugin named"
    grep -q ' 3/3$' "$TMP/out" && ok "determinism column" || not_ok "determinism column"
    expect_code 4 "plugin with a wrong ABI" "$DSA_BIN" kernels check --kernels "$DSA_TEST_PLUGIN_BAD"
    grep -q "ABI version differs" "$TMP/err" && ok "ABI message" || not_ok "ABI message"
fi
expect_code 4 "missing plugin" "$DSA_BIN" kernels check --kernels /nonexistent/libk.so
grep -q "^dsa-eval: cannot load kernels '/nonexistent/libk.so'" "$TMP/err" && ok "missing plugin message" || not_ok "missing plugin message"
expect_code 2 "unknown device" "$DSA_BIN" kernels check --device tpu
expect_code 2 "no subcommand" "$DSA_BIN" kernels
expect_code 2 "unknown subcommand" "$DSA_BIN" kernels frob
done_testing
