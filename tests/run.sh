#!/bin/sh
# run.sh - runs every test program against one or more builds and ends with one summary line.
# Usage: tests/run.sh BUILD_DIR...   (e.g. build/rel build/asan)
# A test program is build/<b>/tests/test_* (C), or tests/test_*.sh / tests/test_*.py (scripts,
# run once per build with JR_BIN pointing at that build's judgerl). Each prints one line per
# case: "ok - NAME", "FAIL - NAME" or "skip - NAME: reason". A program that exits non-zero
# without reporting a failed case counts as one failure; so does one that times out.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -gt 0 ] || set -- build/rel
logdir="$root/build/test-logs"
mkdir -p "$logdir"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:halt_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$root/tests/lsan.supp:print_suppressions=0}"
export JR_ROOT="$root"
passed=0; failed=0; skipped=0; failures=""
per_test_timeout=${JR_TEST_TIMEOUT:-900}

run_one() { # build name cmd...
  b=$1; name=$2; shift 2
  log="$logdir/$(basename "$b").$name.log"
  tmp=$(mktemp -d /tmp/jr-test-XXXXXX)
  JR_TMP="$tmp" JR_BIN="$root/$b/judgerl" JR_BUILD="$root/$b" timeout -k 10 "$per_test_timeout" "$@" >"$log" 2>&1
  rc=$?
  rm -rf "$tmp"
  ok=$(grep -c '^ok - ' "$log"); fl=$(grep -c '^FAIL - ' "$log"); sk=$(grep -c '^skip - ' "$log")
  if [ "$rc" -ne 0 ] && [ "$fl" -eq 0 ]; then
    fl=1
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then echo "FAIL - $name: timed out after ${per_test_timeout}s" >>"$log"
    else echo "FAIL - $name: exited with status $rc" >>"$log"; fi
  fi
  passed=$((passed + ok)); failed=$((failed + fl)); skipped=$((skipped + sk))
  tag=$(basename "$b")
  printf '%-34s [%s] %4d ok %3d failed %3d skipped\n' "$name" "$tag" "$ok" "$fl" "$sk"
  grep '^skip - ' "$log" | sed 's/^/    /'
  if [ "$fl" -ne 0 ]; then
    sed 's/^/    | /' "$log" | tail -n 60
    failures="$failures $tag/$name"
  fi
}

for b in "$@"; do
  if [ ! -x "$root/$b/judgerl" ]; then
    echo "run.sh: $b/judgerl is missing: build first (make BUILD=$(basename "$b"))" >&2
    failed=$((failed + 1)); continue
  fi
  for t in "$root/$b"/tests/test_*; do
    [ -x "$t" ] || continue
    run_one "$b" "$(basename "$t")" "$t"
  done
  for t in "$root"/tests/test_*.sh; do
    [ -f "$t" ] || continue
    run_one "$b" "$(basename "$t")" sh "$t"
  done
  for t in "$root"/tests/test_*.py; do
    [ -f "$t" ] || continue
    run_one "$b" "$(basename "$t")" "$PY" "$t"
  done
done
# The kernel, model, generation and training-compute tests again at every kernel level below the CPU's
# highest (the runs above use the highest): JR_CPU forces the level, names get @LEVEL. A level this CPU
# lacks is one skip line per test (the qemu test runs the baseline binary on emulated older CPUs).
LEVEL_TESTS="test_nn_ops test_matmul_bf16 test_model_torch test_generate test_sampler test_grpo_model test_constrain"
for b in "$@"; do
  [ -x "$root/$b/judgerl" ] || continue
  top=$("$root/$b/judgerl" version 2>/dev/null | sed -n 's/^kernel level: .*the highest this CPU has: \([a-z0-9]*\)).*/\1/p')
  case "$(uname -m)" in x86_64) all="baseline avx2 avx512" ;; *) all="baseline" ;; esac
  above=0
  for l in $all; do
    for t in $LEVEL_TESTS; do
      [ -x "$root/$b/tests/$t" ] || continue
      if [ "$above" -eq 1 ]; then
        printf '%-34s [%s] skip - needs %s (this CPU has up to %s)\n' "$t@$l" "$(basename "$b")" "$l" "$top"
        skipped=$((skipped + 1))
      elif [ "$l" != "$top" ]; then
        run_one "$b" "$t@$l" env JR_CPU="$l" "$root/$b/tests/$t"
      fi
    done
    # the training-compute script too, in the release build (its 200-step runs take minutes under ASan)
    if [ "$above" -eq 0 ] && [ "$l" != "$top" ] && [ "$(basename "$b")" = rel ]; then
      run_one "$b" "test_train_compute.sh@$l" env JR_CPU="$l" sh "$root/tests/test_train_compute.sh"
    fi
    [ "$l" = "$top" ] && above=1
  done
done
# The libFuzzer smoke run (make test sets JR_FUZZ_SECONDS): one line per target, counted like a test
# program, so the summary below stays the last line of the whole run.
if [ -n "${JR_FUZZ_SECONDS:-}" ]; then
  run_one build/fuzz fuzz_smoke sh "$root/tools/fuzz_smoke.sh" "$JR_FUZZ_SECONDS"
fi
[ -n "$failures" ] && echo "failed:$failures (logs in build/test-logs/)"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
