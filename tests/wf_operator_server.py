"""wf_operator_server.py - a scripted workflow executor (OpenAI-compatible, loopback only) whose operators
each solve exactly one domain, for the short learning check of seed 2's trainer (tests/test_wf_learn.sh): the
executor is the one part it does not use a trained model for, so that the check of the policy's learning
runs in seconds. Usage: python3 wf_operator_server.py DIR; prints "port N". It reads the task rows of
DIR/train.jsonl and DIR/heldout.jsonl (again whenever a prompt's problem is not among them: the demo writes
them after the server starts) and answers an operator prompt (templates/workflow) for the row whose
problem the prompt holds:
  program (maths row): the row's reference program (its solve() returns the answer)      -> right
  custom  (maths row): the row's answer (a custom step's value is its whole reply)       -> right
  codegen (code row):  the row's reference solution                                       -> right
  answer  (QA row, the answer_qa template): <answer>the row's answer</answer>            -> right
  format  (QA row): <answer>the row's answer</answer> (the facts are in the problem)     -> right
  anything else, or another domain: a wrong program / solution, or <answer>?</answer>    -> wrong
Every operator the demo's policy writes solves one domain and no more, and every domain has one or two: so
no single operator used for every row (what a policy drifts to without the reward's signal, as the
shuffled-reward control may) solves more than a third of the rows, about what the SFT policy's spread
over the operators starts at; only choosing the operator by the row's domain rises far above it. (With
`answer` right on code too, as the demo's trained executor has it, a control that drifted onto `answer`
rose from about 0.26 to 0.67 by chance.)
Every reply reports usage.total_tokens = 120."""
import json
import os
import sys
import threading

import wf_script_server

TASK_DIR = sys.argv[1] if len(sys.argv) > 1 else "."
_rows = []
_lock = threading.Lock()


def load():
    rows = []
    for name in ("train.jsonl", "heldout.jsonl"):
        path = os.path.join(TASK_DIR, name)
        if os.path.exists(path):
            with open(path) as f:
                rows += [json.loads(line) for line in f if line.strip()]
    return rows


def row_of(text):
    global _rows
    with _lock:
        for attempt in range(2):
            # the longest problem the prompt holds (a problem may be another's prefix)
            best = None
            for r in _rows:
                p = r.get("problem", "")
                if p and p in text and (best is None or len(p) > len(best["problem"])):
                    best = r
            if best is not None or attempt:
                return best
            _rows = load()
    return None


# the first line of each operator template (templates/workflow) that is not `custom`, whose prompt is its instruction
TEMPLATE_STARTS = ("Think step by step and solve the problem.", "Read the facts in the question and answer it",
                   "Write a Python solution for the following task", "Write a Python program that computes the answer",
                   "Extract the final answer from the solution below", "Several answers were given",
                   "Several candidate solutions were given", "Review the solution", "Revise the solution",
                   "Revise the Python solution", "The Python solution below failed")


def reply(text):
    row = row_of(text)
    dom = row.get("type") if row else None
    if text.startswith("Write a Python program that computes the answer"):
        if dom == "math" and row.get("program"):
            return "```python\n%s```" % row["program"]
        return "```python\ndef solve():\n    return -1\n```"
    if text.startswith("Write a Python solution for the following task"):
        if dom == "code" and row.get("answer"):
            return "```python\n%s```" % row["answer"]
        ep = row.get("entry_point", "f") if row else "f"
        return "```python\ndef %s(*args):\n    return None\n```" % ep
    if dom == "qa" and (text.startswith("Read the facts in the question and answer it") or
                        text.startswith("Extract the final answer from the solution below")):
        return "<thought>Two facts.</thought><answer>%s</answer>" % row.get("answer", "?")
    if dom == "math" and not text.startswith(TEMPLATE_STARTS):
        return row.get("answer", "?")  # a custom step's value is its whole reply
    return "<thought>Not sure.</thought><answer>?</answer>"


class Handler(wf_script_server.Handler):
    reply = staticmethod(lambda text, seed: reply(text))


if __name__ == "__main__":
    wf_script_server.serve(Handler)
