# test_demo_tokenizer.py - the demo's shipped vocabulary (data/eightball/tokenizer) is what
# `judgerl tokenizer train` produces from the shipped text, loads, round-trips and renders chats
import json
import os
import subprocess
import sys

ROOT = os.environ.get("JR_ROOT", ".")
JR = os.environ.get("JR_BIN", os.path.join(ROOT, "build/rel/judgerl"))
TMP = os.environ.get("JR_TMP", "/tmp")
DIR = os.path.join(ROOT, "data/eightball/tokenizer")


def check(name, cond, why=""):
    print(("ok - " if cond else "FAIL - ") + name + ("" if cond else ": " + why))


def run(args, inp):
    return subprocess.run([JR] + args, input=inp, capture_output=True, text=True)


out = os.path.join(TMP, "demo_tok")
p = subprocess.run([sys.executable, os.path.join(ROOT, "tools/make_demo_tokenizer.py"), JR, out], capture_output=True, text=True)
check("regenerates", p.returncode == 0, p.stderr)
for f in ("tokenizer.json", "tokenizer_config.json"):
    same = p.returncode == 0 and open(os.path.join(out, f), "rb").read() == open(os.path.join(DIR, f), "rb").read()
    check("reproducible_" + f, same, "differs from the committed file: rerun tools/make_demo_tokenizer.py")

info = run(["tokenize", "--tokenizer", DIR, "--info"], "")
try:
    info = json.loads(info.stdout)
except ValueError:
    info = {}
check("info", info.get("n_tokens") == 512 and info.get("eos_id") == 511 and info.get("pad_id") == 509 and info.get("chat_template"),
      str(info))

texts = []
for name in ("questions.jsonl", "heldout.jsonl"):
    with open(os.path.join(ROOT, "data/eightball", name), encoding="utf-8") as f:
        texts += [json.loads(line)["question"] for line in f if line.strip()]
rows = "".join(json.dumps({"text": t}) + "\n" for t in texts)
enc = run(["tokenize", "--tokenizer", DIR, "--jsonl", "--no-special"], rows)
ids = enc.stdout.splitlines()
dec = run(["tokenize", "--tokenizer", DIR, "--jsonl", "--decode"], "".join(json.dumps({"ids": [int(x) for x in l.split()]}) + "\n" for l in ids))
back = [json.loads(l)["text"] for l in dec.stdout.splitlines()]
check("round_trip", enc.returncode == 0 and back == texts, enc.stderr + dec.stderr)
n_ids = sum(len(l.split()) for l in ids)
n_bytes = sum(len(t.encode()) for t in texts)
check("compresses", 0 < n_ids < n_bytes / 2, f"{n_ids} ids for {n_bytes} bytes")

chat = run(["tokenize", "--tokenizer", DIR, "--chat"],
           json.dumps({"messages": [{"role": "user", "content": "Will I be rich someday?"}, {"role": "assistant", "content": "Yes"}],
                       "add_generation_prompt": False}) + "\n" +
           json.dumps({"messages": [{"role": "user", "content": "Rain?"}], "add_generation_prompt": True}) + "\n")
want = ["<|im_start|>user\nWill I be rich someday?<|im_end|>\n<|im_start|>assistant\nYes<|im_end|>\n",
        "<|im_start|>user\nRain?<|im_end|>\n<|im_start|>assistant\n"]
got = [json.loads(l) for l in chat.stdout.splitlines()]
check("chat_template", got == want, repr(got) + chat.stderr)
