"""test_protocols_e2e.py - every protocol end to end: `judgerl grade` with the shipped configs
against a loopback judge whose answers are scripted per test (good, wrapped and broken verdicts,
log-probs, failures), checking rewards, per-component scores, fallbacks and unscored rows."""
import hashlib
import json
import math
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import judge_server  # noqa: E402  (Server, State, prompt_text)

from jrtest import BIN, exit_code, report, ROOT, TMP  # noqa: E402


class ScriptHandler(BaseHTTPRequestHandler):
    """Answers each chat request with what the server's `script(text, body, attempt)` returns:
    a string (the answer), or a dict {content, logprobs?, code?}."""
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        st = self.server.state
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        text = judge_server.prompt_text(body)
        key = hashlib.sha256(text.encode()).hexdigest()[:16]
        attempt = st.next_attempt(key)
        st.record({"key": key, "attempt": attempt, "text": text, "body": body})
        ans = self.server.script(text, body, attempt)
        if isinstance(ans, str):
            ans = {"content": ans}
        if ans.get("code", 200) != 200:
            data = json.dumps({"error": {"message": "scripted %d" % ans["code"]}}).encode()
            self.send_response(ans["code"])
        elif self.path.endswith("/chat/completions"):
            choice = {"index": 0, "message": {"role": "assistant", "content": ans["content"]}, "finish_reason": "stop"}
            if ans.get("logprobs") is not None and body.get("logprobs"):
                choice["logprobs"] = {"content": ans["logprobs"]}
        else:  # /v1/completions: logprobs in the legacy shape, only when asked with an integer
            choice = {"index": 0, "text": ans["content"], "finish_reason": "stop"}
            k = body.get("logprobs")
            if ans.get("logprobs") is not None and isinstance(k, int) and not isinstance(k, bool):
                choice["logprobs"] = {"tokens": [e["token"] for e in ans["logprobs"]],
                                      "token_logprobs": [e["logprob"] for e in ans["logprobs"]],
                                      "top_logprobs": [{t["token"]: t["logprob"] for t in e["top_logprobs"][:k]}
                                                       for e in ans["logprobs"]]}
        if ans.get("code", 200) == 200:
            data = json.dumps({"id": "x", "object": "chat.completion", "choices": [choice],
                               "usage": {"total_tokens": 10}}).encode()
            self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def start(script):
    srv = judge_server.Server(("127.0.0.1", 0), ScriptHandler)
    srv.state = judge_server.State()
    srv.script = script
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, srv.server_address[1]


def grade(config, rows, port, name, *over, keep_constraint=False):
    inp = os.path.join(TMP, name + ".in.jsonl")
    out = os.path.join(TMP, name + ".out.jsonl")
    if os.path.exists(out):
        os.remove(out)
    with open(inp, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    args = [BIN, "grade", "--config", config if os.path.isabs(config) else os.path.join(ROOT, "configs", config), "--input", inp, "--output", out, "--quiet",
            "judge.endpoints.0.url=http://127.0.0.1:%d/v1" % port, "judge.cache=false", "judge.timeout_s=5",
            "judge.backoff_base_s=0.01", "judge.backoff_max_s=0.02", "judge.max_attempts=2",
            "judge.max_unscored_frac=1.0"] + list(over)
    # the scripted servers speak no dialect: the shipped configs' constraints are off unless a case sets one
    if not keep_constraint and not any(a.startswith("judge.constraint") for a in over):
        args.append("judge.constraint=null")
    r = subprocess.run(args, capture_output=True, text=True, timeout=120)
    outs = {}
    if os.path.exists(out):
        with open(out) as f:
            for line in f:
                if line.strip():
                    o = json.loads(line)
                    outs[o["id"]] = o
    try:
        summary = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        summary = {}
    return r.returncode, outs, summary, r.stderr


def near(a, b, tol=1e-6):
    return a is not None and b is not None and abs(a - b) <= tol


def requests_with(srv, needle):
    return [e for e in srv.state.log if needle in e["text"]]


# ---------------------------------------------------------------- reference
def reference_script(text, body, attempt):
    if "ALWAYS-BROKEN" in text:
        return "Hmm, hard to say."
    if "BROKEN-ONCE" in text and attempt == 1:
        return "Let me think... (no verdict)"
    if "SAY-WRAPPED-INCORRECT" in text:
        return "Here is my grading:\n```json\n{\"verdict\": \"incorrect\", \"why\": \"different value\"}\n```"
    if "SAY-INCORRECT" in text:
        return "The values differ.\n**Verdict:** INCORRECT"
    return "They are the same number.\nVERDICT: CORRECT"


def test_reference():
    srv, port = start(reference_script)
    rows = [
        {"id": "sc", "prompt": "Half?", "response": "so \\boxed{0.5}", "reference": "\\frac{1}{2}"},
        {"id": "yes", "prompt": "Two thirds?", "response": "It is two-thirds of the whole.", "reference": "2/3"},
        {"id": "wrapped", "prompt": "SAY-WRAPPED-INCORRECT", "response": "0.7", "reference": "2/3"},
        {"id": "no", "prompt": "SAY-INCORRECT", "response": "7", "reference": "8"},
        {"id": "once", "prompt": "BROKEN-ONCE", "response": "eight", "reference": "8"},
        {"id": "broken", "prompt": "ALWAYS-BROKEN", "response": "nine", "reference": "8"},
    ]
    rc, o, s, err = grade("judge_reference.yaml", rows, port, "ref")
    report("reference: grade exits 0", rc == 0, err)
    if rc != 0 or len(o) != 6:
        return
    report("reference: equivalent answers short-circuit (no request)",
           o["sc"]["reward"] == 1.0 and o["sc"]["judge_calls"] == 0 and not requests_with(srv, "Half?"), o["sc"])
    report("reference: CORRECT verdict", o["yes"]["reward"] == 1.0, o["yes"])
    report("reference: JSON-wrapped INCORRECT verdict", o["wrapped"]["reward"] == 0.0, o["wrapped"])
    report("reference: markdown INCORRECT verdict", o["no"]["reward"] == 0.0, o["no"])
    report("reference: an unparsable verdict is asked again",
           o["once"]["reward"] == 1.0 and len(requests_with(srv, "BROKEN-ONCE")) == 2, o["once"])
    report("reference: a verdict that never parses leaves the row unscored (not 0)",
           o["broken"]["reward"] is None and o["broken"]["status"] == "unscored"
           and "CORRECT" in (o["broken"]["error"] or "") and len(requests_with(srv, "ALWAYS-BROKEN")) == 3, o["broken"])
    srv.shutdown()


# ---------------------------------------------------------------- rubric
def criterion_answer(text):
    """Per-criterion prompts show one "[points] criterion" item."""
    item = text.split("# Rubric item", 1)[1]
    if "NEVER" in item:
        return "I refuse to grade."
    if "HTTP500" in item:
        return {"code": 500}
    met = "MET" in item and "UNMET" not in item
    return "```json\n{\"explanation\": \"checked\", \"criteria_met\": %s}\n```" % ("true" if met else "false")


def batch_answer(text):
    items = text.split("<Rubric>", 1)[1]
    if "BATCHFAIL" in text:
        return "Sorry, here is prose instead of JSON."
    ans = {}
    for line in items.strip().splitlines():
        if ". (points:" not in line:
            continue
        n = line.split(".", 1)[0].strip()
        ans[n] = "PRESENT" if ("MET" in line and "UNMET" not in line) else "NOT_PRESENT"
    return "```json\n" + json.dumps(ans) + "\n```"


def rubric_script(text, body, attempt):
    if "<Rubric>" in text:
        return batch_answer(text)
    return criterion_answer(text)


RUBRIC = [
    {"criterion": "MET: mentions the dose", "points": 5},
    {"criterion": "UNMET: mentions side effects", "points": 3},
    {"criterion": "MET: recommends a dangerous dose", "points": -2},
    {"criterion": "Answers in at most 12 words", "points": 2,
     "tags": ["verifier:rule", "function:word_count_range", "parameters:{\"min_count\": 1, \"max_count\": 12}"]},
]


def test_rubric():
    srv, port = start(rubric_script)
    short = "Take 200 mg every day with water."
    rows = [
        {"id": "hb", "prompt": "Dose of X?", "response": short, "rubric": RUBRIC},
        {"id": "neg_only", "prompt": "p", "response": short, "rubric": [{"criterion": "MET: rude", "points": -3}]},
        {"id": "never", "prompt": "p2", "response": short,
         "rubric": RUBRIC[:2] + [{"criterion": "NEVER gradable", "points": 4}]},
        {"id": "rules_only", "prompt": "p3", "response": short, "rubric": [RUBRIC[3]]},
        {"id": "http500", "prompt": "p4", "response": short, "rubric": RUBRIC[:1] + [{"criterion": "HTTP500 item", "points": 1}]},
    ]
    rc, o, s, err = grade("judge_rubric.yaml", rows, port, "rubric")
    report("rubric per-criterion: grade exits 0", rc == 0, err)
    if rc != 0 or len(o) != 5:
        return
    # met: +5, pitfall -2 present, rule +2 (7 words) -> (5 - 2 + 2) / (5 + 3 + 2)
    report("rubric per-criterion: HealthBench score with a pitfall and a rule criterion",
           near(o["hb"]["reward"], 0.5) and o["hb"]["components"]["rubric"]["detail"]["judge"]["met"] == [1, 0, 1, 1], o["hb"])
    report("rubric per-criterion: one call per judged criterion, none for the rule",
           len(requests_with(srv, "Dose of X?")) == 3 and not requests_with(srv, "at most 12 words"))
    report("rubric: no positive points is unscored (HealthBench None)",
           o["neg_only"]["reward"] is None and "positive points" in o["neg_only"]["error"], o["neg_only"])
    report("rubric: a criterion that keeps failing leaves the sample unscored, not NOT_PRESENT",
           o["never"]["reward"] is None and "criterion 2" in o["never"]["error"]
           and len(requests_with(srv, "NEVER gradable")) == 3, o["never"])
    # scored rows: 0.5 and 1.0 -> mean 0.75, clipped the same
    report("rubric: the summary reports the clipped mean (HealthBench aggregate)",
           near(s["components"]["rubric"].get("clipped_mean"), 0.75), s)
    report("rubric: a criterion whose calls keep failing (HTTP 500) leaves the sample unscored",
           o["http500"]["reward"] is None and "500" in (o["http500"]["error"] or "")
           and len(requests_with(srv, "HTTP500 item")) == 2, o["http500"])
    report("rubric: rule-only rubric is scored without the judge",
           o["rules_only"]["reward"] == 1.0 and o["rules_only"]["judge_calls"] == 0, o["rules_only"])
    srv.shutdown()


def test_rubric_batched():
    srv, port = start(rubric_script)
    resp = "Take 200 mg every day with water."
    rows = [
        {"id": "ok", "prompt": "Batch fine", "response": resp, "rubric": RUBRIC},
        {"id": "fallback", "prompt": "BATCHFAIL please", "response": resp, "rubric": RUBRIC},
        {"id": "dead", "prompt": "BATCHFAIL again", "response": resp,
         "rubric": RUBRIC[:1] + [{"criterion": "NEVER gradable", "points": 4}]},
    ]
    rc, o, s, err = grade("judge_rubric_batched.yaml", rows, port, "rubricb")
    report("rubric batched: grade exits 0", rc == 0, err)
    if rc != 0 or len(o) != 3:
        return
    report("rubric batched: one call for all judged criteria",
           near(o["ok"]["reward"], 0.5) and len(requests_with(srv, "Batch fine")) == 1, o["ok"])
    fb = requests_with(srv, "BATCHFAIL please")
    n_batch = len([e for e in fb if "<Rubric>" in e["text"]])
    n_single = len([e for e in fb if "# Rubric item" in e["text"]])
    report("rubric batched: a failed batched call falls back to per-criterion calls",
           near(o["fallback"]["reward"], 0.5) and n_batch == 3 and n_single == 3
           and o["fallback"]["components"]["rubric"]["detail"]["judge"].get("fallback") is True,
           (o["fallback"], n_batch, n_single))
    report("rubric batched: a criterion failing after the fallback leaves the sample unscored",
           o["dead"]["reward"] is None and "could not be graded" in o["dead"]["error"], o["dead"])
    # With judge.constraint set (the shipped one, sent as vLLM's structured_outputs), the batched call
    # carries its own schema derived from the row (keys 1..k, all required) and the per-criterion
    # fallback calls carry the config's
    rows_c = [{"id": "c", "prompt": "BATCHFAIL constrained", "response": resp, "rubric": RUBRIC}]
    rc, oc, s, err = grade("judge_rubric_batched.yaml", rows_c, port, "rubricbc", "judge.endpoints.0.kind=vllm",
                           keep_constraint=True)
    reqs = requests_with(srv, "BATCHFAIL constrained")
    bat = [json.loads(e["body"]) if isinstance(e.get("body"), str) else e.get("body") for e in reqs if "<Rubric>" in e["text"]]
    one = [json.loads(e["body"]) if isinstance(e.get("body"), str) else e.get("body") for e in reqs if "# Rubric item" in e["text"]]
    bsch = [((b or {}).get("structured_outputs") or {}).get("json") for b in bat]
    osch = [((b or {}).get("structured_outputs") or {}).get("json") for b in one]
    report("rubric batched + constraint: the batched call's schema requires the row's criteria 1..3, each PRESENT | NOT_PRESENT",
           len(bsch) >= 1 and all(x and x.get("required") == ["1", "2", "3"] and x["properties"]["2"]["enum"] == ["PRESENT", "NOT_PRESENT"]
                                  and x.get("additionalProperties") is False for x in bsch), (bsch, err))
    report("rubric batched + constraint: the fallback's per-criterion calls carry judge.constraint",
           len(osch) >= 1 and all(x and x.get("required") == ["explanation", "criteria_met"] for x in osch), (osch, err))
    # The old behaviour only on request: failed criteria counted as not met.
    rc, o2, s, err = grade("judge_rubric_batched.yaml", rows[2:], port, "rubricb2", "judge.rubric.on_failure=not_present")
    d = o2.get("dead", {})
    report("rubric batched: on_failure=not_present scores failed criteria as not met (opt-in)",
           rc == 0 and near(d.get("reward"), 5 / 9)
           and d["components"]["rubric"]["detail"]["judge"].get("failed_as_not_present") == [1], d)
    srv.shutdown()


# ---------------------------------------------------------------- pairwise
def pairwise_script(text, body, attempt):
    a = text.split("[The start of response A]", 1)[1].split("[The end of response A]", 1)[0]
    if "BIAS" in text:
        return "I prefer the first one. [[A]]"
    if "TIE" in text:
        return "Equally good. [[C]]"
    if "GOOD" in a:
        return "A is more helpful.\n[[A]]"
    return "{\"winner\": \"B\"}"


def test_pairwise():
    srv, port = start(pairwise_script)
    rows = [
        {"id": "win", "prompt": "Q1", "response": "GOOD answer", "response_b": "weak answer"},
        {"id": "loss", "prompt": "Q2", "response": "weak answer", "response_b": "GOOD answer"},
        {"id": "bias", "prompt": "Q3 BIAS", "response": "one", "response_b": "two"},
        {"id": "tie", "prompt": "Q4 TIE", "response": "one", "response_b": "two"},
    ]
    rc, o, s, err = grade("judge_pairwise.yaml", rows, port, "pair")
    report("pairwise: grade exits 0", rc == 0, err)
    if rc != 0 or len(o) != 4:
        return
    det = lambda k: o[k]["components"]["pairwise"]["detail"]
    report("pairwise: a consistent win in both orders", o["win"]["reward"] == 1.0 and det("win")["judge"]["consistent"], o["win"])
    report("pairwise: a consistent loss", o["loss"]["reward"] == 0.0 and det("loss")["judge"]["consistent"], o["loss"])
    report("pairwise: orders that disagree are a tie, marked inconsistent",
           o["bias"]["reward"] == 0.5 and det("bias")["judge"]["consistent"] is False
           and det("bias")["judge"]["order_ab"] == "A" and det("bias")["judge"]["order_ba"] == "A", o["bias"])
    report("pairwise: a tie in both orders is a consistent tie",
           o["tie"]["reward"] == 0.5 and det("tie")["judge"]["consistent"] is True, o["tie"])
    report("pairwise: position consistency in the summary", near(s.get("position_consistency"), 0.75), s)
    report("pairwise: both orders are asked",
           len(requests_with(srv, "Q1")) == 2 and
           requests_with(srv, "Q1")[0]["text"] != requests_with(srv, "Q1")[1]["text"])
    srv.shutdown()


# ---------------------------------------------------------------- label
def lp(tok, p, alts):
    return [{"token": tok, "logprob": math.log(p),
             "top_logprobs": [{"token": t, "logprob": math.log(q)} for t, q in alts]}]


def label_script(text, body, attempt):
    if "CONFIDENT-YES" in text:
        return {"content": "Yes", "logprobs": lp("Yes", 0.7, [("Yes", 0.7), (" No", 0.2), ("Maybe", 0.05), ("The", 0.05)])}
    if "UNSURE" in text:
        return {"content": "Maybe", "logprobs": lp("Maybe", 0.35, [("Maybe", 0.35), ("Yes", 0.3), ("No", 0.3)])}
    if "VERBAL-NO" in text:
        return "No\nConfidence: 0.9"
    if "LYING" in text:  # issue 24: llama-server's unconstrained log-probs under a grammar
        return {"content": "Yes", "logprobs": [{"token": "Yes", "logprob": -13.4, "top_logprobs": [
            {"token": "G", "logprob": -0.38}, {"token": "The", "logprob": -1.16}]}]}
    if "NO-CONF" in text:
        return "No"
    return "Perhaps?"


def test_label():
    srv, port = start(label_script)
    rows = [
        {"id": "yes", "prompt": "Will it work? CONFIDENT-YES"},
        {"id": "unsure", "prompt": "Will it rain? UNSURE"},
        {"id": "verbal", "prompt": "Is it late? VERBAL-NO", "response": "It is late."},
        {"id": "noconf", "prompt": "Is it? NO-CONF"},
        {"id": "broken", "prompt": "Is it? BROKEN"},
        {"id": "lying", "prompt": "Is it? LYING"},
    ]
    # the fault server speaks no dialect: the shipped constraint (sent per server kind) is off here
    rc, o, s, err = grade("judge_label.yaml", rows, port, "label", "judge.constraint=null")
    report("label: grade exits 0", rc == 0, err)
    if rc != 0 or len(o) != 6:
        return
    ly = o["lying"]
    report("label: log-probs computed before the constraint (Yes at -13.4) are unreliable, never 1.0",
           ly["reward"] is None and ly["detail"]["confidence"] is None and ly["detail"]["reason"] == "logprobs_unreliable"
           and "logprobs_unreliable" in ly["error"] and s.get("logprobs_unreliable") == 1, (ly, s))
    y = o["yes"]
    report("label: confidence renormalised over the labels' first tokens",
           y["reward"] == 1.0 and near(y["scores"]["confidence"], 0.7 / 0.95) and y["detail"]["source"] == "logprobs", y)
    report("label: a verdict below the 0.4 threshold is rejected (unscored)",
           o["unsure"]["reward"] is None and "threshold" in o["unsure"]["error"], o["unsure"])
    report("label: verbalised confidence without log-probs",
           o["verbal"]["reward"] == 0.0 and near(o["verbal"]["scores"]["confidence"], 0.9)
           and o["verbal"]["detail"]["source"] == "verbal", o["verbal"])
    report("label: no confidence at all is unscored", o["noconf"]["reward"] is None, o["noconf"])
    report("label: a verdict naming no label is unscored after retries",
           o["broken"]["reward"] is None and len(requests_with(srv, "BROKEN")) == 3, o["broken"])
    b = requests_with(srv, "CONFIDENT-YES")[0]["body"]
    report("label: log-probs are requested", b.get("logprobs") is True and b.get("top_logprobs") == 10, b)
    rc, o, s, err = grade("judge_label.yaml", rows[5:], port, "label_accept", "judge.label.unreliable=accept", "judge.constraint=null")
    ly = o.get("lying", {})
    report("label: judge.label.unreliable=accept scores it with confidence null",
           rc == 0 and ly.get("reward") == 1.0 and ly["detail"]["confidence"] is None
           and "confidence" not in ly["scores"] and s.get("logprobs_unreliable") == 1, (ly, s, err))
    rc, o, s, err = grade("judge_label.yaml", rows[:1], port, "label_cmpl", "judge.api=completions", "judge.constraint=null")
    y = o.get("yes", {})
    report("label: /v1/completions asks logprobs=k and reads the legacy log-probs",
           rc == 0 and near(y.get("scores", {}).get("confidence"), 0.7 / 0.95)
           and requests_with(srv, "CONFIDENT-YES")[-1]["body"].get("logprobs") == 10, (y, err))
    srv.shutdown()


# ---------------------------------------------------------------- VerIF
def verif_script(text, body, attempt):
    if "humorous" in text and "FUNNY" in text:
        return "[[1]] The tone is playful."
    if "NOPARSE" in text:
        return "The response is fine."
    return "It is dry. [[0]]"


def test_verif():
    srv, port = start(verif_script)
    cons = ["[llm] Use a humorous tone",
            {"constraint": "[rule] At most 10 words", "rule": "word_count_range", "params": {"min_count": 1, "max_count": 10}},
            {"constraint": "[rule] No commas", "rule": "ifeval:punctuation:no_comma"}]
    rows = [
        {"id": "all", "prompt": "Joke please", "response": "FUNNY cats sit on keyboards", "constraints": cons},
        {"id": "half", "prompt": "Joke please", "response": "FUNNY cats sit on warm keyboards all day long and purr loudly",
         "constraints": cons},
        {"id": "llm0", "prompt": "Joke please", "response": "Cats sit", "constraints": cons},
        {"id": "rules", "prompt": "Short", "response": "Short, sweet", "constraints": cons[1:]},
        {"id": "noparse", "prompt": "NOPARSE", "response": "x", "constraints": cons},
    ]
    rc, o, s, err = grade("judge_verif.yaml", rows, port, "verif")
    report("verif: grade exits 0", rc == 0, err)
    if rc != 0 or len(o) != 5:
        return
    report("verif: all rules pass and the judge says [[1]]", o["all"]["reward"] == 1.0, o["all"])
    report("verif: reward = mean(rule results) x llm verdict", near(o["half"]["reward"], 0.5 * 1), o["half"])
    report("verif: [[0]] from the judge zeroes the reward", o["llm0"]["reward"] == 0.0, o["llm0"])
    report("verif: rules only: no call, mean of the rules",
           near(o["rules"]["reward"], 0.5) and o["rules"]["judge_calls"] == 0 and not requests_with(srv, "Short, sweet"),
           o["rules"])
    report("verif: an unparsable verdict leaves the row unscored", o["noparse"]["reward"] is None, o["noparse"])
    rc, o2, s, err = grade("judge_verif.yaml", [dict(rows[1], id="half2", response="FUNNY cats, sit")], port, "verif2")
    report("verif: one of two rules passing halves the reward", rc == 0 and near(o2.get("half2", {}).get("reward"), 0.5), o2)
    srv.shutdown()


# ---------------------------------------------------------------- seed 2 with the judge
def test_seed2():
    srv, port = start(reference_script)
    rows = [
        {"id": 1, "problem": "SAY-INCORRECT 3+4?", "response": "The answer is 8 and 8", "answer": "7", "type": "math",
         "cost": 0.002, "latency": 12.0, "operator_count": 2},
        {"id": 2, "problem": "Capital of France?", "response": "It is Paris, the capital.", "answer": "Paris", "type": "qa",
         "cost": 0.01, "latency": 6.0, "operator_count": 5},
    ]
    rc, o, s, err = grade("seed2_reward.yaml", rows, port, "seed2")
    report("seed 2 recipe: grade exits 0", rc == 0, err)
    if rc != 0 or len(o) != 2:
        return
    # every component but correctness on the 10-point scale (scale: 10); no workflow field: the
    # (optional) repetition component is left out
    # row 1: judge INCORRECT -> -5; efficiency .5(1-.2)+.5(1-.2)=.8; simplicity 6/7; format: not a bare number, no \boxed -> 0
    e1 = 0.65 * -5 + 0.15 * 8 + 0.10 * (60 / 7) + 0.05 * 0
    # row 2: judge CORRECT -> 10; efficiency .5*0 + .5*(1-.1) = .45; simplicity 3/7; format qa: one short line -> 1
    e2 = 0.65 * 10 + 0.15 * 4.5 + 0.10 * (30 / 7) + 0.05 * 10
    report("seed 2 recipe: judged incorrect row", near(o[1]["reward"], e1) and o[1]["scores"]["correctness"] == -5.0, o[1])
    report("seed 2 recipe: judged correct row", near(o[2]["reward"], e2) and o[2]["scores"]["correctness"] == 10.0, o[2])
    report("seed 2 recipe: per-component means in the summary",
           near(s["components"]["correctness"]["mean"], 2.5) and s["components"]["efficiency"]["weight"] == 0.15, s)
    srv.shutdown()


# ---------------------------------------------------------------- several protocols on one client
def mixed_script(text, body, attempt):
    if "###Score Rubrics" in text:
        return "Feedback: solid. [RESULT] 4"
    if "VERDICT:" in text:
        return "VERDICT: INCORRECT" if "WRONG" in text else "VERDICT: CORRECT"
    return "???"


def test_mixed_composite():
    srv, port = start(mixed_script)
    cfg = os.path.join(TMP, "mixed.yaml")
    with open(cfg, "w") as f:
        f.write("judge:\n  endpoints: [{url: 'http://127.0.0.1:1/v1', model: m}]\n"
                "  reference: {correct: 1.0, incorrect: -1.0}\n"
                "  pointwise: {normalize: true}\n"
                "reward:\n  components:\n"
                "    - {name: correct, fn: reference, weight: 0.5}\n"
                "    - {name: quality, fn: pointwise, weight: 0.3}\n"
                "    - {name: short, fn: length, weight: 0.2, params: {unit: words, min: 1, max: 4, slack: 4}}\n")
    rows = [{"id": "a", "prompt": "Name a prime", "response": "Seven is prime here", "reference": "7"},
            {"id": "b", "prompt": "WRONG one", "response": "It is surely eight I think", "reference": "7"}]
    rc, o, s, err = grade(cfg, rows, port, "mixed")
    report("composite: grade exits 0", rc == 0, err)
    if rc != 0 or len(o) != 2:
        return
    # a: 0.5*1 + 0.3*(4-1)/4 + 0.2*1 ; b: 0.5*-1 + 0.3*0.75 + 0.2*(1 - 2/4)  (6 words: 2 over max, slack 4)
    report("composite: two judge protocols and a rule on one client",
           near(o["a"]["reward"], 0.5 + 0.225 + 0.2) and near(o["b"]["reward"], -0.5 + 0.225 + 0.1)
           and o["a"]["scores"] == {"correct": 1.0, "quality": 0.75, "short": 1.0}, o)
    report("composite: each row made one call per judge component", o["a"]["judge_calls"] == 2, o["a"])
    srv.shutdown()


def test_label_config_error():
    r = subprocess.run([BIN, "grade", "--config", os.path.join(ROOT, "configs", "judge_label.yaml"), "--input", "/dev/null",
                        "--output", os.path.join(TMP, "lbl.out"), 'judge.label.labels=["No", "Not sure"]',
                        "judge.cache=false"], capture_output=True, text=True, timeout=60)
    lines = r.stderr.strip().splitlines()
    report("label: labels that share a first token are refused at open with one line",
           r.returncode == 1 and len(lines) == 1 and "judge.label.labels" in lines[0] and "prefix" in lines[0], r.stderr)


def test_configs_check():
    bad = []
    for f in sorted(os.listdir(os.path.join(ROOT, "configs"))):
        if not f.endswith(".yaml"):
            continue
        r = subprocess.run([BIN, "config", os.path.join(ROOT, "configs", f)], capture_output=True, text=True, cwd=ROOT)
        # a training config whose inputs an earlier step makes (runs/.../model, data/seed2/*.jsonl) or the user
        # has (/models/...) is refused until they exist, as train would: the keys and values are what this checks
        inputs_missing = ("model.path=" in r.stderr and "not a model directory" in r.stderr) or \
                         ("data.train=" in r.stderr and "no such file" in r.stderr)
        if r.returncode != 0 and not inputs_missing:
            bad.append((f, r.stderr.strip()))
    report("every shipped config passes judgerl config", not bad, bad)


for t in (test_configs_check, test_reference, test_rubric, test_rubric_batched, test_pairwise, test_label, test_verif,
          test_seed2, test_mixed_composite, test_label_config_error):
    try:
        t()
    except Exception as ex:  # a crash in one test is one failure, not the end of the file
        report(t.__name__, False, "exception: %r" % (ex,))
sys.exit(exit_code())
