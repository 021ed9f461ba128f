#!/bin/sh
# test_eval_code.sh - `judgerl eval code` as HumanEval's evaluate_functional_correctness: the upstream
# self-test samples, all 164 canonical solutions, the rm -rf sample, errors; `judgerl dataset convert`.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
HE="$JR_ROOT/../shared/data/humaneval"
T="$JR_TMP/evalcode"
mkdir -p "$T"

if [ ! -f "$HE/HumanEval.jsonl.gz" ]; then skip eval_code "../shared/data/humaneval is missing"; exit 0; fi
if ! why=$(bwrap --unshare-user --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64 /usr/bin/true 2>&1); then
  skip eval_code "bwrap --unshare-user true fails here: ${why:-bwrap missing}"; exit 0
fi

# 1. upstream's self-test: 6 samples of test/0, 3 pass -> {"pass@1": 0.4999999999999999}, the
# sleep is "timed out", the others failed; the rm -rf one runs where a `tmp` directory waits.
cp "$HE/example_samples.jsonl" "$T/samples.jsonl"
mkdir -p "$T/cwd/tmp" && echo keep >"$T/cwd/tmp/keep.txt"
if (cd "$T/cwd" && "$JR_BIN" eval code --problems "$HE/example_problem.jsonl" --samples "$T/samples.jsonl" >"$T/out" 2>"$T/err"); then
  if [ "$(cat "$T/out")" = '{"pass@1": 0.4999999999999999}' ]; then ok example_pass_at_1; else fail example_pass_at_1 "$(cat "$T/out")"; fi
  got=$($PY -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
src = [json.loads(l) for l in open(sys.argv[2])]
assert [r["completion"] for r in rows] == [s["completion"] for s in src], "order or rows changed"
print(" | ".join("%s %s" % (r["passed"], r["result"].split(":")[0]) for r in rows))' "$T/samples.jsonl_results.jsonl" "$HE/example_samples.jsonl")
  want="False failed | False timed out | False failed | True passed | True passed | True passed"
  if [ "$got" = "$want" ]; then ok example_results; else fail example_results "$got"; fi
  if [ "$(cat "$T/cwd/tmp/keep.txt" 2>/dev/null)" = keep ]; then ok rm_rf_touches_nothing; else fail rm_rf_touches_nothing "tmp/keep.txt is gone"; fi
else
  fail example_pass_at_1 "exit $?: $(cat "$T/err")"
fi

# a sample that really runs rm -rf on the host's paths (cwd's tmp, its absolute path, python) passes
# inside the sandbox and removes nothing outside it
$PY -c '
import json, sys
c = "    import subprocess\n    subprocess.check_output(\"rm -rf tmp %s /usr/bin/python3 2>/dev/null; exit 0\", shell=True)\n    return 1" % sys.argv[1]
print(json.dumps({"task_id": "test/0", "completion": c}))' "$T/cwd/tmp" >"$T/rm.jsonl"
if (cd "$T/cwd" && "$JR_BIN" eval code --problems "$HE/example_problem.jsonl" --samples "$T/rm.jsonl" >"$T/out" 2>"$T/err") \
   && [ "$(cat "$T/out")" = '{"pass@1": 1.0}' ] && [ "$(cat "$T/cwd/tmp/keep.txt" 2>/dev/null)" = keep ] && [ -x /usr/bin/python3 ]; then
  ok rm_rf_real_touches_nothing
else
  fail rm_rf_real_touches_nothing "$(cat "$T/out" "$T/err"; ls "$T/cwd/tmp")"
fi

# 2. every canonical solution passes; samples may be gzip too; 4 sandboxes at once.
$PY -c '
import gzip, json, sys
with gzip.open(sys.argv[1], "rt") as f, gzip.open(sys.argv[2], "wt") as o:
    for l in f:
        p = json.loads(l)
        o.write(json.dumps({"task_id": p["task_id"], "completion": p["canonical_solution"]}) + "\n")
        o.write(json.dumps({"task_id": p["task_id"], "completion": "    return None\n"}) + "\n")
' "$HE/HumanEval.jsonl.gz" "$T/canon.jsonl.gz"
if "$JR_BIN" eval code --problems "$HE/HumanEval.jsonl.gz" --samples "$T/canon.jsonl.gz" --results "$T/canon_results.jsonl" \
     --k 1,2 --timeout-s 10 --parallel 4 >"$T/out" 2>"$T/err"; then
  # 164 problems x (canonical passes, "return None" fails): pass@1 = 0.5, pass@2 = 1
  if [ "$(cat "$T/out")" = '{"pass@1": 0.5, "pass@2": 1.0}' ]; then ok canonical_164_pass; else
    fail canonical_164_pass "$(cat "$T/out"); not passed: $(grep -v '"passed":true' "$T/canon_results.jsonl" | grep -v 'return None' | head -c 600)"; fi
  n=$(grep -c '"passed":true' "$T/canon_results.jsonl")
  if [ "$n" -eq 164 ]; then ok canonical_results_file; else fail canonical_results_file "$n rows passed"; fi
else
  fail canonical_164_pass "exit $?: $(cat "$T/err")"
fi

# 3. errors: one line, non-zero
printf '{"task_id": "HumanEval/0", "completion": "    return True\\n"}\n' >"$T/one.jsonl"
expect_error incomplete_is_an_error "problem 'HumanEval/1' has no sample" "$JR_BIN" eval code --problems "$HE/HumanEval.jsonl.gz" --samples "$T/one.jsonl"
printf '{"task_id": "nope/1", "completion": "x"}\n' >"$T/unknown.jsonl"
expect_error unknown_task "task_id 'nope/1' is not in" "$JR_BIN" eval code --problems "$HE/example_problem.jsonl" --samples "$T/unknown.jsonl"
expect_error bad_k "--k '0'" "$JR_BIN" eval code --problems "$HE/example_problem.jsonl" --samples "$T/one.jsonl" --k 0
expect_error missing_file "nothere.jsonl" "$JR_BIN" eval code --problems "$HE/example_problem.jsonl" --samples "$T/nothere.jsonl"
expect_error bad_sandbox_key "sandbox.memry_mb" "$JR_BIN" eval code --problems "$HE/example_problem.jsonl" --samples "$T/one.jsonl" sandbox.memry_mb=5
expect_error no_bwrap "sandbox.unsafe" "$JR_BIN" eval code --problems "$HE/example_problem.jsonl" --samples "$T/samples.jsonl" sandbox.bwrap=/nonexistent/bwrap
expect_error eval_needs_subcommand "unknown subcommand 'model'" "$JR_BIN" eval model
printf '{"task_id": "test/0", "completion": "    return 1"}\n' >"$T/ok1.jsonl"
if "$JR_BIN" eval code --problems "$HE/example_problem.jsonl" --samples "$T/ok1.jsonl" --ignore-incomplete >"$T/out" 2>/dev/null \
   && [ "$(cat "$T/out")" = '{"pass@1": 1.0}' ]; then ok one_sample; else fail one_sample "$(cat "$T/out")"; fi

# 4. dataset convert: rows for train / grade / eval
if "$JR_BIN" dataset convert --from gsm8k --input "$JR_ROOT/../shared/data/gsm8k/test.jsonl" --output "$T/gsm8k.jsonl" 2>/dev/null \
   && "$JR_BIN" dataset convert --from humaneval --input "$HE/HumanEval.jsonl.gz" >"$T/he.jsonl"; then
  got=$($PY -c '
import json, sys
g = [json.loads(l) for l in open(sys.argv[1])]
h = [json.loads(l) for l in open(sys.argv[2])]
print(len(g), g[0]["answer"], g[0]["type"], len(h), h[0]["type"], sorted(h[0]))' "$T/gsm8k.jsonl" "$T/he.jsonl")
  want="1319 18 math 164 code ['answer', 'entry_point', 'id', 'problem', 'prompt', 'test', 'type']"
  if [ "$got" = "$want" ]; then ok dataset_convert; else fail dataset_convert "$got"; fi
else
  fail dataset_convert "exit $?"
fi
expect_error convert_bad_format "use humaneval or gsm8k" "$JR_BIN" dataset convert --from mbpp --input "$HE/example_problem.jsonl"

# 5. the rows feed `judgerl grade`: final_answer on GSM8K rows, code_tests on HumanEval rows
# (even rows answer right, odd rows wrong: every reward must say which)
grade_rows() { # NAME FROM INPUT FN
  "$JR_BIN" dataset convert --from "$2" --input "$3" 2>/dev/null | head -8 | $PY -c '
import json, sys
for i, l in enumerate(sys.stdin):
    r = json.loads(l)
    right = r["solution"] if r["type"] == "math" else r["answer"]
    r["response"] = right if i % 2 == 0 else ("The answer is -1." if r["type"] == "math" else "    return None\n")
    print(json.dumps(r))' >"$T/$1.jsonl"
  printf 'reward:\n  components:\n    - fn: %s\n' "$4" >"$T/$1.yaml"
  rm -f "$T/$1_out.jsonl"
  if "$JR_BIN" grade --config "$T/$1.yaml" --input "$T/$1.jsonl" --output "$T/$1_out.jsonl" >/dev/null 2>"$T/err"; then
    got=$($PY -c 'import json, sys; print(" ".join(str(json.loads(l)["reward"]) for l in open(sys.argv[1])))' "$T/$1_out.jsonl")
    if [ "$got" = "1.0 0.0 1.0 0.0 1.0 0.0 1.0 0.0" ]; then ok "$1"; else fail "$1" "rewards $got"; fi
  else
    fail "$1" "exit $?: $(cat "$T/err")"
  fi
}
grade_rows grade_gsm8k_final_answer gsm8k "$JR_ROOT/../shared/data/gsm8k/test.jsonl" final_answer
grade_rows grade_humaneval_code_tests humaneval "$HE/HumanEval.jsonl.gz" code_tests
