# test_structure.sh - tools/structure_check.py: it passes on the tree, and on a copy of the tree with planted
# violations it fails and names each one (a function over 120 lines, an include from a lower layer to a
# higher one, a public header including a higher part's, the umbrella header from inside the library, a
# public header missing from the umbrella, a circle between parts, a circle between files), while a marked
# data table and a function of exactly 120 lines pass
. "$JR_ROOT/tests/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
CHECK="$JR_ROOT/tools/structure_check.py"

if "$PY" "$CHECK" >"$JR_TMP/tree.out" 2>&1; then ok passes_on_the_tree
else fail passes_on_the_tree "$(tail -n 20 "$JR_TMP/tree.out")"; fi

# a copy of the tree with planted violations
T="$JR_TMP/tree"
mkdir -p "$T/tools" && cp -R "$JR_ROOT/src" "$JR_ROOT/include" "$T/" && cp "$CHECK" "$T/tools/"
if "$PY" "$T/tools/structure_check.py" >"$JR_TMP/copy.out" 2>&1; then ok passes_on_the_copy
else fail passes_on_the_copy "$(tail -n 20 "$JR_TMP/copy.out")"; fi

body() { # NAME LINES: a function of exactly LINES lines
  echo "int $1(int x) {"
  i=2; while [ $i -lt "$2" ]; do echo "    x += $i;"; i=$((i + 1)); done
  echo "}"
}
{
  echo '/* planted: lengths */'
  body planted_long 121
  body planted_exact 120
  echo '/* structure-check: data table */'
  body planted_table 130
} >"$T/src/core/zz_planted_len.c"
# core (layer 0) includes a train header (layer 4)
printf '#include "judgerl/grpo_trainer.h"\nint planted_up(void) { return 0; }\n' >"$T/src/core/zz_planted_up.c"
# the umbrella header from inside the library
printf '#include "judgerl/judgerl.h"\nint planted_umbrella(void) { return 0; }\n' >"$T/src/nn/zz_planted_umb.c"
# a public header of nn (its function is defined in src/nn/) including reward's, and missing from judgerl.h
printf '#include "judgerl/reward.h"\nint planted_nn_api(void);\n' >"$T/include/judgerl/zz_planted.h"
printf '#include "judgerl/zz_planted.h"\nint planted_nn_api(void) { return 1; }\n' >"$T/src/nn/zz_planted_api.c"
# sample and reward (one layer) include each other's headers: a circle between parts
printf '#include "judgerl/reward.h"\nint planted_s(void) { return 0; }\n' >"$T/src/sample/zz_planted_s.c"
printf '#include "judgerl/sampler.h"\nint planted_r(void) { return 0; }\n' >"$T/src/reward/zz_planted_r.c"
# two files of one part calling each other: a circle between files
printf 'int planted_b(int);\nint planted_a(int n) { return n ? planted_b(n - 1) : 0; }\n' >"$T/src/verify/zz_planted_a.c"
printf 'int planted_a(int);\nint planted_b(int n) { return n ? planted_a(n - 1) : 1; }\n' >"$T/src/verify/zz_planted_b.c"

"$PY" "$T/tools/structure_check.py" >"$JR_TMP/planted.out" 2>&1
rc=$?
[ "$rc" -eq 1 ] && ok fails_on_planted_violations || fail fails_on_planted_violations "exit $rc: $(tail -n 5 "$JR_TMP/planted.out")"

expect_line() { # NAME PATTERN (grep -E) that one line of the planted run's output must match
  if grep -Eq -- "$2" "$JR_TMP/planted.out"; then ok "$1"; else fail "$1" "no line matches '$2' in: $(cat "$JR_TMP/planted.out")"; fi
}
absent_line() { # NAME PATTERN that no line may match
  if grep -Eq -- "$2" "$JR_TMP/planted.out"; then fail "$1" "$(grep -E -- "$2" "$JR_TMP/planted.out")"; else ok "$1"; fi
}
expect_line long_function '^structure: src/core/zz_planted_len\.c:2: function planted_long is 121 lines'
absent_line exactly_120_lines_pass 'planted_exact'
expect_line marked_table_is_listed '^note: excepted \(structure-check: data table\): src/core/zz_planted_len\.c:[0-9]+ planted_table, 130 lines'
absent_line marked_table_is_no_violation '^structure: .*planted_table'
expect_line lower_layer_includes_higher '^structure: src/core/zz_planted_up\.c:1: core \(layer 0\) includes include/judgerl/grpo_trainer\.h of train \(layer 4\)'
expect_line umbrella_inside_library '^structure: src/nn/zz_planted_umb\.c:1: includes the umbrella header judgerl\.h'
expect_line public_header_includes_higher '^structure: include/judgerl/zz_planted\.h:1: nn \(layer 1\) includes include/judgerl/reward\.h of reward \(layer 3\)'
expect_line header_missing_from_umbrella '^structure: include/judgerl/judgerl\.h does not include judgerl/zz_planted\.h'
expect_line circle_between_parts '^structure: circle between parts: (reward -> sample -> reward|sample -> reward -> sample)'
expect_line circle_between_files '^structure: circle between files: src/verify/zz_planted_a\.c -> src/verify/zz_planted_b\.c -> src/verify/zz_planted_a\.c'
# nothing else: the planted run's violations are the copy's (none when passes_on_the_copy) plus these 7
n=$(grep -c '^structure: ' "$JR_TMP/planted.out"); n0=$(grep -c '^structure: ' "$JR_TMP/copy.out")
[ $((n - n0)) -eq 7 ] && ok exactly_the_planted_violations ||
  fail exactly_the_planted_violations "$n violations, $n0 before planting: $(grep '^structure: ' "$JR_TMP/planted.out")"
