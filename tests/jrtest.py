"""jrtest.py - what the Python tests share: the environment tests/run.sh sets (BIN, ROOT, TMP), one
`ok - NAME` / `FAIL - NAME: why` line per case, the exit status, small file helpers, a judgerl server
started on a free port."""
import json
import os
import re
import subprocess
import sys
import time

BIN = os.environ.get("JR_BIN", "build/rel/judgerl")
ROOT = os.path.abspath(os.environ.get("JR_ROOT", "."))
TMP = os.environ.get("JR_TMP", "/tmp")
_failures = [0]


def report(name, ok, why=""):
    if ok:
        print("ok - " + name)
    else:
        _failures[0] += 1
        print("FAIL - %s: %s" % (name, str(why)[:4000]))
    sys.stdout.flush()


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def jsonl(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def start_server(argv, err_path, ready, seconds=300, env=None):
    """Starts a judgerl server (argv holds `--port 0`) with its stderr in err_path and waits for a state,
    not a time: until a stderr line holds `ready` (`judgerl serve`: "ready: ", printed once the model is
    loaded: before that it answers 503 "loading"; `serve-reward`: "listening on"), the process exits,
    or `seconds` pass (a bound against a hang only). Returns (proc, port); port is None when it never got
    ready, and the process is then killed and reaped (an exit status of its own is kept)."""
    with open(err_path, "w") as err:
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, env=env)
    deadline = time.time() + seconds
    while True:
        with open(err_path) as f:
            text = f.read()
        m = re.search(r"listening on http://[^\s:]+:(\d+)", text)
        if m and ready in text:
            return p, int(m.group(1))
        if p.poll() is not None or time.time() > deadline:
            p.kill()
            p.wait()
            return p, None
        time.sleep(0.05)


def exit_code():
    """1 when a case failed, else 0."""
    return 1 if _failures[0] else 0


def finish():
    """Exits 1 when a case failed."""
    sys.exit(exit_code())
