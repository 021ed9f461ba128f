"""gguf_llamacpp.py - llama.cpp runs what `judgerl export` wrote: each model directory gets random
weights (normal, std 0.5, a large vocabulary's embedding 0.05; seeded: no ties between logits), is exported as f32 GGUF, and `judgerl
serve` on the directory and llama-server on the GGUF (f32 KV cache) continue the same token ids
greedily; the tokens must be the same and each token's log-prob within 1e-4.
usage: gguf_llamacpp.py JUDGERL LLAMA_SERVER WORKDIR DIR... (called by test_export_gguf.sh)"""
import json
import os
import random
import socket
import struct
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hfio_writer  # noqa: E402

BIN, LLAMA, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
DIRS = sys.argv[4:]
PROMPT = [84, 104, 101, 32, 113, 117, 105, 99, 107]  # ids below 256: bytes of "The quick" in a byte-level vocab
N = 8


def post(port, path, body):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_http(port, path, proc, secs=60):
    t0 = time.time()
    while time.time() - t0 < secs and proc.poll() is None:
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=2) as r:
                if r.status == 200:
                    return True
        except OSError:
            time.sleep(0.1)
    return False


def randomize(src, dst, seed):
    """A copy of model dir src (config, tokenizer files) with seeded normal(0, 0.5) F32 weights."""
    os.makedirs(dst, exist_ok=True)
    for f in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        if os.path.exists(os.path.join(src, f)):
            with open(os.path.join(src, f), "rb") as a, open(os.path.join(dst, f), "wb") as b:
                b.write(a.read())
    cfg = json.load(open(os.path.join(src, "config.json")))
    rng = random.Random(seed)
    ts = []
    for n, shape in hfio_writer.model_tensors(cfg, cfg["model_type"]):
        # std 0.5; the embedding of a large vocabulary (tied as the output) 0.05, so logits stay
        # in the range of trained models (float32 rounding grows with their size)
        std = 0.05 if "embed" in n and shape[0] > 1000 else 0.5
        vals = [1.0 + 0.1 * rng.gauss(0, 1) if n.endswith("norm.weight") else rng.gauss(0, std) for _ in range(hfio_writer.numel(shape))]
        ts.append((n, "F32", shape, struct.pack("<%df" % len(vals), *vals)))
    with open(os.path.join(dst, "model.safetensors"), "wb") as f:
        f.write(hfio_writer.safetensors_bytes(ts, {"format": "pt"}))


for k, src in enumerate(DIRS):
    name = os.path.basename(src)
    d = os.path.join(WORK, "rand_" + name)
    randomize(src, d, 7 + k)
    g = d + ".f32.gguf"
    r = subprocess.run([BIN, "export", "--format", "gguf", "--model", d, "-o", g, "--dtype", "f32"], capture_output=True, text=True)
    if r.returncode:
        print("FAIL - gguf_llamacpp_%s: export: %s" % (name, r.stderr.strip()))
        continue
    port_j, port_l = free_port(), free_port()
    pj = subprocess.Popen([BIN, "serve", "--model", d, "--port", str(port_j), "--served-model-name", "m"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pl = subprocess.Popen([LLAMA, "-m", g, "--host", "127.0.0.1", "--port", str(port_l), "-c", "64", "-np", "1", "-t", "1",
                           "-ctk", "f32", "-ctv", "f32"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if not (wait_http(port_j, "/health", pj) and wait_http(port_l, "/health", pl)):
            print("FAIL - gguf_llamacpp_%s: a server did not start" % name)
            continue
        a = post(port_j, "/v1/completions", {"model": "m", "prompt": PROMPT, "max_tokens": N, "temperature": 0,
                                              "logprobs": 1, "ignore_eos": True})
        b = post(port_l, "/completion", {"prompt": PROMPT, "n_predict": N, "temperature": 0, "n_probs": 1,
                                         "ignore_eos": True, "cache_prompt": False, "return_tokens": True})
        # the texts without U+FFFD: the servers replace incomplete UTF-8 differently (llama-server
        # holds bytes back until a character is whole); the log-probs below pin the tokens down
        text_j, text_l = a["choices"][0]["text"].replace("\ufffd", ""), b["content"].replace("\ufffd", "")
        lpj, ids = a["choices"][0]["logprobs"]["token_logprobs"], b["tokens"]
        # llama-server reports a probability entry (with the token id) only where the text is whole
        # UTF-8; match each entry to its position by id, in order
        diffs, p, cp = [], 0, b["completion_probabilities"]
        for k, tid in enumerate(ids):
            if p < len(cp) and cp[p]["id"] == tid and k < len(lpj):
                diffs.append(abs(cp[p]["logprob"] - lpj[k]))
                p += 1
        worst = max(diffs) if diffs and p == len(cp) else float("inf")
        ok = text_j == text_l and len(lpj) == len(ids) == N and worst <= 1e-4
        print(("ok" if ok else "FAIL") + " - gguf_llamacpp_%s: same %d greedy tokens (%r), log-probs within 1e-4 at the %d "
              "positions llama.cpp reports (largest difference %.2e)%s" % (name, N, text_l, len(diffs), worst,
              "" if ok else ": judgerl %r %r / llama.cpp %r %r" % (text_j, lpj, ids, cp)))
        # the tokenizer: llama.cpp's pre-tokenizer and merges split text as judgerl's tokenizer.json does
        txt = "The quick brown fox, it's 42!\n<|im_start|>user\nDon't  stop\t\u00e9t\u00e9 123456<|im_end|>"
        tl = post(port_l, "/tokenize", {"content": txt})["tokens"]
        r = subprocess.run([BIN, "tokenize", "--jsonl", "--tokenizer", os.path.join(d, "tokenizer.json")],
                           input=json.dumps({"text": txt}) + "\n", capture_output=True, text=True)
        out = r.stdout.strip()
        tjd = json.loads(out) if out.startswith("[") else [int(x) for x in out.split()]
        if isinstance(tjd, dict):
            tjd = tjd.get("ids", [])
        print(("ok" if tl == tjd else "FAIL") + " - gguf_llamacpp_%s_tokenizer: llama.cpp tokenizes as judgerl does (%d ids)%s"
              % (name, len(tl), "" if tl == tjd else ": %r vs %r" % (tl, tjd)))
    finally:
        for p in (pj, pl):
            p.terminate()
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
