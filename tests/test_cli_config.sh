# test_cli_config.sh - `judgerl config`: one clear error line for bad configs, --print-config round trip
. "$JR_ROOT/tests/lib.sh"
cat >"$JR_TMP/bad.yaml" <<'Y'
run:
  sead: 3
Y
expect_error unknown_key "bad.yaml: unknown key 'run.sead' \(did you mean 'run.seed'\?\)" "$JR_BIN" config "$JR_TMP/bad.yaml"
expect_error bad_type "run.seed=\"x\": expected an integer" "$JR_BIN" config run.seed=x
expect_error missing_file "nope.yaml: cannot open" "$JR_BIN" config "$JR_TMP/nope.yaml"
expect_error bad_flag "unknown option '--frob'" "$JR_BIN" config --frob
expect_error unknown_command "unknown command 'frobnicate'" "$JR_BIN" frobnicate
expect_ok print_config "$JR_BIN" config "$JR_ROOT/configs/smoke.yaml" run.seed=9 --print-config
if grep -q '^  seed: 9$' "$JR_TMP/out"; then ok print_config_override; else fail print_config_override "$(cat "$JR_TMP/out")"; fi
cp "$JR_TMP/out" "$JR_TMP/eff.yaml"
expect_ok print_config_reloads "$JR_BIN" config "$JR_TMP/eff.yaml" --print-config
if cmp -s "$JR_TMP/out" "$JR_TMP/eff.yaml"; then ok print_config_fixed_point; else fail print_config_fixed_point "differs"; fi

# names users know: TRL / PEFT / verl keys at any depth map to judgerl's, each with a note
cat >"$JR_TMP/trl.yaml" <<'Y'
learning_rate: 3.0e-4
max_steps: 7
gradient_accumulation_steps: 2
lora: {r: 4, lora_alpha: 8, target_modules: [q_proj, v_proj]}
grpo: {kl_coef: 0.02}
actor_rollout_ref:
  rollout: {n: 3}
  actor: {optim: {lr_warmup_steps: 5}}
Y
expect_ok aliases_accepted "$JR_BIN" config "$JR_TMP/trl.yaml" --print-config
if grep -q '^  lr: 0.0003$' "$JR_TMP/out" && grep -q '^  steps: 7$' "$JR_TMP/out" && grep -q '^  grad_accum: 2$' "$JR_TMP/out" &&
   grep -q '^  rank: 4$' "$JR_TMP/out" && grep -q '^  alpha: 8' "$JR_TMP/out" &&
   grep -q '^  target_modules: "q_proj,v_proj"$' "$JR_TMP/out" && grep -q '^  beta: 0.02$' "$JR_TMP/out" &&
   grep -q '^  num_generations: 3$' "$JR_TMP/out" && grep -q '^  warmup_steps: 5$' "$JR_TMP/out" &&
   grep -q "^note: 'learning_rate' is TRL's name for 'trainer.lr': using it$" "$JR_TMP/err" &&
   grep -q "^note: 'actor_rollout_ref.rollout.n' is verl's name for 'grpo.num_generations'" "$JR_TMP/err" &&
   [ "$(grep -c '^note: ' "$JR_TMP/err")" -eq 8 ]; then ok aliases_mapped_with_notes
else fail aliases_mapped_with_notes "$(cat "$JR_TMP/err"; grep -E 'lr:|steps:|rank|target|beta:|num_gen' "$JR_TMP/out")"; fi
# the suggestions that used to go astray (max_steps -> data.max_rows, lora.r -> trainer.lr, ...)
expect_ok alias_override_max_steps "$JR_BIN" config max_steps=5 lora.r=2 --print-config
if grep -q '^  steps: 5$' "$JR_TMP/out" && grep -q '^  rank: 2$' "$JR_TMP/out"; then ok alias_overrides_mapped
else fail alias_overrides_mapped "$(cat "$JR_TMP/err")"; fi
expect_error alias_epochs_suggests_steps "unknown key 'num_train_epochs' \(TRL's name; judgerl's nearest is 'trainer.steps': judgerl counts optimizer steps" \
  "$JR_BIN" config num_train_epochs=3
expect_error alias_verl_kl_ctrl_explained "'algorithm.kl_ctrl.kl_coef' \(verl's name; judgerl's nearest is 'grpo.beta'" \
  "$JR_BIN" config algorithm.kl_ctrl.kl_coef=0.1
printf 'learning_rate: 1.0e-4\ntrainer: {lr: 2.0e-4}\n' >"$JR_TMP/both.yaml"
expect_error alias_and_key_both_set "'learning_rate' \(TRL's name for 'trainer.lr'\) and 'trainer.lr' are both set" "$JR_BIN" config "$JR_TMP/both.yaml"
# another judgerl section's unknown key is not taken for an alias
expect_error alias_not_across_sections "unknown key 'data.temperature'" "$JR_BIN" config data.temperature=0.5

# `judgerl config` runs train's checks on a training config: what train would refuse, config refuses
printf '{"prompt": "x"}\n' >"$JR_TMP/p.jsonl"
cat >"$JR_TMP/t.yaml" <<Y
run: {out_dir: $JR_TMP/run}
data: {train: $JR_TMP/p.jsonl}
model: {init: $JR_ROOT/tests/fixtures/serve/tiny/config.json}
trainer: {algo: grpo, steps: 1}
reward:
  components:
    - {name: judge, fn: pointwise}
judge: {endpoints: [{url: "http://127.0.0.1:9/v1", model: j}], api_key_env: null}
Y
expect_ok config_train_ok "$JR_BIN" config "$JR_TMP/t.yaml"
expect_error config_missing_data "data.train=$JR_TMP/nope.jsonl: no such file" "$JR_BIN" config "$JR_TMP/t.yaml" data.train="$JR_TMP/nope.jsonl"
expect_error config_bad_url "judge.endpoints\[0\].url=htp:/x: expected an http:// or https:// URL" \
  "$JR_BIN" config "$JR_TMP/t.yaml" 'judge.endpoints=[{url: "htp:/x", model: j}]'
expect_error config_weights_mismatch "grpo.reward_weights has 2 entries but reward.components has 1" \
  "$JR_BIN" config "$JR_TMP/t.yaml" 'grpo.reward_weights=[1, 2]'
mkdir -p "$JR_TMP/run" && : >"$JR_TMP/run/metrics.jsonl"
expect_error config_used_out_dir "run.out_dir=$JR_TMP/run is not empty .*trainer.resume=true" "$JR_BIN" config "$JR_TMP/t.yaml"
expect_error train_same_refusal "run.out_dir=$JR_TMP/run is not empty .*trainer.resume=true" "$JR_BIN" train "$JR_TMP/t.yaml"
# a judge config (for grade): the endpoints' checks too
printf 'judge:\n  endpoints: [{url: "127.0.0.1:8000/v1", model: j}]\n' >"$JR_TMP/j.yaml"
expect_error config_judge_bad_url "judge.endpoints\[0\].url=127.0.0.1:8000/v1: expected an http:// or https:// URL" "$JR_BIN" config "$JR_TMP/j.yaml"
# every key `judgerl train` accepts is a known key here too (monitor.*, ensemble.* were refused)
expect_ok config_knows_train_tables "$JR_BIN" config monitor.enabled=true ensemble.aggregate=mean --print-config
if grep -q '^  enabled: true$' "$JR_TMP/out" && grep -q '^monitor:$' "$JR_TMP/out" && grep -q '^ensemble:$' "$JR_TMP/out"; then
  ok config_prints_train_tables; else fail config_prints_train_tables "$(grep -A2 -E '^(monitor|ensemble):' "$JR_TMP/out")"; fi
