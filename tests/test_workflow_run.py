"""test_workflow_run.py - `judgerl workflow run` end to end: against the fault-injecting loopback
server (tests/judge_server.py: operator, transport and budget failures are explicit outcomes, never
answers; xK branches run concurrently with distinct seeds) and against `judgerl serve` of a tiny
random model (the plumbing: calls, tokens from the server's usage, traces)."""
import json
import os
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import judge_server  # noqa: E402
from jrtest import BIN, ROOT, TMP, exit_code, report, start_server, write  # noqa: E402


def config(name, port, extra=None):
    """An executor config for the loopback server, with a fresh cache."""
    if os.path.exists(os.path.join(TMP, name + ".sqlite")):
        os.remove(os.path.join(TMP, name + ".sqlite"))
    judge = {"endpoints": '[{url: "http://127.0.0.1:%d/v1", model: executor}]' % port,
             "cache": os.path.join(TMP, name + ".sqlite"), "timeout_s": "2", "connect_timeout_s": "0.5",
             "backoff_base_s": "0.02", "backoff_max_s": "0.1", "max_attempts": "3", "concurrency": "8"}
    wf = {"templates": os.path.join(ROOT, "templates/workflow")}
    for k, v in (extra or {}).items():
        sec, key = k.split(".", 1)
        (judge if sec == "judge" else wf)[key] = v
    text = "judge:\n" + "".join("  %s: %s\n" % kv for kv in judge.items())
    text += "workflow:\n" + "".join("  %s: %s\n" % kv for kv in wf.items())
    return write(os.path.join(TMP, name + ".yaml"), text)


def run(name, workflow, rows, cfg, *over):
    wf = write(os.path.join(TMP, name + ".wf"), workflow)
    inp = write(os.path.join(TMP, name + ".jsonl"), "".join(json.dumps(r) + "\n" for r in rows))
    out = os.path.join(TMP, name + ".out.jsonl")
    p = subprocess.run([BIN, "workflow", "run", "--workflow", wf, "--problems", inp, "--executor", cfg, "--output", out] + list(over),
                       capture_output=True, text=True, timeout=120)
    res = []
    if os.path.exists(out):
        with open(out) as f:
            res = [json.loads(line) for line in f if line.strip()]
    res.sort(key=lambda r: str(r.get("id")))
    return p, res


def explicit_failure(r, pattern):
    return r["outcome"] == "failed" and "answer" not in r and re.search(pattern, r.get("reason", "")) is not None


def fault_server_cases():
    srv, port = judge_server.start()
    cfg = config("wf_fault", port)
    try:
        # custom passes the reply through: an answer, one call, its prompt and tokens traced
        p, res = run("wf_custom", 'c = custom(problem, @"Reply in one line.")\nreturn c\n',
                     [{"id": 1, "problem": "2+2? score=4", "type": "math"}], cfg)
        r = res[0] if res else {}
        calls = r.get("trace", {}).get("calls", [])
        report("custom_answer_and_trace", p.returncode == 0 and r.get("outcome") == "answer" and "[RESULT] 4" in r.get("answer", "")
               and r["n_calls"] == 1 and len(calls) == 1 and "Reply in one line." in calls[0]["prompt"]
               and calls[0]["output"] == r["answer"] and calls[0]["tokens"] > 0 and r["trace"]["answer"] == r["answer"],
               "%s %s" % (p.stderr, res))

        # answer() needs <answer>...</answer>: the server's reply has none -> failed, no fallback
        p, res = run("wf_noanswer", "a = answer(problem)\nreturn a\n", [{"id": 1, "problem": "2+2?", "type": "math"}], cfg)
        report("missing_answer_tag_is_explicit_failure", p.returncode == 0 and res and
               explicit_failure(res[0], r"^line 1:5: answer: the reply has no <answer>"), "%s %s" % (p.stderr, res))

        # a transport failure after the client's retries
        p, res = run("wf_500", 'c = custom(problem, @"x")\nreturn c\n', [{"id": 1, "problem": "q fault=500*all", "type": "qa"}], cfg)
        report("http_failure_is_explicit_failure", p.returncode == 0 and res and explicit_failure(res[0], r"executor call failed: .*HTTP 500"),
               "%s %s" % (p.stderr, res))

        # xK: K concurrent calls with distinct seeds, then a local vote (no call)
        srv.state.latency = 0.3
        srv.state.max_inflight = 0
        before = len(srv.state.log)
        p, res = run("wf_x4", 'xs = custom(problem, @"Answer:") x4\nb = ensemble(xs)\nreturn b\n',
                     [{"id": 1, "problem": "capital? score=2", "type": "qa"}], cfg)
        bodies = [e["body"] for e in srv.state.log[before:]]
        seeds = {b.get("seed") for b in bodies}
        report("xK_runs_concurrently_with_distinct_seeds", p.returncode == 0 and res and res[0]["outcome"] == "answer"
               and res[0]["n_calls"] == 4 and len(bodies) == 4 and len(seeds) == 4 and srv.state.max_inflight >= 2,
               "inflight=%d seeds=%s %s" % (srv.state.max_inflight, seeds, res))
        srv.state.latency = 0.0

        # budgets: calls and wall time
        p, res = run("wf_budget_calls", 'xs = custom(problem, @"Answer:") x4\nb = ensemble(xs)\nreturn b\n',
                     [{"id": 1, "problem": "budget? score=1", "type": "qa"}], cfg, "workflow.budget_calls=2", "workflow.parallel=1")
        report("call_budget_is_explicit_failure", p.returncode == 0 and res and explicit_failure(res[0], r"^budget: 2 executor calls used")
               and res[0]["n_calls"] == 2, "%s %s" % (p.stderr, res))
        p, res = run("wf_budget_time", 'c = custom(problem, @"x")\nreturn c\n', [{"id": 1, "problem": "slow fault=stall*all", "type": "qa"}],
                     cfg, "workflow.budget_seconds=0.4", "judge.timeout_s=5")
        report("wall_budget_is_explicit_failure", p.returncode == 0 and res and explicit_failure(res[0], r"^budget: wall time")
               and res[0]["wall_s"] < 3, "%s %s" % (p.stderr, res))

        # the llm vote and review need their tags: the server's replies lack them
        p, res = run("wf_llmvote", 'xs = custom(problem, @"a") x2\nb = ensemble(xs, mode=llm)\nreturn b\n',
                     [{"id": 1, "problem": "vote", "type": "qa"}], cfg)
        report("llm_vote_without_letter_is_explicit_failure", p.returncode == 0 and res and
               explicit_failure(res[0], r"ensemble: the reply names no letter"), "%s %s" % (p.stderr, res))
        p, res = run("wf_refine", 'c = custom(problem, @"a")\nd = refine(c, 2)\nreturn d\n', [{"id": 1, "problem": "r", "type": "qa"}], cfg)
        report("review_without_result_is_explicit_failure", p.returncode == 0 and res and
               explicit_failure(res[0], r"refine: the reply has no <review_result>"), "%s %s" % (p.stderr, res))

        # several rows run in parallel, one line each
        rows = [{"id": i, "problem": "row %d score=%d" % (i, 1 + i % 5), "type": "qa"} for i in range(10)]
        p, res = run("wf_rows", 'c = custom(problem, @"x")\nreturn c\n', rows, cfg, "workflow.parallel=4")
        report("rows_each_get_one_outcome", p.returncode == 0 and len(res) == 10 and
               all("[RESULT] %d" % (1 + r["id"] % 5) in r["answer"] for r in res) and "10 rows: 10 answers" in p.stderr,
               "%s %s" % (p.stderr, res[:2]))

        # bad input: one clear line, non-zero exit
        p, res = run("wf_badrow", 'c = custom(problem, @"x")\nreturn c\n', [{"id": 1, "problem": "q"}], cfg)
        report("row_without_type_fails_clearly", p.returncode != 0 and "field 'type'" in p.stderr and p.stderr.count("\n") == 1, p.stderr)
        # a problems row without a string 'problem' (after a blank line): the error names the file and its line
        wf = write(os.path.join(TMP, "wf_noproblem.wf"), 'c = custom(problem, @"x")\nreturn c\n')
        inp = write(os.path.join(TMP, "wf_noproblem.jsonl"), '{"id": 1, "problem": "q", "type": "qa"}\n\n{"id": 2, "type": "qa"}\n')
        p = subprocess.run([BIN, "workflow", "run", "--workflow", wf, "--problems", inp, "--executor", cfg, "--output",
                            os.path.join(TMP, "wf_noproblem.out.jsonl")], capture_output=True, text=True, timeout=120)
        report("problems_row_error_names_file_line", p.returncode == 1 and
               "wf_noproblem.jsonl:3: field 'problem' must be a string" in p.stderr and p.stderr.count("\n") == 1, p.stderr)
        p, res = run("wf_badwf", "c = progam(problem)\nreturn c\n", [{"id": 1, "problem": "q", "type": "qa"}], cfg)
        report("bad_workflow_fails_with_position", p.returncode != 0 and
               "workflow:1:5: unknown operator 'progam' (did you mean 'program'?)" in p.stderr, p.stderr)
    finally:
        srv.shutdown()


def serve_cases():
    model = os.path.join(ROOT, "tests/fixtures/serve/tiny")
    proc, port = start_server([BIN, "serve", "--model", model, "--port", "0", "--parallel", "4", "--served-model-name", "executor"],
                              os.path.join(TMP, "wf_serve.err"), "ready: ")
    try:
        if not port:
            report("serve_plumbing", False, "judgerl serve did not start")
            return
        # the random model's bytes are readable only when constrained (a NUL byte is not valid JSON
        # text for the client): the server's guided_regex through judge.extra_body
        cfg = config("wf_serve", port, {"workflow.max_tokens": "24", "workflow.temperature": "1.0",
                                        "judge.extra_body": '{guided_regex: "[a-z ]{1,20}"}'})
        rows = [{"id": i, "problem": "What is %d + %d?" % (i, i), "type": "math"} for i in range(3)]
        p, res = run("wf_serve_x3", 'xs = custom(problem, @"Answer:") x3\nb = ensemble(xs)\nc = custom(b, @"Check:")\nreturn c\n', rows, cfg)
        ok = p.returncode == 0 and len(res) == 3
        for r in res:
            calls = r["trace"]["calls"]
            ok = ok and r["outcome"] == "answer" and r["n_calls"] == 4 and len(calls) == 4 and r["answer"] == calls[-1]["output"].strip() \
                and all(c["tokens_source"] == "usage" and c["tokens"] > 0 for c in calls) and r["tokens"] == sum(c["tokens"] for c in calls)
        report("serve_plumbing", ok, "%s %s" % (p.stderr, json.dumps(res)[:600]))
        p, res = run("wf_serve_answer", "a = answer(problem)\nreturn a\n", rows[:1], cfg)
        report("serve_untrained_answer_fails_explicitly", p.returncode == 0 and res and res[0]["outcome"] == "failed"
               and "answer" not in res[0], json.dumps(res)[:400])
    finally:
        proc.terminate()
        proc.wait(timeout=10)


class Scripted(BaseHTTPRequestHandler):
    """An executor that follows the operator templates: answers 7 or 8 by the request's seed,
    votes for a fixed letter, reviews 7 as wrong and revises it to 8, formats to 42."""
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        text = "\n".join(m["content"] for m in body["messages"])
        if "Define a function solve()" in text:
            m = re.search(r"What is 3 \+ (\d+)\?", text)
            body_ = "raise ValueError('no')" if "crash" in text else "return 3 + %s" % m.group(1)
            reply = "Here:\n```python\ndef solve():\n    %s\n```" % body_
        elif "failed its tests" in text:
            reply = "```python\ndef add1(x):\n    return x + 1\n```"
        elif "Python solution for the following task" in text:
            reply = "```python\ndef add1(x):\n    return x\n```"
        elif "Extract the final answer" in text:
            reply = "<answer>42</answer>"
        elif "agrees with most" in text:
            reply = "<thought>B is it</thought><solution_letter>B</solution_letter>"
        elif "most likely to be correct" in text:
            reply = "<solution_letter>A</solution_letter>"
        elif "Review the solution" in text:
            sol = text.split("Solution:")[-1].strip()
            reply = "<review_result>false</review_result><feedback>it is 8</feedback>" if sol == "7" else "<review_result>true</review_result>"
        elif "Revise the solution" in text:
            reply = "<solution>8</solution>"
        else:
            reply = "<thought>adding</thought><answer>%s</answer>" % ("8" if body.get("seed", 0) % 3 == 0 else "7")
        out = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}],
                          "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


def answers_of(calls, op):
    return [re.search(r"<answer>(.*)</answer>", c["output"]).group(1) for c in calls if c["op"] == op]


def scripted_cases():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Scripted)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    cfg = config("wf_scripted", srv.server_address[1])
    rows = [{"id": i, "problem": "What is 3 + %d?" % i, "type": "math"} for i in range(6)]
    try:
        p, res = run("wf_vote", "xs = answer(problem) x5\nb = ensemble(xs)\nreturn b\n", rows, cfg)
        ok = len(res) == 6
        for r in res:
            vals = answers_of(r["trace"]["calls"], "answer")
            ok = ok and len(vals) == 5 and r["answer"] == max(["7", "8"], key=vals.count) and r["tokens"] == 75
        report("local_vote_takes_the_majority", p.returncode == 0 and ok, json.dumps(res)[:500])

        p, res = run("wf_llm_vote", "xs = answer(problem) x3\nb = ensemble(xs, mode=llm)\nreturn b\n", rows, cfg)
        ok = len(res) == 6
        for r in res:
            ens = [c for c in r["trace"]["calls"] if c["op"] == "ensemble"]
            ok = ok and len(ens) == 1 and r["answer"] == re.search(r"B: (\S+)", ens[0]["prompt"]).group(1)
        report("llm_vote_takes_the_named_letter", p.returncode == 0 and ok, json.dumps(res)[:500])

        p, res = run("wf_md", "xs = answer(problem) x3\nb = mdensemble(xs)\nreturn b\n", rows, cfg)
        ok = len(res) == 6
        for r in res:
            votes = [re.search(r"A: (\S+)", c["prompt"]).group(1) for c in r["trace"]["calls"] if c["op"] == "mdensemble"]
            ok = ok and len(votes) == 3 and votes.count(r["answer"]) >= 2
        report("mdensemble_takes_the_most_voted", p.returncode == 0 and ok, json.dumps(res)[:500])

        p, res = run("wf_refine_ok", "a = answer(problem)\nr = refine(a, 2)\nreturn r\n", rows, cfg)
        ok = len(res) == 6
        for r in res:
            first = answers_of(r["trace"]["calls"], "answer")[0]
            ok = ok and r["answer"] == "8" and r["n_calls"] == (4 if first == "7" else 2)
        report("refine_revises_until_the_review_passes", p.returncode == 0 and ok, json.dumps(res)[:500])

        # program: the generated solve() runs in the sandbox, its printed value is the answer
        p, res = run("wf_program", "p = program(problem)\nreturn p\n", rows[:3], cfg)
        ok = len(res) == 3 and all(r["answer"] == str(3 + r["id"]) and r["n_calls"] == 1 and len(r["trace"]["sandbox"]) == 1 for r in res)
        report("program_runs_in_the_sandbox", p.returncode == 0 and ok, json.dumps(res)[:600])
        p, res = run("wf_program_crash", "p = program(problem)\nreturn p\n", [{"id": 1, "problem": "crash", "type": "math"}], cfg)
        report("failing_program_is_explicit_failure", p.returncode == 0 and res and explicit_failure(res[0], r"program: the program failed twice")
               and res[0]["n_calls"] == 2 and "ValueError" in res[0]["trace"]["sandbox"][0]["result"], json.dumps(res)[:600])

        # test: public tests only; a failing solution is fixed once, then passes
        code_row = {"id": 1, "problem": "def add1(x):\n    \"\"\"Return x + 1.\"\"\"\n", "type": "code", "entry_point": "add1",
                    "public_tests": "assert add1(1) == 2\n", "hidden_tests": "assert add1(41) == 42\n"}
        p, res = run("wf_test", "c = codegen(problem)\nt = test(c, 2)\nreturn t\n", [code_row], cfg)
        r = res[0] if res else {}
        runs = r.get("trace", {}).get("sandbox", [])
        report("test_fixes_against_public_tests_only", p.returncode == 0 and r.get("outcome") == "answer" and "x + 1" in r["answer"]
               and r["n_calls"] == 2 and [x["asserts"] for x in runs] == [[0, 1], [1, 1]]
               and not any("add1(41)" in c["prompt"] or "add1(41)" in x["code"] for c in r["trace"]["calls"] for x in runs),
               json.dumps(res)[:800])

        # --grade: a verifier per row (reference answer; code: hidden tests), failed runs count as wrong
        graded = [dict(r, answer=str(3 + r["id"]) if r["id"] < 2 else "999") for r in rows[:3]] + [{"id": 9, "problem": "crash", "type": "math", "answer": "1"}]
        p, res = run("wf_grade", "p = program(problem)\nreturn p\n", graded, cfg, "--grade")
        report("grade_math_by_reference", p.returncode == 0 and [r.get("correct") for r in res] == [True, True, False, False]
               and "math accuracy 50.0% (2 of 4" in p.stderr, p.stderr + json.dumps([(r["id"], r.get("correct"), r.get("grade")) for r in res]))
        p, res = run("wf_grade_code", "c = codegen(problem)\nt = test(c, 2)\nreturn t\n", [code_row, dict(code_row, id=2, hidden_tests="assert add1(41) == 43\n")],
                     cfg, "--grade")
        report("grade_code_by_hidden_tests", p.returncode == 0 and [r.get("correct") for r in res] == [True, False]
               and "code accuracy 50.0% (1 of 2" in p.stderr and "0 of 1 hidden asserts" in res[1]["grade"], p.stderr + json.dumps(res)[:300])

        p, res = run("wf_review_revise", "a = answer(problem)\nr = review(a)\nb = revise(a, r)\nf = format(b)\nreturn f\n", rows[:2], cfg)
        report("review_revise_format", p.returncode == 0 and len(res) == 2 and all(r["answer"] == "42" and r["n_calls"] == 4 for r in res),
               json.dumps(res)[:500])
    finally:
        srv.shutdown()


fault_server_cases()
scripted_cases()
serve_cases()
sys.exit(exit_code())
