"""test_grpo_train.py - `judgerl train` with trainer.algo grpo on a tiny random model: it learns a
verifiable reward (3 seeds) while a shuffled-reward control does not; the same through the judge
client over HTTP against a loopback judge whose verdict follows a rule; a judge failing for some
samples gives unscored samples (never NaN, never 0) in exactly the share injected; resume is exact;
the LoRA run exports a PEFT adapter that `judgerl merge` folds in."""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rule_judges import Judge, LabelJudge, fails, pointwise_config  # noqa: E402

from jrtest import BIN, exit_code, report, ROOT, TMP, write  # noqa: E402
ASAN = "asan" in BIN  # the sanitizer build is ~10x slower: a reduced version there


def config(out, extra=""):
    return """run:
  seed: 1
  out_dir: %s
data:
  train: %s
model:
  init: %s/configs/models/tiny-byte.json
trainer:
  algo: grpo
  steps: 16
  batch_size: 64
  lr: 1e-2
  lr_schedule: constant
  tensorboard: false
grpo:
  num_generations: 8
  prompts_per_step: 8
  max_prompt_length: 16
  max_completion_length: 8
%s""" % (out, DATA, ROOT, extra)


VERIFIER = """reward:
  components:
    - {name: starts_lower, fn: format, params: {pattern: "^[a-z]"}}
"""



def run(name, cfg_text, *overrides):
    if "trainer.resume=true" not in overrides:
        shutil.rmtree(os.path.join(TMP, name), ignore_errors=True)
    cfg = os.path.join(TMP, name + ".yaml")
    write(cfg, cfg_text)
    p = subprocess.run([BIN, "train", cfg] + list(overrides), capture_output=True, text=True, timeout=600)
    return p


def metrics(out):
    with open(os.path.join(out, "metrics.jsonl")) as f:
        return [json.loads(l) for l in f if l.strip()]


def gain(rows):
    r = [x["reward"] for x in rows]
    return sum(r[-5:]) / 5 - sum(r[:5]) / 5


DATA = os.path.join(TMP, "grpo_prompts.jsonl")
with open(DATA, "w") as f:
    for i in range(32):
        f.write(json.dumps({"prompt": "Item %d:" % i, "domain": "test", "idx": i}) + "\n")

# ---- learning with a verifiable reward, 3 seeds, and the shuffled-reward control ----
# The per-seed threshold is for float32 matmuls; bf16 (model.compute auto on CPUs with bf16 units)
# follows another trajectory per seed on this tiny model at lr 1e-2 (measured gains 0.22, 0.39, 0.56
# against fp32's 0.61, 0.52, 0.42), so it is held to the mean over the seeds below.
seeds = [1] if ASAN else [1, 2, 3]
for s in seeds:
    out = os.path.join(TMP, "grpo_learn_%d" % s)
    p = run("grpo_learn_%d" % s, config(out, VERIFIER), "run.seed=%d" % s, "model.compute=float32")
    if p.returncode:
        report("learns a verifiable reward (seed %d)" % s, False, p.stderr.strip()[-300:])
        continue
    rows = metrics(out)
    report("learns a verifiable reward (seed %d): last 5 - first 5 >= 0.3" % s, gain(rows) >= 0.3,
           "gain %.3f, rewards %s" % (gain(rows), [round(x["reward"], 2) for x in rows]))
    if s == 1:
        ok = all(x["unscored_frac"] == 0 and x["completions/max_length"] <= 8 for x in rows)
        report("every sample scored, completions within max_completion_length", ok, str(rows[0]))
        report("model written as an HF directory", os.path.exists(os.path.join(out, "model", "model.safetensors")))
# bf16 on a CPU without bf16 units (or with them turned off by JR_CPU below avx512) is refused at start with
# one line, before any step: oneDNN has no bf16 products there.
out = os.path.join(TMP, "grpo_bf16_refused")
env = dict(os.environ, JR_CPU="baseline")
cfg = os.path.join(TMP, "grpo_bf16_refused.yaml")
write(cfg, config(out, VERIFIER))
p = subprocess.run([BIN, "train", cfg, "model.compute=bfloat16"], capture_output=True, text=True, timeout=600, env=env)
report("bfloat16 without bf16 units is refused at start with one line", p.returncode != 0 and
       len(p.stderr.strip().splitlines()) == 1 and "model.compute: bfloat16 needs" in p.stderr and
       not os.path.exists(os.path.join(out, "metrics.jsonl")), "exit %d: %s" % (p.returncode, p.stderr.strip()[-300:]))
BF16_UNITS = "no bf16 units" not in subprocess.run([BIN, "version"], capture_output=True, text=True).stdout
if ASAN:
    pass
elif not BF16_UNITS:
    print("skip - learns a verifiable reward in bf16: needs bf16 units (AVX512-BF16 or AMX-BF16)")
else:
    gains = []
    for s in seeds:
        out = os.path.join(TMP, "grpo_learn_bf16_%d" % s)
        p = run("grpo_learn_bf16_%d" % s, config(out, VERIFIER), "run.seed=%d" % s, "model.compute=bfloat16")
        gains.append(gain(metrics(out)) if p.returncode == 0 else float("nan"))
    print("# bf16 matmuls: %s" % next((l for l in p.stdout.splitlines() if l.startswith("compute:")), p.stderr[-200:]))
    report("learns a verifiable reward in bf16: mean gain over 3 seeds >= 0.3", sum(gains) / len(gains) >= 0.3,
           "gains %s" % [round(x, 3) for x in gains])
for s in ([1] if ASAN else [1, 2]):
    out = os.path.join(TMP, "grpo_control_%d" % s)
    p = run("grpo_control_%d" % s, config(out, VERIFIER), "run.seed=%d" % s, "grpo.shuffle_rewards=true")
    if p.returncode:
        report("control with shuffled rewards (seed %d)" % s, False, p.stderr.strip()[-300:])
        continue
    g = gain(metrics(out))
    report("control with shuffled rewards does not learn (seed %d): gain < 0.1" % s, g < 0.1, "gain %.3f" % g)

# ---- exact resume: 6 steps straight == 3 steps, stop, resume to 6 ----
if True:
    a, b = os.path.join(TMP, "grpo_straight"), os.path.join(TMP, "grpo_resumed")
    for d in (a, b):
        shutil.rmtree(d, ignore_errors=True)
    p1 = run("grpo_straight", config(a, VERIFIER), "trainer.steps=6", "grpo.num_iterations=2", "grpo.beta=0.04")
    p2 = run("grpo_resumed", config(b, VERIFIER), "trainer.steps=4", "grpo.num_iterations=2", "grpo.beta=0.04")
    p3 = run("grpo_resumed", config(b, VERIFIER), "trainer.steps=6", "grpo.num_iterations=2", "grpo.beta=0.04",
             "trainer.resume=true")
    if p1.returncode or p2.returncode or p3.returncode:
        report("resume gives the same run", False, (p1.stderr + p2.stderr + p3.stderr).strip()[-300:])
    else:
        ma, mb = metrics(a), metrics(b)
        keys = ["reward", "loss", "kl", "grad_norm", "clip_ratio/region_mean"]
        same = len(ma) == len(mb) == 6 and all(ma[i][k] == mb[i][k] for i in range(6) for k in keys)
        with open(os.path.join(a, "model", "model.safetensors"), "rb") as f1, \
                open(os.path.join(b, "model", "model.safetensors"), "rb") as f2:
            same_w = f1.read() == f2.read()
        report("resume (mu=2, beta>0) gives the same metrics and weights as an uninterrupted run", same and same_w,
               "metrics equal %s, weights equal %s" % (same, same_w))
        kl = [x["kl"] for x in ma]
        report("beta > 0: KL to the reference is 0 at step 1 and grows", kl[0] == 0 and kl[-1] > 0, str(kl))
        clip = [x["clip_ratio/region_mean"] for x in ma]
        report("num_iterations 2: the second update of a batch sees ratios != 1", clip[0] == 0 and max(clip) >= 0, str(clip))

# ---- SIGTERM: the step finishes, a checkpoint, exit 1 with one line; resume completes ----
if not ASAN:
    import signal, time
    out = os.path.join(TMP, "grpo_sigterm")
    shutil.rmtree(out, ignore_errors=True)
    cfgp = os.path.join(TMP, "grpo_sigterm.yaml")
    write(cfgp, config(out, VERIFIER))
    pr = subprocess.Popen([BIN, "train", cfgp, "trainer.steps=200"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=dict(os.environ, JR_PROGRESS="off"))
    mpath = os.path.join(out, "metrics.jsonl")
    t0 = time.time()
    while time.time() - t0 < 120 and not (os.path.exists(mpath) and os.path.getsize(mpath) > 0):
        time.sleep(0.05)
    pr.send_signal(signal.SIGTERM)
    _, err = pr.communicate(timeout=120)
    lines = err.strip().splitlines()
    ok = pr.returncode == 1 and len(lines) == 1 and "stopped by a signal" in lines[0] and \
        os.path.exists(os.path.join(out, "checkpoints", "latest"))
    report("SIGTERM: one error line, exit 1, a checkpoint", ok, "rc %s: %s" % (pr.returncode, err[-300:]))
    p = run("grpo_sigterm", config(out, VERIFIER), "trainer.steps=%d" % (len(metrics(out)) + 2), "trainer.resume=true")
    report("after SIGTERM the run resumes and completes", p.returncode == 0 and "resumed" in p.stdout, p.stderr[-300:])
    p = run("grpo_badctx", config(os.path.join(TMP, "grpo_badctx"), VERIFIER), "grpo.max_completion_length=400")
    report("prompt + completion longer than the model's positions: one error line",
           p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1 and "max_position_embeddings" in p.stderr,
           p.stderr)

# ---- one-step-ahead generation: the same samples as sync when weights do not move; learns otherwise ----
a, b = os.path.join(TMP, "grpo_sync0"), os.path.join(TMP, "grpo_async0")
p1 = run("grpo_sync0", config(a, VERIFIER), "trainer.steps=4", "trainer.lr=0")
p2 = run("grpo_async0", config(b, VERIFIER), "trainer.steps=4", "trainer.lr=0", "grpo.async_generation=true")
if p1.returncode or p2.returncode:
    report("async generation runs", False, (p1.stderr + p2.stderr).strip()[-300:])
else:
    ra, rb = [x["reward"] for x in metrics(a)], [x["reward"] for x in metrics(b)]
    report("async generation at lr 0 samples exactly what sync generation samples", ra == rb, "%s vs %s" % (ra, rb))
if not ASAN:
    out = os.path.join(TMP, "grpo_async")
    p = run("grpo_async", config(out, VERIFIER), "grpo.async_generation=true", "trainer.steps=20")
    if p.returncode:
        report("async generation learns", False, p.stderr.strip()[-300:])
    else:
        rows = metrics(out)
        report("async generation learns (one step off-policy): gain >= 0.1", gain(rows) >= 0.1,
               str([round(x["reward"], 2) for x in rows]))
        report("async generation: ratios against the generating weights are clipped at times",
               max(x["clip_ratio/region_mean"] for x in rows[1:]) > 0, str([x["clip_ratio/region_mean"] for x in rows]))

# ---- the judge over HTTP: a loopback judge whose verdict follows a rule ----
j = Judge()
try:
    out = os.path.join(TMP, "grpo_judge_learn")
    p = run("grpo_judge_learn", config(out, pointwise_config(j.port)))
    if p.returncode:
        report("learns from a judge over HTTP", False, p.stderr.strip()[-300:])
    else:
        rows = metrics(out)
        report("learns from a judge over HTTP: last 5 - first 5 >= 0.3", gain(rows) >= 0.3,
               "gain %.3f, rewards %s" % (gain(rows), [round(x["reward"], 2) for x in rows]))
        report("a judge request per sample, latency logged", j.requests >= 16 * 64 and all(
            x["judge/latency_p95"] >= x["judge/latency_p50"] > 0 for x in rows), "requests %d" % j.requests)
        report("per-phase times logged", all(k in rows[0] for k in (
            "time/generate", "time/judge_wait", "time/reference", "time/update")), str(sorted(rows[0])))
finally:
    j.close()

# ---- a judge failing for some samples: unscored, never NaN or 0; the share logged = the share injected ----
j = Judge(fail_some=True)
try:
    out = os.path.join(TMP, "grpo_judge_fail")
    steps = 4 if ASAN else 8
    p = run("grpo_judge_fail", config(out, pointwise_config(j.port)), "trainer.steps=%d" % steps,
            "judge.max_unscored_frac=0.9", "grpo.log_completions_every=1", "grpo.log_completions_n=64")
    if p.returncode:
        report("a failing judge leaves samples unscored", False, p.stderr.strip()[-300:])
    else:
        rows = metrics(out)
        # a refusal (HTTP 400) is never retried: one refused request = one unscored sample
        logged = sum(x["unscored_frac"] for x in rows) / len(rows)
        injected = j.failed / (64 * len(rows))
        report("logged unscored share equals the failures injected", abs(logged - injected) < 1e-9 and j.failed > 0,
               "logged %.4f injected %.4f (%d refused of %d requests)" % (logged, injected, j.failed, j.requests))
        with open(os.path.join(out, "samples.jsonl")) as f:
            samples = [json.loads(l) for l in f]
        bad = [s for s in samples if fails(s["completion"]) != (s["reward"] is None)]
        report("exactly the refused samples are unscored (reward null), the others have a reward", not bad and samples,
               str(bad[:2]))
        fine = all(s["advantage"] == 0 for s in samples if s["reward"] is None)
        report("unscored samples have advantage 0", fine)
        vals = [s["reward"] for s in samples if s["reward"] is not None]
        report("no NaN reward and no 0 stands in for a missing one", all(v == v for v in vals) and
               all(x["reward"] == x["reward"] for x in rows) and all(v in (0.0, 1.0) for v in vals))
finally:
    j.close()

# ---- max_unscored_frac: the run stops cleanly with a checkpoint ----
j = Judge(fail_some=True)
try:
    out = os.path.join(TMP, "grpo_judge_stop")
    shutil.rmtree(out, ignore_errors=True)
    p = run("grpo_judge_stop", config(out, pointwise_config(j.port)), "trainer.steps=3", "judge.max_unscored_frac=0.05")
    # informational lines (which judge server answers) may come first; one error line, the last
    lines = [l for l in p.stderr.strip().splitlines() if l.startswith("judgerl train:")]
    report("past judge.max_unscored_frac the run stops with one error line and a checkpoint",
           p.returncode == 1 and len(lines) == 1 and "judge.max_unscored_frac" in lines[0] and
           p.stderr.strip().splitlines()[-1] == lines[0] and
           os.path.exists(os.path.join(out, "checkpoints", "latest")), p.stderr)
    # issue 25: the stop says why (the last and the most frequent reasons) and writes them to the run dir
    why = {}
    if os.path.exists(os.path.join(out, "unscored.json")):
        with open(os.path.join(out, "unscored.json")) as f:
            why = json.load(f)
    report("the stop names the reason and writes it to RUN/unscored.json",
           "refused by the test judge" in p.stderr and "most frequent" in p.stderr and why.get("unscored", 0) > 0
           and "refused by the test judge" in (why.get("most_frequent") or {}).get("reason", ""), p.stderr + str(why))
finally:
    j.close()

# ---- no judge server: a configuration error at once, not a run of unscored steps ----
import socket
sk = socket.socket()
sk.bind(("127.0.0.1", 0))
dead_port = sk.getsockname()[1]
sk.close()
out = os.path.join(TMP, "grpo_judge_down")
shutil.rmtree(out, ignore_errors=True)
p = run("grpo_judge_down", config(out, pointwise_config(dead_port)), "trainer.steps=3")
lines = p.stderr.strip().splitlines()
report("judge server down: train stops at once naming the URL, no step taken",
       p.returncode == 1 and len(lines) == 1 and "is the judge server running" in lines[0] and str(dead_port) in lines[0]
       and not os.path.exists(os.path.join(out, "checkpoints", "latest")), p.stderr)

# ---- LoRA: only adapters train; PEFT export; judgerl merge reproduces the policy ----
out = os.path.join(TMP, "grpo_lora")
shutil.rmtree(out, ignore_errors=True)
# (init_std 0.2: with the default 0.02 the tied embeddings are so small that no projection can move
# the output distribution far; full fine-tuning grows them, adapters cannot)
p = run("grpo_lora", config(out, VERIFIER + "lora:\n  enabled: true\n  rank: 4\n  alpha: 8\n"), "trainer.lr=3e-2",
        "model.init_std=0.2",
        "trainer.steps=%d" % (8 if ASAN else 16), "grpo.beta=0.02")
if p.returncode:
    report("LoRA GRPO run", False, p.stderr.strip()[-300:])
else:
    ad = os.path.join(out, "adapter")
    with open(os.path.join(ad, "adapter_config.json")) as f:
        ac = json.load(f)
    report("LoRA run writes a PEFT adapter config", ac["peft_type"] == "LORA" and ac["r"] == 4 and
           ac["lora_alpha"] == 8 and ac["target_modules"] == ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
                                                                "up_proj", "down_proj"], str(ac))
    with open(os.path.join(ad, "adapter_model.safetensors"), "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        hdr = json.loads(f.read(n))
    names = sorted(k for k in hdr if k != "__metadata__")
    report("adapter tensors carry PEFT's names", "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight" in names
           and "base_model.model.model.layers.1.mlp.down_proj.lora_B.weight" in names and len(names) == 2 * 7 * 2,
           str(names[:3]))
    rows = metrics(out)
    if not ASAN:
        report("LoRA learns the verifiable reward", gain(rows) >= 0.3, str([round(x["reward"], 2) for x in rows]))
    # merge: base (model.init, seed 1) + adapter == the policy; checked by greedy generation equality
    base = os.path.join(TMP, "grpo_lora_base")
    merged = os.path.join(TMP, "grpo_lora_merged")
    shutil.rmtree(base, ignore_errors=True)
    shutil.rmtree(merged, ignore_errors=True)
    p0 = run("grpo_lora_base", config(base, VERIFIER), "trainer.steps=1", "trainer.lr=0", "model.init_std=0.2")
    pm = subprocess.run([BIN, "merge", "--model", os.path.join(base, "model"), "--adapter", ad, "-o", merged],
                        capture_output=True, text=True)
    ok = p0.returncode == 0 and pm.returncode == 0 and os.path.exists(os.path.join(merged, "model.safetensors"))
    report("judgerl merge writes a full HF model directory", ok, p0.stderr + pm.stderr)
    if ok and not ASAN:
        # the merged model behaves as the trained policy: one more step at lr 0 from it scores like
        # the run's last steps, while the base scored low
        ev = os.path.join(TMP, "grpo_lora_eval")
        shutil.rmtree(ev, ignore_errors=True)
        pe = run("grpo_lora_eval", config(ev, VERIFIER).replace("  init: %s/configs/models/tiny-byte.json" % ROOT,
                                                                  "  path: " + merged), "trainer.steps=1", "trainer.lr=0")
        r_base, r_merged = metrics(base)[0]["reward"], (metrics(ev)[0]["reward"] if pe.returncode == 0 else -1)
        report("the merged model scores like the trained policy (base %.2f, merged %.2f)" % (r_base, r_merged),
               r_merged >= 0.8 and r_base <= 0.3, pe.stderr)

# ---- trainer.algo distill: a label judge, low-confidence verdicts rejected, cross-entropy to the label ----
j = LabelJudge()
try:
    out = os.path.join(TMP, "grpo_distill")
    steps = 10 if ASAN else 30
    p = run("grpo_distill", config(out, j.config()).replace("algo: grpo", "algo: distill").replace("batch_size: 64", "batch_size: 16"),
        "trainer.steps=%d" % steps, "trainer.lr=3e-3")
    if p.returncode:
        report("distill trains toward the judge's labels", False, p.stderr.strip()[-300:])
    else:
        rows = metrics(out)
        rej = sum(x["unscored_frac"] * 16 for x in rows)
        report("distill: rejected verdicts (confidence < threshold) are left out, as many as injected",
               abs(rej - j.rejected) < 1e-6 and j.rejected > 0 and all(x["kept"] + x["unscored_frac"] * 16 == 16 for x in rows),
               "logged %.1f injected %d" % (rej, j.rejected))
        first, last = rows[0]["loss"], sum(x["loss"] for x in rows[-5:]) / 5
        # (the sanitizer build runs 10 steps: a smaller fall is asked of it)
        report("distill: cross-entropy on the label tokens falls (%.3f -> %.3f)" % (first, last),
               last < first * (0.75 if ASAN else 1 / 3))
finally:
    j.close()

sys.exit(exit_code())
