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

# 4b. trainer.eval_at_start: a metrics row of step 0 holding the evaluation before training; asked for on a
# run that evaluates nothing (no held-out prompts), an error naming the option, not a silent skip
if JR_PROGRESS=off "$JR_BIN" train "$JR_TMP/grpo.yaml" run.out_dir="$JR_TMP/ev0" data.validation_frac=0.25 \
     trainer.steps=1 trainer.eval_at_start=true >/dev/null 2>"$JR_TMP/e0.err" &&
   head -n 1 "$JR_TMP/ev0/metrics.jsonl" | grep -q '"step": *0[,}].*"eval/reward":\|"eval/reward":.*"step": *0[,}]'; then
  ok eval_at_start_logs_step_0
else fail eval_at_start_logs_step_0 "$(tail -c 300 "$JR_TMP/e0.err") $(head -c 300 "$JR_TMP/ev0/metrics.jsonl" 2>&1)"; fi
if ! JR_PROGRESS=off "$JR_BIN" train "$JR_TMP/grpo.yaml" run.out_dir="$JR_TMP/ev1" trainer.steps=1 \
       trainer.eval_at_start=true >/dev/null 2>"$JR_TMP/e1.err" &&
   grep -q "trainer.eval_at_start=true, but this run has no evaluation" "$JR_TMP/e1.err"; then
  ok eval_at_start_without_evaluation_is_an_error
else fail eval_at_start_without_evaluation_is_an_error "$(tail -c 300 "$JR_TMP/e1.err")"; fi

# 5. a LoRA run's checkpoint (the PEFT adapter + the tokenizer files) works with generate and serve as
# it is: its base_model_name_or_path is loaded and the adapter folded in memory, the same tokens as the
# merged model
if JR_PROGRESS=off "$JR_BIN" train "$JR_TMP/grpo.yaml" run.out_dir="$JR_TMP/lora" lora.enabled=true lora.rank=4 \
     trainer.lr=5e-2 >/dev/null 2>"$JR_TMP/l.err"; then
  LC="$JR_TMP/lora/checkpoints/step-00000002"
  a=$("$JR_BIN" generate --model "$LC" --prompt "the cat" --max-tokens 6 --seed 5 --temperature 1 2>"$JR_TMP/lg.err")
  "$JR_BIN" merge --model "$M" --adapter "$LC" -o "$JR_TMP/merged" >/dev/null 2>&1
  b=$("$JR_BIN" generate --model "$JR_TMP/merged" --prompt "the cat" --max-tokens 6 --seed 5 --temperature 1 2>/dev/null)
  c=$("$JR_BIN" generate --model "$M" --prompt "the cat" --max-tokens 6 --seed 5 --temperature 1 2>/dev/null)
  if [ -n "$a" ] && [ "$a" = "$b" ] && grep -q "model: $M + LoRA adapter $LC" "$JR_TMP/lg.err" &&
     echo "$a" | grep -q '"prompt_tokens":2[,}]'; then
    ok generate_on_a_lora_checkpoint_folds_its_adapter
  else fail generate_on_a_lora_checkpoint_folds_its_adapter "ckpt: $a | merged: $b | base: $c | $(cat "$JR_TMP/lg.err")"; fi
  # the adapter changed the weights: with 2 steps at lr 5e-2 the sampled tokens differ from the base's
  if [ "$a" != "$c" ]; then ok lora_checkpoint_is_not_the_base
  else fail lora_checkpoint_is_not_the_base "checkpoint and base gave the same completion: $a"; fi
  # a base that is gone: one line naming judgerl merge
  sed "s#$M#$JR_TMP/nowhere#" "$LC/adapter_config.json" >"$JR_TMP/ac.json" && cp -r "$LC" "$JR_TMP/orphan" &&
    cp "$JR_TMP/ac.json" "$JR_TMP/orphan/adapter_config.json"
  if ! "$JR_BIN" generate --model "$JR_TMP/orphan" --prompt x 2>"$JR_TMP/o.err" >/dev/null &&
     [ "$(wc -l <"$JR_TMP/o.err")" -eq 1 ] && grep -q 'judgerl merge' "$JR_TMP/o.err"; then
    ok lora_checkpoint_without_its_base_is_one_line
  else fail lora_checkpoint_without_its_base_is_one_line "$(cat "$JR_TMP/o.err")"; fi
else
  fail generate_on_a_lora_checkpoint_folds_its_adapter "LoRA run failed: $(tail -c 300 "$JR_TMP/l.err")"
fi

# 6. SFT honours lora.enabled (it used to train and write the full model without a word): a PEFT
# adapter in RUN/adapter, the training loss falls, and the adapter changes what the model generates
cat >"$JR_TMP/sft.yaml" <<Y
run: {seed: 1, out_dir: $JR_TMP/sftlora}
data: {train: $JR_ROOT/data/sft_demo.jsonl}
model: {path: $M}
trainer: {algo: sft, steps: 40, batch_size: 8, max_seq_len: 48, lr: 2e-2, tensorboard: false}
lora: {enabled: true, rank: 8}
Y
if JR_PROGRESS=off "$JR_BIN" train "$JR_TMP/sft.yaml" >"$JR_TMP/s.out" 2>"$JR_TMP/s.err" &&
   [ -f "$JR_TMP/sftlora/adapter/adapter_config.json" ] && [ ! -e "$JR_TMP/sftlora/model" ] &&
   grep -q 'PEFT adapter in' "$JR_TMP/s.out"; then
  ok sft_lora_writes_a_peft_adapter
else fail sft_lora_writes_a_peft_adapter "$(cat "$JR_TMP/s.out") $(tail -c 300 "$JR_TMP/s.err")"; fi
if /usr/bin/python3 - "$JR_TMP/sftlora/metrics.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"loss"' in l]
first = sum(r["loss"] for r in rows[:5]) / 5; last = sum(r["loss"] for r in rows[-5:]) / 5
sys.exit(0 if last < 0.9 * first else 1)
PY
then ok sft_lora_loss_falls
else fail sft_lora_loss_falls "$(head -c 300 "$JR_TMP/sftlora/metrics.jsonl")"; fi
a=$("$JR_BIN" generate --model "$JR_TMP/sftlora/adapter" --prompt "the cat" --max-tokens 6 --seed 5 2>/dev/null)
c=$("$JR_BIN" generate --model "$M" --prompt "the cat" --max-tokens 6 --seed 5 2>/dev/null)
if [ -n "$a" ] && [ "$a" != "$c" ]; then ok sft_lora_adapter_changes_the_model
else fail sft_lora_adapter_changes_the_model "adapter: $a | base: $c"; fi
