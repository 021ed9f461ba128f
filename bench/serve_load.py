#!/usr/bin/python3
"""serve_load.py - load test of `judgerl serve` on 127.0.0.1: the same R chat requests issued one at a
time, then by C concurrent clients; prints one JSON object per phase (requests_per_s, p50/p99 latency,
completion tokens/s) and the speed-up. Standard library only. Starts the server itself.

Usage: /usr/bin/python3 bench/serve_load.py --model DIR [--requests 64] [--clients 32] [--max-tokens 32]
       [--parallel 32] [--bin build/rel/judgerl]
"""
import argparse, http.client, json, os, re, subprocess, sys, threading, time


def start(binary, model, parallel):
    p = subprocess.Popen([binary, "serve", "--model", model, "--port", "0", "--parallel", str(parallel),
                          "--served-model-name", "m", "--max-queue", "4096"], stderr=subprocess.PIPE, text=True)
    port = None
    for line in p.stderr:
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if m:
            port = int(m.group(1))
        if "ready" in line:
            break
    threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()
    if port is None:
        p.kill()
        sys.exit("serve_load.py: the server did not start")
    return p, port


def one(port, i, max_tokens):
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": f"request {i}: tell me something"}],
                       "max_tokens": max_tokens, "ignore_eos": True, "seed": i})
    t0 = time.perf_counter()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    c.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
    r = c.getresponse()
    data = json.loads(r.read())
    c.close()
    if r.status != 200:
        raise RuntimeError(f"status {r.status}: {data}")
    return time.perf_counter() - t0, data["usage"]["completion_tokens"]


def phase(name, port, n, clients, max_tokens):
    lat, toks, lock, nxt = [], [0], threading.Lock(), [0]

    def worker():
        while True:
            with lock:
                i = nxt[0]
                nxt[0] += 1
            if i >= n:
                return
            dt, ct = one(port, i, max_tokens)
            with lock:
                lat.append(dt)
                toks[0] += ct

    t0 = time.perf_counter()
    th = [threading.Thread(target=worker) for _ in range(clients)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    wall = time.perf_counter() - t0
    lat.sort()
    pct = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]
    return {"phase": name, "clients": clients, "requests": n, "max_tokens": max_tokens, "wall_s": round(wall, 3),
            "requests_per_s": round(n / wall, 3), "completion_tokens_per_s": round(toks[0] / wall, 1),
            "p50_ms": round(1e3 * pct(0.5), 1), "p99_ms": round(1e3 * pct(0.99), 1)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--requests", type=int, default=64)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--parallel", type=int, default=32)
    ap.add_argument("--bin", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "rel", "judgerl"))
    a = ap.parse_args()
    p, port = start(a.bin, a.model, a.parallel)
    try:
        seq = phase("one_at_a_time", port, a.requests, 1, a.max_tokens)
        print(json.dumps(seq))
        con = phase("concurrent", port, a.requests, a.clients, a.max_tokens)
        print(json.dumps(con))
        print(json.dumps({"speedup_requests_per_s": round(con["requests_per_s"] / seq["requests_per_s"], 2),
                          "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE", ""),
                          "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "")}))
    finally:
        p.terminate()
        p.wait(timeout=120)


if __name__ == "__main__":
    main()
