#!/usr/bin/python3
"""make_sft_demo_data.py - writes data/sft_demo.jsonl, the 240 {"prompt","completion"} rows of `make demo`:
small arithmetic, animal sounds and string reversal (deterministic: seed 3).
Usage: /usr/bin/python3 tools/make_sft_demo_data.py [OUT]"""
import json, random, sys


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "data/sft_demo.jsonl"
    random.seed(3)
    rows = []
    for _ in range(120):
        a, b = random.randint(0, 20), random.randint(0, 20)
        op = random.choice(["+", "-"])
        r = a + b if op == "+" else a - b
        rows.append({"prompt": f"Q: {a}{op}{b}=?\nA:", "completion": f" {r}"})
    sounds = {"cat": "meow", "dog": "woof", "cow": "moo", "duck": "quack", "sheep": "baa", "owl": "hoot", "lion": "roar",
              "frog": "ribbit", "pig": "oink", "horse": "neigh", "mouse": "squeak", "bee": "buzz"}
    for _ in range(60):
        k = random.choice(list(sounds))
        rows.append({"prompt": f"Q: what does a {k} say?\nA:", "completion": f" {sounds[k]}"})
    for _ in range(60):
        w = "".join(random.choice("abcdefgh") for _ in range(random.randint(3, 6)))
        rows.append({"prompt": f"Q: reverse {w}\nA:", "completion": " " + w[::-1]})
    random.shuffle(rows)
    with open(out, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
