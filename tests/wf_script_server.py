"""wf_script_server.py - a scripted OpenAI-compatible server for the workflow environment tests
(loopback only). The reply depends only on directives inside the prompt:
  the reference judge's prompt (it asks for "VERDICT: CORRECT"): judgefail -> HTTP 500 (every attempt);
      judge-correct -> "VERDICT: CORRECT"; otherwise "VERDICT: INCORRECT"
  an executor prompt: execfail -> HTTP 500; CODE-ADD / CODE-SUB -> a ```python block defining
      add(a, b) right / wrong; say=seed -> "<answer>S</answer>", S the request's seed; say=WORD ->
      "<answer>WORD</answer>"; otherwise "<answer>?</answer>"
Every answer reports usage.total_tokens = 120. Run: python3 wf_script_server.py; prints "port N"."""
import json
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def reply(text, seed=None):
    if "VERDICT: CORRECT" in text:
        if "judgefail" in text:
            return None
        return "VERDICT: CORRECT" if "judge-correct" in text else "Not the same.\nVERDICT: INCORRECT"
    if "execfail" in text:
        return None
    if "CODE-ADD" in text:
        return "```python\ndef add(a, b):\n    return a + b\n```"
    if "CODE-SUB" in text:
        return "```python\ndef add(a, b):\n    return a - b\n```"
    if "say=seed" in text:
        return "<answer>%s</answer>" % seed
    m = re.search(r"say=(\S+)", text)
    return "<answer>%s</answer>" % (m.group(1) if m else "?")


class Handler(BaseHTTPRequestHandler):
    """Answers every POST with reply(prompt text, request seed): None is an HTTP 500 (tests/wf_operator_server.py
    subclasses it with another reply)."""
    protocol_version = "HTTP/1.1"
    reply = staticmethod(reply)

    def log_message(self, *args):
        pass

    def send_json(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        text = "\n".join(m.get("content") or "" for m in body.get("messages", [])) or body.get("prompt", "")
        ans = self.reply(text, body.get("seed"))
        if ans is None:
            self.send_json(500, {"error": {"message": "scripted failure"}})
            return
        self.send_json(200, {"id": "x", "object": "chat.completion",
                             "choices": [{"index": 0, "message": {"role": "assistant", "content": ans}, "finish_reason": "stop"}],
                             "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}})


def serve(handler):
    """Serves handler on a free loopback port, printing "port N" first."""
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    print("port %d" % srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    serve(Handler)
