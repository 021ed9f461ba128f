#!/bin/sh
# fuzz_smoke.sh - a short run of every libFuzzer target (build/fuzz/fuzz_*, `make fuzz`) from its
# committed corpus fuzz/corpus/NAME (read-only: new inputs go to a scratch directory), as part of
# `make test`. Prints one line per target (ok / FAIL / skip) and a summary; exits 1 when a target
# crashed, leaked or timed out (the reproducer is kept in build/fuzz-smoke/NAME/).
# Usage: sh tools/fuzz_smoke.sh [SECONDS_PER_TARGET (default 10)]
secs=${1:-10}
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/build/fuzz-smoke"
failed=0; passed=0
for src in "$root"/fuzz/fuzz_*.c; do
  name=$(basename "$src" .c)
  bin="$root/build/fuzz/$name"
  if [ ! -x "$bin" ]; then echo "skip - $name: not built (make fuzz needs clang and libclang-rt: tools/deps.sh dev-fuzz)"; continue; fi
  rm -rf "$out/$name"; mkdir -p "$out/$name/new"
  corpus="$root/fuzz/corpus/$name"
  [ -d "$corpus" ] || corpus=""
  if (cd "$out/$name" && "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        new $corpus >log 2>&1); then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$name/log")
    echo "ok - $name ($runs runs in ${secs} s)"; passed=$((passed + 1))
  else
    echo "FAIL - $name: $(grep -m1 -E 'ERROR|SUMMARY|abort|round trip' "$out/$name/log") (log and reproducer in $out/$name/)"
    failed=$((failed + 1))
  fi
done
echo "fuzz smoke: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
