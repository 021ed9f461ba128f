"""test_judge_redact.py - a label judge on loopback that returns the API key everywhere a judge
answer can carry text: in its content, as a sampled log-prob token (whole and split over several
tokens), among the top log-prob alternatives, in a reasoning field, in an error body (escaped and
past the point where messages are cut), in the model list and in its version. `judgerl grade` with
the cache on, twice (the second run answers from the cache): no piece of the key may reach the
output rows, stdout, stderr, the cache or any other file beside the output."""
import json
import math
import os
import secrets
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import judge_server  # noqa: E402  (Server, State, prompt_text)

from jrtest import BIN, exit_code, report, ROOT, TMP  # noqa: E402

KEY = "jrk-" + secrets.token_hex(16)


def alt(tok, p):
    return {"token": tok, "logprob": math.log(p)}


def tok(t, p, alts):
    return {"token": t, "logprob": math.log(p), "top_logprobs": [alt(a, q) for a, q in alts]}


def answer(text):
    """What the judge says to a prompt: (HTTP status, body)."""
    if "ALT" in text:  # the key is the best alternative: the verdict's log-probs are unreliable and say why
        lps = [{"token": "Yes", "logprob": -13.0, "top_logprobs": [alt(KEY, 0.9), alt("No", 0.05)]}]
        return 200, {"content": "Yes", "logprobs": lps}
    if "SPLIT" in text:  # the key in the content, as two sampled tokens, each also an alternative
        a, b = KEY[:9], KEY[9:]
        lps = [tok("Yes", 0.9, [("Yes", 0.9), ("No", 0.05), ("Maybe", 0.01)]), tok(" (", 0.9, [(" (", 0.9)]),
               tok(a, 0.9, [(a, 0.9), (KEY, 0.01)]), tok(b, 0.9, [(b, 0.9)]), tok(")", 0.9, [(")", 0.9)])]
        return 200, {"content": "Yes (" + KEY + ")", "logprobs": lps}
    if "WHOLE" in text:  # the key as one sampled token inside the content
        lps = [tok("No", 0.9, [("No", 0.9), ("Yes", 0.05), ("Maybe", 0.01)]), tok(" " + KEY, 0.5, [(" " + KEY, 0.5), (KEY, 0.2)])]
        return 200, {"content": "No " + KEY, "logprobs": lps}
    if "REASON" in text:
        lps = [tok("No", 0.9, [("No", 0.9), ("Yes", 0.05)])]
        return 200, {"content": "No", "reasoning_content": "the key is " + KEY, "logprobs": lps}
    if "ERROR" in text:  # an error message quoting the key after 290 bytes, its first byte escaped
        return 400, '{"error": {"message": "%s \\u%04x%s"}}' % ("x" * 290, ord(KEY[0]), KEY[1:])
    return 200, {"content": "Maybe", "logprobs": [tok("Maybe", 0.9, [("Maybe", 0.9), ("No", 0.05)])]}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, code, data):
        data = data.encode() if isinstance(data, str) else data
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # the model list (identity, server kind): names holding the key
        if self.path.endswith("/models"):
            self.send(200, json.dumps({"object": "list", "data": [{"id": "m-" + KEY, "owned_by": KEY}]}))
        elif self.path.endswith("/version"):  # past the length the version text is cut to
            self.send(200, json.dumps({"version": "0.0." + "x" * 40 + KEY}))
        else:
            self.send(404, '{"error": "not found"}')

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        self.server.state.record({"text": judge_server.prompt_text(body)})
        code, ans = answer(judge_server.prompt_text(body))
        if code != 200:
            return self.send(code, ans)
        msg = {"role": "assistant", "content": ans["content"]}
        if "reasoning_content" in ans:
            msg["reasoning_content"] = ans["reasoning_content"]
        choice = {"index": 0, "message": msg, "finish_reason": "stop"}
        if body.get("logprobs"):
            choice["logprobs"] = {"content": ans["logprobs"]}
        self.send(200, json.dumps({"id": "x", "object": "chat.completion", "choices": [choice], "usage": {"total_tokens": 9}}))


def leaks(data):
    """The first piece of the key (12 bytes) found in data (bytes), or None."""
    k = KEY.encode()
    return next((k[i:i + 12].decode() for i in range(len(k) - 11) if k[i:i + 12] in data), None)


def grade(out_dir, name):
    out = os.path.join(out_dir, "out.jsonl")
    if os.path.exists(out):
        os.remove(out)  # every row graded again (from the cache beside it)
    r = subprocess.run([BIN, "grade", "--config", os.path.join(ROOT, "configs", "judge_label.yaml"), "--input", INP, "--output", out,
                        "judge.endpoints.0.url=http://127.0.0.1:%d/v1" % PORT, "judge.api_key_env=JUDGE_REDACT_KEY",
                        "judge.cache=true", "judge.constraint=null", "judge.timeout_s=5", "judge.max_attempts=1",
                        "judge.parse_attempts=1", "judge.max_unscored_frac=1.0"],
                       capture_output=True, env=dict(os.environ, JUDGE_REDACT_KEY=KEY), timeout=120)
    rows = {}
    if os.path.exists(out):
        with open(out) as f:
            rows = {o["id"]: o for o in map(json.loads, filter(str.strip, f))}
    found = {}
    for label, data in (("stdout", r.stdout), ("stderr", r.stderr)):
        if leaks(data):
            found[label] = leaks(data)
    for d, _, files in os.walk(out_dir):
        for fn in files:
            with open(os.path.join(d, fn), "rb") as f:
                bad = leaks(f.read())
            if bad:
                found[os.path.relpath(os.path.join(d, fn), out_dir)] = bad
    report("%s: grade exits 0 with every row" % name, r.returncode == 0 and len(rows) == len(ROWS),
           "rc=%d rows=%d %s" % (r.returncode, len(rows), r.stderr.decode(errors="replace")[-600:]))
    report("%s: the key is in no output row, message, cache or file beside the output" % name, not found,
           "key %s: pieces found in %s" % (KEY, json.dumps(found)))
    return rows, out_dir


ROWS = [{"id": i, "prompt": "Is it %s?" % i} for i in ("ALT", "SPLIT", "WHOLE", "REASON", "ERROR", "PLAIN")]
srv = judge_server.Server(("127.0.0.1", 0), Handler)
srv.state = judge_server.State()
threading.Thread(target=srv.serve_forever, daemon=True).start()
PORT = srv.server_address[1]
INP = os.path.join(TMP, "redact.in.jsonl")
with open(INP, "w") as f:
    f.writelines(json.dumps(r) + "\n" for r in ROWS)
OUT_DIR = os.path.join(TMP, "redact")
os.makedirs(OUT_DIR, exist_ok=True)
rows, _ = grade(OUT_DIR, "answered")
n_posts = len(srv.state.log)
alt_row = rows.get("ALT", {})
report("the unreliable verdict still says why, naming the redacted alternative",
       "[redacted]" in json.dumps(alt_row.get("detail", {}).get("unreliable")), alt_row)
report("the key in the content is redacted, the verdict kept",
       rows.get("SPLIT", {}).get("reward") == 1.0 and rows.get("WHOLE", {}).get("reward") == 0.0,
       (rows.get("SPLIT"), rows.get("WHOLE")))
report("the error body is reported", "HTTP 400" in (rows.get("ERROR", {}).get("error") or ""), rows.get("ERROR"))
rows2, _ = grade(OUT_DIR, "from the cache")
report("the second run is answered from the cache (the error row asked again)",
       len(srv.state.log) - n_posts == 1 and rows2.get("SPLIT", {}).get("cached") in (1, True), (len(srv.state.log) - n_posts, rows2.get("SPLIT")))
srv.shutdown()
sys.exit(exit_code())
