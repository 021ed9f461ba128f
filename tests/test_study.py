"""test_study.py - `judgerl study` end to end: one GRPO config (a tiny random model) trained against two
LLM-style judges served over HTTP on loopback (pointwise protocol), seeds 1 and 2, gold = a verifier
(completions starting with an uppercase letter). The judge that rewards what gold wants raises gold with
its proxy and no proxy_gold alarm fires; the judge biased towards a lowercase start raises its proxy while
gold falls, and the alarm fires in every seed, no later than gold has dropped 5 points. Each judge's probe
results (master_key: known false-positive rates) sit beside them in study.json and study.html (valid
SVG, no external URL); a second study run reuses the finished runs; bad study configs are one clear error."""
import json
import os
import re
import shutil
import subprocess
import sys
import xml.dom.minidom

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jrtest import BIN, ROOT, TMP, finish, report, write  # noqa: E402
from rule_judges import Judge  # noqa: E402





fair = Judge(want=lambda c: "A" <= c <= "Z")
biased = Judge(want=lambda c: "a" <= c <= "z")

write(os.path.join(TMP, "st_train.jsonl"), "".join(json.dumps({"prompt": "Item %d:" % i}) + "\n" for i in range(32)))
write(os.path.join(TMP, "st_val.jsonl"), "".join(json.dumps({"prompt": "Test %d:" % i}) + "\n" for i in range(8)))
write(os.path.join(TMP, "st_probe.jsonl"), "".join(json.dumps({"id": i, "prompt": "Q%d?" % i, "response": "Yes, %d." % i}) + "\n"
                                                   for i in range(4)))
write(os.path.join(TMP, "st_gold.yaml"), """reward:
  components:
    - {name: upper, fn: format, params: {pattern: "^[A-Z]"}}
""")
write(os.path.join(TMP, "st_grpo.yaml"), """run: {seed: 1, out_dir: %s/unused}
data: {train: %s/st_train.jsonl, validation: %s/st_val.jsonl}
model: {init: %s/configs/models/tiny-byte.json, compute: float32}
trainer: {algo: grpo, steps: 16, batch_size: 64, lr: 1e-2, lr_schedule: constant, tensorboard: false, eval_every: 4}
grpo: {num_generations: 8, prompts_per_step: 8, max_prompt_length: 16, max_completion_length: 8}
judge:
  protocol: pointwise
  endpoints: [{url: "http://127.0.0.1:1/v1", model: none}]
  cache: false
  concurrency: 16
  pointwise: {normalize: true}
reward:
  components:
    - {name: judge, fn: pointwise}
""" % (TMP, TMP, TMP, ROOT))
OUT = os.path.join(TMP, "st_out")


def study_yaml(judges, extra_set=""):
    return """study:
  train: %s/st_grpo.yaml
  out_dir: %s
  seeds: [1, 2]
  probe_data: %s/st_probe.jsonl
  set: ["monitor.gold_reward=%s/st_gold.yaml", "monitor.gold_margin=0.01", "probe.probes=[master_key]"%s]
  judges:
%s""" % (TMP, OUT, TMP, TMP, extra_set, judges)


JUDGES = """    - name: fair
      set: ['judge.endpoints=[{url: "http://127.0.0.1:%d/v1", model: fair}]']
    - name: biased
      set: ['judge.endpoints=[{url: "http://127.0.0.1:%d/v1", model: biased}]']
""" % (fair.port, biased.port)


def study(text, *over):
    path = os.path.join(TMP, "st_study.yaml")
    write(path, text)
    return subprocess.run([BIN, "study", path] + list(over), capture_output=True, text=True, timeout=1200,
                          env=dict(os.environ, JR_PROGRESS="off"))


shutil.rmtree(OUT, ignore_errors=True)
p = study(study_yaml(JUDGES))
if p.returncode != 0:
    report("judgerl study: two judges over HTTP, two seeds", False, p.stderr[-800:])
else:
    s = json.load(open(os.path.join(OUT, "study.json")))
    j = {x["name"]: x for x in s["judges"]}
    report("study.json has both judges, both seeds, per-step series", set(j) == {"fair", "biased"} and
           all(len(x["runs"]) == 2 and x["runs"][0]["series"]["step"][:2] == [0, 4] for x in j.values()), list(j))
    f, b = j.get("fair", {}), j.get("biased", {})
    ff, bf = f.get("final", {}), b.get("final", {})
    # (proxy = gold up to the few samples the judge refuses: a NUL byte hides the response from it)
    report("fair judge: gold rises with the proxy, no proxy_gold alarm in any seed",
           ff.get("gold_delta", 0) >= 0.2 and abs(ff.get("divergence_end", 1)) < 0.02 and f["alarm_runs"]["proxy_gold"] == 0, ff)
    report("biased judge: proxy rises while gold falls; the alarm fires in both seeds",
           bf.get("proxy_delta", 0) >= 0.3 and bf.get("gold_delta", 1) < 0 and bf.get("divergence_end", 0) >= 0.3 and
           b["alarm_runs"]["proxy_gold"] == 2, "%s %s" % (bf, b.get("alarm_runs")))
    early = [(r["alarms"]["proxy_gold"], r["gold_drop_5pp_step"]) for r in b.get("runs", [])]
    report("the alarm fires no later than gold has dropped 5 points",
           all(a is not None and (d is None or a <= d) for a, d in early), early)
    fp = {n: x["probe"]["probes"]["master_key"]["figures"]["false_positive_rate"]["value"] for n, x in j.items()}
    report("each judge's probe results beside its run (master_key false positives: fair 5/10 keys, biased 0)",
           abs(fp["fair"] - 0.5) < 1e-9 and fp["biased"] == 0, fp)
    html = open(os.path.join(OUT, "study.html")).read()
    svgs = re.findall(r"<svg.*?</svg>", html, re.S)
    try:
        for x in svgs:
            xml.dom.minidom.parseString(x)
        svg_ok = len(svgs) >= 8
    except Exception as e:  # noqa: BLE001 - any parse error fails the case
        svg_ok = False
        print("# svg: %s" % e)
    report("study.html: valid SVG charts, no external URL, both judges, the probe table",
           svg_ok and not re.search(r"(src|href)=\"https?:", html) and "biased" in html and "fair" in html and
           "master_key" in html and "proxy_gold at step" in html, "%d svgs" % len(svgs))
    # judgerl report takes a study directory too: the same page, from study.json
    rp = os.path.join(TMP, "st_report.html")
    p3 = subprocess.run([BIN, "report", OUT, "-o", rp], capture_output=True, text=True, timeout=120)
    h3 = open(rp).read() if os.path.exists(rp) else ""
    report("judgerl report of a study directory writes its page", p3.returncode == 0 and "proxy_gold at step" in h3 and
           "master_key" in h3 and not re.search(r"(src|href)=\"https?:", h3), p3.stderr[-300:])
    m1 = open(os.path.join(OUT, "biased", "seed-1", "metrics.jsonl")).read()
    n0 = fair.requests + biased.requests
    p2 = study(study_yaml(JUDGES))
    m2 = open(os.path.join(OUT, "biased", "seed-1", "metrics.jsonl")).read()
    report("a second study reuses the finished runs (metrics unchanged)", p2.returncode == 0 and m1 == m2, p2.stderr[-300:])

# monitor.stop in a study: the run stopped by its alarm is a result (the study goes on and succeeds), not an error
OUT_STOP = os.path.join(TMP, "st_stop")
shutil.rmtree(OUT_STOP, ignore_errors=True)
p = study(study_yaml("""    - name: biased
      set: ['judge.endpoints=[{url: "http://127.0.0.1:%d/v1", model: biased}]']
""" % biased.port, ', "monitor.stop=true"').replace("seeds: [1, 2]", "seeds: [1]").replace(OUT, OUT_STOP))
st = json.load(open(os.path.join(OUT_STOP, "study.json"))) if p.returncode == 0 else {}
run = st["judges"][0]["runs"][0] if st else {}
steps = run.get("series", {}).get("step", [])
report("monitor.stop in a study: the run stops at its alarm and the study still succeeds",
       p.returncode == 0 and steps and run["alarms"]["proxy_gold"] == steps[-1] < 16, p.stderr[-300:] + " %s" % steps)

# bad configs: one clear error each
p = study(study_yaml(JUDGES).replace('"monitor.gold_reward=%s/st_gold.yaml", ' % TMP, ""))
report("no gold evaluator: one clear error", p.returncode != 0 and "no gold evaluator" in p.stderr and
       p.stderr.count("\n") <= 2, p.stderr[-300:])
p = study(study_yaml(JUDGES.replace("name: biased", "name: fair")))
report("a judge name given twice: one clear error", p.returncode != 0 and "given twice" in p.stderr, p.stderr[-300:])

fair.close()
biased.close()
finish()
