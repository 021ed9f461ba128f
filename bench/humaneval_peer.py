#!/usr/bin/python3
"""humaneval_peer.py - the peer of `judgerl eval code`: HumanEval's own harness scheme, unsandboxed.

As human-eval's execution.py does it: one multiprocessing.Process per sample that exec()s
prompt + completion + "\n" + test + "\n" + f"check({entry_point})" with a timeout, n_workers
threads submitting them. No reliability_guard and no sandbox (it is the cost baseline, not a safe
runner): run it only on trusted samples such as the canonical solutions.

usage: /usr/bin/python3 bench/humaneval_peer.py PROBLEMS.jsonl[.gz] SAMPLES.jsonl N_WORKERS [TIMEOUT]
prints {"pass@1": ..., "seconds": ..., "samples": N}
"""
import gzip
import json
import multiprocessing
import sys
import time
from concurrent.futures import ThreadPoolExecutor


def read(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        return [json.loads(l) for l in f if l.strip()]


def unsafe_execute(program, timeout, result):
    try:
        exec(program, {})
        result.append("passed")
    except BaseException as e:  # noqa: BLE001 - as upstream
        result.append(f"failed: {e}")


def check(program, timeout):
    manager = multiprocessing.Manager()
    result = manager.list()
    p = multiprocessing.Process(target=unsafe_execute, args=(program, timeout, result))
    p.start()
    p.join(timeout=timeout + 1)
    if p.is_alive():
        p.kill()
    return result[0] if result else "timed out"


def main():
    problems = {p["task_id"]: p for p in read(sys.argv[1])}
    samples = read(sys.argv[2])
    workers = int(sys.argv[3])
    timeout = float(sys.argv[4]) if len(sys.argv) > 4 else 3.0
    programs = []
    for s in samples:
        p = problems[s["task_id"]]
        programs.append(p["prompt"] + s["completion"] + "\n" + p["test"] + "\n" + f"check({p['entry_point']})")
    t0 = time.time()
    with ThreadPoolExecutor(max_workers=workers) as ex:
        results = list(ex.map(lambda prog: check(prog, timeout), programs))
    dt = time.time() - t0
    passed = sum(r == "passed" for r in results)
    print(json.dumps({"pass@1": passed / len(results), "seconds": round(dt, 2), "samples": len(results)}))


if __name__ == "__main__":
    main()
