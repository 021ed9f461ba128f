#!/bin/sh
# test_eval_models.sh - `judgerl eval`: on samples it generates from a tiny trained model, --ifeval gives
# exactly `judgerl ifeval`'s numbers; a run directory gives one row per checkpoint; --adapter equals the
# merged model; pass@k equals `judgerl eval code` on the same samples; unscored samples are reported
# with their reasons and left out of the means; bad flags and files give one clear error line.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
T="$JR_TMP/evalmodels"
mkdir -p "$T"
IF="$JR_ROOT/../shared/data/ifeval/input_data.jsonl"
HE="$JR_ROOT/../shared/data/humaneval"

tiny_llama_json 512 >"$T/model.json"
cat >"$T/sft.yaml" <<Y
run: {seed: 5}
data: {train: $JR_ROOT/data/sft_demo.jsonl}
model: {init: $T/model.json}
trainer: {steps: 4, batch_size: 2, max_seq_len: 32, lr: 1e-2, save_every: 2, tensorboard: false}
Y
if ! "$JR_BIN" train "$T/sft.yaml" run.out_dir="$T/run" >/dev/null 2>"$T/err"; then
  fail eval_setup "train: $(tail -c 300 "$T/err")"; exit 0
fi

# 1. --ifeval on its own samples = `judgerl ifeval` on the samples file (the counts and the fractions)
if [ -f "$IF" ]; then
  head -12 "$IF" >"$T/if.jsonl"
  if "$JR_BIN" eval --model "$T/run/model" --data "$T/if.jsonl" --n 3 --ifeval --max-tokens 48 --out "$T/o" >"$T/eval.out" 2>"$T/err" &&
     "$JR_BIN" ifeval --input "$T/o/samples.jsonl" >"$T/ifeval.out" 2>"$T/ifeval.err"; then
    got=$($PY - "$T/o/summary.json" "$T/ifeval.out" "$T/ifeval.err" "$T/o/samples.jsonl" <<'P'
import json, re, sys
s = json.load(open(sys.argv[1]))["ifeval"]
out = open(sys.argv[2]).read()
m = dict((k, (int(a), int(b))) for k, a, b in re.findall(r"^(\w+ \w+-level): [0-9.]+ \((\d+)/(\d+)\)$", out, re.M))
want = {"prompt_strict": "strict prompt-level", "inst_strict": "strict instruction-level",
        "prompt_loose": "loose prompt-level", "inst_loose": "loose instruction-level"}
bad = [k for k, v in want.items() if s[k] != m[v][0] / m[v][1]]
skipped = re.search(r"(\d+) malformed row\(s\) skipped", open(sys.argv[3]).read())
rows = sum(1 for _ in open(sys.argv[4]))
if rows != 36: bad.append("%d sample rows, not 12 x 3" % rows)
if s["rows"] != m["strict prompt-level"][1] or s["unscored"] != (int(skipped.group(1)) if skipped else 0): bad.append("row counts")
if s["instructions"] != m["strict instruction-level"][1]: bad.append("instruction count")
print(" ".join(bad) if bad else "same %s" % s)
P
)
    case $got in same*) ok ifeval_equals_judgerl_ifeval ;; *) fail ifeval_equals_judgerl_ifeval "$got" ;; esac
    if grep -q '^IFEval  Pr(S) [0-9.]*  Ins(S) [0-9.]*  Pr(L) [0-9.]*  Ins(L) [0-9.]*' "$T/eval.out"; then ok ifeval_table_printed
    else fail ifeval_table_printed "$(cat "$T/eval.out")"; fi
  else
    fail ifeval_equals_judgerl_ifeval "$(cat "$T/err" "$T/ifeval.err" 2>/dev/null | head -c 400)"
  fi

  # 2. a run directory: one row per checkpoint, each equal to evaluating that checkpoint alone
  if "$JR_BIN" eval --model "$T/run" --data "$T/if.jsonl" --n 2 --ifeval --max-tokens 24 --out "$T/r" >"$T/run.out" 2>"$T/err" &&
     "$JR_BIN" eval --model "$T/run/checkpoints/step-00000002" --data "$T/if.jsonl" --n 2 --ifeval --max-tokens 24 --out "$T/s2" >/dev/null 2>&1; then
    steps=$(awk 'NR > 1 {print $1}' "$T/run.out" | tr '\n' ' ')
    if [ "$steps" = "2 4 " ] && head -1 "$T/run.out" | grep -q 'Pr(S)' &&
       $PY -c 'import json,sys; a,b=(json.load(open(p)) for p in sys.argv[1:]); a.pop("model"); b.pop("model"); sys.exit(a != b or not a["ifeval"]["rows"])' "$T/r/step-00000002/summary.json" "$T/s2/summary.json"; then
      ok run_dir_one_row_per_checkpoint
    else fail run_dir_one_row_per_checkpoint "steps '$steps': $(cat "$T/run.out")"; fi
  else fail run_dir_one_row_per_checkpoint "$(head -c 400 "$T/err")"; fi
else
  skip ifeval_equals_judgerl_ifeval "../shared/data/ifeval is missing"
fi

# 3. --adapter (a GRPO LoRA run): the same samples as the merged model; the run directory as --adapter
# gives one row per adapter checkpoint. 7. the same run logs eval/ figures every eval_every steps,
# and a resume from an earlier checkpoint logs no step twice.
for i in $(seq 1 8); do echo "{\"prompt\": \"Say $i\", \"type\": \"t$((i % 2))\"}"; done >"$T/p.jsonl"
cat >"$T/grpo.yaml" <<Y
run: {seed: 1}
data: {train: $T/p.jsonl, validation: $T/p.jsonl}
model: {path: $T/run/model}
trainer: {algo: grpo, steps: 4, batch_size: 16, lr: 5e-2, lr_schedule: constant, tensorboard: false, eval_every: 2, save_every: 2}
grpo: {num_generations: 4, prompts_per_step: 4, max_prompt_length: 16, max_completion_length: 8}
lora: {enabled: true, rank: 4, alpha: 8}
reward:
  components:
    - {name: starts_lower, fn: format, params: {pattern: "^[a-z]"}}
Y
cat >"$T/len.yaml" <<'Y'
reward:
  components:
    - {name: long, fn: length, params: {min: 3, max: 1000, slack: 0}}
Y
if "$JR_BIN" train "$T/grpo.yaml" run.out_dir="$T/lora" >/dev/null 2>"$T/err" &&
   "$JR_BIN" merge --model "$T/run/model" --adapter "$T/lora/adapter" -o "$T/merged" >/dev/null 2>>"$T/err" &&
   "$JR_BIN" eval --model "$T/run/model" --adapter "$T/lora/adapter" --data "$T/p.jsonl" --n 4 --reward "$T/len.yaml" --max-tokens 16 --out "$T/ad" >/dev/null 2>>"$T/err" &&
   "$JR_BIN" eval --model "$T/merged" --data "$T/p.jsonl" --n 4 --reward "$T/len.yaml" --max-tokens 16 --out "$T/mg" >/dev/null 2>>"$T/err" &&
   "$JR_BIN" eval --model "$T/run/model" --data "$T/p.jsonl" --n 4 --reward "$T/len.yaml" --max-tokens 16 --out "$T/base" >/dev/null 2>>"$T/err"; then
  resp() { $PY -c 'import json,sys; print(json.dumps([json.loads(l)["response"] for l in open(sys.argv[1])]))' "$1"; }
  if [ "$(resp "$T/ad/samples.jsonl")" = "$(resp "$T/mg/samples.jsonl")" ] && [ "$(resp "$T/ad/samples.jsonl")" != "$(resp "$T/base/samples.jsonl")" ]; then
    ok adapter_equals_merged
  else fail adapter_equals_merged "adapter and merged samples differ, or equal the base model's"; fi
  if "$JR_BIN" eval --model "$T/run/model" --adapter "$T/lora" --data "$T/p.jsonl" --n 2 --reward "$T/len.yaml" --max-tokens 8 >"$T/lr.out" 2>"$T/err" &&
     [ "$(awk 'NR > 1 {print $1}' "$T/lr.out" | tr '\n' ' ')" = "2 4 " ] && head -1 "$T/lr.out" | grep -q 'long/pass@1'; then
    ok lora_run_dir_rows
  else fail lora_run_dir_rows "$(cat "$T/lr.out" "$T/err")"; fi
  expect_error lora_checkpoint_as_model "holds a LoRA adapter, not a model" \
    "$JR_BIN" eval --model "$T/lora" --data "$T/p.jsonl" --reward "$T/len.yaml"
  # 7. eval/ figures at steps 2 and 4 (pass@1 = the component mean, pass@4 per prompt, per source)
  got=$($PY - "$T/lora/metrics.jsonl" <<'P'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
ev = [r["step"] for r in rows if "eval/reward" in r]
r = [r for r in rows if r["step"] == 2][0]
keys = ["eval/reward", "eval/unscored", "eval/starts_lower/mean", "eval/starts_lower/pass@1", "eval/starts_lower/pass@4",
        "eval/t0/reward", "eval/t1/starts_lower/pass@4"]
bad = [k for k in keys if k not in r] + [k for r2 in rows if r2["step"] % 2 for k in r2 if k.startswith("eval/")]
if ev != [2, 4]: bad.append("eval at %s" % ev)
elif r["eval/starts_lower/pass@1"] != r["eval/starts_lower/mean"] or not r["eval/starts_lower/pass@1"] <= r["eval/starts_lower/pass@4"] <= 1:
    bad.append("pass@k %s" % r)
elif abs((r["eval/t0/reward"] + r["eval/t1/reward"]) / 2 - r["eval/reward"]) > 1e-12: bad.append("per source")
print(" ".join(map(str, bad)) or "ok")
P
)
  if [ "$got" = ok ]; then ok grpo_eval_every_logs_eval_figures; else fail grpo_eval_every_logs_eval_figures "$got"; fi
  # a kill after step 4 with only step 2 checkpointed: resume to 6 steps logs 1..6 once, eval at 2, 4, 6
  rm -rf "$T/lora/checkpoints/step-00000004" "$T/lora/adapter"
  echo step-00000002 >"$T/lora/checkpoints/latest"
  if "$JR_BIN" train "$T/grpo.yaml" run.out_dir="$T/lora" trainer.resume=true trainer.steps=6 >/dev/null 2>"$T/err"; then
    got=$($PY -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print([r["step"] for r in rows], [r["step"] for r in rows if "eval/reward" in r and "eval/starts_lower/pass@4" in r])' "$T/lora/metrics.jsonl")
    if [ "$got" = "[1, 2, 3, 4, 5, 6] [2, 4, 6]" ]; then ok resume_logs_no_step_twice; else fail resume_logs_no_step_twice "$got"; fi
  else fail resume_logs_no_step_twice "$(tail -c 300 "$T/err")"; fi
else fail adapter_equals_merged "$(head -c 400 "$T/err")"; fi

# 4. pass@k = `judgerl eval code` on the same samples (code_tests reward, HumanEval rows)
if [ -f "$HE/HumanEval.jsonl.gz" ] && bwrap --unshare-user --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib \
     --symlink usr/lib64 /lib64 /usr/bin/true >/dev/null 2>&1; then
  "$JR_BIN" dataset convert --from humaneval --input "$HE/HumanEval.jsonl.gz" --output "$T/he.jsonl" >/dev/null 2>&1
  # 4 problems x 4 samples: canonical solutions and wrong bodies in a fixed pattern
  $PY - "$T/he.jsonl" "$T/he_rows.jsonl" "$T/he_samples.jsonl" <<'P'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])][:4]
with open(sys.argv[2], "w") as er, open(sys.argv[3], "w") as cs:
    for p, r in enumerate(rows):
        for i in range(4):
            good = (i + p) % 3 == 0 or (p == 2 and i < 3)
            c = r["answer"] if good else "    return None\n"
            er.write(json.dumps(dict(r, response=c, task_id=r["id"])) + "\n")
            cs.write(json.dumps({"task_id": r["id"], "completion": c}) + "\n")
P
  printf 'reward:\n  components:\n    - {fn: code_tests}\n' >"$T/code.yaml"
  if "$JR_BIN" eval code --problems "$HE/HumanEval.jsonl.gz" --samples "$T/he_samples.jsonl" --k 1,2,4 --ignore-incomplete >"$T/code.out" 2>"$T/err" &&
     "$JR_BIN" eval --samples "$T/he_rows.jsonl" --reward "$T/code.yaml" --k 1,2,4 --out "$T/he" >/dev/null 2>>"$T/err"; then
    got=$($PY - "$T/code.out" "$T/he/summary.json" <<'P'
import json, sys
want = json.loads(open(sys.argv[1]).read())
s = json.load(open(sys.argv[2]))
c = s["reward"]["components"]["code_tests"]
got = {k: c[k] for k in ("pass@1", "pass@2", "pass@4")}
code = s["by_source"]["code"]["components"]["code_tests"]
print("same" if got == want and all(code[k] == want[k] for k in want) and 0 < want["pass@1"] < want["pass@2"] < 1 else "%s vs %s" % (got, want))
P
)
    if [ "$got" = same ]; then ok passk_equals_eval_code; else fail passk_equals_eval_code "$got"; fi
  else fail passk_equals_eval_code "$(head -c 400 "$T/err")"; fi
else
  skip passk_equals_eval_code "no HumanEval data or no working bwrap"
fi

# 5. unscored samples: counted with their reason, left out of the means (never 0)
printf '%s\n' '{"id":"a","prompt":"q","answer":"72","response":"#### 72","type":"math"}' \
  '{"id":"a","prompt":"q","answer":"72","response":"#### 7","type":"math"}' \
  '{"id":"b","prompt":"q2","response":"#### 7","type":"math"}' \
  '{"id":"c","prompt":"q3","answer":"5","response":"it is 5","data_source":"gsm"}' >"$T/fa.jsonl"
printf 'reward:\n  components:\n    - {fn: final_answer}\n' >"$T/fa.yaml"
if "$JR_BIN" eval --samples "$T/fa.jsonl" --reward "$T/fa.yaml" --k 1,2 --out "$T/fa" >"$T/fa.out" 2>"$T/err"; then
  got=$($PY - "$T/fa/summary.json" <<'P'
import json, sys
s = json.load(open(sys.argv[1]))
r = s["reward"]
fa = r["components"]["final_answer"]
ok = (r["scored"], r["unscored"]) == (3, 1) and abs(r["mean"] - 2 / 3) < 1e-15 and fa["pass@1"] == 0.75 and "pass@2" not in fa \
    and s["by_source"]["math"]["unscored"] == 1 and s["by_source"]["math"]["components"]["final_answer"]["pass@2"] == 1.0 \
    and list(s["unscored_reasons"].values()) == [1] and "'answer'" in list(s["unscored_reasons"])[0]
print("ok" if ok else json.dumps(s))
P
)
  if [ "$got" = ok ] && grep -q "^unscored 1: reward: component 'final_answer'" "$T/fa.out"; then ok unscored_with_reasons
  else fail unscored_with_reasons "$got $(cat "$T/fa.out")"; fi
else fail unscored_with_reasons "$(head -c 400 "$T/err")"; fi

# 6. one clear error line
expect_error bad_flag "unknown argument '--bogus'" "$JR_BIN" eval --model "$T/run/model" --data "$T/p.jsonl" --ifeval --bogus
expect_error missing_data "$T/none.jsonl" "$JR_BIN" eval --model "$T/run/model" --data "$T/none.jsonl" --ifeval
expect_error nothing_to_score "nothing to score" "$JR_BIN" eval --model "$T/run/model" --data "$T/p.jsonl"
expect_error bad_n "eval.n" "$JR_BIN" eval --model "$T/run/model" --data "$T/p.jsonl" --ifeval --n 0
expect_error not_a_run_dir "no checkpoints/" "$JR_BIN" eval --model "$T" --data "$T/p.jsonl" --ifeval
expect_error samples_without_response 'row 1 has no "response"' "$JR_BIN" eval --samples "$T/p.jsonl" --ifeval
