#!/usr/bin/python3
"""reward_service_load.py - load figures of `judgerl serve-reward` on 127.0.0.1 (standard library only).

Phase "judge": C callers (default 64), each posting one row per request in a loop, against a
service whose judge (an asyncio HTTP peer started here, in its own process) answers every call
after --judge-ms (100) milliseconds, with judge.concurrency = C: the ideal rate is C / 0.1 s rows/s.
Reports rows/s, its share of the ideal, and the latency the service adds: the callers' p50 minus the
judge's delay (an upper bound: it also counts the Python caller's and the peer's own time). A
baseline first runs the same callers straight at the judge peer: rate_vs_direct and
added_p50_vs_direct_ms compare the service with what the machine allows the callers and the peer.
Phase "ifeval": IFEval's verifiers, no judge: the 541 IFEval prompts with GPT-4's responses
(../shared/data/ifeval), one row per request from C callers, then --batch rows per request.
Every answer is checked (a reward for every row, never an error) before a figure is printed.

Usage: /usr/bin/python3 bench/reward_service_load.py [--bin build/rel/judgerl] [--callers 64]
       [--seconds 10] [--judge-ms 100] [--batch 64] [--data ../shared/data/ifeval]
Prints one JSON object per phase.
"""
import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

JUDGE_ANSWER = json.dumps({"id": "x", "object": "chat.completion", "model": "bench-judge", "choices": [
    {"index": 0, "message": {"role": "assistant", "content": "Feedback: fine. [RESULT] 4"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}).encode()


async def judge_conn(reader, writer, delay):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            m = re.search(rb"(?i)content-length:\s*(\d+)", head)
            if m:
                await reader.readexactly(int(m.group(1)))
            if head.startswith(b"POST"):
                await asyncio.sleep(delay)
                body, status = JUDGE_ANSWER, b"200 OK"
            else:
                body, status = b'{"error": {"message": "no route"}}', b"404 Not Found"
            writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    writer.close()


async def judge_main(delay):
    srv = await asyncio.start_server(lambda r, w: judge_conn(r, w, delay), "127.0.0.1", 0, backlog=1024)
    print("port %d" % srv.sockets[0].getsockname()[1], flush=True)
    async with srv:
        await srv.serve_forever()


def start_service(binary, cfg, overrides):
    p = subprocess.Popen([binary, "serve-reward", "--config", cfg, "--port", "0"] + overrides, stderr=subprocess.PIPE, text=True)
    port = None
    for line in p.stderr:
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if m:
            port = int(m.group(1))
            break
    threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()
    if port is None:
        p.kill()
        sys.exit("reward_service_load.py: serve-reward did not start")
    return p, port


async def caller(port, bodies, until, lat, counts, path):
    """Posts bodies in the order of a counter shared by every caller (so the mix of rows is the
    data's, not skewed to the fast ones) until `until`."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    while time.perf_counter() < until:
        body, n_rows = bodies[counts[1] % len(bodies)]
        counts[1] += 1
        t0 = time.perf_counter()
        writer.write(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (path, len(body)) + body)
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        n = int(re.search(rb"(?i)content-length:\s*(\d+)", head).group(1))
        data = json.loads(await reader.readexactly(n))
        lat.append(time.perf_counter() - t0)
        if not head.startswith(b"HTTP/1.1 200"):
            raise RuntimeError("service answered %s: %s" % (head.split(b"\r\n")[0], data))
        if "choices" in data:  # the judge peer itself (the direct baseline)
            pass
        elif len(data["results"]) != n_rows or any(r["reward"] is None for r in data["results"]):
            raise RuntimeError("a row without a reward: %s" % data["results"][:2])
        counts[0] += n_rows
    writer.close()


def cpu_s(pid):
    """User + system CPU seconds of a process so far."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_phase(port, bodies, callers, seconds, pid, path=b"/v1/rewards"):
    """rows/s, p50 and p99 request latency, rows, and the service's CPU milliseconds per row."""
    lat, counts = [], [0, 0]

    async def go():
        until = time.perf_counter() + seconds
        await asyncio.gather(*[caller(port, bodies, until, lat, counts, path) for _ in range(callers)])
    c0 = cpu_s(pid)
    t0 = time.perf_counter()
    asyncio.run(go())
    wall = time.perf_counter() - t0
    cpu = cpu_s(pid) - c0
    lat.sort()
    return counts[0] / wall, lat[len(lat) // 2], lat[int(len(lat) * 0.99)], counts[0], cpu * 1e3 / max(1, counts[0])


def loadavg():
    return os.getloadavg()[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/rel/judgerl")
    ap.add_argument("--callers", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--judge-ms", type=float, default=100)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--data", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data", "ifeval"))
    ap.add_argument("--judge-peer", type=float, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.judge_peer is not None:
        asyncio.run(judge_main(a.judge_peer))
        return
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    tmp = tempfile.mkdtemp(prefix="rsvc-bench-")
    # ---- phase 1: a 100 ms judge, C callers, one row per request
    peer = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--judge-peer", str(a.judge_ms / 1000)], stdout=subprocess.PIPE, text=True)
    jport = int(peer.stdout.readline().split()[1])
    cfg = os.path.join(tmp, "judge.yaml")
    with open(os.path.join(root, "configs", "reward_service.yaml")) as f, open(cfg, "w") as g:
        g.write(f.read())
    svc, port = start_service(a.bin, cfg, ['judge.endpoints=[{url: "http://127.0.0.1:%d/v1", model: bench-judge, kind: vllm}]' % jport,
                                           "judge.concurrency=%d" % a.callers, "judge.cache=false", "service.log_requests=false"])
    bodies = [(json.dumps({"rows": [{"prompt": "question %d" % i, "response": "answer %d" % i}]}).encode(), 1) for i in range(100000)]
    try:
        # the baseline: the same callers straight at the judge peer (what the machine allows)
        la = loadavg()
        d_rate, d_p50, _, d_n, _ = run_phase(jport, bodies, a.callers, a.seconds, peer.pid, path=b"/v1/chat/completions")
        print(json.dumps({"phase": "judge_direct_baseline", "callers": a.callers, "rows": d_n, "rows_per_s": round(d_rate, 1),
                          "p50_ms": round(d_p50 * 1e3, 2), "loadavg_1m": la}), flush=True)
        run_phase(port, bodies[-a.callers * 4:], a.callers, 1.0, svc.pid)  # warm-up: connections
        la = loadavg()
        rate, p50, p99, n, cpu_ms = run_phase(port, bodies, a.callers, a.seconds, svc.pid)
        ideal = a.callers / (a.judge_ms / 1000)
        print(json.dumps({"phase": "judge", "callers": a.callers, "judge_ms": a.judge_ms, "rows": n, "rows_per_s": round(rate, 1),
                          "ideal_rows_per_s": ideal, "share_of_ideal": round(rate / ideal, 3), "p50_ms": round(p50 * 1e3, 2),
                          "p99_ms": round(p99 * 1e3, 2), "added_p50_ms": round(p50 * 1e3 - a.judge_ms, 2),
                          "rate_vs_direct": round(rate / d_rate, 3), "added_p50_vs_direct_ms": round((p50 - d_p50) * 1e3, 2), "service_cpu_ms_per_row": round(cpu_ms, 3),
                          "loadavg_1m": la}), flush=True)
    finally:
        svc.terminate()
        svc.wait()
        peer.kill()
        peer.wait()
    # ---- phase 2: IFEval verifiers, no judge
    data = os.path.abspath(a.data)
    if not os.path.isdir(data):
        print(json.dumps({"phase": "ifeval", "skipped": "no %s" % data}))
        return
    prompts = {}
    with open(os.path.join(data, "input_data.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            prompts[r["key"]] = r
    rows = []
    with open(os.path.join(data, "gpt4_conformance.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            p = prompts[r["key"]]
            rows.append({"prompt": p["prompt"], "response": r["response"], "instruction_id_list": p["instruction_id_list"], "kwargs": p["kwargs"]})
    cfg = os.path.join(tmp, "ifeval.yaml")
    with open(os.path.join(root, "configs", "reward_service_ifeval.yaml")) as f, open(cfg, "w") as g:
        g.write(f.read())
    svc, port = start_service(a.bin, cfg, ["service.log_requests=false"])
    try:
        singles = [(json.dumps({"rows": [r]}).encode(), 1) for r in rows]
        batches = [(json.dumps({"rows": rows[k:k + a.batch]}).encode(), len(rows[k:k + a.batch])) for k in range(0, len(rows), a.batch)]
        run_phase(port, singles[:a.callers * 2], a.callers, 1.0, svc.pid)
        for name, bodies, callers in (("ifeval_one_row_per_request", singles, a.callers), ("ifeval_%d_rows_per_request" % a.batch, batches, 8)):
            la = loadavg()
            rate, p50, p99, n, cpu_ms = run_phase(port, bodies, callers, a.seconds, svc.pid)
            print(json.dumps({"phase": name, "callers": callers, "rows": n, "rows_per_s": round(rate, 1), "p50_ms": round(p50 * 1e3, 2),
                              "p99_ms": round(p99 * 1e3, 2), "service_cpu_ms_per_row": round(cpu_ms, 3),
                              "rows_per_service_cpu_s": round(1e3 / cpu_ms, 0) if cpu_ms else None, "loadavg_1m": la}), flush=True)
    finally:
        svc.terminate()
        svc.wait()


if __name__ == "__main__":
    main()
