#!/usr/bin/env bash
# dsa-eval kernels check: the C reference against its fp64 golden (what CI runs), the filter,
# a plugin build of the reference against the built-in one, and bad invocations.
. "$(dirname "$0")/lib.sh"

# kernels/ builds alone (docs/design.md): no header of src/ is included from it
bad=$(grep -rlE '#include "(util|backend|store|stats|evals|datasets|reports|commands)[/.]' "$DSA_SRC/kernels" || true)
expect_eq "kernels/ includes nothing from src/" "$bad" ""

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
# trace files (safetensors) written by an independent stdlib-only Python writer
PY=${DSA_PYTHON:-python3}
if command -v "$PY" >/dev/null 2>&1; then
    MK="$(dirname "$0")/make_trace.py"
    "$PY" "$MK" "$TMP/t.safetensors" 600 4 64
    expect_success "kernels trace" "$DSA_BIN" kernels trace "$TMP/t.safetensors" --device cpu --topk 512
    grep -q "^trace '$TMP/t.safetensors': T=600 rows=4 rope=neox,.*heads=64 on cpu$" "$TMP/out" && ok "trace header line" || not_ok "trace header line"
    expect_eq "one line per query row" "$(grep -c -E '^ +59[6-9] +[01]\.[0-9]{4}$' "$TMP/out")" "4"
    mean=$(sed -n 's/^mean recall@512 \([0-9.]*\), selection_sha256 [0-9a-f]\{64\}$/\1/p' "$TMP/out")
    awk -v m="$mean" 'BEGIN { exit !(m > 0.9 && m <= 1) }' && ok "recall in (0.9, 1] ($mean)" || not_ok "recall in (0.9, 1] ($mean)"
    h1=$(grep -o 'selection_sha256 [0-9a-f]*' "$TMP/out")
    expect_success "trace again" "$DSA_BIN" kernels trace "$TMP/t.safetensors" --device cpu --topk 512
    expect_eq "same selection" "$(grep -o 'selection_sha256 [0-9a-f]*' "$TMP/out")" "$h1"
    "$PY" "$MK" "$TMP/t32.safetensors" 300 2 32
    expect_success "trace with 32 heads" "$DSA_BIN" kernels trace "$TMP/t32.safetensors" --device cpu --topk 512 --variant weights=bf16
    grep -q 'weights=bf16,logits=f32,heads=32 on cpu' "$TMP/out" && ok "heads from the trace" || not_ok "heads from the trace"
    for bad in offsets dtype truncated; do
        "$PY" "$MK" "$TMP/bad.safetensors" 100 2 64 $bad
        expect_code 3 "bad trace ($bad)" "$DSA_BIN" kernels trace "$TMP/bad.safetensors" --device cpu
        grep -q "^dsa-eval: .*trace" "$TMP/err" && ok "bad trace message ($bad)" || not_ok "bad trace message ($bad)"
    done
    expect_code 3 "missing trace" "$DSA_BIN" kernels trace "$TMP/none.safetensors"
    grep -q "^dsa-eval: cannot read trace '$TMP/none.safetensors': No such file" "$TMP/err" && ok "missing trace message" || not_ok "missing trace message"
    expect_code 2 "trace without a file" "$DSA_BIN" kernels trace
fi
expect_code 4 "missing plugin" "$DSA_BIN" kernels check --kernels /nonexistent/libk.so
grep -q "^dsa-eval: cannot load kernels '/nonexistent/libk.so'" "$TMP/err" && ok "missing plugin message" || not_ok "missing plugin message"
# kernels bench times the CUDA kernels: without a GPU (CI) one line and exit 4
expect_code 2 "kernels bench --iters below 20" "$DSA_BIN" kernels bench --iters 5
grep -q "^dsa-eval: --iters must be >= 20, not 5$" "$TMP/err" && ok "--iters message" || not_ok "--iters message"
"$DSA_BIN" kernels check --device cuda -k no-such-case >/dev/null 2>&1
if [ $? -eq 4 ]; then
    expect_code 4 "kernels bench without a GPU" "$DSA_BIN" kernels bench
    expect_eq "one line on stderr" "$(wc -l < "$TMP/err")" "1"
    grep -q "^dsa-eval: 'kernels bench' times the CUDA kernels, and " "$TMP/err" && ok "no-GPU message" || not_ok "no-GPU message"
    expect_eq "nothing on stdout" "$(wc -c < "$TMP/out")" "0"
    expect_code 4 "kernels bench --json without a GPU" "$DSA_BIN" kernels bench --json -k S4
else
    expect_code 2 "kernels bench -k matching no shape" "$DSA_BIN" kernels bench -k no-such-shape
fi
expect_code 2 "unknown device" "$DSA_BIN" kernels check --device tpu
expect_code 2 "no subcommand" "$DSA_BIN" kernels
expect_code 2 "unknown subcommand" "$DSA_BIN" kernels frob
done_testing
