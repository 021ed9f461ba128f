#!/bin/sh
# test_serve_openai.sh - the official openai npm client (pinned 6.x, maxRetries 0) against `judgerl serve` on
# 127.0.0.1: chat (non-stream, stream), logprobs, n > 1, completions, guided choice/regex, error classes.
# The package is installed into $HOME/.cache/judgerl/npm (outside the repo); when it cannot be installed
# the test skips, except under CI=true where that is a failure.
. "$(dirname "$0")/lib.sh"
OPENAI_VERSION=6.30.1
MODEL="$JR_ROOT/tests/fixtures/serve/tiny"
dir="${HOME:-/tmp}/.cache/judgerl/npm/openai-$OPENAI_VERSION"
pkg="$dir/node_modules/openai"
unavailable() {
  if [ "${CI:-}" = true ]; then fail serve_openai "$1"; else skip serve_openai "$1"; fi
  exit 0
}
command -v node >/dev/null 2>&1 || unavailable "node is not installed (tools/deps.sh test)"
if [ ! -f "$pkg/package.json" ]; then
  command -v npm >/dev/null 2>&1 || unavailable "npm is not installed (tools/deps.sh test)"
  mkdir -p "$dir"
  if ! flock "$dir/.install.lock" npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "openai@$OPENAI_VERSION" >"$JR_TMP/npm.log" 2>&1; then
    unavailable "npm could not install openai@$OPENAI_VERSION: $(tail -n 2 "$JR_TMP/npm.log" | tr '\n' ' ')"
  fi
fi

export JR_OAI_KEY=openai-client-key
serve_start --model "$MODEL" --api-key-env JR_OAI_KEY --parallel 4 --served-model-name tiny
if [ -z "$port" ]; then
  fail serve_openai_start "$(cat "$JR_TMP/serve.err")"; kill $pid 2>/dev/null; exit 0
fi
node "$JR_ROOT/tests/serve_openai_client.cjs" "$pkg" "http://127.0.0.1:$port/v1" "$JR_OAI_KEY"
kill -TERM $pid
wait $pid; rc=$?
if [ $rc -eq 0 ]; then ok serve_openai_clean_exit; else fail serve_openai_clean_exit "exit $rc: $(tail -n 5 "$JR_TMP/serve.err")"; fi
