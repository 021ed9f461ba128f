"""test_workflow_executor.py - the executor model of seed 2 end to end: `judgerl workflow
train-executor --quick` writes SFT rows rendered from the operator templates (checked against the
task generators' references), a BPE tokenizer with the chat template and a model; `judgerl serve`
serves that model; two fixed workflows run on a few rows with --grade: every outcome is an answer
or an explicit failure, the executor's prompts are exactly the SFT rows' prompts, and grading is
the verifier's (it follows the reference answer / the hidden tests, not the model)."""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jrtest import BIN, ROOT, TMP, report, exit_code, start_server, write, jsonl  # noqa: E402

OUT = os.path.join(TMP, "wf_exec")


def tasks(domain, n):
    p = subprocess.run([BIN, "workflow", "tasks", "--domain", domain, "--n", str(n), "--seed", "1"], capture_output=True, text=True, cwd=ROOT)
    return [json.loads(line) for line in p.stdout.splitlines()]


def train_cases():
    p = subprocess.run([BIN, "workflow", "train-executor", "--quick", "run.out_dir=" + OUT], capture_output=True, text=True, cwd=ROOT, timeout=600)
    report("train_quick", p.returncode == 0 and re.search(r"executor trained: steps 1\.\.8, loss [0-9.]+ -> [0-9.]+", p.stdout) is not None
           and os.path.exists(os.path.join(OUT, "model/model.safetensors")), p.stdout + p.stderr[-800:])
    if p.returncode:
        return None
    rows = jsonl(os.path.join(OUT, "sft.jsonl"))
    by = {}
    for r in rows:
        by.setdefault((r["op"], r["domain"]), []).append(r)
    counts = {k: len(v) for k, v in by.items()}
    report("sft_row_mix", all(counts.get(k) == 12 for k in [("answer", "math"), ("answer", "code"), ("answer", "qa"), ("program", "math"),
                                                            ("codegen", "code")])
           and counts.get(("program", "code"), 0) == 0 and sum(len(v) for k, v in by.items() if k[0] == "review")
           == sum(len(v) for k, v in by.items() if k[0] == "revise") > 0, json.dumps(sorted(counts.items())))
    ref = {t["id"]: t for d in ("math", "code", "qa") for t in tasks(d, 12)}
    first = {op: open(os.path.join(ROOT, "templates/workflow", f)).readline().strip()
             for op, f in [("program", "program.txt"), ("codegen", "codegen.txt"), ("answer_math", "answer_math.txt"), ("answer_qa", "answer_qa.txt")]}
    ok, why = True, ""
    for r in rows:
        t, user, reply = ref[r["id"]], r["messages"][0]["content"], r["messages"][1]["content"]
        good = t["problem"] in user and r["messages"][0]["role"] == "user" and r["messages"][1]["role"] == "assistant"
        if r["op"] == "program":
            good = good and user.startswith(first["program"]) and reply == "```python\n" + t["program"] + "```"
        elif r["op"] == "codegen":
            good = good and user.startswith(first["codegen"]) and reply == "```python\n" + t["answer"] + ("" if t["answer"].endswith("\n") else "\n") + "```"
        elif r["op"] == "answer":
            m = re.fullmatch(r"<thought>(.*)</thought>\n<answer>\n?(.*)</answer>", reply, re.S)
            good = good and m is not None and m.group(2) == t["answer"]
            if good and t["type"] == "math":
                # the worked steps end on the reference answer
                good = user.startswith(first["answer_math"]) and m.group(1).endswith("= %s." % t["answer"])
            if good and t["type"] == "qa":
                # every fact of the chain is a line of the knowledge base, and the chain ends on the answer
                facts = [f.strip() + "." for f in m.group(1).split(".") if f.strip()]
                good = user.startswith(first["answer_qa"]) and len(facts) == t["hops"] and all("- " + f + "\n" in t["problem"] for f in facts) \
                    and facts[-1].endswith(" " + t["answer"] + ".")
        elif r["op"] == "review":
            good = good and re.fullmatch(r"<review_result>(true|false)</review_result>\n<feedback>.+</feedback>", reply, re.S) is not None
        elif r["op"] == "revise":
            good = good and (t["answer"] in reply) and reply.startswith("<solution>")
        if not good:
            ok, why = False, json.dumps(r)[:700]
            break
    report("sft_rows_rendered_from_templates_with_references", ok, why)
    tok = json.load(open(os.path.join(OUT, "model/tokenizer.json")))
    cfg = json.load(open(os.path.join(OUT, "model/tokenizer_config.json")))
    ids = [a["id"] for a in tok.get("added_tokens", []) if a["content"] in ("<|endoftext|>", "<|im_start|>", "<|im_end|>")]
    report("tokenizer_bpe_with_chat_template", tok["model"]["type"] == "BPE" and len(tok["model"]["vocab"]) + len(ids) == 512
           and sorted(ids) == [509, 510, 511] and "<|im_start|>" in cfg.get("chat_template", ""), json.dumps(ids))
    return by


def executor_config(name, port, extra=""):
    return write(os.path.join(TMP, name + ".yaml"),
                 "judge:\n  endpoints: [{url: \"http://127.0.0.1:%d/v1\", model: executor}]\n  cache: %s\n  timeout_s: 300\n"
                 "  concurrency: 4\n%sworkflow:\n  templates: %s/templates/workflow\n  max_tokens: 32\n  temperature: 0.7\n"
                 % (port, os.path.join(TMP, name + ".sqlite"), extra, ROOT))


def run(name, workflow, rows, cfg):
    wf = write(os.path.join(TMP, name + ".wf"), workflow)
    inp = write(os.path.join(TMP, name + ".jsonl"), "".join(json.dumps(r) + "\n" for r in rows))
    out = os.path.join(TMP, name + ".out.jsonl")
    if os.path.exists(out):
        os.remove(out)
    p = subprocess.run([BIN, "workflow", "run", "--workflow", wf, "--problems", inp, "--executor", cfg, "--output", out, "--grade"],
                       capture_output=True, text=True, timeout=600)
    res = jsonl(out) if os.path.exists(out) else []
    res.sort(key=lambda r: str(r.get("id")))
    return p, res


def shape_ok(r):
    if r["outcome"] == "answer":
        return isinstance(r.get("answer"), str) and "reason" not in r and isinstance(r.get("correct"), bool) and r.get("grade")
    return r["outcome"] == "failed" and "answer" not in r and r.get("reason") and r.get("correct") is False \
        and r.get("grade") == "no answer: the run failed"


def serve_cases(by):
    err_path = os.path.join(TMP, "wf_exec_serve.err")
    proc, port = start_server([BIN, "serve", "--model", os.path.join(OUT, "model"), "--port", "0", "--parallel", "4",
                               "--served-model-name", "executor"], err_path, "ready: ")
    try:
        if not port:
            report("serve_trained_executor", False, "judgerl serve did not start: " + open(err_path).read()[-600:])
            return
        rows = tasks("math", 2) + tasks("code", 2)
        cfg = executor_config("wf_exec_plain", port)
        for name, wf in [("answer", "a = answer(problem)\nreturn a\n"), ("program", "p = program(problem)\nreturn p\n")]:
            p, res = run("wf_exec_" + name, wf, rows, cfg)
            ok = p.returncode == 0 and len(res) == 4 and all(shape_ok(r) for r in res) and "math accuracy" in p.stderr and "code accuracy" in p.stderr
            # the executor's prompts are the SFT rows' prompts: same templates, same fields
            for r in res:
                sft = [s["messages"][0]["content"] for s in by.get((name, r["id"].split("-")[0]), []) if s["id"] == r["id"]]
                calls = r["trace"]["calls"]
                ok = ok and len(calls) >= 1 and (not sft or calls[0]["prompt"] == sft[0])
                ok = ok and (name != "program" or r["id"].startswith("code") or bool(sft))
            report("serve_%s_outcomes_and_prompts" % name, ok, p.stderr[-500:] + json.dumps(res)[:900])
        # grading is the verifier's: constrain the model to a wrong number, then make it the reference
        cfg = executor_config("wf_exec_forced", port, "  extra_body: {guided_regex: \"<answer>-[1-9][0-9]?</answer>\"}\n")
        math = tasks("math", 2)
        p, res = run("wf_exec_forced", "a = answer(problem)\nreturn a\n", math, cfg)
        ok = p.returncode == 0 and len(res) == 2 and all(r["outcome"] == "answer" and r["correct"] is False
                                                          and "differs from the reference" in r["grade"] for r in res)
        if ok:
            given = {r["id"]: r["answer"] for r in res}
            p, res2 = run("wf_exec_forced", "a = answer(problem)\nreturn a\n", [dict(t, answer=given[t["id"]]) for t in math], cfg)
            ok = p.returncode == 0 and [r["answer"] for r in res2] == [r["answer"] for r in res] \
                and all(r["correct"] is True and "equivalent to the reference" in r["grade"] for r in res2) and "math accuracy 100.0% (2 of 2" in p.stderr
        report("grade_math_follows_reference_not_model", ok, p.stderr[-400:] + json.dumps(res)[:600])
        cfg = executor_config("wf_exec_code", port, "  extra_body: {guided_regex: \"<answer>\\ndef f\\\\(x\\\\):\\n    return [1-9]\\n</answer>\"}\n")
        row = {"id": "c", "type": "code", "problem": "def f(x):\n    \"\"\"Return a digit.\"\"\"\n", "entry_point": "f", "public_tests": "assert f(0) >= 0\n"}
        p, res = run("wf_exec_code", "a = answer(problem)\nreturn a\n", [dict(row, hidden_tests="assert f(1) == 0\nassert f(2) == 0\n")], cfg)
        ok = p.returncode == 0 and len(res) == 1 and res[0]["outcome"] == "answer" and res[0]["correct"] is False and "0 of 2 hidden asserts" in res[0]["grade"]
        if ok:
            d = re.search(r"return ([1-9])", res[0]["answer"]).group(1)
            p, res = run("wf_exec_code", "a = answer(problem)\nreturn a\n", [dict(row, hidden_tests="assert f(1) == %s\nassert f(2) == %s\n" % (d, d))], cfg)
            ok = p.returncode == 0 and res[0]["correct"] is True and "2 of 2 hidden asserts" in res[0]["grade"]
        report("grade_code_by_hidden_tests_not_model", ok, p.stderr[-400:] + json.dumps(res)[:600])
    finally:
        proc.terminate()
        proc.wait(timeout=60)


by = train_cases()
if by is not None:
    serve_cases(by)
sys.exit(exit_code())
