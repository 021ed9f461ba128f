#!/bin/sh
# test_wf_learn.sh - the short form of issue 17's learning check: `judgerl demo --workflow-only` at a small size
# (configs/eightball/demo-quick.yaml with a larger workflow block: 40 training and 6 held-out rows a domain, the
# policy's SFT 200 steps, GRPO 15 steps x 8 prompts x 4 workflows, seeds 1-3 and the shuffled-reward control) over
# a scripted executor (tests/wf_operator_server.py, through demo.workflow.executor_url) whose operators each solve
# exactly one domain: `program` and `custom` maths, `codegen` code, `answer` and `format` QA (so no operator used
# for every row beats the SFT policy's spread by chance; only the choice by domain rises). Everything else is the real stage: the
# policy's SFT, constrained sampling, the experience buffer and its few-shot examples, GRPO with LoRA, the reward,
# the sandbox, the evaluations before and after RL (sampled and greedy), the fixed workflows. Asserted: every seed
# rises by 10 points overall, the control does not, the greedy policy reaches the best fixed workflow on a domain,
# the buffer is not empty. The full check with the trained executor is the demo's (docs/WORKFLOWS.md).
# About 2-3 minutes on 2 idle cores (release build); the sanitizer build skips it (several times slower).
. "$(dirname "$0")/lib.sh"
cd "$JR_ROOT" || exit 1
PY=/usr/bin/python3
if [ ! -x "$PY" ]; then skip wf_learn "Debian's /usr/bin/python3 is needed for the scripted executor"; exit 0; fi
# config URL DEST: the quick sizes with this test's workflow block, the executor at URL
config() {
  "$PY" - "$1" "$2" <<'PYEOF'
import re, sys
url, dest = sys.argv[1], sys.argv[2]
text = open("configs/eightball/demo-quick.yaml").read()
block = ('  workflow: {executor_url: "%s", quick_executor: true, executor: [], train_rows: 40, heldout_rows: 6,\n'
         '             sft_rows: 400, sft_steps: 200, sft_statements: 2, sft_names: ordered, sft_copy: 0.6, sft_follow: 0.5,\n'
         '             random: 1, steps: 15, num_generations: 4, prompts_per_step: 8, seeds: 1, control: false}\n' % url)
new, n = re.subn(r"  workflow: \{[^}]*\}\n", block, text)
if n != 1:
    sys.exit("configs/eightball/demo-quick.yaml: no single 'workflow: {...}' block to replace")
open(dest, "w").write(new)
PYEOF
}
mkdir -p "$JR_TMP/wf_learn_bad"
config "ftp://127.0.0.1:1/v1" "$JR_TMP/wf_learn_bad/demo.yaml"
expect_error "demo.workflow.executor_url that is not http(s): one error line naming the key" "demo\.workflow\.executor_url" \
  "$JR_BIN" demo --workflow-only --config "$JR_TMP/wf_learn_bad/demo.yaml" --out "$JR_TMP/wf_learn_bad"
case "$JR_BIN" in *asan*) skip wf_learn "the sanitizer build: the learning check runs in the release build (test_demo_workflow.sh runs the stage under ASan)"; exit 0 ;; esac
out="$JR_TMP/wf_learn"
rm -rf "$out"
mkdir -p "$out"
"$PY" tests/wf_operator_server.py "$out/workflow" >"$JR_TMP/wf_learn_port" 2>"$JR_TMP/wf_learn_server.err" &
spid=$!
trap 'kill $spid 2>/dev/null' EXIT
port=""
for _ in $(seq 1 100); do
  port=$(sed -n 's/^port //p' "$JR_TMP/wf_learn_port" 2>/dev/null)
  [ -n "$port" ] && break
  sleep 0.1
done
if [ -z "$port" ]; then fail "scripted executor starts" "$(cat "$JR_TMP/wf_learn_server.err")"; exit 0; fi
config "http://127.0.0.1:$port/v1" "$out/demo.yaml"
[ -s "$out/demo.yaml" ] || { fail "the test's demo config" "not written"; exit 0; }
# OpenMP threads that spin while the sandbox and the scripted executor need the cores slow the run several times
if OMP_WAIT_POLICY=PASSIVE "$JR_BIN" demo --workflow-only --config "$out/demo.yaml" --out "$out" >"$JR_TMP/wf_learn.out" 2>"$JR_TMP/wf_learn.err"; then
  ok "demo --workflow-only over the scripted executor runs"
else
  fail "demo --workflow-only over the scripted executor runs" "exit $?: $(tail -c 600 "$JR_TMP/wf_learn.err") $(tail -c 1500 "$out/demo.log" 2>/dev/null)"
  exit 0
fi
"$PY" - "$out" "$port" <<'PYEOF'
import json, os, sys
out, port = sys.argv[1], sys.argv[2]
s = json.load(open(os.path.join(out, "summary.json")))
wf = s.get("workflow", {})
def report(name, cond, why=""):
    print(("ok - %s" % name) if cond else ("FAIL - %s: %s" % (name, why)))
report("the stage used the executor it was given", wf.get("executor_url") == "http://127.0.0.1:%s/v1" % port and
       not os.path.exists(os.path.join(out, "workflow", "executor", "model")), wf.get("executor_url"))
best = wf.get("best_fixed", {})
report("the scripted executor: a fixed workflow solves every row of each domain (program, codegen, answer)",
       best.get("math", {}).get("acc") == 1 and best.get("code", {}).get("acc") == 1 and best.get("qa", {}).get("acc") == 1, best)
# what the control check relies on: no workflow used for every row solves more than one domain's third
fixed = wf.get("fixed", [])
report("the scripted executor: no fixed workflow solves more than one domain (overall <= 1/3)",
       fixed and all(f.get("overall") is not None and f["overall"] <= 1 / 3 + 1e-6 for f in fixed),
       [(f.get("name"), f.get("overall")) for f in fixed])
runs = {r["name"]: r for r in wf.get("runs", [])}
for n in ("seed1", "seed2", "seed3", "control"):
    r = runs.get(n, {})
    b, a = r.get("before", {}).get("overall"), r.get("after", {}).get("overall")
    if n == "control":
        report("control: no rise of 10 points (%s -> %s)" % (b, a), b is not None and a is not None and a - b < 0.10, r)
    else:
        report("%s: held-out gold accuracy rises by 10 points or more (%s -> %s)" % (n, b, a),
               b is not None and a is not None and a - b >= 0.10, r.get("before"))
crit = wf.get("criteria", {})
report("criteria: every seed rises, the control does not, the buffer is not empty",
       crit.get("rise_10_points_every_seed") and crit.get("control_no_rise") and crit.get("buffer_non_empty"), crit)
report("criteria: the greedy policy reaches the best fixed workflow on a domain", crit.get("reaches_best_fixed_on_a_domain_greedy"), crit)
PYEOF
