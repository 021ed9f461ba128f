"""judge_server.py - a fault-injecting OpenAI-compatible judge server for the tests (loopback only).

Behaviour is scripted per request by directives inside the prompt text, so it does not depend on
the order requests arrive in:
  score=N         answer "Feedback: ... [RESULT] N" (default 3)
  fault=KIND*K    the first K requests carrying this prompt fail with KIND (K may be "all"), later
                  ones are answered normally. KIND is one of:
                    429 408 409 500 502 503 400 401 403 404 (HTTP errors; 429 sends Retry-After: ra)
                    stall     sleep `stall` seconds before answering (past the client's timeout)
                    reset     close the connection with a TCP reset before answering
                    truncated send half of the JSON body and close
                    garbage   200 with a non-JSON body
                    noverdict 200 with an answer lacking [RESULT]
                    length    200, finish_reason "length", reasoning but no verdict
                    range     200 with "[RESULT] 7" (out of range for 1..5)
                    ssecut    (stream) stop the stream before [DONE] and without finish_reason
  ra=S            Retry-After seconds sent with 429 (default 0)
  rl=D            answer with x-ratelimit-remaining-requests: 0 and x-ratelimit-reset-requests: D
  @drip           send the answer a few bytes at a time with pauses
  @think          wrap reasoning in <think>...</think> before the verdict
  @echokey        a successful answer that quotes the Authorization header's key (the client must
                  redact it from everything it stores or prints)
Streaming requests ("stream": true) are answered with server-sent events cut at odd places
(mid-line, mid-JSON), with comments and keep-alives between events, ended by [DONE].
Every request is logged (JSON lines, `log` path) with its time, prompt key, per-key attempt
number, path, fault used and the request body (minus the Authorization header).
Run as a script: python3 judge_server.py [--latency-ms N] [--require-key-env NAME] [--log FILE]
  prints "port N" on stdout and serves until killed.
"""
import hashlib
import json
import os
import re
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class State:
    def __init__(self, latency=0.0, key=None, log=None, stall=5.0):
        self.latency = latency
        self.key = key
        self.log_path = log
        self.stall = stall
        self.lock = threading.Lock()
        self.counts = {}
        self.log = []
        self.inflight = 0
        self.max_inflight = 0

    def next_attempt(self, key):
        with self.lock:
            n = self.counts.get(key, 0) + 1
            self.counts[key] = n
            return n

    def enter(self, d):
        with self.lock:
            self.inflight += d
            self.max_inflight = max(self.max_inflight, self.inflight)
            return self.inflight

    def record(self, entry):
        with self.lock:
            self.log.append(entry)
            if self.log_path:
                with open(self.log_path, "a") as f:
                    f.write(json.dumps(entry) + "\n")


def prompt_text(body):
    if "messages" in body:
        return "\n".join(str(m.get("content", "")) for m in body["messages"])
    return str(body.get("prompt", ""))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send_json(self, code, obj, headers=None):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        st = self.server.state
        now = st.enter(1)
        try:
            self.handle_post(st, now)
        finally:
            st.enter(-1)

    def handle_post(self, st, inflight):
        n = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(n)
        try:
            body = json.loads(raw)
        except ValueError:
            self.send_json(400, {"error": {"message": "request body is not JSON"}})
            return
        text = prompt_text(body)
        key = hashlib.sha256(text.encode()).hexdigest()[:16]
        attempt = st.next_attempt(key)
        m = re.search(r"fault=(\w+)\*(\w+)", text)
        fault = None
        if m and (m.group(2) == "all" or attempt <= int(m.group(2))):
            fault = m.group(1)
        auth = self.headers.get("Authorization", "")
        entry = {"t": time.time(), "key": key, "attempt": attempt, "path": self.path, "fault": fault,
                 "body": body, "inflight": inflight, "auth_ok": st.key is None or auth == "Bearer " + st.key}
        st.record(entry)
        if st.latency:
            time.sleep(st.latency)
        if st.key is not None and auth != "Bearer " + st.key:
            # like some servers: echo what was received (the client must redact it)
            self.send_json(401, {"error": {"message": "Incorrect API key provided: " + auth[7:]}})
            return
        if self.path not in ("/v1/chat/completions", "/v1/completions"):
            self.send_json(404, {"error": {"message": "no route " + self.path}})
            return
        if fault and fault.isdigit():
            code = int(fault)
            ra = re.search(r"ra=([\d.]+)", text)
            headers = {"Retry-After": ra.group(1)} if (code == 429 and ra) else {}
            msg = {404: "The model `nope` does not exist", 400: "bad request: prompt too long"}.get(code, "injected %d" % code)
            self.send_json(code, {"error": {"message": msg}}, headers)
            return
        if fault == "stall":
            time.sleep(st.stall)
            self.close_connection = True
            return
        if fault == "reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            return
        if fault == "garbage":
            data = b"<html>502 gateway oops</html> not json"
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        sm = re.search(r"score=(\d+)", text)
        score = int(sm.group(1)) if sm else 3
        finish = "stop"
        reasoning = None
        if fault == "noverdict":
            answer = "Feedback: the response is fine but I forgot the verdict."
        elif fault == "length":
            answer = "<think>Let me think about this at great length"
            finish = "length"
        elif fault == "range":
            answer = "Feedback: great. [RESULT] 7"
        else:
            answer = "Feedback: scored by the test server. [RESULT] %d" % score
            if "@echokey" in text:
                answer = "Feedback: you sent the key %s (twice: %s). [RESULT] %d" % (auth[7:], auth[7:], score)
            if "@think" in text:
                answer = "<think>The verdict might be [RESULT] 1 but let me reconsider.</think>" + answer
                reasoning = "internal reasoning [RESULT] 1"
        chat = self.path.endswith("/chat/completions")
        if body.get("stream"):
            self.stream(answer, finish, chat, fault == "ssecut", "@drip" in text)
            return
        if chat:
            msg = {"role": "assistant", "content": answer}
            if reasoning:
                msg["reasoning_content"] = reasoning
            choice = {"index": 0, "message": msg, "finish_reason": finish}
            if body.get("logprobs"):
                choice["logprobs"] = {"content": [{"token": "5", "logprob": -0.1, "top_logprobs": [{"token": "5", "logprob": -0.1}, {"token": "4", "logprob": -2.4}]}]}
        else:
            choice = {"index": 0, "text": answer, "finish_reason": finish}
        obj = {"id": "x", "object": "chat.completion", "choices": [choice], "usage": {"total_tokens": 100}}
        data = json.dumps(obj).encode()
        if fault == "truncated":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data) // 2))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.close_connection = True
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        rl = re.search(r"rl=(\w+)", text)
        if rl:  # OpenAI-style budget headers: requests spent until the reset, tokens left
            self.send_header("X-RateLimit-Remaining-Requests", "0")
            self.send_header("X-RateLimit-Reset-Requests", rl.group(1))
            self.send_header("x-ratelimit-remaining-tokens", "5000")
            self.send_header("x-ratelimit-reset-tokens", "6m0s")
        self.end_headers()
        if "@drip" in text:
            for i in range(0, len(data), 7):
                self.wfile.write(data[i:i + 7])
                self.wfile.flush()
                time.sleep(0.002)
        else:
            self.wfile.write(data)

    def stream(self, answer, finish, chat, cut, drip):
        events = []
        pieces = [answer[i:i + 5] for i in range(0, len(answer), 5)]
        for i, p in enumerate(pieces):
            if chat:
                ch = {"index": 0, "delta": {"content": p}, "finish_reason": None}
            else:
                ch = {"index": 0, "text": p, "finish_reason": None}
            events.append("data: " + json.dumps({"choices": [ch]}) + "\n\n")
            if i % 3 == 1:
                events.append(": keep-alive\n\n")
        if not cut:
            last = {"index": 0, "delta": {}, "finish_reason": finish} if chat else {"index": 0, "text": "", "finish_reason": finish}
            events.append("data: " + json.dumps({"choices": [last]}) + "\r\n\r\n")
            events.append("data: [DONE]\n\n")
        stream = "".join(events).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        # cut the byte stream at odd places: mid-line, mid-JSON, between \r and \n
        i, step = 0, 3
        while i < len(stream):
            part = stream[i:i + step]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.flush()
            i += step
            step = 1 + (step * 7) % 23
            if drip:
                time.sleep(0.001)
        if cut:
            self.close_connection = True
            return
        self.wfile.write(b"0\r\n\r\n")


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        pass  # clients that time out or hang up are part of the tests


def start(latency=0.0, key=None, log=None, stall=5.0):
    """Starts a server on 127.0.0.1 in a thread; returns (server, port)."""
    srv = Server(("127.0.0.1", 0), Handler)
    srv.state = State(latency, key, log, stall)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, srv.server_address[1]


if __name__ == "__main__":
    args = sys.argv[1:]
    lat, key, log = 0.0, None, None
    while args:
        a = args.pop(0)
        if a == "--latency-ms":
            lat = float(args.pop(0)) / 1000
        elif a == "--require-key-env":
            key = os.environ[args.pop(0)]
        elif a == "--log":
            log = args.pop(0)
    srv, port = start(lat, key, log)
    print("port %d" % port, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
