"""rule_judges.py - loopback chat-completions judges whose verdicts follow a rule, for the trainer
tests (test_grpo_train.py, test_kill_resume.py, test_study.py, test_mitigation.py): Judge (pointwise, by the response's first
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


def _lower(c):
    return "a" <= c <= "z"


def pointwise_config(port):
    """The pointwise judge and reward YAML for a Judge (or a dead port) at `port`."""
    return """judge:
  protocol: pointwise
  endpoints:
    - {url: "http://127.0.0.1:%d/v1", model: rule-judge}
  cache: false
  concurrency: 16
  max_attempts: 4
  backoff_base_s: 0.05
  pointwise:
    normalize: true
reward:
  components:
    - {name: judge, fn: pointwise}
""" % port


class _Server:
    """A loopback chat-completions server: each POST is answered by self.answer(body, text) ->
    (status, content), content the assistant's text (or the error message for a non-200)."""

    def _start(self):
        self.lock = threading.Lock()
        self.requests = 0
        judge = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
                with judge.lock:
                    judge.requests += 1
                status, content = judge.answer(body, text)
                if status != 200:
                    out = json.dumps({"error": {"message": content}}).encode()
                else:
                    out = json.dumps({"id": "x", "object": "chat.completion", "model": body.get("model"),
                                      "choices": [{"index": 0, "finish_reason": "stop",
                                                   "message": {"role": "assistant", "content": content}}]}).encode()
                self.send_response(status)
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


class Judge(_Server):
    """A pointwise judge: [RESULT] 5 when the response's first character passes `want` (default: a
    lowercase letter a-z), else [RESULT] 1; with fail_some, HTTP 400 for the responses `fails` picks."""

    def __init__(self, fail_some=False, want=_lower):
        self.fail_some = fail_some
        self.want = want
        self.failed = 0
        self._start()

    def answer(self, body, text):
        resp = response_of(text)
        bad = resp is None or (self.fail_some and fails(resp))
        with self.lock:
            self.failed += bad
        if bad:
            return 400, "refused by the test judge"
        return 200, "Feedback: ok. [RESULT] %d" % (5 if resp[:1] and self.want(resp[:1]) else 1)


class LabelJudge(_Server):
    """Labels "Item N:" prompts: Even when N is even, else Odd; confidence 0.2 (below the 0.4
    threshold: rejected) when N is a multiple of 5, else 0.9."""

    def __init__(self):
        self.rejected = 0
        self._start()

    def answer(self, body, text):
        n = int(text.split("Question: Item ")[1].split(":")[0])
        conf = 0.2 if n % 5 == 0 else 0.9
        with self.lock:
            self.rejected += conf < 0.4
        return 200, "%s\nConfidence: %.1f" % ("Even" if n % 2 == 0 else "Odd", conf)

    def config(self):
        """The label-protocol judge and reward YAML for this server (distill and kill/resume tests)."""
        return """judge:
  protocol: label
  endpoints:
    - {url: "http://127.0.0.1:%d/v1", model: label-judge}
  cache: false
  max_unscored_frac: 0.5
  label:
    labels: [Even, Odd]
    confidence: verbal
    threshold: 0.4
reward:
  components:
    - {name: label, fn: label}
""" % self.port
