#!/bin/sh
# test_serve_cli.sh - `judgerl serve` with curl as the client (loopback only), `judgerl generate` JSONL,
# error statuses with the server staying up, and SIGTERM draining a running stream.
. "$(dirname "$0")/lib.sh"
MODEL="$JR_ROOT/tests/fixtures/serve/tiny"
if ! command -v curl >/dev/null 2>&1; then skip serve_cli "curl is not installed (tools/deps.sh test)"; exit 0; fi

# ---- judgerl generate ----
printf '{"id":"a","prompt":"Hello"}\n{"id":"b","messages":[{"role":"user","content":"Hi"}]}\n' >"$JR_TMP/in.jsonl"
if "$JR_BIN" generate --model "$MODEL" --input "$JR_TMP/in.jsonl" --output "$JR_TMP/out.jsonl" --n 3 --max-tokens 8 \
     --logprobs 0 --seed 4 2>"$JR_TMP/gen.err"; then
  rows=$(wc -l <"$JR_TMP/out.jsonl")
  if [ "$rows" -eq 6 ] && [ "$(grep -c '"id":"b-[0-2]","messages".*"prompt_id":"b"' "$JR_TMP/out.jsonl")" -eq 3 ] && grep -q '"finish_reason":' "$JR_TMP/out.jsonl" \
     && grep -q '"logprobs":\[' "$JR_TMP/out.jsonl" && grep -q '"sample":2' "$JR_TMP/out.jsonl"; then
    ok generate_jsonl
  else fail generate_jsonl "unexpected rows: $(head -c 400 "$JR_TMP/out.jsonl")"; fi
else fail generate_jsonl "$(cat "$JR_TMP/gen.err")"; fi
"$JR_BIN" generate --model "$MODEL" --input "$JR_TMP/in.jsonl" --output "$JR_TMP/out2.jsonl" --n 3 --max-tokens 8 --logprobs 0 --seed 4 2>/dev/null
if cmp -s "$JR_TMP/out.jsonl" "$JR_TMP/out2.jsonl"; then ok generate_seeded_repeatable; else fail generate_seeded_repeatable "two runs differ"; fi
out=$("$JR_BIN" generate --model "$MODEL" --prompt "Verdict:" --choice YES --choice NO --n 4 --temperature 1.5 2>&1)
if [ "$(echo "$out" | grep -cE '"response":"(YES|NO)"')" -eq 4 ]; then ok generate_choice; else fail generate_choice "$out"; fi
printf '{"prompt":"x"}\nnot json\n' >"$JR_TMP/bad.jsonl"
expect_error generate_bad_row 'bad.jsonl:2' "$JR_BIN" generate --model "$MODEL" --input "$JR_TMP/bad.jsonl" --output "$JR_TMP/o.jsonl"
expect_error generate_no_model 'no such model directory' "$JR_BIN" generate --model "$JR_TMP/nowhere" --prompt hi
# an integer option takes an integer: 2.5 samples are an error naming the flag, not 2
expect_error generate_n_not_integer "--n: expected an integer in \\[1, 256\\], got '2.5'" "$JR_BIN" generate --model "$MODEL" --prompt hi --n 2.5
expect_error generate_two_sources 'exactly one' "$JR_BIN" generate --model "$MODEL" --prompt hi --input "$JR_TMP/in.jsonl"
expect_error generate_bad_regex 'guided_regex|regex' "$JR_BIN" generate --model "$MODEL" --prompt hi --regex '(a'
expect_error generate_bad_compute "--compute: expected auto, float32 or bfloat16, got 'fp16'" "$JR_BIN" generate --model "$MODEL" --prompt hi --compute fp16
expect_error generate_bad_kv_cache "--kv-cache: expected float32 or bfloat16" "$JR_BIN" generate --model "$MODEL" --prompt hi --kv-cache half
# the compute type is announced; float32 and bfloat16 differ (bf16 rounding) yet each is repeatable
for c in float32 bfloat16; do
  "$JR_BIN" generate --model "$MODEL" --input "$JR_TMP/in.jsonl" --output "$JR_TMP/c_$c.jsonl" --n 2 --max-tokens 8 --logprobs 0 \
    --seed 4 --compute $c 2>"$JR_TMP/c_$c.err"
done
if grep -q '^judgerl generate: compute: weights fp32, KV cache fp32$' "$JR_TMP/c_float32.err" &&
   grep -q '^judgerl generate: compute: weights bf16 (\(avx512_bf16\|fp32_fallback\) kernel), KV cache fp32$' "$JR_TMP/c_bfloat16.err" &&
   [ "$(wc -l <"$JR_TMP/c_bfloat16.jsonl")" -eq 4 ] && ! cmp -s "$JR_TMP/c_float32.jsonl" "$JR_TMP/c_bfloat16.jsonl"; then
  ok generate_compute_announced
else fail generate_compute_announced "$(cat "$JR_TMP/c_float32.err" "$JR_TMP/c_bfloat16.err")"; fi
[ -e "$JR_TMP/o.jsonl" ] && fail generate_no_partial_output "o.jsonl was written" || ok generate_no_partial_output

# ---- judgerl serve ----
expect_error serve_no_model 'nowhere: no config.json' "$JR_BIN" serve --model "$JR_TMP/nowhere" --port 0
expect_error serve_bad_port 'port' "$JR_BIN" serve --model "$MODEL" --port 99999
expect_error serve_bad_deterministic '--deterministic: expected 1 or 0' "$JR_BIN" serve --model "$MODEL" --port 0 --deterministic maybe
expect_error serve_key_env_unset 'JR_UNSET_KEY_VAR' "$JR_BIN" serve --model "$MODEL" --api-key-env JR_UNSET_KEY_VAR
export JR_TEST_KEY=k3y-for-tests
serve_start --model "$MODEL" --api-key-env JR_TEST_KEY --parallel 4 --served-model-name tiny org/tiny-alias --max-body 65536
if [ -z "$port" ]; then
  fail serve_start "$(cat "$JR_TMP/serve.err")"; kill $pid 2>/dev/null; exit 0
fi
ok serve_start
U="http://127.0.0.1:$port"
AUTH="Authorization: Bearer $JR_TEST_KEY"

code() { # code METHOD PATH [curl args...]: prints the HTTP status, body in $JR_TMP/body
  m=$1; p=$2; shift 2
  curl -s -o "$JR_TMP/body" -w '%{http_code}' -X "$m" "$U$p" "$@"
}
check() { # check NAME EXPECTED_STATUS BODY_REGEX METHOD PATH [curl args...]
  n=$1; want=$2; re=$3; shift 3
  got=$(code "$@")
  if [ "$got" = "$want" ] && grep -Eq -- "$re" "$JR_TMP/body"; then ok "$n"; else fail "$n" "status $got, body $(head -c 300 "$JR_TMP/body")"; fi
}
J='-H Content-Type:application/json'
check health 200 ok GET /health
check models 200 '"id":"tiny"' GET /v1/models -H "$AUTH"
# --served-model-name A B (vLLM's form): both listed, both accepted, responses carry the first
check models_lists_aliases 200 '"id":"tiny".*"id":"org/tiny-alias"' GET /v1/models -H "$AUTH"
check alias_accepted 200 '"model":"tiny"' POST /v1/completions -H "$AUTH" $J -d '{"model":"org/tiny-alias","prompt":"abc","max_tokens":2}'
check unknown_name_404 404 'org/other' POST /v1/completions -H "$AUTH" $J -d '{"model":"org/other","prompt":"abc","max_tokens":2}'
check chat 200 '"object":"chat.completion".*"usage"' POST /v1/chat/completions -H "$AUTH" $J \
  -d '{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":8}'
check completions 200 '"object":"text_completion"' POST /v1/completions -H "$AUTH" $J -d '{"model":"tiny","prompt":"abc","max_tokens":4}'
check guided_choice 200 '"content":"(red|green|blue)"' POST /v1/chat/completions -H "$AUTH" $J \
  -d '{"model":"tiny","messages":[{"role":"user","content":"color?"}],"guided_choice":["red","green","blue"],"temperature":1.3}'
curl -s -N "$U/v1/chat/completions" -H "$AUTH" $J -d '{"model":"tiny","messages":[{"role":"user","content":"s"}],"max_tokens":12,"stream":true,"stream_options":{"include_usage":true}}' >"$JR_TMP/sse"
if head -n 1 "$JR_TMP/sse" | grep -q '^data: {' && tail -n 2 "$JR_TMP/sse" | grep -q '^data: \[DONE\]$' && grep -q '"usage":{"prompt_tokens"' "$JR_TMP/sse"; then
  ok stream_sse; else fail stream_sse "$(head -c 400 "$JR_TMP/sse")"; fi
check no_key 401 invalid_api_key POST /v1/chat/completions $J -d '{"model":"tiny","messages":[]}'
check wrong_key 401 authentication_error POST /v1/chat/completions -H "Authorization: Bearer nope" $J -d '{}'
check bad_json 400 'invalid JSON' POST /v1/chat/completions -H "$AUTH" $J -d '{"model":'
check wrong_type 400 'messages' POST /v1/chat/completions -H "$AUTH" $J -d '{"model":"tiny","messages":{"role":"user"}}'
check negative_max_tokens 400 max_tokens POST /v1/completions -H "$AUTH" $J -d '{"model":"tiny","prompt":"a","max_tokens":-5}'
check unknown_model 404 model_not_found POST /v1/completions -H "$AUTH" $J -d '{"model":"gpt-4o","prompt":"a"}'
head -c 200000 /dev/zero | tr '\0' ' ' >"$JR_TMP/big.json"
check oversized_body 413 limit POST /v1/completions -H "$AUTH" $J --data-binary "@$JR_TMP/big.json"
check unknown_route 404 'no route' GET /v2/things
check still_up 200 '"choices"' POST /v1/completions -H "$AUTH" $J -d '{"model":"tiny","prompt":"after errors","max_tokens":3}'
check metrics 200 'judgerl_requests_total\{status="401"\} 2' GET /metrics

# SIGTERM while a long stream runs: the stream completes, then the server exits 0.
curl -s -N "$U/v1/completions" -H "$AUTH" $J -d '{"model":"tiny","prompt":"long","max_tokens":480,"ignore_eos":true,"stream":true}' >"$JR_TMP/long" &
cpid=$!
i=0
while [ $i -lt 200 ] && ! grep -q '^data: ' "$JR_TMP/long" 2>/dev/null; do sleep 0.05; i=$((i + 1)); done
kill -TERM $pid
wait $cpid
wait $pid; rc=$?
if [ $rc -eq 0 ] && tail -n 2 "$JR_TMP/long" | grep -q '^data: \[DONE\]$' && grep -q 'SIGTERM' "$JR_TMP/serve.err" \
   && [ "$(grep -c '"finish_reason":"length"' "$JR_TMP/long")" -eq 1 ]; then
  ok sigterm_drains
else fail sigterm_drains "rc=$rc, stream tail: $(tail -c 200 "$JR_TMP/long"), stderr: $(tail -n 3 "$JR_TMP/serve.err")"; fi
if curl -s -o /dev/null "$U/health" 2>/dev/null; then fail stopped "still answering"; else ok stopped; fi

# ---- a tokenizer.json (BPE + ChatML chat template) beside the model: auto-detected ----
B="$JR_TMP/bpe"
mkdir -p "$B"
cp "$MODEL/model.safetensors" "$JR_ROOT/tests/fixtures/serve/bpe/"*.json "$B/"
# the byte tokenizer's bos/eos ids (256, 257) are BPE pieces here: the config names <|im_end|> (263)
sed -e 's/"bos_token_id": 256/"bos_token_id": null/' -e 's/"eos_token_id": 257/"eos_token_id": 263/' "$MODEL/config.json" >"$B/config.json"
want=$(printf 'the cat\n' | "$JR_BIN" tokenize --tokenizer "$B" | wc -w)
out=$("$JR_BIN" generate --model "$B" --prompt "the cat" --max-tokens 5 --seed 1 2>&1)
if [ "$want" -eq 2 ] && echo "$out" | grep -q '"prompt_tokens":2[,}]'; then ok bpe_auto_prompt_tokens; else fail bpe_auto_prompt_tokens "want $want: $out"; fi
out=$("$JR_BIN" generate --model "$MODEL" --tokenizer "$JR_ROOT/tests/fixtures/serve/bpe" --prompt "the cat" --choice " dog" --choice " a cat" --n 3 --temperature 1.5 2>&1)
if [ "$(echo "$out" | grep -cE '"response":" (dog|a cat)"')" -eq 3 ]; then ok bpe_choice; else fail bpe_choice "$out"; fi
printf '{"messages":[{"role":"user","content":"hello cat"}],"add_generation_prompt":true}\n' >"$JR_TMP/chat.jsonl"
if rendered=$("$JR_BIN" tokenize --tokenizer "$B" --chat <"$JR_TMP/chat.jsonl" 2>"$JR_TMP/tk.err"); then
  want=$(printf '{"text":%s}\n' "$rendered" | "$JR_BIN" tokenize --tokenizer "$B" --jsonl --no-special | wc -w)
  printf '[{"role":"user","content":"hello cat"}]' >"$JR_TMP/chat.json"
  out=$("$JR_BIN" generate --model "$B" --chat "$JR_TMP/chat.json" --max-tokens 5 --seed 1 2>&1)
  if echo "$out" | grep -q "\"prompt_tokens\":$want[,}]"; then ok bpe_chat_template_prompt; else fail bpe_chat_template_prompt "want $want prompt tokens: $out"; fi
else
  skip bpe_chat_template_prompt "the tokenizer cannot render chat templates yet: $(cat "$JR_TMP/tk.err")"
fi
