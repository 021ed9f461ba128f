#!/usr/bin/python3
"""The accuracy table of docs/WORKFLOWS.md, end to end: train the executor (configs/wf_executor.yaml,
`judgerl workflow train-executor`), serve it with `judgerl serve`, write held-out synthetic rows
(indices from 100000: the training rows are 0..n_per_domain-1), run each fixed workflow on each
domain with `judgerl workflow run --grade` (a verifier: the exact answer, or the hidden tests in
the sandbox; never a judge) and print the table as Markdown.

  bench/wf_table.py [--model DIR | --train-dir DIR [--quick]] [--n 100] [--out DIR] [--workflows A,B]
                    [--domains math,code,qa] [key=value ...]

--model uses an executor already trained (a model directory); otherwise it trains one into
--train-dir (default runs/wf-executor; key=value overrides go to train-executor). Standard library
only; run from the repository root (JR_BIN picks the binary, default build/rel/judgerl)."""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("JR_BIN", os.path.join(ROOT, "build/rel/judgerl"))

# The fixed workflows of the table (issue 16: answer; answer x5 + ensemble; program; program +
# review/revise) and the code operators (codegen; codegen + test against the public tests).
WORKFLOWS = [
    ("answer", "a = answer(problem)\nreturn a\n"),
    ("answer x5 + ensemble", "xs = answer(problem) x5\nbest = ensemble(xs)\nreturn best\n"),
    ("program", "p = program(problem)\nreturn p\n"),
    ("program + review/revise", "p = program(problem)\nr = review(p)\nf = revise(p, r)\nreturn f\n"),
    ("codegen", "c = codegen(problem)\nreturn c\n"),
    ("codegen + test x2", "c = codegen(problem)\nt = test(c, 2)\nreturn t\n"),
]
DOMAINS = ["math", "code", "qa"]


def sh(args, **kw):
    p = subprocess.run(args, capture_output=True, text=True, **kw)
    if p.returncode:
        sys.exit("%s failed (%d): %s" % (" ".join(args[:3]), p.returncode, p.stderr.strip()[-2000:]))
    return p


def serve(model, out):
    err_path = os.path.join(out, "serve.err")
    err = open(err_path, "w")
    proc = subprocess.Popen([BIN, "serve", "--model", model, "--port", "0", "--parallel", "32", "--max-queue", "4096", "--served-model-name", "executor"],
                            stderr=err, stdout=subprocess.DEVNULL)
    for _ in range(1200):  # until the model is loaded ("ready: "): before that serve answers 503 "loading"
        with open(err_path) as f:
            text = f.read()
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", text)
        if m and "ready: " in text:
            return proc, err, int(m.group(1))
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    sys.exit("judgerl serve did not start: " + open(err_path).read()[-1000:])


def executor_config(out, port, extra):
    text = ("judge:\n  endpoints: [{url: \"http://127.0.0.1:%d/v1\", model: executor}]\n  cache: null\n"
            "  timeout_s: 1200\n  concurrency: 32\n"
            "workflow:\n  templates: %s/templates/workflow\n  max_tokens: 160\n  temperature: 0.7\n  parallel: 8\n"
            "  budget_seconds: 3600\n" % (port, ROOT))
    for k, v in extra.items():
        text += "  %s: %s\n" % (k, v)
    path = os.path.join(out, "executor.yaml")
    with open(path, "w") as f:
        f.write(text)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", help="a trained executor model directory (skips training)")
    ap.add_argument("--train-dir", default="runs/wf-executor")
    ap.add_argument("--quick", action="store_true", help="train with train-executor --quick")
    ap.add_argument("--n", type=int, default=100, help="held-out rows per domain")
    ap.add_argument("--seed", type=int, default=1, help="task seed (the executor's executor.task_seed)")
    ap.add_argument("--out", default="runs/wf-table")
    ap.add_argument("--workflows", default="", help="comma-separated names to run (default: all)")
    ap.add_argument("--domains", default="math,code,qa", help="comma-separated domains to run (default: all three)")
    ap.add_argument("--jobs", type=int, default=6, help="(workflow, domain) cells run at once against the one server")
    ap.add_argument("overrides", nargs="*", help="key=value for train-executor")
    a = ap.parse_args()
    domains = [d for d in DOMAINS if d in a.domains.split(",")]
    os.makedirs(a.out, exist_ok=True)
    model = a.model
    if not model:
        t0 = time.time()
        p = sh([BIN, "workflow", "train-executor"] + (["--quick"] if a.quick else []) + ["run.out_dir=" + a.train_dir] + a.overrides)
        print("trained in %.0f s: %s" % (time.time() - t0, p.stdout.strip()), file=sys.stderr)
        model = os.path.join(a.train_dir, "model")
    files = {}
    for d in domains:
        files[d] = os.path.join(a.out, "heldout_%s.jsonl" % d)
        sh([BIN, "workflow", "tasks", "--domain", d, "--n", str(a.n), "--seed", str(a.seed), "--first", "100000", "--output", files[d]])
    proc, err, port = serve(model, a.out)
    results = {}
    try:
        cfg = executor_config(a.out, port, {})
        chosen = [w for w in WORKFLOWS if not a.workflows or w[0] in a.workflows.split(",")]

        def cell(name, text, d):
            wf = os.path.join(a.out, re.sub(r"[^a-z0-9]+", "_", name) + "." + d + ".wf")
            with open(wf, "w") as f:
                f.write(text)
            out = wf[:-3] + ".jsonl"
            t0 = time.time()
            sh([BIN, "workflow", "run", "--workflow", wf, "--problems", files[d], "--executor", cfg, "--grade", "--output", out])
            rows = [json.loads(line) for line in open(out) if line.strip()]
            right = sum(1 for r in rows if r.get("correct") is True)
            failed = sum(1 for r in rows if r["outcome"] == "failed")
            lost = [r["reason"] for r in rows if r["outcome"] == "failed" and "executor call failed" in r["reason"]]
            if lost:  # the server, not the model: such a table would be wrong, so there is none
                sys.exit("%s on %s: %d runs lost an executor call (%s); no table" % (name, d, len(lost), lost[0][:300]))
            print("%-26s %-4s %3d/%d correct, %d failed runs (%.0f s)" % (name, d, right, len(rows), failed, time.time() - t0),
                  file=sys.stderr)
            return (name, d), (right, failed, len(rows))

        with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
            for key, val in pool.map(lambda c: cell(*c), [(n, t, d) for n, t in chosen for d in domains]):
                results[key] = val
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        err.close()
    print("| workflow | " + " | ".join(domains) + " |")
    print("| --- | " + " | ".join("---" for _ in domains) + " |")
    for name, _ in [w for w in WORKFLOWS if any((w[0], d) in results for d in domains)]:
        cells = []
        for d in domains:
            right, failed, n = results[(name, d)]
            cells.append("%.0f%% (%d failed)" % (100.0 * right / n, failed) if n else "-")
        print("| `%s` | %s |" % (name, " | ".join(cells)))
    with open(os.path.join(a.out, "table.json"), "w") as f:
        json.dump({"%s/%s" % k: {"correct": v[0], "failed": v[1], "n": v[2]} for k, v in results.items()}, f, indent=1)


if __name__ == "__main__":
    main()
