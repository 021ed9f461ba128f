#!/bin/sh
# fuzz_smoke.sh - a short run of every libFuzzer target (build/fuzz/fuzz_*, `make fuzz`) from its
# committed corpus fuzz/corpus/NAME (read-only: new inputs go to a scratch directory), as part of
# `make test`. Prints one line per target (ok / FAIL / skip) and a summary; exits 1 when a target
# crashed, leaked or timed out (the reproducer is kept in build/fuzz-smoke/NAME/).
# The targets run JR_TEST_JOBS (default 2) at a time (each is one process on one core); the lines come
# in the targets' order.
# Usage: sh tools/fuzz_smoke.sh [SECONDS_PER_TARGET (default JR_FUZZ_SECONDS, else 10)]
secs=${1:-${JR_FUZZ_SECONDS:-10}}
jobs=${JR_TEST_JOBS:-2}
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/build/fuzz-smoke"
failed=0; passed=0

# run NAME: one target's run; its exit status lands in $out/NAME/rc when it ends.
run() {
  name=$1
  bin="$root/build/fuzz/$name"
  corpus="$root/fuzz/corpus/$name"
  [ -d "$corpus" ] || corpus=""
  (cd "$out/$name" && "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      new $corpus >log 2>&1)
  echo $? >"$out/$name/rc.tmp" && mv "$out/$name/rc.tmp" "$out/$name/rc"
}

# report NAME: its line, once it has ended.
report() {
  name=$1
  if [ "$(cat "$out/$name/rc")" -eq 0 ]; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$name/log")
    echo "ok - $name ($runs runs in ${secs} s)"; passed=$((passed + 1))
  else
    echo "FAIL - $name: $(grep -m1 -E 'ERROR|SUMMARY|abort|round trip' "$out/$name/log") (log and reproducer in $out/$name/)"
    failed=$((failed + 1))
  fi
}

names=""
for src in "$root"/fuzz/fuzz_*.c; do
  name=$(basename "$src" .c)
  if [ ! -x "$root/build/fuzz/$name" ]; then echo "skip - $name: not built (make fuzz needs clang and libclang-rt: tools/deps.sh dev-fuzz)"; continue; fi
  rm -rf "$out/$name"; mkdir -p "$out/$name/new"
  names="$names $name"
done
# start targets while fewer than $jobs are running; report them in order as they end
started=""
for name in $names; do
  while :; do
    running=0
    for s in $started; do [ -f "$out/$s/rc" ] || running=$((running + 1)); done
    [ "$running" -lt "$jobs" ] && break
    sleep 0.2
  done
  run "$name" &
  started="$started $name"
done
for name in $names; do
  while [ ! -f "$out/$name/rc" ]; do sleep 0.2; done
  report "$name"
done
wait
echo "fuzz smoke: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
