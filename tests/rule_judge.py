"""rule_judge.py - a loopback OpenAI-compatible pointwise judge for the tests whose verdict follows a rule on
the response's first character: [RESULT] 5 when want(first character) holds, else [RESULT] 1. Free port
(port 0); close() stops it."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def response_of(prompt):
    a = prompt.find("###Response to evaluate:\n")
    b = prompt.find("\n###Score Rubrics:")
    if a < 0 or b < 0:
        return None
    return prompt[a + len("###Response to evaluate:\n"):b].split("\n###Reference Answer")[0].rstrip("\n")


class Judge:
    """A loopback chat-completions judge: [RESULT] 5 when the response starts with a character `want`
    accepts, else [RESULT] 1; `requests` counts the requests answered."""

    def __init__(self, want):
        judge = self
        self.requests = 0

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
                resp = response_of(text)
                judge.requests += 1
                score = 5 if resp is not None and resp[:1] and want(resp[:1]) else 1
                out = json.dumps({"id": "x", "object": "chat.completion", "model": body.get("model"),
                                  "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                      "role": "assistant", "content": "Feedback: ok. [RESULT] %d" % score}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), H)  # port 0: a free port
        self.srv.daemon_threads = True
        self.port = self.srv.server_address[1]
        self.th = threading.Thread(target=self.srv.serve_forever, daemon=True)
        self.th.start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()
