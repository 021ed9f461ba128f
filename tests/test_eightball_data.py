"""test_eightball_data.py - data/eightball is what tools/make_eightball.py writes (every file, byte for byte), and
the demo's policy and GRPO data have the shape issue 20's fix relies on: the policy SFT rows answer every supervised
question with every label (a policy that memorised one label per question gave GRPO no reward spread and learned per
prompt), the study's base rows keep one random label per question, the GRPO prompts are the reinforcement and the
supervised questions, none held out."""
import collections
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jrtest import ROOT, TMP, finish, report  # noqa: E402

DATA = os.path.join(ROOT, "data", "eightball")


def rows(name, base=DATA):
    with open(os.path.join(base, name), encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def files(base):
    out = {}
    for d, _, names in os.walk(base):
        for n in names:
            if n.endswith(".jsonl"):
                p = os.path.join(d, n)
                with open(p, "rb") as f:
                    out[os.path.relpath(p, base)] = f.read()
    return out


# 1. the committed files are the generator's output
with tempfile.TemporaryDirectory(dir=TMP) as tmp:
    p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_eightball.py"), tmp], capture_output=True, text=True, timeout=120)
    if p.returncode:
        report("make_eightball_runs", False, p.stderr)
    else:
        got, want = files(tmp), {k: v for k, v in files(DATA).items() if k in files(tmp)}
        diff = sorted(k for k in got if got[k] != want.get(k))
        report("data_is_the_generators_output", not diff and len(got) >= 20, "differ or missing in data/eightball: %s" % diff)

labels = {a["text"]: a["label"] for a in rows("answers.jsonl")}
sup = {r["question"]: r["answer"] for r in rows("questions.jsonl")}
prompt_q = lambda r: r["prompt"][len("Q: "):-len("\nA:")]  # noqa: E731

# 2. policy SFT: every supervised question with each label, two distinct surface forms of each
per_q = collections.defaultdict(list)
for r in rows("lm/policy_sft.jsonl"):
    per_q[prompt_q(r)].append(r["completion"].strip())
bad = [q for q in sup if sorted(labels[t] for t in per_q.get(q, [])) != ["Maybe"] * 2 + ["No"] * 2 + ["Yes"] * 2
       or len(set(per_q[q])) != 6]
report("policy_sft_every_label_per_question", set(per_q) == set(sup) and not bad, "questions %d/%d, wrong: %s" % (len(per_q), len(sup), bad[:3]))

# 3. the study's base: each supervised question twice with its one random label
per_q = collections.defaultdict(list)
for r in rows("lm/policy_sft_random.jsonl"):
    per_q[prompt_q(r)].append(labels[r["completion"].strip()])
bad = [q for q in sup if per_q.get(q) != [sup[q]] * 2]
report("policy_sft_random_one_label_per_question", set(per_q) == set(sup) and not bad, "wrong: %s" % bad[:3])

# 4. the GRPO stages' prompts: the reinforcement and the supervised questions with their kind, none held out
kind = {r["question"]: r["kind"] for r in rows("preferences.jsonl")}
kind.update({r["question"]: r["kind"] for r in rows("reinforce.jsonl")})
allp = rows("lm/grpo_prompts_all.jsonl")
held = {r["question"] for r in rows("heldout.jsonl")}
qs = [r["question"] for r in allp]
ok = (sorted(qs) == sorted(set(sup) | {r["question"] for r in rows("reinforce.jsonl")}) and not held & set(qs)
      and all(r["kind"] == kind[r["question"]] and r["prompt"] == "Q: %s\nA:" % r["question"] for r in allp))
report("grpo_prompts_all_reinforce_and_supervised", ok, "%d prompts, %d held out among them" % (len(qs), len(held & set(qs))))
finish()
