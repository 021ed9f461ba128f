"""rule_judges.py - loopback chat-completions judges whose verdicts follow a rule, for the trainer
tests (test_grpo_train.py, test_kill_resume.py): Judge (pointwise, by the response's first
character, optionally refusing some samples) and LabelJudge (Even / Odd labels with a verbal
confidence)."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def response_of(prompt):
    """The response the pointwise template embeds between its two headings."""
    a = prompt.find("###Response to evaluate:\n")
    b = prompt.find("\n###Score Rubrics:")
    if a < 0 or b < 0:
        return None
    return prompt[a + len("###Response to evaluate:\n"):b].split("\n###Reference Answer")[0].rstrip("\n")


def fails(resp):
    """The samples the judge refuses: about one in four, by the response's first character, and those
    with a NUL byte (the judge client's prompt text ends at a NUL, so the judge cannot find the
    response in it)."""
    return "\x00" in resp or (resp[:1] != "" and ord(resp[0]) % 4 == 0)


class Judge:
    """A loopback chat-completions judge: [RESULT] 5 when the response starts with a lowercase
    letter a-z, else [RESULT] 1; with fail_some, HTTP 400 for the responses `fails` picks."""

    def __init__(self, fail_some=False):
        self.fail_some = fail_some
        self.lock = threading.Lock()
        self.requests = 0
        self.failed = 0
        judge = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
                resp = response_of(text)
                bad = resp is None or (judge.fail_some and fails(resp))
                with judge.lock:
                    judge.requests += 1
                    judge.failed += bad
                if bad:
                    out = json.dumps({"error": {"message": "refused by the test judge"}}).encode()
                    self.send_response(400)
                else:
                    score = 5 if resp[:1] and "a" <= resp[:1] <= "z" else 1
                    out = json.dumps({"id": "x", "object": "chat.completion", "model": body.get("model"),
                                      "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                          "role": "assistant", "content": "Feedback: ok. [RESULT] %d" % score}}]}).encode()
                    self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        class S(ThreadingHTTPServer):
            request_queue_size = 256  # the default backlog (5) drops connections under load
            daemon_threads = True

            def handle_error(self, request, client_address):
                pass  # a client killed mid-request (test_kill_resume.py) resets its connections

        self.srv = S(("127.0.0.1", 0), H)
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


class LabelJudge(Judge):
    """Labels "Item N:" prompts: Even when N is even, else Odd; confidence 0.2 (below the 0.4
    threshold: rejected) when N is a multiple of 5, else 0.9."""

    def __init__(self):
        self.lock = threading.Lock()
        self.requests = 0
        self.rejected = 0
        judge = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
                n = int(text.split("Question: Item ")[1].split(":")[0])
                conf = 0.2 if n % 5 == 0 else 0.9
                with judge.lock:
                    judge.requests += 1
                    judge.rejected += conf < 0.4
                ans = "%s\nConfidence: %.1f" % ("Even" if n % 2 == 0 else "Odd", conf)
                out = json.dumps({"id": "x", "object": "chat.completion", "model": body.get("model"),
                                  "choices": [{"index": 0, "finish_reason": "stop",
                                               "message": {"role": "assistant", "content": ans}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        class S(ThreadingHTTPServer):
            request_queue_size = 256
            daemon_threads = True

            def handle_error(self, request, client_address):
                pass  # a client killed mid-request (test_kill_resume.py) resets its connections

        self.srv = S(("127.0.0.1", 0), H)
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
