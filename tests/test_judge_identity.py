"""test_judge_identity.py - issue 25: a judge cache cannot serve another judge's verdicts.

Two judges differ only in the output rows of the digits '1'..'5' (tied embeddings, rotated): with a
template and rows without digits and guided_choice "[RESULT] 1".."[RESULT] 5", judge B's verdict is
a rotation of judge A's on every row, so every stale verdict would show. Both are served in turn by
`judgerl serve` under the same name on the same port; grading with the default cache (beside the
output) and with an explicit shared cache must take no verdict of A for B. Also: /v1/models reports
a fingerprint, a model name the server does not list is warned about, the cache still hits for the
same judge.
"""
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import time

BIN = os.environ.get("JR_BIN", "build/rel/judgerl")
ROOT = os.environ.get("JR_ROOT", ".")
TMP = os.environ.get("JR_TMP") or "/tmp"
TINY = os.path.join(ROOT, "tests", "fixtures", "serve", "tiny")


def report(name, ok, detail=""):
    print(("ok - %s" % name) if ok else ("FAIL - %s: %s" % (name, str(detail)[:800])))
    sys.stdout.flush()


def rotated_copy(src, dst):
    """dst = src with embedding rows of '1'..'5' rotated (row d gets row d+1, '5' gets '1')."""
    shutil.copytree(src, dst)
    p = os.path.join(dst, "model.safetensors")
    with open(p, "rb") as f:
        raw = bytearray(f.read())
    n = struct.unpack("<Q", raw[:8])[0]
    h = json.loads(raw[8:8 + n])
    t = h["model.embed_tokens.weight"]
    assert t["dtype"] == "F32"
    dim = t["shape"][1]
    base = 8 + n + t["data_offsets"][0]
    row = lambda i: bytes(raw[base + 4 * dim * i: base + 4 * dim * (i + 1)])
    digits = [ord(c) for c in "12345"]
    old = [row(i) for i in digits]
    for k, i in enumerate(digits):
        raw[base + 4 * dim * i: base + 4 * dim * (i + 1)] = old[(k + 1) % 5]
    with open(p, "wb") as f:
        f.write(raw)


def serve(model, port, tag):
    err = open(os.path.join(TMP, "serve_%s.err" % tag), "w+")
    p = subprocess.Popen([BIN, "serve", "--model", model, "--port", str(port), "--served-model-name", "judge", "--parallel", "2"],
                         stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.time() + 60
    text = ""
    while time.time() < deadline:
        err.seek(0)
        text = err.read()
        if "ready" in text or p.poll() is not None:
            break
        time.sleep(0.05)
    got = None
    for line in text.splitlines():
        if "listening on http://127.0.0.1:" in line:
            got = int(line.split("127.0.0.1:")[1].split()[0].rstrip(")"))
    if "ready" not in text or not got:
        p.kill()
        p.wait()
        return None, None, text
    return p, got, text


def stop(p):
    p.terminate()
    p.wait(timeout=60)


def models(port):
    import urllib.request
    with urllib.request.urlopen("http://127.0.0.1:%d/v1/models" % port, timeout=10) as r:
        return json.loads(r.read())["data"][0]


def config(name, port, cache="true", model="judge"):
    tmpl = os.path.join(TMP, "plain.txt")
    with open(tmpl, "w") as f:
        f.write("Grade the answer.\nQuestion: {{prompt}}\nAnswer: {{response}}\n")
    choices = json.dumps(["[RESULT] %d" % i for i in range(1, 6)])
    p = os.path.join(TMP, name + ".yaml")
    with open(p, "w") as f:
        f.write("judge:\n  endpoints: [{url: 'http://127.0.0.1:%d/v1', model: %s}]\n  template: %s\n  cache: %s\n"
                "  max_tokens: 16\n  concurrency: 2\n  timeout_s: 30\n  pointwise: {system: ''}\n"
                "  extra_body: {guided_choice: %s}\n" % (port, model, tmpl, cache, choices))
    return p


WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima"]


def grade(cfg, out, *extra, pad=0):
    inp = os.path.join(TMP, "rows.jsonl")
    with open(inp, "w") as f:
        for i, w in enumerate(WORDS):
            f.write(json.dumps({"id": "r%s" % w, "prompt": "Is %s a word?" % w, "response": "Yes, %s is a word." % w + " ok" * pad}) + "\n")
    r = subprocess.run([BIN, "grade", "--config", cfg, "--input", inp, "--output", out, "--quiet"] + list(extra),
                       capture_output=True, text=True, timeout=300)
    rows = {}
    if os.path.exists(out):
        with open(out) as f:
            for line in f:
                o = json.loads(line)
                rows[o["id"]] = o
    return r.returncode, r.stderr, rows


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def main():
    model_b = os.path.join(TMP, "judge_b")
    rotated_copy(TINY, model_b)
    # Judge A on a port of its own; judge B later on the same port (retried a few times in case
    # another test took it meanwhile).
    for attempt in range(5):
        port = free_port()
        pa, port_a, log = serve(TINY, port, "a")
        if pa:
            break
    if not pa:
        report("serve_judge_a", False, log)
        return
    fa = models(port).get("judgerl_fingerprint")
    d_default = os.path.join(TMP, "grades")
    os.makedirs(d_default)
    shared = os.path.join(TMP, "shared_cache.sqlite")
    rc1, se1, a_def = grade(config("a_def", port), os.path.join(d_default, "a.jsonl"))
    rc2, se2, a_sh = grade(config("a_sh", port, cache=shared), os.path.join(TMP, "a_shared.jsonl"))
    # a name the server does not list: warned about, then the server's 404 stops the run
    rc3, se3, _ = grade(config("wrong", port, model="other"), os.path.join(TMP, "wrong.jsonl"))
    # rows longer than the judge's context (512 positions): a configuration error at once naming both numbers
    t0 = time.time()
    rc8, se8, long_rows = grade(config("long", port, cache="false"), os.path.join(TMP, "long.jsonl"), pad=200)
    stop(pa)
    report("prompt_longer_than_context_fails_fast_naming_both",
           rc8 == 1 and len(se8.strip().splitlines()) == 1 and "maximum context length is 512" in se8 and "in the prompt" in se8
           and "serves 512 positions" in se8 and not long_rows and time.time() - t0 < 20, "%.1fs %s" % (time.time() - t0, se8))
    report("judge_a_graded", rc1 == 0 and rc2 == 0 and len(a_def) == 12 and all(o["status"] == "ok" for o in a_def.values()),
           se1 + se2 + str(list(a_def.values())[:2]))
    report("wrong_model_name_warned", rc3 == 1 and "warning" in se3 and "model=other" in se3 and '["judge"]' in se3 and "HTTP 404" in se3, se3)
    report("default_cache_beside_the_output", os.path.exists(os.path.join(d_default, "judge_cache.sqlite")), os.listdir(d_default))
    pb = None
    for attempt in range(20):
        pb, _, log = serve(model_b, port, "b")
        if pb:
            break
        time.sleep(0.25)
    if not pb:
        report("serve_judge_b_same_port", False, log)
        return
    fb = models(port).get("judgerl_fingerprint")
    report("fingerprint_reported_and_differs", fa and fb and len(fa) == 64 and fa != fb, "%s %s" % (fa, fb))
    rc4, se4, b_def = grade(config("b_def", port), os.path.join(d_default, "b.jsonl"))
    rc5, se5, b_sh = grade(config("b_sh", port, cache=shared), os.path.join(TMP, "b_shared.jsonl"))
    rc6, se6, b_fresh = grade(config("b_fresh", port, cache="false"), os.path.join(TMP, "b_fresh.jsonl"))
    rc7, se7, b_again = grade(config("b_sh", port, cache=shared), os.path.join(TMP, "b_again.jsonl"))
    stop(pb)
    ok_b = rc4 == 0 and rc5 == 0 and rc6 == 0 and len(b_fresh) == 12
    report("judge_b_graded", ok_b, se4 + se5 + se6)
    # the precondition that makes the next checks able to fail: B disagrees with A on every row
    report("judges_disagree_on_every_row", all(a_def[k]["reward"] != b_fresh[k]["reward"] for k in b_fresh),
           [(a_def[k]["reward"], b_fresh[k]["reward"]) for k in b_fresh])
    for name, got in (("default_cache", b_def), ("shared_cache", b_sh)):
        stale = [k for k in got if got[k]["cached"] or got[k]["reward"] != b_fresh[k]["reward"]]
        report("swapped_judge_same_name_no_stale_verdict_" + name, ok_b and len(got) == 12 and not stale,
               "%d stale of %d: %s" % (len(stale), len(got), [(got[k]["reward"], b_fresh[k]["reward"]) for k in stale[:3]]))
    report("same_judge_hits_the_shared_cache", rc7 == 0 and len(b_again) == 12 and all(o["cached"] for o in b_again.values())
           and all(b_again[k]["reward"] == b_fresh[k]["reward"] for k in b_again), se7 + str(list(b_again.values())[:2]))


if __name__ == "__main__":
    main()
