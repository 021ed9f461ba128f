"""peer_servers.py - loopback judge servers that speak the dialects of llama.cpp's llama-server and of
current vLLM, as they were measured (issue 24), for the tests (standard library only).

llamacpp: GET /props {total_slots, build_info}, GET /v1/models owned_by "llamacpp", no /version.
  Takes `grammar` (GBNF; the subset judgerl writes is read back into a Python regex) and ignores
  vLLM's guided_* and structured_outputs. Its log-probs are those of the *unconstrained*
  distribution (llama-server samples with grammar_first = false, llama.cpp PR #12643): under a
  grammar the chosen token keeps its unconstrained log-prob and the alternatives are the
  unconstrained top ones. HTTP: `threads` worker threads (llama-server: -np + 2) each serving one
  keep-alive connection at a time (up to 100 requests, 5 s idle), `slots` generations at a time.
vllm: GET /version {"version": "0.12.0"}, GET /v1/models owned_by "vllm". Honours only
  structured_outputs {choice | regex} (guided_* are ignored since v0.12); its log-probs are those of
  the constrained distribution (renormalised over the allowed first tokens).
openai: GET /v1/models owned_by "system". Honours response_format json_schema whose schema is
  {"answer": enum}: answers {"answer":"<choice>"} in tokens {" answer ":" <choice> "}, the
  choice's log-probs constrained.

The scripted model: for a prompt, the unconstrained first-token distribution and answer are
  default   "Good question. Yes, ..." with Good -0.38, The -1.16, Yes -2.0, No -2.6, Maybe -3.9, ...
  LIE       the same top, with Yes at -13.4, No -15.0, Maybe -16.0 (outside the top 10)
  WANT=No   like default with No and Yes swapped
A constrained answer is the most likely candidate (labels by first-token log-prob, then a few
fixed strings) that the constraint accepts. Every POST is logged with its body, connection id and
the time it waited for a worker thread.
Run: python3 peer_servers.py llamacpp|vllm [--slots N] [--threads N] [--gen-ms MS]; prints "port N".
"""
import json
import math
import queue
import re
import socket
import socketserver
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler

FILLER = [("I", -2.9), ("It", -3.1), ("Well", -3.3), ("**", -3.6), ("As", -4.1), ("Based", -4.4), ("Hmm", -4.6)]


def model(text):
    """(first-token distribution [(token, logprob)], unconstrained answer)."""
    if "LIE" in text:
        dist = [("G", -0.38), ("The", -1.16)] + FILLER + [("Yes", -13.4), ("No", -15.0), ("Maybe", -16.0)]
        return dist, "Great question! It depends."
    yes, no = ("No", "Yes") if "WANT=No" in text else ("Yes", "No")
    dist = [("Good", -0.38), ("The", -1.16), (yes, -2.0), (no, -2.6), ("Maybe", -3.9)] + FILLER
    return dist, "Good question. %s, as far as I can tell." % yes


def gbnf_to_regex(g):
    """The GBNF subset judgerl writes (one root rule: literals, classes, ., groups, |, quantifiers)."""
    m = re.match(r"\s*root\s*::=\s*(.*)\Z", g, re.S)
    if not m:
        raise ValueError("no root rule")
    s, i, out = m.group(1), 0, []
    while i < len(s):
        c = s[i]
        if c == '"':
            j, lit = i + 1, ""
            while s[j] != '"':
                if s[j] == "\\":
                    e = s[j + 1]
                    if e == "x":
                        lit += chr(int(s[j + 2:j + 4], 16))
                        j += 4
                        continue
                    lit += {"n": "\n", "t": "\t", "r": "\r"}.get(e, e)
                    j += 2
                    continue
                lit += s[j]
                j += 1
            out.append(re.escape(lit))
            i = j + 1
        elif c == "[":
            j = i + 1
            while s[j] != "]":
                j += 2 if s[j] == "\\" else 1
            out.append(s[i:j + 1])
            i = j + 1
        elif c == "{":
            j = s.index("}", i)
            out.append(s[i:j + 1])
            i = j + 1
        elif c in "()|*+?.":
            out.append(c)
            i += 1
        elif c.isspace():
            i += 1
        else:
            raise ValueError("unsupported GBNF at %r" % s[i:])
    return "".join(out)


class State:
    def __init__(self, dialect, slots, gen_s):
        self.dialect = dialect
        self.slot = threading.Semaphore(slots)
        self.slots = slots
        self.gen_s = gen_s
        self.lock = threading.Lock()
        self.log = []
        self.conns = 0

    def record(self, e):
        with self.lock:
            self.log.append(e)


def constraint_regex(st, body):
    """The constraint this server honours, as a Python regex, or None."""
    if st.dialect == "openai":
        rf = body.get("response_format") or {}
        enum = (((rf.get("json_schema") or {}).get("schema") or {}).get("properties") or {}).get("answer", {}).get("enum")
        return "|".join(re.escape(c) for c in enum) if rf.get("type") == "json_schema" and enum else None
    if st.dialect == "llamacpp":
        g = body.get("grammar")
        return gbnf_to_regex(g) if g else None
    so = body.get("structured_outputs") or {}
    if so.get("choice"):
        return "|".join(re.escape(c) for c in so["choice"])
    if so.get("regex"):
        return so["regex"]
    return None


def answer(st, body, text):
    dist, free = model(text)
    rx = constraint_regex(st, body)
    if rx is None:
        out = free
    else:
        cands = [free] + [t for t, _ in sorted(dist, key=lambda x: -x[1])] + ["7/10", "Maybe"]
        ok = [c for c in cands if re.fullmatch(rx, c, re.S)]
        if not ok:
            return None, None
        out = ok[0]
    first = re.match(r"\w+|\W", out).group(0)
    lps = dict(dist)
    if rx is not None and st.dialect in ("vllm", "openai"):
        # constrained: renormalised over the first tokens the constraint allows
        allowed = [(t, lp) for t, lp in dist if any(re.fullmatch(rx, c, re.S) and c.startswith(t) for c in [t] + ["Yes", "No", "Maybe"])]
        z = math.log(sum(math.exp(lp) for _, lp in allowed))
        top = sorted(((t, lp - z) for t, lp in allowed), key=lambda x: -x[1])
        chosen = dict(top).get(first, -30.0)
    else:
        top = sorted(dist, key=lambda x: -x[1])
        chosen = lps.get(first, -20.0)
    k = body.get("top_logprobs") or 0
    entries = [{"token": first, "logprob": chosen, "top_logprobs": [{"token": t, "logprob": lp} for t, lp in top[:k]]}]
    if len(out) > len(first):
        entries.append({"token": out[len(first):], "logprob": -0.01, "top_logprobs": []})
    if st.dialect == "openai" and rx is not None:  # structured outputs: the JSON the schema asks for
        entries = [{"token": t, "logprob": 0.0, "top_logprobs": []} for t in ('{"', "answer", '":"')] + entries + \
                  [{"token": '"}', "logprob": 0.0, "top_logprobs": []}]
        out = '{"answer":"%s"}' % out
    return out, entries


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 5  # llama-server's keep-alive idle timeout

    def log_message(self, *a):
        pass

    def send_json(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        st = self.server.state
        if self.path == "/health":
            return self.send_json(200, {"status": "ok"})
        if self.path == "/v1/models":
            owner = {"llamacpp": "llamacpp", "vllm": "vllm", "openai": "system"}[st.dialect]
            return self.send_json(200, {"object": "list", "data": [{"id": "judge", "object": "model", "owned_by": owner}]})
        if self.path == "/props" and st.dialect == "llamacpp":
            return self.send_json(200, {"total_slots": st.slots, "build_info": "b0000-emulated",
                                        "default_generation_settings": {"n_ctx": 4096}})
        if self.path == "/version" and st.dialect == "vllm":
            return self.send_json(200, {"version": "0.12.0"})
        self.send_json(404, {"error": {"message": "File Not Found", "code": 404}})

    def do_POST(self):
        st = self.server.state
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        body = json.loads(raw)
        text = "\n".join(str(m.get("content", "")) for m in body.get("messages", [])) or str(body.get("prompt", ""))
        st.record({"t": time.time(), "conn": self.conn_id, "waited": self.waited, "body": body})
        with st.slot:
            time.sleep(st.gen_s)
            try:
                out, lps = answer(st, body, text)
            except (ValueError, re.error) as e:
                return self.send_json(400, {"error": {"message": "bad constraint: %s" % e}})
        if out is None:
            return self.send_json(400, {"error": {"message": "the constraint accepts no candidate"}})
        want_lp = bool(body.get("logprobs"))
        if body.get("stream"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            events = []
            for i, e in enumerate(lps):
                ch = {"index": 0, "delta": {"content": e["token"]}, "finish_reason": None}
                if want_lp:
                    ch["logprobs"] = {"content": [e]}
                events.append({"choices": [ch]})
            events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
            for ev in events:
                data = ("data: " + json.dumps(ev) + "\n\n").encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            data = b"data: [DONE]\n\n"
            self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data))
            return
        choice = {"index": 0, "message": {"role": "assistant", "content": out}, "finish_reason": "stop"}
        if want_lp:
            choice["logprobs"] = {"content": lps}
        self.send_json(200, {"id": "x", "object": "chat.completion", "choices": [choice], "usage": {"total_tokens": 50}})

    def handle(self):
        # llama-server's httplib: at most 100 requests per keep-alive connection
        self.close_connection = True
        self.handle_one_request()
        n = 1
        while not self.close_connection and n < 100:
            self.handle_one_request()
            n += 1


class PoolServer(socketserver.TCPServer):
    """A fixed pool of worker threads, each serving one connection at a time (httplib's ThreadPool):
    connections beyond the pool wait, accepted by the kernel, until a worker is free."""
    allow_reuse_address = True
    request_queue_size = 1024

    def __init__(self, addr, threads, state):
        super().__init__(addr, Handler)
        self.state = state
        self.q = queue.Queue()
        for _ in range(threads):
            threading.Thread(target=self.worker, daemon=True).start()

    def process_request(self, request, client_address):
        self.q.put((request, client_address, time.time()))

    def worker(self):
        while True:
            request, addr, t = self.q.get()
            with self.state.lock:
                self.state.conns += 1
                cid = self.state.conns
            try:
                h = Handler.__new__(Handler)
                h.conn_id, h.waited = cid, time.time() - t
                Handler.__init__(h, request, addr, self)
            except Exception:
                pass
            self.shutdown_request(request)

    def handle_error(self, request, client_address):
        pass


def start(dialect, slots=1, threads=None, gen_ms=5.0):
    st = State(dialect, slots, gen_ms / 1000.0)
    srv = PoolServer(("127.0.0.1", 0), threads or slots + 2, st)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, srv.server_address[1]


if __name__ == "__main__":
    args = sys.argv[1:]
    dialect = args.pop(0)
    slots, threads, gen = 1, None, 5.0
    while args:
        a = args.pop(0)
        if a == "--slots":
            slots = int(args.pop(0))
        elif a == "--threads":
            threads = int(args.pop(0))
        elif a == "--gen-ms":
            gen = float(args.pop(0))
    srv, port = start(dialect, slots, threads, gen)
    print("port %d" % port, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
