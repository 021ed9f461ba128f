"""test_kill_before_checkpoint.py - kill -9 a run after its step-0 evaluation row
(trainer.eval_at_start) and before its first checkpoint, then resume it (trainer.resume=true): the
resumed run starts from the beginning, and metrics.jsonl holds each row once, in step order, with
the values of a run that was never interrupted."""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jrtest import BIN, ROOT, TMP, report, exit_code  # noqa: E402

STEPS = 200  # about 1 s in build/rel: the window between the step-0 row and the only checkpoint

MODEL = os.path.join(TMP, "kbc_model.json")
with open(MODEL, "w") as f:
    json.dump({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 32, "num_hidden_layers": 2,
               "num_attention_heads": 2, "num_key_value_heads": 1, "intermediate_size": 64, "vocab_size": 264,
               "max_position_embeddings": 128, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
               "tie_word_embeddings": False, "hidden_act": "silu", "torch_dtype": "float32"}, f)


def config(out):
    path = out + ".yaml"
    with open(path, "w") as f:
        f.write("""run: {seed: 5, out_dir: %s}
data: {train: %s/data/sft_demo.jsonl, validation_frac: 0.1}
model: {init: %s}
trainer: {steps: %d, batch_size: 16, max_seq_len: 128, save_every: %d, eval_every: 50, eval_at_start: true,
          keep_checkpoints: 0, tensorboard: false, threads: 1}
""" % (out, ROOT, MODEL, STEPS, STEPS))
    return path


def rows(out):
    p = os.path.join(out, "metrics.jsonl")
    if not os.path.exists(p):
        return []
    with open(p) as f:
        return [json.loads(l) for l in f if l.endswith("\n") and l.strip()]


def train(cfg, *over):
    return subprocess.run([BIN, "train", cfg] + list(over), capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, JR_PROGRESS="off"))


def without_time(rs):
    """The rows without what depends on the clock (wall_time, tokens_per_s)."""
    return [{k: v for k, v in r.items() if k != "wall_time" and not k.endswith("_per_s")} for r in rs]


straight, killed = os.path.join(TMP, "kbc_straight"), os.path.join(TMP, "kbc_killed")
r = train(config(straight))
want = rows(straight)
report("straight run: rows of steps 0..%d, each once" % STEPS,
       r.returncode == 0 and [x["step"] for x in want] == list(range(STEPS + 1)) and "val_loss" in want[0],
       (r.returncode, r.stderr[-400:], [x["step"] for x in want][:5]))

# the kill: as soon as metrics.jsonl holds the step-0 row, with no checkpoint yet
cfg = config(killed)
pr = subprocess.Popen([BIN, "train", cfg], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ, JR_PROGRESS="off"))
t0 = time.time()
while time.time() - t0 < 300 and pr.poll() is None and not any(x["step"] == 0 for x in rows(killed)):
    time.sleep(0.002)
pr.send_signal(signal.SIGKILL)
pr.wait()
left = rows(killed)
ckpt = os.path.exists(os.path.join(killed, "checkpoints", "latest"))
report("killed after the step-0 evaluation row, before the first checkpoint",
       pr.returncode == -signal.SIGKILL and left and left[0]["step"] == 0 and not ckpt and len(left) < STEPS,
       "exit %s, rows %d, checkpoint %s" % (pr.returncode, len(left), ckpt))

r = train(cfg, "trainer.resume=true")
got = rows(killed)
steps = [x["step"] for x in got]
dup = sorted({s for s in steps if steps.count(s) > 1})
report("resumed: exits 0", r.returncode == 0, r.stderr[-600:])
report("resumed: metrics.jsonl holds each row once, in step order", steps == list(range(STEPS + 1)),
       "steps %s ... (%d rows), repeated: %s" % (steps[:6], len(steps), dup))
report("resumed: the rows of the run never interrupted", without_time(got) == without_time(want),
       next(((a, b) for a, b in zip(without_time(got), without_time(want)) if a != b), (len(got), len(want))))
sys.exit(exit_code())
