# lib.sh - helpers for shell test scripts (sourced by tests/test_*.sh; see tests/run.sh).
# JR_BIN is the judgerl binary under test, JR_ROOT the repository, JR_TMP a scratch directory.
: "${JR_ROOT:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${JR_BIN:=$JR_ROOT/build/rel/judgerl}"
: "${JR_TMP:=$(mktemp -d)}"

ok() { echo "ok - $1"; }
fail() { echo "FAIL - $1: $2"; }
skip() { echo "skip - $1: $2"; }

# expect_error NAME PATTERN CMD...: CMD must exit non-zero and print exactly one line on stderr
# that matches the grep -E PATTERN.
expect_error() {
  name=$1; pat=$2; shift 2
  "$@" >"$JR_TMP/out" 2>"$JR_TMP/err"; rc=$?
  lines=$(wc -l <"$JR_TMP/err")
  if [ "$rc" -eq 0 ]; then fail "$name" "exit 0, expected failure"; return; fi
  if [ "$rc" -gt 3 ]; then fail "$name" "exit $rc (crash?): $(head -c 300 "$JR_TMP/err")"; return; fi
  if [ "$lines" -ne 1 ]; then fail "$name" "expected one stderr line, got $lines: $(head -c 400 "$JR_TMP/err")"; return; fi
  if ! grep -Eq -- "$pat" "$JR_TMP/err"; then fail "$name" "stderr '$(cat "$JR_TMP/err")' does not match '$pat'"; return; fi
  ok "$name"
}

# expect_ok NAME CMD...: CMD must exit 0.
expect_ok() {
  name=$1; shift
  if "$@" >"$JR_TMP/out" 2>"$JR_TMP/err"; then ok "$name"; else fail "$name" "exit $?: $(head -c 400 "$JR_TMP/err")"; fi
}

# maxdiff A B: the largest absolute difference between two float32 safetensors files' tensors
maxdiff() {
  "${PY:-/usr/bin/python3}" - "$1" "$2" <<'P'
import json, struct, sys
def load(p):
    b = open(p, 'rb').read(); n = struct.unpack('<Q', b[:8])[0]; h = json.loads(b[8:8 + n]); out = {}
    for k, v in h.items():
        if k == '__metadata__': continue
        s, e = v['data_offsets']; d = b[8 + n + s:8 + n + e]
        out[k] = struct.unpack('<%df' % (len(d) // 4), d)
    return out
a, b = load(sys.argv[1]), load(sys.argv[2])
assert a.keys() == b.keys(), 'different tensors'
print(max(abs(x - y) for k in a for x, y in zip(a[k], b[k])))
P
}

# tiny_llama_json [MAX_POSITIONS]: prints the HF config.json of the tests' tiny random Llama (byte
# vocabulary 264, hidden 24, 2 layers, GQA 2:1; 64 positions unless given) for model.init.
tiny_llama_json() {
  cat <<J
{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 24, "num_hidden_layers": 2,
 "num_attention_heads": 2, "num_key_value_heads": 1, "intermediate_size": 40, "vocab_size": 264,
 "max_position_embeddings": ${1:-64}, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": false,
 "hidden_act": "silu", "torch_dtype": "float32"}
J
}

# serve_start ARGS...: starts `judgerl serve ARGS --port 0` in the background (stderr in
# $JR_TMP/serve.err) and waits until it is ready: sets $pid and $port ($port empty when it did not
# come up; the caller reports and kills $pid).
serve_start() { serve_start_log "$JR_TMP/serve.err" "$@"; }

# serve_start_log ERRFILE ARGS...: serve_start with its stderr in ERRFILE.
serve_start_log() {
  _serve_err=$1; shift
  "$JR_BIN" serve "$@" --port 0 2>"$_serve_err" &
  pid=$!
  i=0
  while [ $i -lt 600 ]; do
    grep -q 'ready' "$_serve_err" 2>/dev/null && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.1; i=$((i + 1))
  done
  port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$_serve_err" | head -n 1)
  grep -q ready "$_serve_err" || port=""
}
