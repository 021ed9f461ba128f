#!/bin/sh
# npm_gguf.sh - test setup: installs the pinned npm GGUF reader @huggingface/gguf (an independent
# reader of the files `judgerl export --format gguf` writes) into a cache outside the repository,
# once. Prints the cache prefix on success; exits 1 (message on stderr) when it cannot be installed.
set -u
prefix=${JR_NPM_CACHE:-${HOME:-/tmp}/.cache/judgerl/npm}
pkg="@huggingface/gguf@0.4.6"
have() { grep -q '"version": "0.4.6"' "$prefix/node_modules/@huggingface/gguf/package.json" 2>/dev/null; }
if ! have; then
  command -v npm >/dev/null 2>&1 || { echo "npm not found (install nodejs/npm: tools/deps.sh test)" >&2; exit 1; }
  mkdir -p "$prefix" || exit 1
  flock "$prefix/.install.lock" npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "$pkg" >"$prefix/install-gguf.log" 2>&1 ||
    { echo "npm install $pkg into $prefix failed (see $prefix/install-gguf.log)" >&2; exit 1; }
  have || { echo "npm package $pkg installed but not found under $prefix" >&2; exit 1; }
fi
echo "$prefix"
