#!/usr/bin/python3
"""make_demo_tokenizer.py - the embedded demo's small real vocabulary, trained by judgerl itself.

Usage: /usr/bin/python3 tools/make_demo_tokenizer.py JUDGERL_BIN [OUT_DIR]   (default data/eightball/tokenizer)

Writes OUT_DIR/tokenizer.json with `judgerl tokenizer train --vocab 512` on the magic 8-ball
training text (questions.jsonl with their answers, reinforce.jsonl, answers.jsonl; not the held-out
questions) laid out as ChatML turns, and OUT_DIR/tokenizer_config.json with a ChatML chat template,
eos <|im_end|> and pad <|endoftext|>. Deterministic: tests/test_demo_tokenizer.py regenerates it
and compares bytes.
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "data", "eightball")

CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


def rows(name):
    with open(os.path.join(DATA, name), encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def corpus():
    parts = []
    for r in rows("questions.jsonl"):
        parts.append(f"user\n{r['question']}\nassistant\n{r['answer']}\n")
    for r in rows("reinforce.jsonl"):
        parts.append(f"user\n{r['question']}\n")
    for r in rows("answers.jsonl"):
        parts.append(f"assistant\n{r['text']}\n")
    return "".join(parts)


def main():
    jr = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(DATA, "tokenizer")
    os.makedirs(out, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", encoding="utf-8", delete=False) as f:
        f.write(corpus())
        path = f.name
    try:
        subprocess.run([jr, "tokenizer", "train", "--vocab", "512", "-o", os.path.join(out, "tokenizer.json"), path],
                       check=True)
    finally:
        os.unlink(path)
    cfg = {"bos_token": None, "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", "unk_token": None,
           "model_max_length": 512, "tokenizer_class": "PreTrainedTokenizerFast", "chat_template": CHAT_TEMPLATE}
    with open(os.path.join(out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=1, ensure_ascii=False)
        f.write("\n")


main()
