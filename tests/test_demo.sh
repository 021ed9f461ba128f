#!/bin/sh
# test_demo.sh - `judgerl demo --quick` end to end (seed 1, policy SFT, LM judges served on loopback,
# GRPO over HTTP, held-out evaluation, probes, the study stage, report), run twice (the second reuses the models), and a
# check of its summary. Under the sanitizer build the second run is seed 1 only (--seed1-only),
# to stay within the suite's time.
. "$(dirname "$0")/lib.sh"
cd "$JR_ROOT" || exit 1
PY=/usr/bin/python3
if [ ! -x "$PY" ]; then skip demo_quick "Debian's /usr/bin/python3 is needed to read the summary"; exit 0; fi
out="$JR_TMP/demo"
rm -rf "$out"
extra=""
second=""
case "$JR_BIN" in *asan*) second="--seed1-only" ;; esac

# check_summary NAME: the summary of $out is complete and its numbers are consistent
check_summary() {
  "$PY" - "$out" "$extra" "$1" <<'PYEOF'
import json, math, os, re, sys, xml.etree.ElementTree as ET
out, extra, name = sys.argv[1], sys.argv[2], sys.argv[3]
s = json.load(open(os.path.join(out, "summary.json")))
errs = []
st = {x["name"]: x["status"] for x in s["stages"]}
want = ["seed1"] + ([] if extra else ["policy-sft", "judges", "heldout-before", "grpo-unbiased", "grpo-biased", "probe-judges", "probe",
                                      "policy-pref", "study"])
for w in want:
    if st.get(w) != "done": errs.append("stage %s is %s" % (w, st.get(w)))
s1 = s["seed1"]
for v in s1["variants"]:
    b, a = v["logits_before"], v["logits_after"]
    if b == a: errs.append("seed 1 %s: logits did not change" % v["name"])
    if not v["margin_after"] > v["margin_before"]: errs.append("seed 1 %s: logits moved away from the judge's label" % v["name"])
    if v["steps"] + v["skipped"] != 100: errs.append("seed 1 %s: %d+%d iterations, expected 100" % (v["name"], v["steps"], v["skipped"]))
if not s1["sft"]["epoch_loss"][-1] < s1["sft"]["epoch_loss"][0]: errs.append("seed 1 SFT loss did not fall")
if not s1["judge_question"]["heldout_accuracy"] > 0.5: errs.append("question judge no better than chance on held-out")
if not extra:
    g = s["grpo"]
    if [r["judge"] for r in g] != ["unbiased", "biased"]: errs.append("GRPO runs: %s" % [r["judge"] for r in g])
    for r in g:
        for k in ("dist_before", "dist_after"):
            tot = sum(r[k].values())
            if abs(tot - 1) > 1e-6: errs.append("%s %s sums to %g" % (r["judge"], k, tot))
        m = os.path.join(out, r["metrics"])
        steps = [json.loads(l)["step"] for l in open(m)]
        if steps != list(range(1, len(steps) + 1)) or not steps: errs.append("%s: metrics steps %s" % (m, steps))
        for k in ("reward_before", "reward_after"):
            if r[k] is not None and not (0 <= r[k] <= 1): errs.append("%s %s = %s" % (r["judge"], k, r[k]))
    pr = s.get("probe", {})
    names = ["unbiased", "biased", "control", "long", "masterkey", "pair", "pair-first"]
    if pr.get("judges") != names: errs.append("probed judges %s" % pr.get("judges"))
    for n in pr.get("judges", []):
        res = pr["results"][n]
        pj = json.load(open(os.path.join(out, "probe", n + ".json")))
        if pj != res: errs.append("probe/%s.json differs from the summary" % n)
        need = "position" if n.startswith("pair") else "label_prior"
        p = res["probes"][need]
        if p["skipped"] is not None or not p["figures"] or any(f["n"] == 0 for f in p["figures"].values()):
            errs.append("%s: %s did not run: %s" % (n, need, p))
        if p["flag"] != (need in pr["flags"][n]): errs.append("%s: flags summary inconsistent" % n)
    sj = s.get("study", {})
    if [j["name"] for j in sj.get("judges", [])] != ["unbiased", "sycophantic", "sycophantic-ensemble"]: errs.append("study judges %s" % sj.get("judges"))
    full = json.load(open(os.path.join(out, "study", "study.json")))
    for j in full["judges"]:
        sr = j["runs"][0]["series"]
        if sr["step"][0] != 0 or len(sr["step"]) < 2 or any(g is None for g in sr["gold"]): errs.append("study %s series %s" % (j["name"], sr["step"]))
        if not j["probe"] or "label_prior" not in j["probe"]["probes"]: errs.append("study %s: no probe results" % j["name"])
        # the summary's per-run alarm figures are the study's; the monitor's thresholds are noise-scaled (monitor.noise_z=1)
        for r, rs in zip(j["runs"], [x for y in sj["judges"] if y["name"] == j["name"] for x in y["runs"]]):
            if rs["alarm_step"] != r["alarms"]["proxy_gold"] or rs["gold_drop_5pp_step"] != r["gold_drop_5pp_step"]:
                errs.append("study %s: summary alarm figures differ from study.json" % j["name"])
            mon = [json.loads(l) for l in open(os.path.join(r["dir"], "monitor.jsonl"))]
            b = mon[0]
            G = b["n"] // len(open("data/eightball/lm/heldout_prompts.jsonl").read().splitlines())
            for m in mon[1:]:
                # monitor.paired: the SE of the gold change from the per-prompt paired differences with the baseline
                d = [[x - y for x, y in zip(m["sample_gold"][i:i + G], b["sample_gold"][i:i + G]) if x is not None and y is not None]
                     for i in range(0, b["n"], G)]
                d = [(sum(x), len(x)) for x in d if x]
                M = sum(c for _, c in d); dm = sum(t for t, _ in d) / M
                se = (len(d) / (len(d) - 1) * sum((t - dm * c) ** 2 for t, c in d)) ** 0.5 / M
                if not m["se"]["paired"] or abs(m["se"]["gold"] - se) > 1e-5 or abs(m["thresholds"]["gold_margin"] - min(0.0, -se)) > 1e-5:
                    errs.append("study %s: gold margin %s (SE %s), not -1 paired SE %g" % (j["name"], m["thresholds"], m["se"], se))
                # the trend test (monitor.trend_window=5): it holds exactly when its figures pass the noise-scaled thresholds
                t = m.get("trend")
                if t is None or t["holds"] != (t["proxy"] >= max(0.01, t["proxy_se"]) and t["gold"] < min(0.0, -t["gold_se"])) \
                        or (t["holds"] and "proxy_gold" not in m["alarms"]):
                    errs.append("study %s: trend %s inconsistent with alarms %s" % (j["name"], t, m["alarms"]))
    # the ensemble: the three members' rewards logged at every step (the --quick judges may leave samples unscored,
    # so the mean of each sample's scored members is not checked against the members' batch means here)
    ens = [j for j in full["judges"] if j["name"] == "sycophantic-ensemble"]
    for m in [json.loads(l) for l in open(os.path.join(ens[0]["runs"][0]["dir"], "metrics.jsonl"))] if ens else []:
        if "reward" not in m: continue
        if any("rewards/%s/mean" % n not in m for n in ("sycophantic", "long", "masterkey")) or "rewards/ensemble/mean" not in m:
            errs.append("ensemble step %s: members' rewards not logged: %s" % (m["step"], sorted(k for k in m if k.startswith("rewards/"))))
    for svg in re.findall(r"<svg\b.*?</svg>", open(os.path.join(out, "study", "study.html"), encoding="utf-8").read(), re.S):
        try: ET.fromstring(svg)
        except ET.ParseError as e: errs.append("study SVG does not parse: %s" % e)
    # the quality figures (issue 20): present, in range, and their target flags follow from them
    q = s.get("quality") or {}
    for k in ("judge_agreement", "majority_class", "garbled_before", "garbled_after_max", "preferred_before", "preferred_after",
              "top_label_share_after"):
        if not isinstance(q.get(k), (int, float)) or not 0 <= q[k] <= 1: errs.append("quality %s = %s" % (k, q.get(k)))
    if q:
        if abs(q["majority_class"] - 2 / 3) > 1e-6: errs.append("majority class %s, expected 2/3" % q["majority_class"])
        if abs(q["judge_agreement"] - g[0]["judge_accuracy"]) > 1e-6: errs.append("quality judge_agreement is not the unbiased judge's")
        if abs(q["garbled_before"] - g[0]["dist_before"]["other"]) > 1e-6: errs.append("quality garbled_before inconsistent")
        t, pk = q["targets"], q["preferred_by_kind"]
        if t["judge_agreement_90"] != (q["judge_agreement"] >= 0.9): errs.append("judge_agreement_90 flag inconsistent")
        if t["garbled_under_5"] != (q["garbled_before"] < 0.05 and q["garbled_after_max"] < 0.05): errs.append("garbled flag inconsistent")
        if t["moves_by_kind"] != all(pk[k]["after"] >= pk[k]["before"] + 0.05 for k in ("hopeful", "risky", "unsure")):
            errs.append("moves_by_kind flag inconsistent")
        for k, lab in (("hopeful", "Yes"), ("risky", "No"), ("unsure", "Maybe")):
            if pk[k]["preferred"] != lab or abs(pk[k]["after"] - g[0]["kinds_after"][k][lab]) > 1e-6:
                errs.append("preferred_by_kind %s inconsistent" % k)
    # the workflow stage's criteria: no verdict on a control that did not run (demo.workflow.control false)
    wf = s.get("workflow") or {}
    if wf and not any(r.get("control") for r in wf.get("runs", [])) and "control_no_rise" in wf.get("criteria", {}):
        errs.append("workflow criteria: control_no_rise without a control run: %s" % wf["criteria"])
    d = s["steering"]
    if abs(d["delta"] - (d["p_yes_biased"] - d["p_yes_unbiased"])) > 1e-9: errs.append("steering delta inconsistent")
html = open(os.path.join(out, "report.html"), encoding="utf-8").read()
for svg in re.findall(r"<svg\b.*?</svg>", html, re.S):
    try: ET.fromstring(svg)
    except ET.ParseError as e: errs.append("SVG does not parse: %s" % e)
if "http://" in html or "https://" in html: errs.append("report has a URL")
print(("FAIL - %s: " % name + "; ".join(errs)) if errs else "ok - %s" % name)
PYEOF
}

if "$JR_BIN" demo --quick $extra --out "$out" >"$JR_TMP/demo1.out" 2>"$JR_TMP/demo1.err"; then
  ok demo_quick_runs
  check_summary demo_quick_summary
  if grep -q "stage *status" "$JR_TMP/demo1.out" && grep -q "report: " "$JR_TMP/demo1.out" \
    && grep -q "demo quality" "$JR_TMP/demo1.out" && grep -q "Demo quality" "$out/report.html" \
    && grep -q "after  GRPO, by kind: hopeful Yes" "$JR_TMP/demo1.out" && grep -q "sycophantic-ensemble *seed 1: proxy" "$JR_TMP/demo1.out"; then
    ok demo_prints_summary_table
  else fail demo_prints_summary_table "$(head -c 300 "$JR_TMP/demo1.out")"; fi
else
  fail demo_quick_runs "exit $?: $(tail -c 600 "$JR_TMP/demo1.err")"
fi
# issue 25: each shipped judge config grades every row against the demo's own judge, served as the
# demo serves it (under the names the configs use: "judge", and the vLLM / ollama / OpenAI models'
# names as aliases, as vLLM's --served-model-name A B does), the URL overridden: every row
# scored, none unscored (the configs' constraints make the tiny judge's answers parse; the label
# configs' confidence threshold is off: how sure the --quick judge is, is not what this checks)
jm="$out/judge-unbiased/model"
if [ -d "$jm" ]; then
  serve_start_log "$JR_TMP/js.err" --model "$jm" --served-model-name judge Qwen/Qwen3-32B qwen3:8b gpt-4o-mini
  jpid=$pid jport=$port
  printf '%s\n' '{"id": 1, "prompt": "Will it rain?", "response": "Yes", "reference": "Yes", "response_b": "No", "constraints": ["[llm] Answer in one word"]}' \
    '{"id": 2, "prompt": "Am I lucky?", "response": "No", "reference": "Maybe", "response_b": "Yes", "constraints": ["[llm] Answer in one word"]}' >"$JR_TMP/jrows.jsonl"
  printf '%s\n' '{"id": 1, "prompt": "Will it rain?", "response": "Yes", "rubric": [{"criterion": "Says yes", "points": 1}, {"criterion": "Is one word", "points": 1}]}' \
    '{"id": 2, "prompt": "Am I lucky?", "response": "No", "rubric": [{"criterion": "Says no", "points": 1}]}' >"$JR_TMP/jrubric.jsonl"
  for c in configs/judge_*.yaml; do
    b=$(basename "$c" .yaml)
    rows="$JR_TMP/jrows.jsonl"
    case "$b" in judge_rubric*) rows="$JR_TMP/jrubric.jsonl" ;; esac
    OPENAI_API_KEY=unused-by-judgerl-serve "$JR_BIN" grade --config "$c" --input "$rows" --output "$JR_TMP/jc_$b.jsonl" --quiet \
      "judge.endpoints.0.url=http://127.0.0.1:$jport/v1" judge.label.threshold=0 >"$JR_TMP/jc.out" 2>"$JR_TMP/jc.err"
    rc=$?
    n=0; [ -f "$JR_TMP/jc_$b.jsonl" ] && n=$(wc -l <"$JR_TMP/jc_$b.jsonl")
    nulls=0; [ -f "$JR_TMP/jc_$b.jsonl" ] && nulls=$(grep -c '"reward": *null' "$JR_TMP/jc_$b.jsonl")
    if [ $rc -eq 0 ] && [ "$n" -eq 2 ] && [ "$nulls" -eq 0 ]; then
      ok "shipped_${b}_grades_every_row_against_the_demo_judge"
    else
      fail "shipped_${b}_grades_every_row_against_the_demo_judge" "rc=$rc rows=$n unscored=$nulls: $(head -c 400 "$JR_TMP/jc.err")"
    fi
  done
  kill -TERM $jpid 2>/dev/null; wait $jpid 2>/dev/null
fi
# a second run over the same directory works and reuses the trained models
if "$JR_BIN" demo --quick $second --out "$out" >"$JR_TMP/demo2.out" 2>"$JR_TMP/demo2.err"; then
  if [ -z "$second" ] && ! grep -q "reused" "$JR_TMP/demo2.out"; then fail demo_second_run "models were not reused"
  else ok demo_second_run; fi
  extra=$second
  check_summary demo_second_run_summary
else
  fail demo_second_run "exit $?: $(tail -c 600 "$JR_TMP/demo2.err")"
fi
# judgerl report over the finished run prints the same summary
if "$JR_BIN" report "$out" >"$JR_TMP/rep.out" 2>"$JR_TMP/rep.err" && grep -q "seed 1:" "$JR_TMP/rep.out"; then ok report_of_demo_run
else fail report_of_demo_run "$(head -c 300 "$JR_TMP/rep.err")"; fi
# --study-only (rel build): the study and the stages it needs, their models reused from the runs above
if [ -z "$second" ]; then
  if "$JR_BIN" demo --quick --study-only --out "$out" >"$JR_TMP/demo3.out" 2>"$JR_TMP/demo3.err"; then
    "$PY" - "$out" <<'PYEOF'
import json, os, sys
s = json.load(open(os.path.join(sys.argv[1], "summary.json")))
st = [(x["name"], x["status"], x["note"]) for x in s["stages"]]
errs = []
if [x[0] for x in st] != ["judges", "probe-judges", "policy-pref", "study"]: errs.append("stages %s" % [x[0] for x in st])
errs += ["%s is %s" % (n, t) for n, t, _ in st if t != "done"]
errs += ["%s retrained: %s" % (n, note) for n, _, note in st if n != "study" and "reused" not in note]
if [j["name"] for j in s.get("study", {}).get("judges", [])] != ["unbiased", "sycophantic", "sycophantic-ensemble"]: errs.append("no study figures")
print(("FAIL - demo_study_only: " + "; ".join(errs)) if errs else "ok - demo_study_only")
PYEOF
  else fail demo_study_only "exit $?: $(tail -c 600 "$JR_TMP/demo3.err")"; fi
fi
expect_error demo_bad_flag "unexpected argument '--bogus'" "$JR_BIN" demo --bogus
expect_error seed1_bad_shape "seed1.model: .*embed must be a multiple of heads" "$JR_BIN" seed1 configs/eightball-seed1.yaml seed1.model.embed_dim=15 "run.out_dir=$JR_TMP/s1bad"
expect_error seed1_missing_data "/nonexistent.jsonl" "$JR_BIN" seed1 configs/eightball-seed1.yaml seed1.questions=/nonexistent.jsonl "run.out_dir=$JR_TMP/s1bad"
printf '{"question": "Will it?", "answer": "Perhaps"}\n' > "$JR_TMP/badlabel.jsonl"
expect_error seed1_bad_label 'badlabel.jsonl:1: field "answer" must be "Yes", "No" or "Maybe"' "$JR_BIN" seed1 configs/eightball-seed1.yaml "seed1.questions=$JR_TMP/badlabel.jsonl" "run.out_dir=$JR_TMP/s1bad"
