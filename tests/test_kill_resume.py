"""test_kill_resume.py - kill -9 in the middle of a run whose rewards come over HTTP, then resume
(issue 27): GRPO with a pointwise judge and distill with a label judge, each on loopback. The killed
and resumed run ends with the same metrics (every step once) and the same weights, byte for byte, as
a run that was never interrupted; the checkpoint the kill left behind is complete."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jrtest import BIN, ROOT, TMP, report, exit_code  # noqa: E402
from rule_judges import Judge, LabelJudge, pointwise_config  # noqa: E402

STEPS = 10


DATA = os.path.join(TMP, "kill_prompts.jsonl")
with open(DATA, "w") as f:
    for i in range(32):
        f.write(json.dumps({"prompt": "Item %d:" % i}) + "\n")


def config(out, algo, judge_yaml):
    return """run:
  seed: 3
  out_dir: %s
data:
  train: %s
model:
  init: %s/configs/models/tiny-byte.json
  compute: float32
trainer:
  algo: %s
  steps: %d
  save_every: 2
  batch_size: 32
  lr: 3e-3
  lr_schedule: constant
  tensorboard: false
grpo:
  num_generations: 4
  prompts_per_step: 8
  max_prompt_length: 16
  max_completion_length: 8
%s""" % (out, DATA, ROOT, algo, STEPS, judge_yaml)


def metrics(out):
    with open(os.path.join(out, "metrics.jsonl")) as f:
        return [json.loads(l) for l in f if l.strip()]


def weights(out):
    with open(os.path.join(out, "model", "model.safetensors"), "rb") as f:
        return f.read()


def train(cfg, *over):
    return subprocess.run([BIN, "train", cfg] + list(over), capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, JR_PROGRESS="off"))


def kill_after_first_checkpoint(cfg, out):
    """Starts the run, SIGKILLs it as soon as a checkpoint exists; the step it was killed after."""
    pr = subprocess.Popen([BIN, "train", cfg], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          env=dict(os.environ, JR_PROGRESS="off"))
    latest = os.path.join(out, "checkpoints", "latest")
    t0 = time.time()
    while time.time() - t0 < 300 and not os.path.exists(latest) and pr.poll() is None:
        time.sleep(0.01)
    pr.send_signal(signal.SIGKILL)
    pr.communicate(timeout=60)
    return len(metrics(out)) if os.path.exists(os.path.join(out, "metrics.jsonl")) else 0


def case(name, algo, judge_yaml, keys):
    a, b = os.path.join(TMP, name + "_straight"), os.path.join(TMP, name + "_killed")
    for d in (a, b):
        shutil.rmtree(d, ignore_errors=True)
    ca, cb = a + ".yaml", b + ".yaml"
    with open(ca, "w") as f:
        f.write(config(a, algo, judge_yaml))
    with open(cb, "w") as f:
        f.write(config(b, algo, judge_yaml))
    p = train(ca)
    if p.returncode:
        report("%s: the uninterrupted run" % name, False, p.stderr[-300:])
        return
    logged = kill_after_first_checkpoint(cb, b)
    if os.path.exists(os.path.join(b, "model")):
        report("%s: killed in the middle of the run" % name, False, "the run finished before the kill")
        return
    report("%s: killed with SIGKILL after %d logged steps of %d" % (name, logged, STEPS), logged < STEPS)
    p = train(cb, "trainer.resume=true")
    if p.returncode:
        report("%s: the resumed run completes" % name, False, p.stderr[-300:])
        return
    ma, mb = metrics(a), metrics(b)
    steps = [r.get("step") for r in mb]
    report("%s: after resume every step is logged once" % name, steps == list(range(1, STEPS + 1)), str(steps))
    same = len(ma) == len(mb) and all(ma[i][k] == mb[i][k] for i in range(len(ma)) for k in keys)
    report("%s: killed + resumed gives the metrics of the uninterrupted run" % name, same,
           str([(x.get(keys[0]), y.get(keys[0])) for x, y in zip(ma, mb)][:6]))
    report("%s: killed + resumed gives the weights of the uninterrupted run, byte for byte" % name, weights(a) == weights(b))


j = Judge()
try:
    case("grpo_http_judge", "grpo", pointwise_config(j.port), ["reward", "loss"])
finally:
    j.close()

lj = LabelJudge()
try:
    case("distill_label_judge", "distill", lj.config(), ["loss", "kept"])
finally:
    lj.close()

sys.exit(exit_code())
