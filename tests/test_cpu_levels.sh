# test_cpu_levels.sh - the kernel levels (judgerl/cpu.h): `judgerl version` names the CPU and the kernels,
# JR_CPU forces each level the CPU has and refuses one it lacks or does not know with one line, and at
# every level an SFT and a GRPO run resumed halfway end bitwise where the uninterrupted run does (a
# checkpoint records its level; resuming at another says so)
. "$JR_ROOT/tests/lib.sh"
"$JR_BIN" version >"$JR_TMP/v" 2>&1 || fail version "exit $?: $(cat "$JR_TMP/v")"
top=$(sed -n 's/^kernel level: [a-z0-9]* (.*the highest this CPU has: \([a-z0-9]*\)).*/\1/p' "$JR_TMP/v")
if grep -q '^cpu: ' "$JR_TMP/v" && grep -q '^kernels: fp32 row product ' "$JR_TMP/v" && [ -n "$top" ]; then
  ok version_names_cpu_and_kernels
  sed 's/^/    /' "$JR_TMP/v"
else fail version_names_cpu_and_kernels "$(cat "$JR_TMP/v")"; fi

expect_error unknown_level_refused '^judgerl: JR_CPU=sse9: unknown kernel level' env JR_CPU=sse9 "$JR_BIN" version

case "$(uname -m)" in
  x86_64) all="baseline avx2 avx512" ;;
  *) all="baseline" ;;
esac
levels=""; past=0
for l in $all; do
  if [ $past -eq 1 ]; then
    expect_error "refuses_${l}_which_this_cpu_lacks" "^judgerl: JR_CPU=$l: this CPU lacks .* \(the highest level it has: $top\)" \
      env JR_CPU=$l "$JR_BIN" version
    continue
  fi
  levels="$levels $l"
  JR_CPU=$l "$JR_BIN" version >"$JR_TMP/v" 2>&1
  grep -q "^kernel level: $l (forced by JR_CPU" "$JR_TMP/v" && grep -q "^kernels: fp32 row product $l, attention $l" "$JR_TMP/v" &&
    ok "forced_level_$l" || fail "forced_level_$l" "$(cat "$JR_TMP/v")"
  [ "$l" = "$top" ] && past=1
done
[ $past -eq 1 ] && [ "$top" != avx512 ] && [ "$(uname -m)" = x86_64 ] || \
  skip refuses_a_level_this_cpu_lacks "this CPU has every level (the qemu test checks a CPU without AVX-512)"

# exact resume at each level: N steps straight == N/2 steps, stop, resume to N (final weights bitwise)
tiny_llama_json >"$JR_TMP/model.json"
printf '%s\n' '{"prompt": "Item 1:", "idx": 1}' '{"prompt": "Item 2:", "idx": 2}' '{"prompt": "Item 3:", "idx": 3}' \
  '{"prompt": "Item 4:", "idx": 4}' >"$JR_TMP/prompts.jsonl"
sft_cfg() { cat <<Y
run: {seed: 3, out_dir: $1}
data: {train: $JR_ROOT/data/sft_demo.jsonl}
model: {init: $JR_TMP/model.json, compute: float32}
trainer: {steps: 4, batch_size: 2, max_seq_len: 24, lr_schedule: constant, save_every: 2, keep_checkpoints: 0, tensorboard: false}
Y
}
grpo_cfg() { cat <<Y
run: {seed: 3, out_dir: $1}
data: {train: $JR_TMP/prompts.jsonl}
model: {init: $JR_TMP/model.json, compute: float32}
trainer: {algo: grpo, steps: 4, batch_size: 8, lr: 1e-2, lr_schedule: constant, save_every: 2, keep_checkpoints: 0, tensorboard: false}
grpo: {num_generations: 4, prompts_per_step: 2, max_prompt_length: 16, max_completion_length: 6}
reward:
  components:
    - {name: starts_lower, fn: format, params: {pattern: "^[a-z]"}}
Y
}
for algo in sft grpo; do
  for l in $levels; do
    d="$JR_TMP/$algo-$l"
    ${algo}_cfg "$d/straight" >"$JR_TMP/$algo.yaml"
    JR_CPU=$l "$JR_BIN" train "$JR_TMP/$algo.yaml" >/dev/null 2>"$JR_TMP/e" || { fail "${algo}_resume_exact_at_$l" "$(tail -c 300 "$JR_TMP/e")"; continue; }
    ${algo}_cfg "$d/halves" >"$JR_TMP/$algo.yaml"
    JR_CPU=$l "$JR_BIN" train "$JR_TMP/$algo.yaml" trainer.steps=2 >/dev/null 2>"$JR_TMP/e" &&
      JR_CPU=$l "$JR_BIN" train "$JR_TMP/$algo.yaml" trainer.resume=true >"$JR_TMP/o" 2>"$JR_TMP/e" ||
      { fail "${algo}_resume_exact_at_$l" "$(tail -c 300 "$JR_TMP/e")"; continue; }
    if cmp -s "$d/straight/model/model.safetensors" "$d/halves/model/model.safetensors" &&
       grep -q '"kernel_level": "'"$l"'"' "$d/halves/checkpoints/step-00000002/trainer_state.json"; then
      ok "${algo}_resume_exact_at_$l"
    else fail "${algo}_resume_exact_at_$l" "final weights differ, or the checkpoint does not record level $l"; fi
  done
done

# resuming at another level continues and says that bitwise equality holds within one level only
set -- $levels
if [ $# -ge 2 ]; then
  d="$JR_TMP/cross"
  sft_cfg "$d" >"$JR_TMP/sft.yaml"
  JR_CPU=$1 "$JR_BIN" train "$JR_TMP/sft.yaml" trainer.steps=2 >/dev/null 2>&1
  JR_CPU=$2 "$JR_BIN" train "$JR_TMP/sft.yaml" trainer.resume=true >"$JR_TMP/o" 2>&1
  grep -q "the checkpoint was written at kernel level $1, this run is at $2: it continues, but matches an uninterrupted run bitwise only within one level" "$JR_TMP/o" &&
    [ -f "$d/model/model.safetensors" ] && ok resume_at_another_level_says_so || fail resume_at_another_level_says_so "$(cat "$JR_TMP/o")"
else
  skip resume_at_another_level_says_so "this CPU has one kernel level"
fi
