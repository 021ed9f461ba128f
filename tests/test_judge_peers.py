"""test_judge_peers.py - the label protocol with one judge.constraint setting against servers of three
dialects: a llama-server-like one (grammar only, unconstrained log-probs, 3 HTTP threads for 1 slot;
tests/peer_servers.py), a current-vLLM-like one (structured_outputs only) and `judgerl serve`;
detection of each kind; the issue's lying log-probs reported unreliable; 280 rows on the 1-slot
server with default connection settings and no timeout, where 64 connections (the old default)
time out."""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_servers  # noqa: E402
from jrtest import BIN, ROOT, TMP, exit_code, report, start_server  # noqa: E402

CONSTRAINT = 'judge.constraint={choice: ["Yes", "No", "Maybe"]}'


def grade(name, rows, port, *over, quiet=False, config="judge_label.yaml", constraint=True):
    inp, out = os.path.join(TMP, name + ".in.jsonl"), os.path.join(TMP, name + ".out.jsonl")
    if os.path.exists(out):
        os.remove(out)
    with open(inp, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    args = [BIN, "grade", "--config", os.path.join(ROOT, "configs", config), "--input", inp, "--output", out,
            "judge.endpoints.0.url=http://127.0.0.1:%d/v1" % port, "judge.cache=false", "judge.max_unscored_frac=1.0"]
    args += ([CONSTRAINT] if constraint else []) + list(over)
    if quiet:
        args.append("--quiet")
    r = subprocess.run(args, capture_output=True, text=True, timeout=600)
    outs = {}
    if os.path.exists(out):
        with open(out) as f:
            for line in f:
                o = json.loads(line)
                outs[o["id"]] = o
    try:
        s = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        s = {}
    return r.returncode, outs, s, r.stderr


ROWS = [{"id": "yes", "prompt": "Will it work?"}, {"id": "no", "prompt": "Is it late? WANT=No"},
        {"id": "lie", "prompt": "Is it? LIE"}]


def test_llamacpp_like():
    srv, port = peer_servers.start("llamacpp", slots=1)
    rc, o, s, err = grade("peer_llama", ROWS, port, config="judge_llamacpp.yaml", constraint=False)
    report("llamacpp: grade exits 0", rc == 0, err)
    report("llamacpp: detected from /v1/models and /props, logged once, with the slot-based limits and streaming",
           err.count("judgerl grade: judge ") == 1 and "llamacpp b0000-emulated" in err and "total_slots 1" in err
           and "2 in flight, 2 connections, streaming" in err, err)
    bodies = [e["body"] for e in srv.state.log]
    report("llamacpp: the choice goes as a GBNF grammar, streamed, no vLLM fields",
           bodies and all(b.get("grammar") == 'root ::= "Yes" | "No" | "Maybe"' and b.get("stream") is True
                          and b.get("top_logprobs") == 20
                          and "structured_outputs" not in b and "guided_choice" not in b for b in bodies), bodies[:1])
    y, n, lie = o.get("yes", {}), o.get("no", {}), o.get("lie", {})
    p = [-2.0, -2.6, -3.9]
    report("llamacpp: constrained answer, confidence renormalised over the labels (all in the top log-probs)",
           y.get("reward") == 1.0 and abs(y["scores"]["confidence"] - 2.718281828 ** p[0] / sum(2.718281828 ** q for q in p)) < 1e-6
           and n.get("reward") == 0.0, (y, n))
    report("llamacpp: the grammar forced 'Yes' at -13.4 against -0.38: confidence null, logprobs_unreliable, counted",
           lie.get("reward") is None and lie["detail"]["confidence"] is None and lie["detail"]["reason"] == "logprobs_unreliable"
           and "-13.40" in lie["error"] and s.get("logprobs_unreliable") == 1, (lie, s))
    # the old request: vLLM's guided_choice, which llama-server ignores -> unconstrained answers
    rc, o, s, err = grade("peer_llama_guided", ROWS[:1], port, "judge.constraint=null", "judge.label.confidence=auto",
                          'judge.extra_body={guided_choice: ["Yes", "No", "Maybe"]}', "judge.parse_attempts=2")
    y = o.get("yes", {})
    report("llamacpp: guided_choice is ignored (the issue's symptom): unscored with the judge's text in the reason",
           y.get("reward") is None and "Good question" in y.get("error", ""), y)
    srv.shutdown()
    srv.server_close()


def test_outside_constraint_is_a_parse_failure():
    srv, port = peer_servers.start("llamacpp", slots=1)
    # the server is told to be llama.cpp but the config says vLLM: the constraint goes as
    # structured_outputs, which this server ignores, and the answer comes back unconstrained
    rc, o, s, err = grade("peer_wrong_kind", ROWS[:1], port, "judge.endpoints.0.kind=vllm", "judge.parse_attempts=2")
    y = o.get("yes", {})
    report("outside the constraint: a parse failure, asked again, with the judge's text in the reason",
           y.get("reward") is None and "outside judge.constraint" in y.get("error", "")
           and "Good question. Yes, as far as I can tell." in y.get("error", "") and len(srv.state.log) == 2, (y, len(srv.state.log)))
    srv.shutdown()
    srv.server_close()


def test_vllm_like():
    srv, port = peer_servers.start("vllm", slots=4)
    # configs/judge_vllm.yaml (kind: vllm, 64 in flight) turned into the label judge
    rc, o, s, err = grade("peer_vllm", ROWS, port, "judge.protocol=label", "judge.max_tokens=8",
                          'judge.label.values=[1.0, 0.0, 0.5]', "judge.endpoints.0.model=judge", config="judge_vllm.yaml")
    report("vllm: grade exits 0, detected with its version", rc == 0 and "vllm 0.12.0" in err and "64 in flight" in err
           and "not streaming" in err, err)
    bodies = [e["body"] for e in srv.state.log]
    report("vllm: the choice goes as structured_outputs (guided_* are ignored since v0.12)",
           bodies and all(b.get("structured_outputs") == {"choice": ["Yes", "No", "Maybe"]} and "guided_choice" not in b
                          and "grammar" not in b for b in bodies), bodies[:1])
    y, lie = o.get("yes", {}), o.get("lie", {})
    report("vllm: constrained log-probs give an honest confidence, even for the row llama.cpp lied about",
           y.get("reward") == 1.0 and lie.get("reward") == 1.0 and lie["scores"]["confidence"] > 0.7
           and s.get("logprobs_unreliable") == 0, (y, lie, s))
    srv.shutdown()
    srv.server_close()


def test_openai_like():
    srv, port = peer_servers.start("openai", slots=4)
    rc, o, s, err = grade("peer_openai", ROWS, port, "judge.endpoints.0.kind=openai")
    bodies = [e["body"] for e in srv.state.log]
    rf = bodies[0].get("response_format", {}) if bodies else {}
    report("openai: a choice goes as strict structured outputs {answer: enum}",
           rc == 0 and rf.get("type") == "json_schema" and rf["json_schema"].get("strict") is True
           and rf["json_schema"]["schema"]["properties"]["answer"]["enum"] == ["Yes", "No", "Maybe"], (err, bodies[:1]))
    y, n = o.get("yes", {}), o.get("no", {})
    report("openai: the answer {\"answer\": ...} is unwrapped, its log-probs read from the choice's token",
           y.get("reward") == 1.0 and y["detail"]["source"] == "logprobs" and n.get("reward") == 0.0, (y, n))
    rc, o, s, err = grade("peer_openai_regex", ROWS[:1], port, "judge.endpoints.0.kind=openai", 'judge.constraint={regex: "Yes|No"}')
    report("openai: a regex constraint is refused at open, naming the kind", rc != 0 and "openai" in err and "regex" in err
           and len(err.strip().splitlines()) == 1, err)
    srv.shutdown()
    srv.server_close()


def test_judgerl_serve():
    model = os.path.join(ROOT, "tests", "fixtures", "serve", "tiny")
    errp = os.path.join(TMP, "peer_serve.err")
    p, port = start_server([BIN, "serve", "--model", model, "--port", "0", "--parallel", "2", "--served-model-name", "judge"],
                           errp, "ready: ")
    if not port:
        report("judgerl serve: starts", False, open(errp).read())
        return
    rows = [{"id": "q%d" % i, "prompt": "Question %d?" % i} for i in range(8)]
    rc, o, s, err = grade("peer_serve", rows, port, "judge.label.threshold=0", "judge.max_tokens=8")
    report("judgerl serve: detected, the label protocol works with the same constraint setting",
           rc == 0 and "judgerl" in err and len(o) == 8 and all(r["status"] == "ok" for r in o.values()), (err, list(o.values())[:2]))
    report("judgerl serve: answers are labels with log-prob confidences (constrained log-probs: never unreliable)",
           all(r["detail"]["label"] in ("Yes", "No", "Maybe") and isinstance(r["scores"].get("confidence"), float)
               for r in o.values()) and s.get("logprobs_unreliable") == 0, (list(o.values())[:2], s))
    p.terminate()
    p.wait(timeout=30)


def test_280_rows_one_slot():
    rows = [{"id": i, "prompt": "Row %d: will it work?" % i} for i in range(280)]
    srv, port = peer_servers.start("llamacpp", slots=1, gen_ms=4.0)
    rc, o, s, err = grade("peer_280", rows, port, "judge.timeout_s=3", "judge.max_attempts=1", quiet=True)
    timeouts = [r for r in o.values() if "imeout" in (r.get("error") or "") or "timed out" in (r.get("error") or "")]
    report("280 label rows on the 1-slot llama-server-like server, default connection settings: no timeout",
           rc == 0 and len(o) == 280 and not timeouts and s.get("ok") == 280, (rc, s, timeouts[:2], err[-500:]))
    report("280 rows: no connection waits for one of the server's 3 HTTP threads",
           all(e["waited"] < 0.5 for e in srv.state.log), max(e["waited"] for e in srv.state.log))
    srv.shutdown()
    srv.server_close()
    # the old default, 64 connections, starves the 3 HTTP threads: the emulation reproduces the issue
    srv, port = peer_servers.start("llamacpp", slots=1, gen_ms=4.0)
    rc, o, s, err = grade("peer_280_64", rows, port, "judge.timeout_s=3", "judge.max_attempts=1", "judge.concurrency=64",
                          "judge.stream=false", quiet=True)
    timeouts = [r for r in o.values() if r.get("status") == "unscored"]
    report("280 rows with 64 connections (the old default) on the same server: connections starve, requests time out",
           len(timeouts) > 0 and all("imeout" in r["error"] or "timed out" in r["error"] for r in timeouts)
           and max(e["waited"] for e in srv.state.log) > 2.5, (s, timeouts[:1], max(e["waited"] for e in srv.state.log)))
    srv.shutdown()
    srv.server_close()


for t in (test_llamacpp_like, test_outside_constraint_is_a_parse_failure, test_vllm_like, test_openai_like, test_judgerl_serve,
          test_280_rows_one_slot):
    t0 = time.time()
    t()
    print("# %s took %.1fs" % (t.__name__, time.time() - t0))
sys.exit(exit_code())
