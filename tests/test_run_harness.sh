# test_run_harness.sh - the run harness end to end: with trainer.tokenizer unset, GRPO from a model directory
# holding tokenizer.json trains on that (BPE) tokenizer and says so; an explicit byte tokenizer beside one is
# a loud warning; every checkpoint directory is a complete model directory (`judgerl generate` and
# `judgerl serve` take it as is, with its tokenizer); trainer.eval_every logs GRPO's held-out reward
. "$JR_ROOT/tests/lib.sh"
M="$JR_TMP/bpe_model"
mkdir -p "$M"
cp "$JR_ROOT/tests/fixtures/serve/tiny/config.json" "$JR_ROOT/tests/fixtures/serve/tiny/model.safetensors" \
   "$JR_ROOT/tests/fixtures/serve/bpe/"*.json "$M/"
for i in $(seq 0 23); do echo "{\"prompt\": \"the cat $i\"}"; done >"$JR_TMP/prompts.jsonl"
cat >"$JR_TMP/grpo.yaml" <<Y
run: {seed: 3, out_dir: $JR_TMP/run}
data: {train: $JR_TMP/prompts.jsonl}
model: {path: $M}
trainer: {algo: grpo, steps: 2, batch_size: 16, lr: 1e-3, save_every: 1, keep_checkpoints: 3, tensorboard: false}
grpo: {num_generations: 4, prompts_per_step: 4, max_prompt_length: 16, max_completion_length: 6}
reward:
  components:
    - {name: starts_lower, fn: format, params: {pattern: "^[a-z]"}}
Y

# 1. trainer.tokenizer unset: the model directory's tokenizer.json, named on stderr
if JR_PROGRESS=off "$JR_BIN" train "$JR_TMP/grpo.yaml" >"$JR_TMP/a.out" 2>"$JR_TMP/a.err" &&
   grep -q "^tokenizer: $M/tokenizer.json (the model directory's; trainer.tokenizer is unset)" "$JR_TMP/a.err"; then
  ok grpo_default_tokenizer_is_the_model_dirs
else fail grpo_default_tokenizer_is_the_model_dirs "$(tail -c 400 "$JR_TMP/a.err")"; fi
C="$JR_TMP/run/checkpoints/step-00000001"
if cmp -s "$M/tokenizer.json" "$C/tokenizer.json" && cmp -s "$M/tokenizer_config.json" "$C/tokenizer_config.json" &&
   [ -f "$C/config.json" ] && [ -f "$C/model.safetensors" ] && cmp -s "$M/tokenizer.json" "$JR_TMP/run/model/tokenizer.json"; then
  ok checkpoint_has_the_tokenizer_files
else fail checkpoint_has_the_tokenizer_files "$(ls "$C" "$JR_TMP/run/model" 2>&1)"; fi
# the BPE tokenizer cuts "the cat" into 2 tokens (the byte tokenizer: bos + 7 bytes): generate on the
# checkpoint directory as it is picks its tokenizer.json up
out=$("$JR_BIN" generate --model "$C" --prompt "the cat" --max-tokens 3 --seed 1 2>&1)
if echo "$out" | grep -q '"prompt_tokens":2[,}]'; then ok generate_on_a_checkpoint_uses_its_bpe
else fail generate_on_a_checkpoint_uses_its_bpe "$out"; fi

# 2. an explicit byte tokenizer beside a tokenizer.json: allowed, loud
if JR_PROGRESS=off "$JR_BIN" train "$JR_TMP/grpo.yaml" trainer.tokenizer=byte run.out_dir="$JR_TMP/byte" \
     trainer.steps=1 >/dev/null 2>"$JR_TMP/b.err" && grep -q "^WARNING: trainer.tokenizer=byte although $M/tokenizer.json exists" "$JR_TMP/b.err" &&
   [ ! -f "$JR_TMP/byte/model/tokenizer.json" ]; then
  ok explicit_byte_tokenizer_is_loud
else fail explicit_byte_tokenizer_is_loud "$(tail -c 400 "$JR_TMP/b.err")"; fi

# 3. judgerl serve on a checkpoint directory
if command -v curl >/dev/null 2>&1; then
  serve_start --model "$C"
  body=$(curl -s -X POST "http://127.0.0.1:$port/v1/completions" -H 'Content-Type: application/json' \
         -d '{"model": "step-00000001", "prompt": "the cat", "max_tokens": 3, "seed": 1}' 2>&1)
  kill -TERM $pid 2>/dev/null
  wait $pid 2>/dev/null
  if [ -n "$port" ] && echo "$body" | grep -q '"prompt_tokens":2[,}]'; then ok serve_on_a_checkpoint
  else fail serve_on_a_checkpoint "port '$port': $body $(tail -c 300 "$JR_TMP/serve.err")"; fi
else
  skip serve_on_a_checkpoint "curl is not installed (tools/deps.sh test)"
fi

# 4. the evaluation hook: GRPO's mean reward on the validation prompts every eval_every steps
if JR_PROGRESS=off "$JR_BIN" train "$JR_TMP/grpo.yaml" run.out_dir="$JR_TMP/ev" data.validation_frac=0.25 \
     trainer.eval_every=1 >/dev/null 2>"$JR_TMP/e.err" &&
   [ "$(grep -c '"eval/reward":' "$JR_TMP/ev/metrics.jsonl")" -eq 2 ]; then
  ok grpo_eval_every_logs_heldout_reward
else fail grpo_eval_every_logs_heldout_reward "$(tail -c 300 "$JR_TMP/e.err") $(head -c 300 "$JR_TMP/ev/metrics.jsonl" 2>&1)"; fi
