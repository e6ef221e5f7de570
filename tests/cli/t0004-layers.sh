#!/usr/bin/env bash
# Folders point one way (docs/design.md "The pipeline"): commands → run loop → evals → backends
# → kernels. The includes say so: evals/ include nothing of src/run/ nor the command line, the
# run loop nothing of the commands, and an eval command calls no eval by name — it fills the
# eval's options and hands its row to the run loop (dsa_loop_run).
# SPDX-License-Identifier: GPL-3.0-or-later
. "$(dirname "$0")/lib.sh"

bad=$(grep -lE '#include "(run/|commands\.h)' "$DSA_SRC"/evals/*.[ch] || true)
expect_eq "evals/ include nothing of src/run/ nor commands.h" "$bad" ""
bad=$(grep -lE '#include "commands\.h"' "$DSA_SRC"/src/run/*.[ch] || true)
expect_eq "src/run/ includes nothing of the commands" "$bad" ""
bad=$(grep -lE '#include "(evals|run|commands)' "$DSA_SRC"/src/backend/*.[ch] || true)
expect_eq "src/backend/ includes nothing above it" "$bad" ""

n=0
for f in "$DSA_SRC"/src/cmd_*.c; do
    grep -q 'dsa_loop_run(' "$f" || continue
    n=$((n + 1))
    name=$(basename "$f" .c)
    name=${name#cmd_}
    # calls of eval functions: dsa_<eval>_… or dsa_inproc_… followed by "("
    calls=$(grep -oE '\bdsa_(mrcr|gsm8k|ruler|inproc)_[a-z0-9_]+ *\(' "$f" || true)
    expect_eq "cmd_$name.c calls no eval function" "$calls" ""
    grep -q "dsa_loop_run(dsa_eval_find(\"$name\")" "$f" && ok "cmd_$name.c runs its table row" ||
        not_ok "cmd_$name.c runs its table row"
done
[ "$n" -ge 3 ] && ok "the eval commands found ($n)" || not_ok "the eval commands found ($n)"
done_testing
