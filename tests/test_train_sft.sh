# test_train_sft.sh - `judgerl train` SFT: loss falls, exact resume after SIGKILL, checkpoint layout, clear errors
. "$JR_ROOT/tests/lib.sh"
tiny_llama_json >"$JR_TMP/model.json"
cat >"$JR_TMP/sft.yaml" <<Y
run: {seed: 5}
data: {train: $JR_ROOT/data/sft_demo.jsonl}
model: {init: $JR_TMP/model.json}
trainer: {steps: 60, batch_size: 4, grad_accum: 2, max_seq_len: 32, lr: 1e-2, warmup_steps: 5,
          weight_decay: 0.1, lr_schedule: cosine, save_every: 4, keep_checkpoints: 2, tensorboard: false}
Y
losses() { sed -n 's/.*"step":\([0-9]*\),.*"loss":\([^,]*\),.*/\1 \2/p' "$1"; }

# 1. uninterrupted run
if "$JR_BIN" train "$JR_TMP/sft.yaml" run.out_dir="$JR_TMP/a" >"$JR_TMP/a.out" 2>"$JR_TMP/a.err"; then ok train_runs
else fail train_runs "$(tail -c 300 "$JR_TMP/a.err")"; fi
losses "$JR_TMP/a/metrics.jsonl" >"$JR_TMP/a.loss"
n=$(wc -l <"$JR_TMP/a.loss")
first=$(head -1 "$JR_TMP/a.loss" | cut -d' ' -f2); last=$(tail -1 "$JR_TMP/a.loss" | cut -d' ' -f2)
if [ "$n" -eq 60 ] && awk "BEGIN{exit !($last < $first - 1.0)}"; then ok loss_falls
else fail loss_falls "$n rows, loss $first -> $last"; fi
if [ -f "$JR_TMP/a/model/config.json" ] && [ -f "$JR_TMP/a/model/model.safetensors" ] &&
   [ "$(cat "$JR_TMP/a/checkpoints/latest")" = step-00000060 ] &&
   [ -f "$JR_TMP/a/checkpoints/step-00000060/optimizer.safetensors" ] &&
   [ -f "$JR_TMP/a/checkpoints/step-00000060/trainer_state.json" ] &&
   [ "$(ls "$JR_TMP/a/checkpoints" | grep -c '^step-')" -eq 2 ]; then ok checkpoint_layout
else fail checkpoint_layout "$(ls -R "$JR_TMP/a" | head -20)"; fi
# the checkpoint is an HF model directory the engine loads back
if "$JR_BIN" forward --model "$JR_TMP/a/checkpoints/step-00000060" --ids "256 81 58" --targets "81 58 32" >"$JR_TMP/f.out" 2>&1 &&
   grep -q '^loss [0-9.]*$' "$JR_TMP/f.out"; then ok checkpoint_loads
else fail checkpoint_loads "$(cat "$JR_TMP/f.out")"; fi

# 2. the same run killed with SIGKILL after its first checkpoint, then resumed
"$JR_BIN" train "$JR_TMP/sft.yaml" run.out_dir="$JR_TMP/b" >/dev/null 2>"$JR_TMP/b.err" &
pid=$!
i=0
while [ ! -f "$JR_TMP/b/checkpoints/latest" ] && [ $i -lt 6000 ]; do sleep 0.01; i=$((i + 1)); done
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
if [ -d "$JR_TMP/b/model" ]; then fail killed_mid_run "the run finished before SIGKILL"
else ok killed_mid_run; fi
at=$(cat "$JR_TMP/b/checkpoints/latest")
if "$JR_BIN" train "$JR_TMP/sft.yaml" run.out_dir="$JR_TMP/b" trainer.resume=true >"$JR_TMP/b.out" 2>"$JR_TMP/b.err"; then
  ok resume_runs
else fail resume_runs "$(tail -c 300 "$JR_TMP/b.err")"; fi
losses "$JR_TMP/b/metrics.jsonl" >"$JR_TMP/b.loss"
if grep -q '^resumed, steps' "$JR_TMP/b.out" && cmp -s "$JR_TMP/a.loss" "$JR_TMP/b.loss"; then
  ok resume_exact_losses
else fail resume_exact_losses "killed at $at; $(diff "$JR_TMP/a.loss" "$JR_TMP/b.loss" | head -5)"; fi
if cmp -s "$JR_TMP/a/model/model.safetensors" "$JR_TMP/b/model/model.safetensors"; then ok resume_exact_weights
else fail resume_exact_weights "final weights differ"; fi

# 3. SIGTERM: the step in flight finishes, a checkpoint is written, one clear line, exit 1
"$JR_BIN" train "$JR_TMP/sft.yaml" run.out_dir="$JR_TMP/g" >/dev/null 2>"$JR_TMP/g.err" &
pid=$!
i=0
while [ ! -f "$JR_TMP/g/checkpoints/latest" ] && [ $i -lt 6000 ]; do sleep 0.01; i=$((i + 1)); done
kill -TERM $pid 2>/dev/null
wait $pid; rc=$?
at=$(sed -n 's/.*stopped by a signal after step \([0-9]*\);.*/\1/p' "$JR_TMP/g.err")
if [ "$rc" -eq 1 ] && [ -n "$at" ] && [ "$(cat "$JR_TMP/g/checkpoints/latest")" = "$(printf 'step-%08d' "$at")" ]; then
  ok sigterm_checkpoints
elif [ "$rc" -eq 0 ]; then skip sigterm_checkpoints "the run finished before SIGTERM arrived"
else fail sigterm_checkpoints "exit $rc: $(tail -c 300 "$JR_TMP/g.err")"; fi

# 4. clear errors
printf '{"prompt": "a", "completion": "b"}\n{"prompt": "x"}\n' >"$JR_TMP/bad.jsonl"
expect_error missing_completion 'bad.jsonl:2: row has no string field "completion"' \
  "$JR_BIN" train "$JR_TMP/sft.yaml" data.train="$JR_TMP/bad.jsonl" run.out_dir="$JR_TMP/c" data.shuffle=false trainer.batch_size=2
expect_error both_model_sources 'set exactly one of model.path' \
  "$JR_BIN" train "$JR_TMP/sft.yaml" model.path="$JR_TMP/a/model" run.out_dir="$JR_TMP/d"
expect_error grpo_needs_rewards "reward.components is empty" \
  "$JR_BIN" train "$JR_TMP/sft.yaml" trainer.algo=grpo run.out_dir="$JR_TMP/e"
sed 's/"vocab_size": 264/"vocab_size": 200/' "$JR_TMP/model.json" >"$JR_TMP/small.json"
expect_error vocab_too_small 'vocab_size=200 is smaller than the byte tokenizer' \
  "$JR_BIN" train "$JR_TMP/sft.yaml" model.init="$JR_TMP/small.json" run.out_dir="$JR_TMP/f"

# 5. chat rows {"messages": [...]} with the 8-ball BPE tokenizer: loss on the assistant turns only
EB="$JR_ROOT/data/eightball/tokenizer"
sed 's/^{"question": \(".*"\), "answer": \(".*"\)}$/{"messages": [{"role": "user", "content": \1}, {"role": "assistant", "content": \2}]}/' \
  "$JR_ROOT/data/eightball/questions.jsonl" >"$JR_TMP/chat.jsonl"
sed 's/"vocab_size": 264/"vocab_size": 512/' "$JR_TMP/model.json" >"$JR_TMP/bpe.json"
if "$JR_BIN" train "$JR_TMP/sft.yaml" data.train="$JR_TMP/chat.jsonl" model.init="$JR_TMP/bpe.json" \
     trainer.tokenizer="$EB" trainer.save_every=0 run.out_dir="$JR_TMP/h" >"$JR_TMP/h.out" 2>"$JR_TMP/h.err"; then
  ok chat_train_runs
else fail chat_train_runs "$(tail -c 300 "$JR_TMP/h.err")"; fi
losses "$JR_TMP/h/metrics.jsonl" >"$JR_TMP/h.loss"
first=$(head -1 "$JR_TMP/h.loss" | cut -d' ' -f2); last=$(tail -1 "$JR_TMP/h.loss" | cut -d' ' -f2)
if [ -n "$last" ] && awk "BEGIN{exit !($last < $first - 2.0)}"; then ok chat_loss_falls
else fail chat_loss_falls "loss $first -> $last"; fi
if cmp -s "$JR_TMP/h/model/tokenizer.json" "$EB/tokenizer.json"; then ok chat_model_has_tokenizer
else fail chat_model_has_tokenizer "$(ls "$JR_TMP/h/model")"; fi
# one row, one step: the trained tokens are exactly those of the assistant turn ("Yes<|im_end|>")
printf '{"messages": [{"role": "system", "content": "You answer questions about the future."}, {"role": "user", "content": "Will it rain?"}, {"role": "assistant", "content": "Yes"}]}\n' >"$JR_TMP/one.jsonl"
want=$(printf 'Yes<|im_end|>' | "$JR_BIN" tokenize --tokenizer "$EB" | wc -w)
"$JR_BIN" train "$JR_TMP/sft.yaml" data.train="$JR_TMP/one.jsonl" model.init="$JR_TMP/bpe.json" trainer.tokenizer="$EB" \
  trainer.steps=1 trainer.batch_size=1 trainer.grad_accum=1 trainer.max_seq_len=60 run.out_dir="$JR_TMP/i" >/dev/null 2>"$JR_TMP/i.err"
got=$(sed -n 's/.*"tokens":\([0-9.]*\)[,}].*/\1/p' "$JR_TMP/i/metrics.jsonl" | head -1)
if [ "$want" -ge 2 ] && [ "${got%.*}" = "$want" ]; then ok chat_loss_on_assistant_only
else fail chat_loss_on_assistant_only "want $want tokens, got '$got': $(tail -c 200 "$JR_TMP/i.err")"; fi
expect_error chat_needs_template 'no chat template' \
  "$JR_BIN" train "$JR_TMP/sft.yaml" data.train="$JR_TMP/chat.jsonl" run.out_dir="$JR_TMP/j"
expect_error chat_vocab_too_small 'vocab_size=264 is smaller than the bpe tokenizer' \
  "$JR_BIN" train "$JR_TMP/sft.yaml" trainer.tokenizer="$EB" run.out_dir="$JR_TMP/k"
