#!/bin/sh
# test_aarch64.sh - judgerl compiles for 64-bit Arm: every library, command and example source passes the
# aarch64 cross compiler (-march=armv8-a, the Makefile's warnings) with no error and no warning. (The kernels
# also run there, under qemu-aarch64: tests/test_kernels.sh.)
#
# The cross compiler sees the real aarch64 C library, kernel and compiler headers (libc6-dev-arm64-cross,
# gcc-aarch64-linux-gnu); the third-party headers (curl, jansson, yaml, pcre2, utf8proc, sqlite3, OpenBLAS,
# microhttpd, zlib, oneDNN, CLD2, OpenMPI) are the installed x86-64 ones, searched after the aarch64 system
# directories (-idirafter), so they can never shadow a libc header. Both are LP64 Linux: for a compile check
# their configuration headers say the same. (Debian's arm64 -dev packages cannot all sit beside the amd64
# ones: libcld2-dev is not multi-arch and libopenmpi-dev:arm64 removes the amd64 MPI.)
. "$JR_ROOT/tests/lib.sh"
T="$JR_TMP/aarch64"
mkdir -p "$T"

# The sources are the same for every build: checked once, with the release build.
case "$JR_BIN" in *asan*) skip aarch64 "the sources do not depend on the build: checked with the release build"; exit 0 ;; esac
CC=aarch64-linux-gnu-gcc
CXX=aarch64-linux-gnu-g++
for c in $CC $CXX; do
  if ! command -v "$c" >/dev/null 2>&1; then
    skip aarch64 "$c is absent (tools/deps.sh test installs gcc-aarch64-linux-gnu and g++-aarch64-linux-gnu)"; exit 0
  fi
done
MA=$(gcc -print-multiarch 2>/dev/null); [ -n "$MA" ] || MA=x86_64-linux-gnu
THIRD="-idirafter /usr/include/$MA -idirafter /usr/include -idirafter /usr/lib/$MA/openmpi/include"
WARN="-Wall -Wextra -Wno-unused-parameter"
CFLAGS="-std=c11 -D_GNU_SOURCE -DJR_MPI -fopenmp $WARN -fsyntax-only -march=armv8-a -Iinclude -Isrc -Iexamples $THIRD"
CXXFLAGS="-std=c++17 -D_GNU_SOURCE $WARN -fsyntax-only -march=armv8-a -Iinclude -Isrc $THIRD"

# 1. every source: any line from the compiler (an error or a warning) fails the file. The kernel files
# (src/nn/k_*.c) are compiled once per ISA level; aarch64 has one, the baseline.
cd "$JR_ROOT" || exit 1
: >"$T/failed"
ls src/*/*.c examples/eightball/*.c src/*/*.cc | T="$T" CC=$CC CXX=$CXX CFLAGS="$CFLAGS" CXXFLAGS="$CXXFLAGS" \
  xargs -P2 -n1 sh -c '
    case "$1" in
      *.cc) out=$($CXX $CXXFLAGS "$1" 2>&1) ;;
      src/nn/k_*.c) out=$($CC $CFLAGS -DJR_KLEVEL=baseline "$1" 2>&1) ;;
      *) out=$($CC $CFLAGS "$1" 2>&1) ;;
    esac
    [ -z "$out" ] || { echo "$1" >>"$T/failed"; printf "%s\n" "$out" >"$T/$(echo "$1" | tr / _).log"; }' sh
n=$(ls src/*/*.c examples/eightball/*.c src/*/*.cc | wc -l)
if [ ! -s "$T/failed" ]; then ok "aarch64_compiles_all_${n}_sources"
else
  for f in $(sort "$T/failed"); do
    fail "aarch64_compiles_$f" "$(grep -m1 -E 'error|warning' "$T/$(echo "$f" | tr / _).log")"
  done
fi
