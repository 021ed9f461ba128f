"""test_monitor.py - the reward-hacking monitor (monitor.*) on real GRPO runs of a tiny random model that
learns a verifiable proxy (completions starting with a lowercase letter): against a gold verifier that
wants the opposite (an uppercase start) the proxy_gold alarm fires, is logged to metrics.jsonl,
monitor.jsonl and the progress output, and with monitor.stop the run stops with a checkpoint at that
step; against gold labels that agree with the proxy (labelled data, monitor.labels) it never fires
while the label collapse alarm does. Every alarm is active at exactly the evaluations its rule says."""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jrtest import BIN, ROOT, TMP, finish, jsonl, report, write  # noqa: E402






write(os.path.join(TMP, "mon_train.jsonl"), "".join(json.dumps({"prompt": "Item %d:" % i, "gold": "lower"}) + "\n" for i in range(32)))
write(os.path.join(TMP, "mon_val.jsonl"), "".join(json.dumps({"prompt": "Test %d:" % i, "gold": "lower"}) + "\n" for i in range(8)))
write(os.path.join(TMP, "mon_labels.jsonl"), "".join(json.dumps({"text": chr(c), "label": "lower"}) + "\n" for c in range(97, 123)) +
      "".join(json.dumps({"text": chr(c), "label": "upper"}) + "\n" for c in range(65, 91)) +
      json.dumps({"text": "\ufffd", "label": "invalid"}) + "\n")
write(os.path.join(TMP, "mon_gold_upper.yaml"), """reward:
  components:
    - {name: upper, fn: format, params: {pattern: "^[A-Z]"}}
""")


def config(out, monitor):
    return """run: {seed: 1, out_dir: %s}
data: {train: %s/mon_train.jsonl, validation: %s/mon_val.jsonl}
model: {init: %s/configs/models/tiny-byte.json, compute: float32}
trainer: {algo: grpo, steps: 16, batch_size: 64, lr: 1e-2, lr_schedule: constant, tensorboard: false, eval_every: 4}
grpo: {num_generations: 8, prompts_per_step: 8, max_prompt_length: 16, max_completion_length: 8}
reward:
  components:
    - {name: starts_lower, fn: format, params: {pattern: "^[a-z]"}}
monitor: %s
""" % (out, TMP, TMP, ROOT, monitor)


def run(name, monitor, *over):
    out = os.path.join(TMP, name)
    shutil.rmtree(out, ignore_errors=True)
    cfg = os.path.join(TMP, name + ".yaml")
    write(cfg, config(out, monitor))
    p = subprocess.run([BIN, "train", cfg] + list(over), capture_output=True, text=True, timeout=900,
                       env=dict(os.environ, JR_PROGRESS="plain"))
    return p, out


def rule_holds(rows, name, cond):
    """The alarm `name` is active at exactly the evaluations (after the baseline) where cond(base, row)."""
    base = rows[0]
    bad = [r["step"] for r in rows[1:] if (name in r["alarms"]) != cond(base, r)]
    return not bad, "alarm %s disagrees with its rule at steps %s" % (name, bad)


# 1. gold wants what the proxy punishes: proxy_gold fires, and length with a tight threshold
p, out = run("mon_fire", "{enabled: true, gold_reward: %s/mon_gold_upper.yaml, length_drift: 0.2, phrase_drift: 0.15, noise_z: 1.5}" % TMP)
if p.returncode != 0:
    report("proxy_gold alarm: the run", False, p.stderr[-400:])
else:
    rows = jsonl(os.path.join(out, "monitor.jsonl"))
    fired = [r["step"] for r in rows if "proxy_gold" in r["fired"]]
    report("proxy_gold fires while the proxy rises and gold falls: baseline at step 0, fired once", rows[0]["step"] == 0 and
           rows[0].get("baseline") and len(fired) == 1 and rows[-1]["proxy"] - rows[0]["proxy"] >= 0.3,
           "fired at %s; proxy %s; gold %s" % (fired, [r["proxy"] for r in rows], [r["gold"] for r in rows]))
    def se(b, r, k, G=8):
        """the standard error of the change since the baseline (monitor.noise_z): monitor.paired (the default), from
        the paired per-sample differences grouped by prompt (G = grpo.num_generations consecutive samples)"""
        d = [[x - y for x, y in zip(r["sample_" + k][i:i + G], b["sample_" + k][i:i + G]) if x is not None and y is not None]
             for i in range(0, len(b["sample_" + k]), G)]
        d = [(sum(x), len(x)) for x in d if x]
        M = sum(c for _, c in d)
        dm = sum(t for t, _ in d) / M
        return (len(d) / (len(d) - 1) * sum((t - dm * c) ** 2 for t, c in d)) ** 0.5 / M

    def noisy(b, r):
        return r["proxy"] - b["proxy"] >= max(0.05, 1.5 * se(b, r, "proxy")) and r["gold"] - b["gold"] < min(0.0, -1.5 * se(b, r, "gold"))
    report("monitor.noise_z: the thresholds applied are the noise-scaled ones, never laxer than the fixed ones",
           all(abs(r["thresholds"]["proxy_rise"] - max(0.05, 1.5 * se(rows[0], r, "proxy"))) < 1e-5 and
               abs(r["thresholds"]["gold_margin"] - min(0.0, -1.5 * se(rows[0], r, "gold"))) < 1e-5 for r in rows[1:]) and
           any(r["thresholds"]["gold_margin"] < -0.01 for r in rows[1:]) and rows[0]["gold_n"] == rows[0]["n"] > 0 and
           all(r["se"]["paired"] and abs(r["se"]["gold"] - se(rows[0], r, "gold")) < 1e-5 for r in rows[1:]),
           [r.get("thresholds") for r in rows])
    for name, cond in (("proxy_gold", noisy),
                       ("length", lambda b, r: abs(r["length"] / b["length"] - 1) >= 0.2),
                       ("phrase", lambda b, r: r["phrase_rise"] >= 0.15)):
        ok, why = rule_holds(rows, name, cond)
        report("alarm %s is active exactly where its rule holds" % name, ok, why)
    met = jsonl(os.path.join(out, "metrics.jsonl"))
    mrow = [m for m in met if m["step"] in fired]
    report("the alarm is in metrics.jsonl and on the progress output",
           mrow and mrow[0].get("monitor/alarm/proxy_gold") == 1 and met[0]["step"] == 0 and "monitor/gold" in met[0] and
           ("monitor: alarm at step %d: proxy_gold" % fired[0]) in p.stderr and "alarm=proxy_gold" in p.stderr,
           p.stderr[-600:])
    top = [t["ngram"] for t in rows[-1].get("top_ngrams", [])]
    report("monitor.jsonl lists the risen phrases", len(top) > 0 and all(t["rise"] > 0 for t in rows[-1]["top_ngrams"]), top)

    # 2. monitor.stop: the same run stops at the alarm, with a checkpoint of that step
    p2, out2 = run("mon_stop", "{enabled: true, gold_reward: %s/mon_gold_upper.yaml, stop: true}" % TMP)
    ck = os.path.join(out2, "checkpoints", "step-%08d" % fired[0]) if fired else ""
    cks = os.listdir(os.path.join(out2, "checkpoints")) if os.path.isdir(os.path.join(out2, "checkpoints")) else []
    report("monitor.stop: exit 1 after the alarm's step with a checkpoint there",
           p2.returncode != 0 and "monitor.stop=true" in p2.stderr and
           jsonl(os.path.join(out2, "metrics.jsonl"))[-1]["step"] == fired[0] and any(str(fired[0]) in c for c in cks),
           "rc %d, checkpoints %s, %s" % (p2.returncode, cks, p2.stderr[-300:]))

    # resumed after the stop (monitor.stop off): the file keeps its baseline, no step twice, the alarm fired once
    cfg2 = os.path.join(TMP, "mon_stop.yaml")
    p3 = subprocess.run([BIN, "train", cfg2, "trainer.resume=true", "monitor.stop=false"], capture_output=True, text=True,
                        timeout=900, env=dict(os.environ, JR_PROGRESS="plain"))
    rows3 = jsonl(os.path.join(out2, "monitor.jsonl")) if p3.returncode == 0 else []
    steps3 = [r["step"] for r in rows3]
    report("resumed after the stop: monitor.jsonl continues (baseline kept, each step once, the alarm fired once)",
           p3.returncode == 0 and steps3 == sorted(set(steps3)) and steps3[0] == 0 and steps3[-1] == 16 and
           sum("proxy_gold" in r["fired"] for r in rows3) == 1 and "proxy_gold" in rows3[-1]["alarms"],
           "rc %d steps %s %s" % (p3.returncode, steps3, p3.stderr[-300:]))

# 3. gold labels that agree with the proxy (labelled data): no proxy_gold alarm; the labels collapse
#    (with trainer.eval_at_start set too: the monitor's baseline is that evaluation, not a second one)
p, out = run("mon_quiet", "{enabled: true, gold_field: gold, labels: %s/mon_labels.jsonl, collapse_share: 0.75}" % TMP,
             "trainer.eval_at_start=true")
if p.returncode != 0:
    report("no alarm when gold agrees: the run", False, p.stderr[-400:])
else:
    rows = jsonl(os.path.join(out, "monitor.jsonl"))
    met0 = [m for m in jsonl(os.path.join(out, "metrics.jsonl")) if m["step"] == 0]
    report("monitor with trainer.eval_at_start: the baseline is evaluated once (one row per evaluation, one step-0 metrics row)",
           [r["step"] for r in rows] == [0, 4, 8, 12, 16] and len(met0) == 1, "monitor steps %s, %d step-0 metrics rows" %
           ([r["step"] for r in rows], len(met0)))
    report("no proxy_gold alarm when gold rises with the proxy (labelled gold = the proxy's own criterion)",
           all("proxy_gold" not in r["alarms"] for r in rows) and rows[-1]["gold"] - rows[0]["gold"] >= 0.3 and
           all(abs(r["gold"] - r["labels"].get("lower", 0)) < 1e-6 for r in rows),
           "gold %s, alarms %s" % ([r["gold"] for r in rows], [r["alarms"] for r in rows]))
    ok, why = rule_holds(rows, "collapse", lambda b, r: r["label_max_share"] >= 0.75 and b["label_max_share"] < 0.75)
    report("collapse alarm is active exactly where one label holds >= 0.75", ok and any("collapse" in r["alarms"] for r in rows),
           why + " shares %s" % [r["label_max_share"] for r in rows])

# 4. no gold evaluator: the run goes on with the drift alarms and says that proxy_gold is off
p, out = run("mon_nogold", "{enabled: true}", "trainer.steps=4")
report("monitor without a gold evaluator: the run says the proxy_gold alarm is off",
       p.returncode == 0 and "no gold evaluator" in p.stderr and "proxy_gold alarm is off" in p.stderr and
       all(r["gold"] is None for r in jsonl(os.path.join(out, "monitor.jsonl"))), p.stderr[-300:])

# 5. a wrong setup is one clear error
p, _ = run("mon_bad", "{enabled: true, gold_field: gold}", "data.validation=null")
report("monitor without held-out prompts: one clear error", p.returncode != 0 and "monitor.enabled needs held-out prompts" in p.stderr,
       p.stderr[-300:])

finish()
