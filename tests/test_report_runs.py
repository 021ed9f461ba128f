"""test_report_runs.py - `judgerl report` on every run kind (SFT, GRPO, eval, grade output) and `judgerl compare`:
real runs on a tiny model; every inline SVG parses as XML, no external URL, the curves are the metrics' rows, the
samples, hyperparameters and config diff are shown, and a run keeps one colour on every chart of a compare page."""
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jrtest import BIN, ROOT, TMP, report, exit_code  # noqa: E402



def run(*args):
    return subprocess.run([BIN] + list(args), capture_output=True, text=True, timeout=300, cwd=TMP)


def page(path):
    html = open(path, encoding="utf-8").read()
    svgs, errs = [], []
    for s in re.findall(r"<svg\b.*?</svg>", html, re.S):
        try:
            svgs.append(ET.fromstring(s))
        except ET.ParseError as e:
            errs.append(str(e))
    low = html.lower()
    clean = not errs and "http://" not in low and "https://" not in low and "src=" not in low and "url(" not in low
    return html, svgs, clean, errs


def chart(svgs, title):
    return [e for e in svgs if e.findtext("title") == title]


def rows(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def legend(svg):
    """{legend label: colour}: the 10x10 swatches and the texts after them."""
    rects = [r.get("fill") for r in svg.iter("rect") if r.get("width") == "10" and r.get("height") == "10"]
    texts = [t.text for t in svg.iter("text")][-len(rects):] if rects else []
    return dict(zip(texts, rects))


model = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 16, "num_hidden_layers": 1,
         "num_attention_heads": 2, "num_key_value_heads": 1, "intermediate_size": 24, "vocab_size": 264,
         "max_position_embeddings": 64, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": False,
         "hidden_act": "silu", "torch_dtype": "float32"}
json.dump(model, open(os.path.join(TMP, "m.json"), "w"))
open(os.path.join(TMP, "sft.yaml"), "w").write(
    "data: {train: %s/data/sft_demo.jsonl}\nmodel: {init: %s/m.json}\n"
    "trainer: {steps: 12, batch_size: 2, max_seq_len: 16, tensorboard: false}\n" % (ROOT, TMP))
bpe = os.path.join(TMP, "bpe")
os.makedirs(bpe, exist_ok=True)
for f in ["tiny/config.json", "tiny/model.safetensors", "bpe/tokenizer.json", "bpe/tokenizer_config.json"]:
    open(os.path.join(bpe, os.path.basename(f)), "wb").write(open(os.path.join(ROOT, "tests/fixtures/serve", f), "rb").read())
with open(os.path.join(TMP, "p.jsonl"), "w") as f:
    for i in range(24):
        f.write(json.dumps({"prompt": "the cat <%d> &" % i}) + "\n")
open(os.path.join(TMP, "grpo.yaml"), "w").write(
    "run: {seed: 3}\ndata: {train: %s/p.jsonl}\nmodel: {path: %s}\n"
    "trainer: {algo: grpo, steps: 3, batch_size: 16, lr: 1e-3, tensorboard: false}\n"
    "grpo: {num_generations: 4, prompts_per_step: 4, max_prompt_length: 16, max_completion_length: 6, log_completions_every: 1}\n"
    "reward:\n  components:\n    - {name: starts_lower, fn: format, params: {pattern: \"^[a-z]\"}}\n" % (TMP, bpe))
open(os.path.join(TMP, "gr.yaml"), "w").write("reward:\n  components:\n    - {name: lower, fn: format, params: {pattern: \"^[a-z]\"}}\n")

steps = [run("train", "sft.yaml", "run.out_dir=a"), run("train", "sft.yaml", "run.out_dir=b", "trainer.lr=3e-3"),
         run("train", "grpo.yaml", "run.out_dir=g"),
         run("generate", "--model", bpe, "--input", "p.jsonl", "--output", "gen.jsonl", "--max-tokens", "4", "--seed", "1"),
         run("grade", "--config", "gr.yaml", "--input", "gen.jsonl", "--output", "graded.jsonl", "--quiet"),
         run("eval", "--model", bpe, "--data", "p.jsonl", "--n", "2", "--reward", "gr.yaml", "--out", "ev", "--max-tokens", "4")]
bad = [p.stderr[-300:] for p in steps if p.returncode != 0]
report("runs_made", not bad, bad)

# 1. SFT: a loss curve whose points are the metrics rows (raw) plus the smoothed one; hyperparameters; config
p = run("report", "a")
html, svgs, clean, errs = page(os.path.join(TMP, "a", "report.html"))
report("sft_report_valid_svg_no_url", p.returncode == 0 and clean and len(svgs) >= 3, "%s %s" % (p.stderr, errs))
loss = chart(svgs, "loss")
m = [r for r in rows(os.path.join(TMP, "a", "metrics.jsonl")) if r.get("loss") is not None]  # null: skipped
lines = [pl for pl in loss[0].iter("polyline")] if loss else []
report("sft_loss_raw_and_smoothed", len(lines) == 2 and lines[0].get("stroke-opacity") == "0.3" and
       [len(pl.get("points").split()) for pl in lines] == [len(m), len(m)] and lines[0].get("points") != lines[1].get("points"),
       str([(pl.get("stroke-opacity"), len(pl.get("points").split())) for pl in lines]))
report("sft_hyperparameters_and_config", "<code>trainer.lr</code>" in html and "config.yaml</summary>" in html and
       "sft_demo.jsonl" in html, html[:300])

# 2. GRPO: the last logged step's sample completions, escaped
p = run("report", "g")
html, svgs, clean, errs = page(os.path.join(TMP, "g", "report.html"))
s = rows(os.path.join(TMP, "g", "samples.jsonl"))
last = [r for r in s if r["step"] == s[-1]["step"]]
report("grpo_report_valid", p.returncode == 0 and clean and chart(svgs, "reward"), p.stderr + str(errs))
report("grpo_samples_shown", "Sample completions (step %d)" % s[-1]["step"] in html and
       all(r["prompt"].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") in html for r in last[:4]) and
       "the cat <" not in html, "step %d" % s[-1]["step"])
report("report_terminal_line", "g (training run): reward " in p.stdout, p.stdout)

# 3. a grade output and an eval directory
p = run("report", "graded.jsonl")
html, svgs, clean, errs = page(os.path.join(TMP, "graded.report.html"))
n = len(rows(os.path.join(TMP, "graded.jsonl")))
report("grade_report", p.returncode == 0 and clean and len(svgs) == 1 and "<td>%d</td>" % n in html and
       chart(svgs, "Rewards of the scored rows"), p.stderr + str(errs))
# a non-string cell just over the cut (a prompt object whose JSON is 201 bytes): cut with "...", nothing written
# past the dump (an ASan build aborts on that)
with open(os.path.join(TMP, "long.jsonl"), "w") as f:
    f.write(json.dumps({"id": 1, "status": "ok", "reward": 1.0, "prompt": {"x": "a" * 193}, "response": "r"}) + "\n")
p = run("report", "long.jsonl")
html = open(os.path.join(TMP, "long.report.html"), encoding="utf-8").read() if p.returncode == 0 else ""
report("long_cell_cut", p.returncode == 0 and "<td>{&quot;x&quot;:&quot;" + "a" * 193 + "&quot;...</td>" in html, p.stderr[-300:])
# more metrics than are charted: the page and the terminal line say which were left out
os.makedirs(os.path.join(TMP, "wide"), exist_ok=True)
with open(os.path.join(TMP, "wide", "metrics.jsonl"), "w") as f:
    for step in range(3):
        f.write(json.dumps(dict({"step": step}, **{"m%02d" % k: k + step for k in range(50)})) + "\n")
p = run("report", "wide")
html, svgs, clean, errs = page(os.path.join(TMP, "wide", "report.html"))
report("metrics_past_the_cap_said", p.returncode == 0 and len(chart(svgs, "m47")) == 1 and not chart(svgs, "m48") and
       "wide: 2 more metrics not charted (at most 48 per run): m48 m49</p>" in html and "2 metrics past the first 48" in p.stdout,
       p.stdout + p.stderr[-300:])
p = run("report", "ev")
html, svgs, clean, errs = page(os.path.join(TMP, "ev", "report.html"))
report("eval_report", p.returncode == 0 and clean and "<h2>Summary</h2>" in html and "Sample rows" in html, p.stderr)

# 4. compare: overlaid curves, run i in one colour on every chart, config diff, samples side by side
p = run("compare", "a", "b", "g", "-o", "cmp.html")
html, svgs, clean, errs = page(os.path.join(TMP, "cmp.html"))
report("compare_valid_svg_no_url", p.returncode == 0 and clean and len(svgs) >= 3, p.stderr + str(errs))
cols, ok = {}, True
for e in svgs:
    for lab, col in legend(e).items():
        ok = ok and cols.setdefault(lab, col) == col
loss = chart(svgs, "loss")
report("compare_one_colour_per_run", ok and len(set(cols.get(k) for k in ("a", "b", "g"))) == 3 and loss and
       set(legend(loss[0])) == {"a", "b", "g"}, str(cols))
diff = html.split("<h2>Config diff</h2>")[1].split("</table>")[0] if "<h2>Config diff</h2>" in html else ""
report("compare_config_diff", "<code>trainer.lr</code>" in diff and "0.003" in diff and "<code>trainer.algo</code>" in diff
       and "<code>trainer.batch_size</code>" in diff and "<code>trainer.tensorboard</code>" not in diff, diff[:500])
report("compare_samples_side_by_side", "<h2>Samples side by side</h2>" in html, "")

# 5. errors: one line each
os.makedirs(os.path.join(TMP, "empty"), exist_ok=True)
p = run("report", "empty")
report("not_a_run_one_line", p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1 and "not a run directory" in p.stderr
       and "demo --out" not in p.stderr, p.stderr)
p = run("compare", "a")
report("compare_needs_two", p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr)
sys.exit(exit_code())
