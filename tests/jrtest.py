"""jrtest.py - what the Python tests share: the environment tests/run.sh sets (BIN, ROOT, TMP), one
`ok - NAME` / `FAIL - NAME: why` line per case, the exit status, small file helpers."""
import json
import os
import sys

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


def exit_code():
    """1 when a case failed, else 0."""
    return 1 if _failures[0] else 0


def finish():
    """Exits 1 when a case failed."""
    sys.exit(exit_code())
