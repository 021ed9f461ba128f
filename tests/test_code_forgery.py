"""test_code_forgery.py - a wrong program cannot forge a pass: stack walks to the reporter, its nonce
written to the result channel, exits, fake markers on every descriptor, patched builtins and harness
modules, objects equal to everything, SystemExit. Each must score 0 through `judgerl grade` with
code_tests (score: pass and score: fraction) and through `judgerl eval code`; an honest right program
scores 1 everywhere."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jrtest import BIN, TMP, report, write, jsonl, finish, start_server  # noqa: E402

TEST = ("def check(candidate):\n"
        "    assert all(map(lambda ab: candidate(*ab) == sum(ab), [(1, 2), (3, 4)]))\n"
        "    assert candidate(1, 2) == 3\n"
        "    assert abs(candidate(0.5, 0.25) - 0.75) < 1e-9\n"
        "    assert candidate(2, 2) == 4, 'two and two'\n")
WRONG = "def add(a, b):\n    return 0\n"

# Finds the reporter's frame (the function holding `report` or the job with the nonce).
FRAMES = ("import sys\n"
          "def _frames():\n"
          "    f = sys._getframe()\n"
          "    while f is not None:\n"
          "        yield f\n"
          "        f = f.f_back\n")

FORGERIES = {
    # five lines up the stack to the reporter
    "frame_walk": FRAMES + "for f in _frames():\n    if 'report' in f.f_locals:\n        f.f_locals['report']('passed')\n",
    # the nonce taken from the stack, a pass written on the result channel, then out
    "nonce_channel_os_exit": FRAMES + (
        "import os, json\n"
        "for f in _frames():\n"
        "    job = f.f_locals.get('job')\n"
        "    if isinstance(job, dict) and 'nonce' in job:\n"
        "        os.write(4, json.dumps({'nonce': job['nonce'], 'result': 'passed', 'asserts': [3, 3]}).encode())\n"
        "        os._exit(0)\n"),
    # a fake pass (with the nonce) on stdout, stderr and every inherited descriptor, then exit 0
    "markers_on_descriptors": FRAMES + (
        "import os, json\n"
        "nonce = 'x'\n"
        "for f in _frames():\n"
        "    j = f.f_locals.get('job')\n"
        "    if isinstance(j, dict) and 'nonce' in j: nonce = j['nonce']\n"
        "m = json.dumps({'nonce': nonce, 'result': 'passed', 'asserts': [3, 3], 'ok': 3}) + '\\n'\n"
        "for fd in range(1, 10):\n"
        "    try: os.write(fd, m.encode())\n"
        "    except OSError: pass\n"
        "os._exit(0)\n"),
    # sys.exit and os._exit patched to do nothing, then a clean exit
    "patched_exit": ("import os, sys\nsys.exit = lambda *a: None\nos._exit = lambda *a: None\n"
                     "raise SystemExit(0)\n"),
    # KeyboardInterrupt out of the call
    "keyboard_interrupt": "def add(a, b):\n    raise KeyboardInterrupt\n",
    # StopIteration out of the call ends the test's map() inside all() early
    "stop_iteration": "def add(a, b):\n    raise StopIteration\n",
    # an answer equal to everything, and abs / AssertionError patched in builtins and the globals
    "always_equal_patched_builtins": (
        "import builtins\n"
        "class E(int):\n"
        "    def __eq__(self, o): return True\n"
        "    def __ne__(self, o): return False\n"
        "    def __sub__(self, o): return self\n"
        "    def __lt__(self, o): return True\n"
        "    def __hash__(self): return 0\n"
        "def add(a, b):\n    return E(0)\n"
        "builtins.abs = abs = lambda x: 0\n"
        "builtins.AssertionError = AssertionError = type('AE', (Exception,), {})\n"),
    # the harness's modules patched: ast.parse gives an empty check, json.dumps says passed
    "patched_harness_modules": (
        "import ast, json, builtins\n"
        "_parse = ast.parse\n"
        "ast.parse = lambda *a, **k: _parse('def check(candidate):\\n    pass\\n')\n"
        "_dumps = json.dumps\n"
        "json.dumps = lambda o, **k: _dumps(dict(o, result='passed') if isinstance(o, dict) and 'nonce' in o else o, **k)\n"
        "import __main__\n"
        "for k in dir(__main__):\n"
        "    if k.startswith('_jr'): setattr(__main__, k, lambda *a, **kw: None)\n"),
}


def program(name):
    return WRONG + FORGERIES[name]


HELPER_PROMPT = 'def encode(s):\n    return s[::-1]\n\ndef decode(s):\n    """Undo encode."""\n'
HELPER_TEST = "def check(candidate):\n    assert candidate(encode('abc')) == 'abc'\n    assert candidate(encode('xyz')) == 'xyz'\n"


def helper_redefined():
    """A test's helper from the prompt (as HumanEval/38's encode_cyclic) stays the prompt's: a program
    that redefines it as the identity and decodes by doing nothing scores 0; an honest one 1."""
    bodies = {"honest": "    return s[::-1]\n", "redefined": "    return s\nencode = lambda s: s\n"}
    rows = [{"id": k, "prompt": HELPER_PROMPT, "response": b, "test": HELPER_TEST, "entry_point": "decode"} for k, b in bodies.items()]
    want = [1.0, 0.0]
    for score in ("pass", "fraction"):
        scores, detail = grade(rows, score, "helper")
        report("helper_redefined_%s" % score, scores == want, detail)
    scores, detail = eval_code(list(bodies.values()), HELPER_PROMPT, HELPER_TEST, "decode")
    report("helper_redefined_eval_code", scores == want, detail)


def grade(rows, score, tag="forge"):
    cfg = write(os.path.join(TMP, "%s_%s.yaml" % (tag, score)),
                "reward:\n  components:\n    - {fn: code_tests, params: {score: %s}}\n" % score)
    inp = os.path.join(TMP, "%s_%s_in.jsonl" % (tag, score))
    out = os.path.join(TMP, "%s_%s_out.jsonl" % (tag, score))
    write(inp, "".join(json.dumps(r) + "\n" for r in rows))
    p = subprocess.run([BIN, "grade", "--config", cfg, "--input", inp, "--output", out],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if p.returncode:
        return None, p.stderr.strip()
    return [r["reward"] for r in jsonl(out)], [r.get("components") for r in jsonl(out)]


def eval_code(progs, prompt="", test=TEST, ep="add"):
    probs = write(os.path.join(TMP, "forge_problem.jsonl"),
                  json.dumps({"task_id": "t/0", "prompt": prompt, "test": test, "entry_point": ep}) + "\n")
    samples = write(os.path.join(TMP, "forge_samples.jsonl"),
                    "".join(json.dumps({"task_id": "t/0", "completion": c}) + "\n" for c in progs))
    res = os.path.join(TMP, "forge_results.jsonl")
    p = subprocess.run([BIN, "eval", "code", "--problems", probs, "--samples", samples, "--results", res, "--parallel", "2"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if p.returncode:
        return None, p.stderr.strip()
    rows = jsonl(res)
    return [1.0 if r["passed"] else 0.0 for r in rows], [r["result"] for r in rows]


def main():
    names = list(FORGERIES)
    progs = [program(n) for n in names] + ["def add(a, b):\n    return a + b\n"]
    rows = [{"id": n, "response": p, "test": TEST, "entry_point": "add"} for n, p in zip(names + ["honest"], progs)]
    got = {"pass": grade(rows, "pass"), "fraction": grade(rows, "fraction"), "eval_code": eval_code(progs)}
    for how, (scores, detail) in got.items():
        if scores is None:
            report("forgery_%s_runs" % how, False, detail)
            continue
        report("honest_right_%s" % how, scores[-1] == 1.0, "scored %s: %s" % (scores[-1], detail[-1]))
        for i, n in enumerate(names):
            report("%s_%s" % (n, how), scores[i] == 0.0, "scored %s: %s" % (scores[i], detail[i]))
    values_cross()
    helper_redefined()
    serve_reward_needs_key_or_allow_code()
    finish()


VALUES_TEST = ("import math\n"
               "def check(candidate):\n"
               "    assert candidate((1, 2)) == ((1, 2), 'tuple')\n"
               "    assert candidate({1, 2}) == ({1, 2}, 'set')\n"
               "    assert candidate(frozenset([3])) == (frozenset([3]), 'frozenset')\n"
               "    assert candidate({(1, 2): [3], 4: {'a': None}}) == ({(1, 2): [3], 4: {'a': None}}, 'dict')\n"
               "    assert candidate(float('-inf')) == (float('-inf'), 'float')\n"
               "    r = candidate(float('nan'))\n"
               "    assert math.isnan(r[0]) and r[1] == 'float'\n"
               "    assert math.copysign(1, candidate(-0.0)[0]) == -1\n"
               "    assert candidate(10 ** 5000)[0] == 10 ** 5000\n"
               "    assert candidate(b'\\x00\\xff') == (b'\\x00\\xff', 'bytes')\n"
               "    assert candidate(1 + 2j) == (1 + 2j, 'complex')\n"
               "    assert candidate(x=True) == (True, 'bool')\n"
               "    assert double(21) == 42 and LIMIT == [1, (2, 3)]\n"
               "    try:\n"
               "        candidate(None)\n"
               "        assert False, 'no exception'\n"
               "    except ValueError as e:\n"
               "        assert 'no None' in str(e)\n")
VALUES_PROGRAM = ("LIMIT = [1, (2, 3)]\n"
                  "def double(x):\n    return 2 * x\n"
                  "def echo(x):\n"
                  "    if x is None:\n        raise ValueError('no None')\n"
                  "    return x, type(x).__name__\n")


def values_cross():
    """Tuples, sets, frozensets, dicts with tuple keys, -inf, nan, -0.0, a 5001-digit int, bytes, complex,
    keyword arguments, the program's helpers and constants and its exceptions cross between the sides."""
    row = {"id": "values", "response": VALUES_PROGRAM, "test": VALUES_TEST, "entry_point": "echo"}
    for score in ("pass", "fraction"):
        scores, detail = grade([row], score, "values")
        report("values_cross_%s" % score, scores == [1.0], detail)


def serve_reward_needs_key_or_allow_code():
    """serve-reward with code_tests and no API key refuses to start, naming service.allow_code; it starts
    with service.allow_code=true, and with a key."""
    cfg = write(os.path.join(TMP, "forge_serve.yaml"), "reward:\n  components:\n    - {fn: code_tests}\n")
    argv = [BIN, "serve-reward", "--config", cfg, "--port", "0", "--state-dir", os.path.join(TMP, "forge_state")]
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        err = p.communicate(timeout=20)[1]
    except subprocess.TimeoutExpired:
        p.kill()
        err = "still running after 20 s: " + p.communicate()[1]
    lines = err.strip().splitlines()
    report("serve_reward_refuses_code_without_key", p.returncode not in (0, None) and len(lines) == 1 and "service.allow_code" in lines[0],
           "exit %s: %s" % (p.returncode, err))
    env = dict(os.environ, FORGE_KEY="k3y")
    for name, extra, e in (("serve_reward_allow_code", ["service.allow_code=true"], None),
                           ("serve_reward_code_with_key", ["--api-key-env", "FORGE_KEY"], env)):
        proc, port = start_server(argv + extra, os.path.join(TMP, name + ".err"), "listening on", seconds=60, env=e)
        if port:
            proc.terminate()
            proc.wait()
        report(name, port is not None, open(os.path.join(TMP, name + ".err")).read())


if __name__ == "__main__":
    main()
