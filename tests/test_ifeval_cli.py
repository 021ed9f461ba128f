#!/usr/bin/python3
"""test_ifeval_cli.py - `judgerl ifeval`: accuracies, output files in the official shape, malformed
rows reported with their line numbers, the --prompts join, usage errors."""
import json
import os
import subprocess
import sys

BIN = os.environ.get("JR_BIN", "build/rel/judgerl")
ROOT = os.environ.get("JR_ROOT", ".")
TMP = os.environ.get("JR_TMP", "/tmp")
SHARED = os.path.join(ROOT, "..", "shared", "data", "ifeval")
failed = 0


def report(name, ok, why=""):
    global failed
    if ok:
        print("ok - " + name)
    else:
        failed += 1
        print("FAIL - %s: %s" % (name, why))


def run(*args):
    p = subprocess.run([BIN, "ifeval"] + list(args), capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def write(path, rows):
    with open(path, "w") as f:
        for r in rows:
            f.write(r if isinstance(r, str) else json.dumps(r))
            f.write("\n")


GOOD1 = {"key": 1, "prompt": "Write two words, no commas.", "response": "Hello there",
         "instruction_id_list": ["punctuation:no_comma", "length_constraints:number_words"],
         "kwargs": [{}, {"num_words": 3, "relation": "less than"}]}
GOOD2 = {"prompt": "Quote it, caf\u00e9.", "response": "Sure:\n\"caf\u00e9 \u4e2d\u6587\"",
         "instruction_id_list": ["startend:quotation"], "kwargs": [{}]}


def test_scoring_and_outputs():
    d = os.path.join(TMP, "out1")
    inp = os.path.join(TMP, "in1.jsonl")
    write(inp, [GOOD1, "{not json", {"prompt": "x", "response": "y", "instruction_id_list": ["nope:x"], "kwargs": [{}]},
                "", {"prompt": "z", "response": "w", "instruction_id_list": ["length_constraints:number_words"],
                     "kwargs": [{"num_words": "3", "relation": "at least"}]},
                GOOD2, {"prompt": "no response field", "instruction_id_list": [], "kwargs": []}])
    rc, out, err = run("--input", inp, "--output-dir", d)
    report("exit 0 when some rows are scored", rc == 0, "rc=%d err=%s" % (rc, err))
    lines = out.splitlines()
    want = ["strict prompt-level: 0.5000 (1/2)", "strict instruction-level: 0.6667 (2/3)",
            "loose prompt-level: 1.0000 (2/2)", "loose instruction-level: 1.0000 (3/3)"]
    report("four accuracies printed", lines == want, repr(lines))
    errs = err.splitlines()
    report("invalid JSON reported with its line", any(":2: invalid JSON" in e for e in errs), err)
    report("unknown id reported with its line", any(":3: instruction 0: unknown instruction id \"nope:x\"" in e
                                                    for e in errs), err)
    report("wrong kwarg type reported with line, id and kwarg",
           any(":5: instruction 0: length_constraints:number_words: kwarg num_words must be an integer" in e
               for e in errs), err)
    report("missing field reported with its line", any(":7: missing or non-string field \"response\"" in e
                                                       for e in errs), err)
    report("summary of skipped rows", any("4 malformed row(s) skipped, 2 scored" in e for e in errs), err)
    for mode, fol in (("strict", [[True, True], [False]]), ("loose", [[True, True], [True]])):
        path = os.path.join(d, "eval_results_%s.jsonl" % mode)
        try:
            raw = open(path, encoding="utf-8").read().splitlines()
        except OSError as e:
            report("%s results written" % mode, False, str(e))
            continue
        rows = [json.loads(l) for l in raw]
        report("%s results: one row per scored input" % mode, len(rows) == 2, str(len(rows)))
        shape = all(list(r.keys()) == ["follow_all_instructions", "follow_instruction_list", "instruction_id_list",
                                       "prompt", "response"] for r in rows)
        report("%s results: official keys in the official order" % mode, shape, raw[0][:200])
        report("%s results: verdicts" % mode, [r["follow_instruction_list"] for r in rows] == fol
               and [r["follow_all_instructions"] for r in rows] == [all(f) for f in fol], repr(rows))
        # the official tool writes json.dumps(dict) per line: byte-identical lines
        same = all(l == json.dumps(r) for l, r in zip(raw, rows))
        report("%s results: byte-identical to json.dumps" % mode, same, raw[1][:200])
        report("%s results: prompt and response kept" % mode, rows[1]["response"] == GOOD2["response"] and
               rows[0]["prompt"] == GOOD1["prompt"])


def test_prompts_join():
    d = os.path.join(TMP, "out2")
    prompts = os.path.join(TMP, "prompts.jsonl")
    resp = os.path.join(TMP, "responses.jsonl")
    p1 = {k: GOOD1[k] for k in ("key", "prompt", "instruction_id_list", "kwargs")}
    p2 = {"key": 2, "prompt": "Unanswered", "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}
    p3 = {k: GOOD2[k] for k in ("prompt", "instruction_id_list", "kwargs")}
    write(prompts, [p1, p2, p3])
    write(resp, [{"prompt": GOOD2["prompt"], "response": GOOD2["response"]},
                 {"prompt": GOOD1["prompt"], "response": "first, ignored"},
                 {"prompt": GOOD1["prompt"], "response": GOOD1["response"]},
                 {"prompt": "not a benchmark prompt", "response": "x"}])
    rc, out, err = run("--prompts", prompts, "--input", resp, "--output-dir", d)
    report("join: exit 0", rc == 0, err)
    report("join: missing response reported with the prompt's line",
           any("prompts.jsonl:2: no response for this prompt" in e for e in err.splitlines()), err)
    rows = [json.loads(l) for l in open(os.path.join(d, "eval_results_strict.jsonl"))]
    report("join: rows in prompt order, last response wins",
           [r["prompt"] for r in rows] == [GOOD1["prompt"], GOOD2["prompt"]] and rows[0]["response"] == "Hello there",
           repr(rows))


def test_errors():
    rc, out, err = run()
    report("usage: --input required", rc == 2 and len(err.splitlines()) == 1 and "--input" in err, err)
    rc, out, err = run("--input", os.path.join(TMP, "absent.jsonl"))
    report("missing file: one line, exit 1", rc == 1 and len(err.splitlines()) == 1 and "absent.jsonl" in err, err)
    bad = os.path.join(TMP, "bad.jsonl")
    write(bad, ["[1, 2]"])
    rc, out, err = run("--input", bad)
    report("no scorable row: exit 1", rc == 1 and "a row must be a JSON object" in err and "no row could be scored" in err,
           err)
    rc, out, err = run("--bogus")
    report("unknown flag: usage error", rc == 2 and len(err.splitlines()) == 1, err)
    inp = os.path.join(TMP, "bd.jsonl")
    write(inp, [GOOD1, GOOD2])
    rc, out, err = run("--input", inp, "--breakdown")
    lines = out.splitlines()
    report("--breakdown: per group and per instruction",
           rc == 0 and "strict punctuation 1.0000 (1/1)" in lines and "strict startend 0.0000 (0/1)" in lines
           and "loose startend:quotation 1.0000 (1/1)" in lines
           and "strict length_constraints:number_words 1.0000 (1/1)" in lines, out)
    rc, out, err = run("--help")
    report("--help", rc == 0 and "--output-dir" in out, err)


def test_official_files():
    name = "official data: --prompts input_data.jsonl joined with the conformance responses"
    conf, inp = os.path.join(SHARED, "gpt4_conformance.jsonl"), os.path.join(SHARED, "input_data.jsonl")
    if not (os.path.exists(conf) and os.path.exists(inp)):
        print("skip - %s: %s absent" % (name, SHARED))
        return
    d = os.path.join(TMP, "out3")
    rc, out, err = run("--prompts", inp, "--input", conf, "--output-dir", d)
    lines = out.splitlines()
    # 541 prompts, 540 responses: one prompt has no response
    ok = rc == 0 and len(lines) == 4 and lines[0].startswith("strict prompt-level: ") and "/540)" in lines[0] \
        and "1 malformed row(s) skipped, 540 scored" in err
    report(name, ok, "rc=%d out=%r err=%r" % (rc, out, err[-300:]))
    n = sum(1 for _ in open(os.path.join(d, "eval_results_loose.jsonl")))
    report("official data: 540 loose results", n == 540, str(n))


test_scoring_and_outputs()
test_prompts_join()
test_errors()
test_official_files()
sys.exit(1 if failed else 0)
