# test_run_dir.sh - the run-directory rule: a used run.out_dir needs trainer.resume or run.overwrite;
# resume cuts metrics.jsonl and samples.jsonl back to the checkpoint's step (also with no checkpoint yet)
. "$JR_ROOT/tests/lib.sh"
cat >"$JR_TMP/model.json" <<'J'
{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 16, "num_hidden_layers": 1,
 "num_attention_heads": 2, "num_key_value_heads": 1, "intermediate_size": 24, "vocab_size": 264,
 "max_position_embeddings": 64, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": false,
 "hidden_act": "silu", "torch_dtype": "float32"}
J
cat >"$JR_TMP/sft.yaml" <<Y
run: {seed: 5, out_dir: $JR_TMP/r}
data: {train: $JR_ROOT/data/sft_demo.jsonl}
model: {init: $JR_TMP/model.json}
trainer: {steps: 6, batch_size: 2, max_seq_len: 16, save_every: 4, keep_checkpoints: 0, tensorboard: false}
Y
steps() { sed -n 's/.*"step":\([0-9]*\),.*/\1/p' "$1" | tr '\n' ' '; }

"$JR_BIN" train "$JR_TMP/sft.yaml" >/dev/null 2>"$JR_TMP/e" || fail first_run "$(cat "$JR_TMP/e")"
before=$(steps "$JR_TMP/r/metrics.jsonl")
[ "$before" = "1 2 3 4 5 6 " ] && ok first_run || fail first_run "steps: $before"

# 1. a second run into the used directory is refused with one line naming both ways out
if "$JR_BIN" train "$JR_TMP/sft.yaml" >/dev/null 2>"$JR_TMP/e"; then fail used_dir_refused "exit 0"
elif [ "$(wc -l <"$JR_TMP/e")" -eq 1 ] && grep -q 'trainer.resume=true' "$JR_TMP/e" && grep -q 'run.overwrite=true' "$JR_TMP/e" &&
     grep -q 'metrics.jsonl\|checkpoints' "$JR_TMP/e" && [ "$(steps "$JR_TMP/r/metrics.jsonl")" = "$before" ]; then
  ok used_dir_refused
else fail used_dir_refused "$(cat "$JR_TMP/e")"; fi

# 2. run.overwrite=true replaces the run: each step once, other files kept
echo keep >"$JR_TMP/r/notes.txt"
touch "$JR_TMP/r/events.out.tfevents.1.old"
if "$JR_BIN" train "$JR_TMP/sft.yaml" run.overwrite=true >/dev/null 2>"$JR_TMP/e" &&
   [ "$(steps "$JR_TMP/r/metrics.jsonl")" = "1 2 3 4 5 6 " ] && [ -f "$JR_TMP/r/notes.txt" ] &&
   [ ! -f "$JR_TMP/r/events.out.tfevents.1.old" ] && [ -f "$JR_TMP/r/model/config.json" ]; then ok overwrite_replaces
else fail overwrite_replaces "$(cat "$JR_TMP/e"; steps "$JR_TMP/r/metrics.jsonl")"; fi

# 3. resume from the step-4 checkpoint: metrics.jsonl and samples.jsonl cut back to step 4 first
echo step-00000004 >"$JR_TMP/r/checkpoints/latest"
rm -rf "$JR_TMP/r/checkpoints/step-00000006" "$JR_TMP/r/model"
printf '{"step":4,"completion":"a"}\n{"step":5,"completion":"b"}\n{"step":6,"completion":"c"}\n' >"$JR_TMP/r/samples.jsonl"
if "$JR_BIN" train "$JR_TMP/sft.yaml" trainer.resume=true >/dev/null 2>"$JR_TMP/e" &&
   [ "$(steps "$JR_TMP/r/metrics.jsonl")" = "1 2 3 4 5 6 " ] && [ "$(steps "$JR_TMP/r/samples.jsonl")" = "4 " ]; then
  ok resume_cuts_logs
else fail resume_cuts_logs "$(cat "$JR_TMP/e"); metrics $(steps "$JR_TMP/r/metrics.jsonl"); samples $(steps "$JR_TMP/r/samples.jsonl")"; fi

# 4. killed before its first checkpoint: resume starts at step 0 and the old rows go
rm -rf "$JR_TMP/r/checkpoints" "$JR_TMP/r/model"
if "$JR_BIN" train "$JR_TMP/sft.yaml" trainer.resume=true >/dev/null 2>"$JR_TMP/e" &&
   [ "$(steps "$JR_TMP/r/metrics.jsonl")" = "1 2 3 4 5 6 " ] && [ ! -s "$JR_TMP/r/samples.jsonl" ]; then
  ok resume_without_checkpoint
else fail resume_without_checkpoint "$(cat "$JR_TMP/e"); metrics $(steps "$JR_TMP/r/metrics.jsonl")"; fi

# 5. the judge cache alone does not make a directory used
mkdir -p "$JR_TMP/c" && : >"$JR_TMP/c/judge_cache.sqlite"
if "$JR_BIN" train "$JR_TMP/sft.yaml" run.out_dir="$JR_TMP/c" >/dev/null 2>"$JR_TMP/e"; then ok judge_cache_ignored
else fail judge_cache_ignored "$(cat "$JR_TMP/e")"; fi

# 6. merge checks the adapter's base model: its name (unless --force) and its layers and shapes (always)
B="$JR_TMP/r/model"
"$JR_BIN" train "$JR_TMP/sft.yaml" run.out_dir="$JR_TMP/l" model.init=null model.path="$B" lora.enabled=true \
  lora.rank=2 trainer.steps=2 >/dev/null 2>"$JR_TMP/e" || fail lora_run "$(cat "$JR_TMP/e")"
if "$JR_BIN" merge --model "$B" --adapter "$JR_TMP/l/adapter" -o "$JR_TMP/m1" >/dev/null 2>"$JR_TMP/e"; then ok merge_own_base
else fail merge_own_base "$(cat "$JR_TMP/e")"; fi
mkdir -p "$JR_TMP/other" && cp "$B"/* "$JR_TMP/other/"
if "$JR_BIN" merge --model "$JR_TMP/other" --adapter "$JR_TMP/l/adapter" -o "$JR_TMP/m2" >/dev/null 2>"$JR_TMP/e"; then
  fail merge_other_base_refused "exit 0"
elif [ "$(wc -l <"$JR_TMP/e")" -eq 1 ] && grep -q "base model '$B'" "$JR_TMP/e" && grep -q -- --force "$JR_TMP/e" &&
     [ ! -e "$JR_TMP/m2" ]; then ok merge_other_base_refused
else fail merge_other_base_refused "$(cat "$JR_TMP/e")"; fi
if "$JR_BIN" merge --model "$JR_TMP/other" --adapter "$JR_TMP/l/adapter" -o "$JR_TMP/m2" --force >/dev/null 2>"$JR_TMP/e" &&
   cmp -s "$JR_TMP/m1/model.safetensors" "$JR_TMP/m2/model.safetensors"; then ok merge_force
else fail merge_force "$(cat "$JR_TMP/e")"; fi
# a 2-layer model's adapter onto the 1-layer model: refused even with --force
sed 's/"num_hidden_layers": 1/"num_hidden_layers": 2/' "$JR_TMP/model.json" >"$JR_TMP/model2.json"
"$JR_BIN" train "$JR_TMP/sft.yaml" run.out_dir="$JR_TMP/d2" model.init="$JR_TMP/model2.json" trainer.steps=1 >/dev/null 2>&1
"$JR_BIN" train "$JR_TMP/sft.yaml" run.out_dir="$JR_TMP/l2" model.init=null model.path="$JR_TMP/d2/model" lora.enabled=true \
  lora.rank=2 trainer.steps=1 >/dev/null 2>"$JR_TMP/e" || fail lora_run2 "$(cat "$JR_TMP/e")"
if "$JR_BIN" merge --model "$B" --adapter "$JR_TMP/l2/adapter" -o "$JR_TMP/m3" --force >/dev/null 2>"$JR_TMP/e"; then
  fail merge_shape_mismatch_refused "exit 0"
elif grep -q "layers.1.*no place in the base model (1 layers" "$JR_TMP/e" && [ ! -e "$JR_TMP/m3" ]; then ok merge_shape_mismatch_refused
else fail merge_shape_mismatch_refused "$(cat "$JR_TMP/e")"; fi
