#!/bin/sh
# run.sh - runs every test program against one or more builds and ends with one summary line.
# Usage: tests/run.sh BUILD_DIR...   (e.g. build/rel build/asan)
# A test program is build/<b>/tests/test_* (C), or tests/test_*.sh / tests/test_*.py (scripts,
# run once per build with JR_BIN pointing at that build's judgerl). Each prints one line per
# case: "ok - NAME", "FAIL - NAME" or "skip - NAME: reason". A program that exits non-zero
# without reporting a failed case counts as one failure; so does one that times out.
# JR_TEST_JOBS (default 2) test programs of a build run at a time, each with its own log and scratch
# directory; the per-test lines come in the same order as with one at a time, each with the program's
# seconds, and the 10 slowest are listed before the summary.
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
jobs=${JR_TEST_JOBS:-2}
# With two programs on the cores, OpenMP threads that spin while idle starve the other program (as the
# demo found for its children): idle threads sleep instead.
[ "$jobs" -gt 1 ] && export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
queue="$logdir/queue.txt"   # the programs of one build, one a line: build name kind path [kernel level]
times="$logdir/times.txt"   # one line per program run: seconds build/name (for the slowest list)
: >"$times"
now() { date +%s.%N; }

# start_one BUILD NAME KIND PATH [LEVEL]: runs one test program in the background (KIND c, sh or py; at
# kernel level LEVEL, JR_CPU, when given) with its output in build/test-logs/TAG.NAME.log; when it ends,
# TAG.NAME.rc holds its exit status and seconds.
start_one() {
  b=$1; name=$2; kind=$3; path=$4; lvl=${5:-}
  log="$logdir/$(basename "$b").$name.log"
  rm -f "$log.rc"
  case $kind in
    c) set -- "$path" ;;
    sh) set -- sh "$path" ;;
    py) set -- "$PY" "$path" ;;
  esac
  (
    tmp=$(mktemp -d /tmp/jr-test-XXXXXX)
    t0=$(now)
    [ -n "$lvl" ] && export JR_CPU="$lvl"
    JR_TMP="$tmp" JR_BIN="$root/$b/judgerl" JR_BUILD="$root/$b" timeout -k 10 "$per_test_timeout" "$@" >"$log" 2>&1 </dev/null
    rc=$?
    secs=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
    rm -rf "$tmp"
    echo "$rc $secs" >"$log.rc.tmp" && mv "$log.rc.tmp" "$log.rc"
  ) &
}

# report_one BUILD NAME: counts a finished program's cases and prints its line (and its skips, and the
# tail of its log when something failed).
report_one() {
  b=$1; name=$2
  tag=$(basename "$b")
  log="$logdir/$tag.$name.log"
  read -r rc secs <"$log.rc"
  rm -f "$log.rc"
  ok=$(grep -c '^ok - ' "$log"); fl=$(grep -c '^FAIL - ' "$log"); sk=$(grep -c '^skip - ' "$log")
  if [ "$rc" -ne 0 ] && [ "$fl" -eq 0 ]; then
    fl=1
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then echo "FAIL - $name: timed out after ${per_test_timeout}s" >>"$log"
    else echo "FAIL - $name: exited with status $rc" >>"$log"; fi
  fi
  passed=$((passed + ok)); failed=$((failed + fl)); skipped=$((skipped + sk))
  printf '%-34s [%s] %4d ok %3d failed %3d skipped %7s s\n' "$name" "$tag" "$ok" "$fl" "$sk" "$secs"
  echo "$secs $tag/$name" >>"$times"
  grep '^skip - ' "$log" | sed 's/^/    /'
  if [ "$fl" -ne 0 ]; then
    sed 's/^/    | /' "$log" | tail -n 60
    failures="$failures $tag/$name"
  fi
}

# run_queue: runs the programs listed in $queue, $jobs at a time, and reports them in the queue's order.
run_queue() {
  n=$(wc -l <"$queue"); next=1; done_=1
  while [ "$done_" -le "$n" ]; do
    # start programs while fewer than $jobs of the started ones are unfinished
    while [ "$next" -le "$n" ]; do
      running=0; k=$done_
      while [ "$k" -lt "$next" ]; do
        set -- $(sed -n "${k}p" "$queue")
        [ -f "$logdir/$(basename "$1").$2.log.rc" ] || running=$((running + 1))
        k=$((k + 1))
      done
      [ "$running" -lt "$jobs" ] || break
      start_one $(sed -n "${next}p" "$queue")
      next=$((next + 1))
    done
    set -- $(sed -n "${done_}p" "$queue")
    if [ -f "$logdir/$(basename "$1").$2.log.rc" ]; then report_one "$1" "$2"; done_=$((done_ + 1))
    else sleep 0.2; fi
  done
  wait
}

# The kernel, model, generation and training-compute tests again at every kernel level below the CPU's
# highest (the runs above use the highest): JR_CPU forces the level, names get @LEVEL; queued after the
# build's other programs. A level this CPU lacks is one skip line per test, in $level_skips (the qemu
# test runs the baseline binary on emulated older CPUs).
LONG_FIRST="test_probe_judges.sh test_demo.sh test_wf_learn.sh test_demo_workflow.sh test_workflow_grammar"
LEVEL_TESTS="test_nn_ops test_matmul_bf16 test_model_torch test_generate test_sampler test_grpo_model test_constrain"
queue_levels() { # BUILD
  b=$1; level_skips=""
  top=$("$root/$b/judgerl" version 2>/dev/null | sed -n 's/^kernel level: .*the highest this CPU has: \([a-z0-9]*\)).*/\1/p')
  case "$(uname -m)" in x86_64) all="baseline avx2 avx512" ;; *) all="baseline" ;; esac
  above=0
  for l in $all; do
    for t in $LEVEL_TESTS; do
      [ -x "$root/$b/tests/$t" ] || continue
      if [ "$above" -eq 1 ]; then
        level_skips="$level_skips$(printf '%-34s [%s] skip - needs %s (this CPU has up to %s)' "$t@$l" "$(basename "$b")" "$l" "$top")
"
      elif [ "$l" != "$top" ]; then
        echo "$b $t@$l c $root/$b/tests/$t $l" >>"$queue"
      fi
    done
    # the training-compute script too, in the release build (its 200-step runs take minutes under ASan)
    if [ "$above" -eq 0 ] && [ "$l" != "$top" ] && [ "$(basename "$b")" = rel ]; then
      echo "$b test_train_compute.sh@$l sh $root/tests/test_train_compute.sh $l" >>"$queue"
    fi
    [ "$l" = "$top" ] && above=1
  done
}

for bd in "$@"; do
  b0=$(now)
  if [ ! -x "$root/$bd/judgerl" ]; then
    echo "run.sh: $bd/judgerl is missing: build first (make BUILD=$(basename "$bd"))" >&2
    failed=$((failed + 1)); continue
  fi
  : >"$queue"
  # the longest programs first, so that none of them starts last with the other slot idle
  for t in $LONG_FIRST; do
    case $t in
      *.sh) echo "$bd $t sh $root/tests/$t" >>"$queue" ;;
      *) [ -x "$root/$bd/tests/$t" ] && echo "$bd $t c $root/$bd/tests/$t" >>"$queue" ;;
    esac
  done
  for t in "$root/$bd"/tests/test_*; do
    case " $LONG_FIRST " in *" $(basename "$t") "*) continue ;; esac
    [ -x "$t" ] && echo "$bd $(basename "$t") c $t" >>"$queue"
  done
  for t in "$root"/tests/test_*.sh; do
    case " $LONG_FIRST " in *" $(basename "$t") "*) continue ;; esac
    [ -f "$t" ] && echo "$bd $(basename "$t") sh $t" >>"$queue"
  done
  for t in "$root"/tests/test_*.py; do
    [ -f "$t" ] && echo "$bd $(basename "$t") py $t" >>"$queue"
  done
  queue_levels "$bd"
  run_queue
  if [ -n "$level_skips" ]; then
    printf '%s' "$level_skips"
    skipped=$((skipped + $(printf '%s' "$level_skips" | grep -c 'skip - ')))
  fi
  awk -v a="$b0" -v b="$(now)" -v n="$bd" 'BEGIN { printf "%s: %.0f s\n", n, b - a }'
done
# The libFuzzer smoke run (make test sets JR_FUZZ_SECONDS): one line per target, counted like a test
# program, so the summary below stays the last line of the whole run (fuzz_smoke.sh reads the seconds
# from JR_FUZZ_SECONDS and runs its targets $JR_TEST_JOBS at a time).
if [ -n "${JR_FUZZ_SECONDS:-}" ]; then
  echo "build/fuzz fuzz_smoke sh $root/tools/fuzz_smoke.sh" >"$queue"
  export JR_FUZZ_SECONDS JR_TEST_JOBS="$jobs"
  run_queue
fi
echo "slowest:"
sort -rn "$times" | head -n 10 | awk '{ printf "  %7.1f s  %s\n", $1, $2 }'
[ -n "$failures" ] && echo "failed:$failures (logs in build/test-logs/)"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
