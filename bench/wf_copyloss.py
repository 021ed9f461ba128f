#!/usr/bin/python3
"""How far an executor model copies from its prompt: the mean cross-entropy (nats) of a model
directory on the copied tokens of the reference `program` replies of held-out maths rows (indices
from 100000), by kind — the digits, the problem's name, and every other reply token — through
`judgerl forward` (one sequence at a time, only those targets scored). A model that ignores the
prompt scores about ln(10) = 2.30 on the digits and on the names (ten of each); one that copies
scores near 0.

  bench/wf_copyloss.py MODEL_DIR [MODEL_DIR ...] [--n 12]

Standard library only; run from the repository root (JR_BIN picks the binary)."""
import argparse
import json
import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("JR_BIN", os.path.join(ROOT, "build/rel/judgerl"))


def run(args, text=None):
    p = subprocess.run([BIN] + args, input=text, capture_output=True, text=True)
    if p.returncode:
        raise SystemExit("judgerl %s failed: %s" % (args[0], p.stderr.strip()[-500:]))
    return p.stdout


def copy_loss(model, rows, tmpl):
    tok = json.load(open(os.path.join(model, "tokenizer.json")))
    inv = {i: s for s, i in tok["model"]["vocab"].items()}
    im_start = [a["id"] for a in tok["added_tokens"] if a["content"] == "<|im_start|>"][0]
    sums = {"digit": [], "name": [], "other": []}
    for r in rows:
        prompt = tmpl.split("{{#input_differs}}")[0].replace("{{problem}}", r["problem"])
        conv = {"messages": [{"role": "user", "content": prompt}, {"role": "assistant", "content": "```python\n" + r["program"] + "```"}]}
        text = json.loads(run(["tokenize", "--tokenizer", model, "--chat"], json.dumps(conv)))
        ids = [int(x) for x in run(["tokenize", "--tokenizer", model, "--jsonl"], json.dumps({"text": text})).split()]
        start = max(i for i, t in enumerate(ids) if t == im_start) + 2  # the reply after "<|im_start|>assistant"
        name = r["problem"].split()[0]

        def kind(t):
            s = inv.get(t, "").replace("\u0120", "")
            return "digit" if re.fullmatch(r"\d", s) else "name" if s == name else "other"
        for k in sums:
            targets = [str(ids[i + 1]) if i + 1 < len(ids) and i + 1 > start and kind(ids[i + 1]) == k else "-1" for i in range(len(ids))]
            if any(t != "-1" for t in targets):
                out = run(["forward", "--model", model, "--ids", " ".join(map(str, ids)), "--targets", " ".join(targets)])
                sums[k].append(float(re.search(r"loss ([0-9.eE+-]+)", out).group(1)))
    return {k: sum(v) / len(v) for k, v in sums.items() if v}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--n", type=int, default=12, help="held-out maths rows")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rows = [json.loads(x) for x in run(["workflow", "tasks", "--domain", "math", "--n", str(a.n), "--seed", str(a.seed), "--first", "100000"]).splitlines()]
    tmpl = open(os.path.join(ROOT, "templates/workflow/program.txt")).read()
    for m in a.models:
        res = copy_loss(m, rows, tmpl)
        print("%s  %s" % (m, "  ".join("%s %.3f" % kv for kv in res.items())))


if __name__ == "__main__":
    main()
