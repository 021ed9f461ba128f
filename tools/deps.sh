#!/bin/sh
# deps.sh - install the Debian packages judgerl needs to build and test (idempotent).
# Usage: tools/deps.sh [build|test|dev-fuzz|dev]
#   build: compiler and libraries; test: + what the test suite uses (universal-ctags: the structure check;
#          on x86-64, qemu-user and the aarch64 cross compiler: the other-CPU checks);
#   dev: + dev-time references and clang-format (`make format`).
set -eu
level=${1:-build}
pkgs="build-essential pkg-config libcurl4-openssl-dev libjansson-dev libyaml-dev libpcre2-dev
libutf8proc-dev libsqlite3-dev libopenblas-dev libmicrohttpd-dev libcld2-dev zlib1g-dev bubblewrap python3
libdnnl-dev libopenmpi-dev openmpi-bin"
case "$level" in
  build) ;;
  test) pkgs="$pkgs curl jq python3 clang libomp-14-dev libclang-rt-14-dev universal-ctags" ;;
  dev-fuzz) pkgs="$pkgs clang libomp-14-dev libclang-rt-14-dev" ;;
  dev) pkgs="$pkgs curl jq python3 clang libomp-14-dev libclang-rt-14-dev universal-ctags clang-format python3-torch
       python3-jinja2 chromium python3-nltk python3-langdetect python3-absl python3-immutabledict" ;;
  *) echo "deps.sh: unknown level '$level' (use build, test, dev-fuzz or dev)" >&2; exit 2 ;;
esac
# the portability checks (tests/test_cpu_qemu.sh, tests/test_aarch64.sh): older x86-64 CPUs emulated, and
# an aarch64 cross compiler with its C library
case "$level:$(dpkg --print-architecture)" in
  test:amd64 | dev:amd64) pkgs="$pkgs qemu-user gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross" ;;
esac
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# node/npm may come from another packaging (nodesource bundles npm): look for the commands.
if [ "$level" != build ] && ! command -v npm >/dev/null 2>&1; then
  missing="$missing nodejs npm"
fi
[ -z "$missing" ] && exit 0
echo "deps.sh: installing:$missing" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
