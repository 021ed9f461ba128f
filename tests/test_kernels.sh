#!/bin/sh
# test_kernels.sh - the hot kernels at every ISA level against scalar references, and their batch invariance
# (tests/kernels_check.c states the checks and tolerances): on this machine at each x86-64 level it has
# (JR_CPU=baseline, avx2, avx512), linked from this build's own kernel objects; and on aarch64, cross-compiled
# from the sources (static, the aarch64 level: armv8-a) and run under qemu-aarch64.
. "$JR_ROOT/tests/lib.sh"
: "${JR_BUILD:=$JR_ROOT/build/rel}"
T="$JR_TMP/kernels"
mkdir -p "$T"
cd "$JR_ROOT" || exit 1
KSRC="src/nn/kernels.c src/core/cpu.c src/core/status.c"
WARN="-Wall -Wextra -Wno-unused-parameter"

# 1. this machine, this build's objects (the sanitizer build's are instrumented: linked with the sanitizers)
O="$JR_BUILD/obj/src"
if [ "$(uname -m)" != x86_64 ]; then skip kernels_levels "the per-level check is for x86-64; this machine is $(uname -m)"
elif ! ls "$O"/nn/k_rows_f32.baseline.o >/dev/null 2>&1; then
  fail kernels_levels "$O/nn/k_rows_f32.baseline.o is missing: this build has no per-level kernels"
else
  SAN=""
  nm "$O/core/cpu.o" 2>/dev/null | grep -q __asan && SAN="-fsanitize=address,undefined"
  if cc -std=c11 -D_GNU_SOURCE -O2 -march=x86-64-v2 -fopenmp $WARN $SAN -Iinclude -Isrc tests/kernels_check.c \
       "$O"/nn/k_*.o "$O/nn/kernels.o" "$O/core/cpu.o" "$O/core/status.o" -lm -o "$T/kc" 2>"$T/err" &&
     [ ! -s "$T/err" ]; then
    for level in baseline avx2 avx512; do
      JR_CPU=$level "$T/kc" >"$T/$level.out" 2>"$T/err"; rc=$?
      if [ "$rc" -eq 2 ] && grep -q lacks "$T/err"; then skip "kernels_$level" "this CPU lacks the level: $(cat "$T/err")"
      else
        cat "$T/$level.out"
        [ "$rc" -eq 0 ] || grep -q '^FAIL' "$T/$level.out" || fail "kernels_$level" "exit $rc: $(head -c 300 "$T/err")"
      fi
    done
  else fail kernels_levels_build "$(head -c 600 "$T/err")"; fi
fi

# 2. aarch64 under qemu: once, with the release build (the sources are the same for every build)
case "$JR_BIN" in *asan*) skip kernels_aarch64 "the sources do not depend on the build: run with the release build"; exit 0 ;; esac
for c in aarch64-linux-gnu-gcc qemu-aarch64; do
  if ! command -v $c >/dev/null 2>&1; then
    skip kernels_aarch64 "$c is absent (tools/deps.sh test installs gcc-aarch64-linux-gnu and qemu-user)"; exit 0
  fi
done
A="aarch64-linux-gnu-gcc -std=c11 -D_GNU_SOURCE -O2 -march=armv8-a -fopenmp $WARN -Iinclude -Isrc"
: >"$T/a64.err"
for f in tests/kernels_check.c $KSRC; do
  $A -c "$f" -o "$T/a64_$(basename "$f" .c).o" 2>>"$T/a64.err"
done
for f in src/nn/k_*.c; do
  $A -DJR_KLEVEL=baseline -c "$f" -o "$T/a64_$(basename "$f" .c).baseline.o" 2>>"$T/a64.err"
done
# static: qemu-aarch64 then needs no aarch64 libraries. Static libgomp names dlopen (OpenACC profiling,
# never called here): the linker's warning about it is expected, and nothing else may appear.
aarch64-linux-gnu-gcc -static -fopenmp "$T"/a64_*.o -lm -o "$T/kc_a64" 2>"$T/link.err"
grep -v -e 'in function .goacc_profiling_initialize' -e "Using 'dlopen' in statically linked" "$T/link.err" >>"$T/a64.err"
if [ -s "$T/a64.err" ] || [ ! -x "$T/kc_a64" ]; then fail kernels_aarch64_build "$(head -c 600 "$T/a64.err")"; exit 0; fi
(ulimit -c 0; ulimit -v 8388608; qemu-aarch64 "$T/kc_a64") >"$T/a64.out" 2>"$T/err"; rc=$?
sed 's/^\(ok\|FAIL\) - /&aarch64_/' "$T/a64.out"
[ "$rc" -eq 0 ] || grep -q '^FAIL' "$T/a64.out" || fail kernels_aarch64 "exit $rc: $(head -c 300 "$T/err")"
