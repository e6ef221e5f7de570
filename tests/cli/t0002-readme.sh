#!/usr/bin/env bash
# README.md shows each command's --help verbatim (section "Commands"): the text a user reads
# there is the text the binary prints. Regenerate the blocks when an option changes.
. "$(dirname "$0")/lib.sh"

help_text() {   # the same composition as the README block of command $1
    "$DSA_BIN" "$1" --help
    case $1 in
    datasets) echo; "$DSA_BIN" datasets synth mrcr --help
              for s in fetch info; do echo; "$DSA_BIN" datasets $s --help; done ;;
    grade) for s in mrcr gsm8k; do echo; "$DSA_BIN" grade $s --help; done ;;
    esac
}

readme_block() {  # the first ``` block after the heading "### `dsa-eval $1`"
    awk -v h="### \`dsa-eval $1\`" '
        $0 == h { f = 1; next }
        f == 1 && /^```/ { f = 2; next }
        f == 2 && /^```/ { exit }
        f == 2 { print }' "$DSA_SRC/README.md"
}

for cmd in $("$DSA_BIN" --help | awk '/^commands:/{f=1; next} f && NF {print $1}'); do
    help_text "$cmd" >"$TMP/help.txt" 2>&1
    readme_block "$cmd" >"$TMP/readme.txt"
    if [ -s "$TMP/readme.txt" ] && cmp -s "$TMP/help.txt" "$TMP/readme.txt"; then
        ok "README shows 'dsa-eval $cmd --help' verbatim"
    else
        not_ok "README shows 'dsa-eval $cmd --help' verbatim"
        diff "$TMP/readme.txt" "$TMP/help.txt" | head -10 | sed 's/^/#   /'
    fi
done
# the first lines give the two commands: set-up + main job, then the tests
first=$(grep -m2 -E '^(scripts/setup.sh|ctest) ' "$DSA_SRC/README.md" | tr '\n' '|')
expect_eq "README's two commands" "$first" \
    "scripts/setup.sh && ./build/dsa-eval mrcr --backend inprocess --device cpu --out runs/demo|ctest --test-dir build --output-on-failure -j2|"
done_testing
