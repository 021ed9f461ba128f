"""test_mitigation.py - the mitigations as config switches, compared by `judgerl study` on real GRPO runs of a
tiny random model (seeds 1 and 2):
- grpo.length_control: a proxy that pays for length (+0.2 per byte) besides a real criterion (a lowercase
  start): without the switch the completions grow, with it they do not, and the real criterion is learned;
- ensemble.judges: a judge biased towards a lowercase start alone drives gold (an uppercase start) down;
  the same judge in an ensemble with two fair judges (HTTP, mean or majority) does not, and each member's
  reward is logged.
Wrong combinations are one clear error."""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jrtest import BIN, ROOT, TMP, finish, jsonl, report, write  # noqa: E402
from rule_judges import Judge  # noqa: E402






write(os.path.join(TMP, "mi_train.jsonl"), "".join(json.dumps({"prompt": "Item %d:" % i}) + "\n" for i in range(32)))
write(os.path.join(TMP, "mi_val.jsonl"), "".join(json.dumps({"prompt": "Test %d:" % i}) + "\n" for i in range(8)))
write(os.path.join(TMP, "mi_gold.yaml"), """reward:
  components:
    - {name: upper, fn: format, params: {pattern: "^[A-Z]"}}
""")
BASE = """run: {seed: 1, out_dir: %s/unused}
data: {train: %s/mi_train.jsonl, validation: %s/mi_val.jsonl}
model: {init: %s/configs/models/tiny-byte.json, compute: float32}
trainer: {algo: grpo, steps: 16, batch_size: 64, lr: 1e-2, lr_schedule: constant, tensorboard: false, eval_every: 4}
grpo: {num_generations: 8, prompts_per_step: 8, max_prompt_length: 16, max_completion_length: 8}
""" % (TMP, TMP, TMP, ROOT)


def judge_yaml(port, model):
    return """judge:
  protocol: pointwise
  endpoints: [{url: "http://127.0.0.1:%d/v1", model: %s}]
  cache: false
  concurrency: 16
  pointwise: {normalize: true}
reward:
  components:
    - {name: judge, fn: pointwise}
""" % (port, model)


def study(name, train_text, judges):
    out = os.path.join(TMP, name)
    shutil.rmtree(out, ignore_errors=True)
    write(os.path.join(TMP, name + "-train.yaml"), train_text)
    write(os.path.join(TMP, name + ".yaml"), """study:
  train: %s/%s-train.yaml
  out_dir: %s
  seeds: [1, 2]
  set: ["monitor.gold_reward=%s/mi_gold.yaml"]
  judges:
%s""" % (TMP, name, out, TMP, judges))
    p = subprocess.run([BIN, "study", os.path.join(TMP, name + ".yaml")], capture_output=True, text=True, timeout=1200,
                       env=dict(os.environ, JR_PROGRESS="off"))
    s = json.load(open(os.path.join(out, "study.json"))) if p.returncode == 0 else None
    return p, s


# ---- length control ----
LENGTH_PROXY = BASE + """reward:
  components:
    - {name: lower, fn: format, params: {pattern: "^[a-z]"}}
    - {name: long, fn: length, weight: 20.0, params: {unit: chars, min: 100, max: 200, slack: 100}}
"""
p, s = study("mi_length", LENGTH_PROXY, """    - {name: plain, set: []}
    - {name: length-control, set: [grpo.length_control=true]}
""")
if not s:
    report("length control study", False, p.stderr[-600:])
else:
    j = {x["name"]: x for x in s["judges"]}
    ratio = {n: x["final"]["length_end"] / x["final"]["length_start"] for n, x in j.items()}
    report("grpo.length_control: the proxy's length preference grows completions without it (x%.2f), not with it (x%.2f)"
           % (ratio["plain"], ratio["length-control"]), ratio["plain"] >= 1.3 and ratio["length-control"] <= 1.1, ratio)
    lower = {n: [jsonl(os.path.join(r["dir"], "metrics.jsonl"))[-1]["rewards/lower/mean"] for r in x["runs"]] for n, x in j.items()}
    slopes = [m["length_control/slope"] for r in j["length-control"]["runs"] for m in jsonl(os.path.join(r["dir"], "metrics.jsonl"))
              if "length_control/slope" in m]
    report("grpo.length_control: the real criterion is still learned; the slope is logged (~0.2 per byte at the start)",
           min(lower["length-control"]) >= 0.3 and len(slopes) >= 16 and 0.1 <= slopes[0] <= 0.3, "lower %s slopes %s" % (lower, slopes[:3]))

# ---- judge ensemble ----
biased = Judge(want=lambda c: "a" <= c <= "z")
fair1 = Judge(want=lambda c: "A" <= c <= "Z")
fair2 = Judge(want=lambda c: "A" <= c <= "Z")
for name, j, model in (("biased", biased, "b"), ("fair1", fair1, "f1"), ("fair2", fair2, "f2")):
    write(os.path.join(TMP, "mi-%s.yaml" % name), judge_yaml(j.port, model))
ENS = "ensemble.judges=[%s/mi-biased.yaml, %s/mi-fair1.yaml, %s/mi-fair2.yaml]" % (TMP, TMP, TMP)
p, s = study("mi_ens", BASE + judge_yaml(biased.port, "b"), """    - {name: single, set: []}
    - {name: ens-mean, set: ["%s"]}
    - {name: ens-majority, set: ["%s", ensemble.aggregate=majority]}
""" % (ENS, ENS))
if not s:
    report("ensemble study", False, p.stderr[-600:])
else:
    j = {x["name"]: x for x in s["judges"]}
    f = {n: x["final"] for n, x in j.items()}
    report("ensemble.judges: alone the biased judge drives gold down; in an ensemble (mean, majority) gold rises",
           f["single"]["gold_delta"] < 0 and f["ens-mean"]["gold_delta"] >= 0.2 and f["ens-majority"]["gold_delta"] >= 0.2 and
           f["ens-mean"]["divergence_end"] < f["single"]["divergence_end"] - 0.3,
           {n: (round(x["gold_delta"], 3), round(x["divergence_end"], 3)) for n, x in f.items()})
    m = jsonl(os.path.join(j["ens-mean"]["runs"][0]["dir"], "metrics.jsonl"))[-1]
    mj = [x["reward"] for x in jsonl(os.path.join(j["ens-majority"]["runs"][0]["dir"], "metrics.jsonl")) if "reward" in x]
    report("ensemble: each member's reward logged; the trained reward (mean) = their average",
           all("rewards/mi-%s/mean" % n in m for n in ("biased", "fair1", "fair2")) and abs(m["reward"] - m["rewards/ensemble/mean"]) < 1e-6 and
           abs(m["reward"] - (m["rewards/mi-biased/mean"] + m["rewards/mi-fair1/mean"] + m["rewards/mi-fair2/mean"]) / 3) < 1e-6,
           sorted(k for k in m if k.startswith("rewards/")))
    report("ensemble majority: the fair pair outvotes the biased judge (reward = the fair judges' verdict)",
           all(abs(x["reward"] - x["rewards/mi-fair1/mean"]) < 1e-6
               for x in jsonl(os.path.join(j["ens-majority"]["runs"][0]["dir"], "metrics.jsonl")) if "reward" in x) and len(mj) >= 16,
           mj[:4])
# an ensemble alone (no reward.components: it replaces them) trains; another algorithm than grpo / rloo is refused
write(os.path.join(TMP, "mi_ens_only.yaml"), BASE)
ens2 = "ensemble.judges=[%s/mi-fair1.yaml, %s/mi-fair2.yaml]" % (TMP, TMP)
eo = os.path.join(TMP, "mi_ens_only")
shutil.rmtree(eo, ignore_errors=True)
p = subprocess.run([BIN, "train", os.path.join(TMP, "mi_ens_only.yaml"), ens2, "run.out_dir=" + eo, "trainer.steps=2",
                    "trainer.eval_every=0"], capture_output=True, text=True, timeout=300)
m = jsonl(os.path.join(eo, "metrics.jsonl")) if p.returncode == 0 else []
report("ensemble.judges without reward.components: the run trains on the ensemble",
       len(m) == 2 and all("rewards/ensemble/mean" in x for x in m), p.stderr[-300:])
p = subprocess.run([BIN, "train", os.path.join(TMP, "mi_ens_only.yaml"), ens2, "run.out_dir=" + eo + "-d", "trainer.algo=distill"],
                   capture_output=True, text=True, timeout=120)
report("ensemble.judges with trainer.algo=distill (which would ignore it): one clear error",
       p.returncode != 0 and "ensemble.judges is a reward for trainer.algo grpo or rloo" in p.stderr, p.stderr[-300:])
for j in (biased, fair1, fair2):
    j.close()

# ---- wrong combinations ----
write(os.path.join(TMP, "mi_bad.yaml"), LENGTH_PROXY)
p = subprocess.run([BIN, "train", os.path.join(TMP, "mi_bad.yaml"), "ensemble.judges=[%s/mi-fair1.yaml]" % TMP],
                   capture_output=True, text=True, timeout=120)
report("an ensemble of one file: one clear error", p.returncode != 0 and "needs two or more" in p.stderr, p.stderr[-300:])
p = subprocess.run([BIN, "train", os.path.join(TMP, "mi_bad.yaml"), "grpo.length_control=true",
                    "grpo.multi_objective_aggregation=normalize_then_sum"], capture_output=True, text=True, timeout=120)
report("length control with normalize_then_sum: one clear error", p.returncode != 0 and "grpo.length_control" in p.stderr,
       p.stderr[-300:])

finish()
