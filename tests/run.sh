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
times="$logdir/times.txt"   # one line per test program: seconds build/name (for the slowest list)
: >"$times"
now() { date +%s.%N; }

run_one() { # build name cmd...
  b=$1; name=$2; shift 2
  log="$logdir/$(basename "$b").$name.log"
  tmp=$(mktemp -d /tmp/jr-test-XXXXXX)
  t0=$(now)
  JR_TMP="$tmp" JR_BIN="$root/$b/judgerl" JR_BUILD="$root/$b" timeout -k 10 "$per_test_timeout" "$@" >"$log" 2>&1
  rc=$?
  secs=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
  rm -rf "$tmp"
  ok=$(grep -c '^ok - ' "$log"); fl=$(grep -c '^FAIL - ' "$log"); sk=$(grep -c '^skip - ' "$log")
  if [ "$rc" -ne 0 ] && [ "$fl" -eq 0 ]; then
    fl=1
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then echo "FAIL - $name: timed out after ${per_test_timeout}s" >>"$log"
    else echo "FAIL - $name: exited with status $rc" >>"$log"; fi
  fi
  passed=$((passed + ok)); failed=$((failed + fl)); skipped=$((skipped + sk))
  tag=$(basename "$b")
  printf '%-34s [%s] %4d ok %3d failed %3d skipped %7s s\n' "$name" "$tag" "$ok" "$fl" "$sk" "$secs"
  echo "$secs $tag/$name" >>"$times"
  grep '^skip - ' "$log" | sed 's/^/    /'
  if [ "$fl" -ne 0 ]; then
    sed 's/^/    | /' "$log" | tail -n 60
    failures="$failures $tag/$name"
  fi
}

for b in "$@"; do
  b0=$(now)
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
  awk -v a="$b0" -v b="$(now)" -v n="$b" 'BEGIN { printf "%s: %.0f s\n", n, b - a }'
done
# The libFuzzer smoke run (make test sets JR_FUZZ_SECONDS): one line per target, counted like a test
# program, so the summary below stays the last line of the whole run.
if [ -n "${JR_FUZZ_SECONDS:-}" ]; then
  run_one build/fuzz fuzz_smoke sh "$root/tools/fuzz_smoke.sh" "$JR_FUZZ_SECONDS"
fi
echo "slowest:"
sort -rn "$times" | head -n 10 | awk '{ printf "  %7.1f s  %s\n", $1, $2 }'
[ -n "$failures" ] && echo "failed:$failures (logs in build/test-logs/)"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
