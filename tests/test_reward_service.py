"""test_reward_service.py - `judgerl serve-reward` over real HTTP on loopback, against the
fault-injecting judge (tests/judge_server.py): OpenRLHF's single, batch and empty-list requests,
slime, the batch API, unscored -> 503 / null (never a number unless service.on_unscored: value),
auth, limits, identical in-flight rows computed once, the state directory, metrics, drain on
SIGTERM, and kill -9 under load with a restart after which the callers' retries succeed.

The configs are the ones docs/REWARD_SERVICE.md shows (configs/reward_service*.yaml), with the
judge's address and short timeouts given as KEY=VALUE overrides."""
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jrtest import BIN, ROOT, TMP, report, exit_code, start_server  # noqa: E402
import judge_server  # noqa: E402

procs = []


def judge_overrides(port, extra=()):
    return ['judge.endpoints=[{url: "http://127.0.0.1:%d/v1", model: test-judge}]' % port, "judge.timeout_s=5",
            "judge.connect_timeout_s=2", "judge.max_attempts=2", "judge.backoff_base_s=0.02", "judge.backoff_max_s=0.05",
            "judge.concurrency=64"] + list(extra)


class Service:
    """A `judgerl serve-reward` process on a free port (or the given one)."""

    def __init__(self, cfg, overrides=(), args=(), port=0, env=None, name="svc"):
        self.err_path = os.path.join(TMP, "%s.%d.err" % (name, time.monotonic_ns()))
        e = dict(os.environ)
        e.update(env or {})
        self.p, self.port = start_server([BIN, "serve-reward", "--config", cfg, "--port", str(port)] + list(args) + list(overrides),
                                         self.err_path, "listening on", env=e)
        procs.append(self.p)

    def stderr(self):
        with open(self.err_path) as f:
            return f.read()

    def url(self, path):
        return "http://127.0.0.1:%d%s" % (self.port, path)

    def send(self, sig):
        self.signalled = True
        self.p.send_signal(sig)

    def stop(self, sig=signal.SIGTERM):
        if self.p.poll() is None and not getattr(self, "signalled", False):
            self.p.send_signal(sig)
        try:
            rc = self.p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = self.p.wait()
        return rc


def post(url, obj=None, raw=None, headers=None, timeout=60, method="POST"):
    """(status, parsed JSON body or text) of one request."""
    data = raw if raw is not None else (json.dumps(obj).encode() if obj is not None else None)
    req = urllib.request.Request(url, data=data, method=method, headers=dict({"Content-Type": "application/json"}, **(headers or {})))
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            status, text = r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read().decode()
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


def cfg_copy(name, src="reward_service.yaml", extra=""):
    """The shipped example config, copied into a directory of its own (its state directory is
    created beside it), with `extra` YAML appended."""
    d = os.path.join(TMP, name)
    os.makedirs(d, exist_ok=True)
    p = os.path.join(d, "reward.yaml")
    shutil.copy(os.path.join(ROOT, "configs", src), p)
    if extra:
        with open(p, "a") as f:
            f.write(extra)
    return p


# ---------------------------------------------------------------------------------------------
def test_protocols(jport, jsrv):
    cfg = cfg_copy("protocols")
    s = Service(cfg, judge_overrides(jport))
    if not s.port:
        report("serve_reward_starts", False, s.stderr())
        return
    # OpenRLHF, one sample per request (current OpenRLHF): query = prompt + response
    st, b = post(s.url("/get_reward"), {"query": ["<|user|>What is 2+2?<|assistant|>It is 4. score=4"],
                                         "prompts": ["<|user|>What is 2+2?<|assistant|>"], "labels": ["4"]})
    report("openrlhf_single", st == 200 and b == {"rewards": [4.0], "scores": [1.0], "extra_logs": {"quality": [4.0]}}, "%s %s" % (st, b))
    # the judge saw the response without the prompt prefix, and the label as the reference
    texts = [judge_server.prompt_text(e["body"]) for e in jsrv.state.log]
    seen = [t for t in texts if "It is 4. score=4" in t]
    report("openrlhf_prompt_prefix_stripped", seen and all("What is 2+2?<|assistant|>It is 4" not in t for t in seen),
           "judge prompts: %s" % seen[:1])
    # older OpenRLHF: the whole batch in one request, answers in order
    q = ["p%d answer %d score=%d" % (i, i, 1 + i % 5) for i in range(6)]
    st, b = post(s.url("/get_reward"), {"query": q, "prompts": ["p%d" % i for i in range(6)], "labels": [None] * 6})
    want = [float(1 + i % 5) for i in range(6)]
    report("openrlhf_batch_in_order", st == 200 and b.get("rewards") == want and len(b.get("scores", [])) == 6
           and all(0 <= x <= 1 for x in b["scores"]), "%s %s" % (st, b))
    # the extra servers of a multi-URL setup receive empty lists
    st, b = post(s.url("/get_reward"), {"query": [], "prompts": [], "labels": []})
    report("openrlhf_empty_lists", st == 200 and b == {"rewards": [], "scores": [], "extra_logs": {}}, "%s %s" % (st, b))
    # slime: the body IS the reward
    st, b = post(s.url("/slime"), {"prompt": "Q", "response": "slime answer score=2", "label": "x"})
    report("slime_answers_a_number", st == 200 and b == 2.0, "%s %r" % (st, b))
    # batch API: a failing row is null with its reason, the others are scored
    rows = [{"prompt": "Q", "response": "batch ok score=5", "ground_truth": "g"},
            {"prompt": "Q", "response": "batch bad fault=400*all"}]
    st, b = post(s.url("/v1/rewards"), {"rows": rows})
    res = b.get("results", []) if isinstance(b, dict) else []
    report("batch_api_null_with_reason", st == 200 and len(res) == 2 and res[0]["reward"] == 5.0 and res[0]["status"] == "ok"
           and res[0]["scores"] == {"quality": 5.0} and res[1]["reward"] is None and res[1]["status"] == "unscored"
           and "HTTP 400" in res[1].get("reason", "") and "latency_s" in res[1] and res[1]["cached"] is False, "%s %s" % (st, b))
    # a failing judge is a 503 with the reason for OpenRLHF and slime, never a number
    st, b = post(s.url("/get_reward"), {"query": ["x fault=503*all"], "prompts": [""], "labels": [""]})
    msg = b.get("error", {}).get("message", "") if isinstance(b, dict) else ""
    report("openrlhf_failing_judge_503", st == 503 and "HTTP 503" in msg and "rewards" not in b, "%s %s" % (st, b))
    st, b = post(s.url("/slime"), {"prompt": "p", "response": "y fault=500*all", "label": ""})
    report("slime_failing_judge_503", st == 503 and b.get("error", {}).get("code") == "unscored", "%s %s" % (st, b))
    # the same row again: answered by the cache in the state directory beside the config
    st, b = post(s.url("/v1/rewards"), {"rows": [rows[0]]})
    ok = st == 200 and b["results"][0]["cached"] is True and b["results"][0]["reward"] == 5.0
    state = os.path.join(os.path.dirname(cfg), "reward.state")
    report("cache_in_state_dir", ok and os.path.isdir(state) and any(f.startswith("judge_cache") for f in os.listdir(state)),
           "%s %s; %s" % (st, b, os.listdir(state) if os.path.isdir(state) else "no " + state))
    # errors: bad JSON, wrong shapes, unknown route, wrong method
    st1, b1 = post(s.url("/get_reward"), raw=b"{not json")
    st2, b2 = post(s.url("/get_reward"), {"query": "not a list"})
    st3, _ = post(s.url("/nope"), {})
    st4, _ = post(s.url("/slime"), method="GET")
    st5, b5 = post(s.url("/get_reward"), {"query": ["a", "b"], "prompts": ["a"]})
    report("bad_requests_get_openai_style_errors", (st1, st2, st3, st4, st5) == (400, 400, 404, 405, 400)
           and "query" in b2["error"]["message"] and "prompts" in b5["error"]["message"] and "type" in b1["error"],
           "%s %s %s %s %s" % (st1, st2, st3, st4, st5))
    # metrics: the same Prometheus format as judgerl serve
    st, m = post(s.url("/metrics"), method="GET")
    report("metrics", st == 200 and 'judgerl_requests_total{status="503"} 2' in m and "judgerl_reward_rows_unscored_total 3" in m
           and "judgerl_judge_cache_hits_total 1" in m and 'judgerl_judge_latency_seconds{quantile="0.5"}' in m
           and "judgerl_requests_in_flight 0" in m, m[:3000])
    err = s.stderr()
    report("request_log_has_no_bodies", "POST /get_reward 200 rows=1" in err and "What is 2+2" not in err, err[-2000:])
    rc = s.stop()
    report("sigterm_exits_0", rc == 0, "rc %s" % rc)


def test_unscored_value(jport):
    cfg = cfg_copy("valued", extra="  unscored_value: -7.5\n")
    s = Service(cfg, judge_overrides(jport, ["service.on_unscored=value"]))
    st, b = post(s.url("/get_reward"), {"query": ["v1 score=3", "v2 fault=400*all"], "prompts": ["", ""], "labels": ["", ""]})
    st2, b2 = post(s.url("/slime"), {"prompt": "", "response": "v3 fault=400*all", "label": ""})
    err = s.stderr()
    report("on_unscored_value_is_opt_in_and_logged", st == 200 and b["rewards"] == [3.0, -7.5] and "quality" not in b["extra_logs"]
           and st2 == 200 and b2 == -7.5 and err.count("answered -7.5 (service.on_unscored: value)") == 2, "%s %s %s %s %s" % (st, b, st2, b2, err[-1500:]))
    s.stop()
    # a value without on_unscored: value is refused (a wrong default must be loud)
    cfg2 = cfg_copy("valued_bad", extra="  unscored_value: 0\n")
    r = subprocess.run([BIN, "serve-reward", "--config", cfg2, "--port", "0"], capture_output=True, text=True, timeout=60)
    # slime with --reward-key reward: an object answer
    s = Service(cfg_copy("slimeobj"), judge_overrides(jport, ["service.slime_answer=object"]))
    st3, b3 = post(s.url("/slime"), {"prompt": "", "response": "v4 score=4", "label": ""})
    report("slime_object_answer_for_reward_key", st3 == 200 and b3 == {"reward": 4.0, "quality": 4.0}, "%s %s" % (st3, b3))
    s.stop()
    report("unscored_value_without_opt_in_refused", r.returncode != 0 and "on_unscored" in r.stderr and len(r.stderr.strip().splitlines()) == 1,
           "rc %d %s" % (r.returncode, r.stderr))
    # two protocols on one route (the first route matched would take the other's requests): refused
    cfg3 = cfg_copy("routes")
    for case, over in (("slime", "service.slime_path=/get_reward"), ("openrlhf", "service.openrlhf_path=/v1/rewards")):
        r = subprocess.run([BIN, "serve-reward", "--config", cfg3, "--port", "0"] + judge_overrides(jport, [over]), capture_output=True,
                           text=True, timeout=60)
        report("route_clash_refused_%s" % case, r.returncode != 0 and over in r.stderr and "already the route" in r.stderr
               and len(r.stderr.strip().splitlines()) == 1, "rc %d %s" % (r.returncode, r.stderr))


def test_auth_and_limits(jport):
    cfg = cfg_copy("auth")
    s = Service(cfg, judge_overrides(jport, ["service.max_rows=3", "service.max_body=2048"]), args=["--api-key-env", "RSVC_KEY"],
                env={"RSVC_KEY": "s3cret-key"})
    body = {"prompt": "", "response": "auth score=1", "label": ""}
    st1, b1 = post(s.url("/slime"), body)
    st2, _ = post(s.url("/slime"), body, headers={"Authorization": "Bearer s3cret-kez"})
    st3, b3 = post(s.url("/slime"), body, headers={"Authorization": "Bearer s3cret-key"})
    st4, _ = post(s.url("/health"), method="GET")
    report("bearer_key_required", (st1, st2, st3, st4) == (401, 401, 200, 200) and b1["error"]["code"] == "invalid_api_key" and b3 == 1.0,
           "%s %s %s %s" % (st1, st2, st3, st4))
    h = {"Authorization": "Bearer s3cret-key"}
    st, b = post(s.url("/v1/rewards"), {"rows": [{"response": "r%d" % i} for i in range(4)]}, headers=h)
    report("max_rows_413", st == 413 and "service.max_rows" in b["error"]["message"], "%s %s" % (st, b))
    st, b = post(s.url("/v1/rewards"), {"rows": [{"response": "x" * 4000}]}, headers=h)
    report("max_body_413", st == 413, "%s %s" % (st, b))
    report("key_never_logged", "s3cret" not in s.stderr(), s.stderr()[-500:])
    s.stop()
    r = subprocess.run([BIN, "serve-reward", "--config", cfg, "--port", "0", "--api-key-env", "RSVC_UNSET_VAR"], capture_output=True, text=True,
                       timeout=60, env={k: v for k, v in os.environ.items() if k != "RSVC_UNSET_VAR"})
    report("unset_key_variable_refused", r.returncode == 2 and "RSVC_UNSET_VAR" in r.stderr, r.stderr)


def test_inflight_dedup(jport, jsrv):
    """Identical rows in flight at once reach the judge once (the cache is off, so only the
    in-flight table can merge them): 4 copies in one request and 4 concurrent requests."""
    cfg = cfg_copy("dedup")
    s = Service(cfg, judge_overrides(jport, ["judge.cache=false"]))
    jsrv.state.latency = 0.5
    row = {"prompt": "dedup prompt", "response": "dedup answer score=5"}
    out = []

    def one():
        out.append(post(s.url("/v1/rewards"), {"rows": [dict(row, id=i) for i in range(4)]}))
    ts = [threading.Thread(target=one) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    jsrv.state.latency = 0.0
    calls = sum(1 for e in jsrv.state.log if "dedup answer" in judge_server.prompt_text(e["body"]))
    ok = all(st == 200 and [r["reward"] for r in b["results"]] == [5.0] * 4 for st, b in out)
    # one request's 4 copies are merged for certain; concurrent requests join while it is in flight
    report("identical_inflight_rows_judged_once", ok and 1 <= calls <= 4, "judge calls %d; %s" % (calls, out[:1]))
    st, b = post(s.url("/v1/rewards"), {"rows": [dict(row, id=9), {"prompt": "other", "response": "dedup answer score=5 other"}]})
    calls2 = sum(1 for e in jsrv.state.log if "dedup answer" in judge_server.prompt_text(e["body"]))
    report("without_cache_a_later_row_is_judged_again", st == 200 and calls2 == calls + 2, "%d -> %d" % (calls, calls2))
    s.stop()


def test_ifeval_no_judge():
    cfg = cfg_copy("ifeval", src="reward_service_ifeval.yaml")
    s = Service(cfg)
    rows = [{"prompt": "Answer in lowercase.", "response": "all lowercase here", "instruction_id_list": ["change_case:english_lowercase"],
             "kwargs": [{}]},
            {"prompt": "Answer in lowercase.", "response": "NOT Lowercase", "instruction_id_list": ["change_case:english_lowercase"],
             "kwargs": [{}]},
            {"prompt": "no instructions", "response": "x"}]
    st, b = post(s.url("/v1/rewards"), {"rows": rows})
    r = b.get("results", []) if isinstance(b, dict) else []
    report("ifeval_rows_without_judge", st == 200 and [x["reward"] for x in r] == [1.0, 0.0, None] and "instruction_id_list" in r[2]["reason"],
           "%s %s" % (st, b))
    s.stop()


def test_drain(jport, jsrv):
    cfg = cfg_copy("drain")
    s = Service(cfg, judge_overrides(jport, ["judge.cache=false"]), args=["--drain-timeout", "60"])
    jsrv.state.latency = 1.0
    got = []
    t = threading.Thread(target=lambda: got.append(post(s.url("/slime"), {"prompt": "", "response": "drain me score=3", "label": ""})))
    t.start()
    deadline = time.time() + 60
    while time.time() < deadline and not any("drain me" in judge_server.prompt_text(e["body"]) for e in jsrv.state.log):
        time.sleep(0.02)
    s.send(signal.SIGTERM)
    t.join(timeout=120)
    rc = s.stop()
    jsrv.state.latency = 0.0
    report("sigterm_drains_the_running_request", got and got[0] == (200, 3.0) and rc == 0, "%s rc %s" % (got, rc))


def test_kill9_restart(jport, jsrv):
    """kill -9 while callers have requests in flight; the service restarts on the same port and
    every caller's retry (OpenRLHF retries a failed request) gets the right reward."""
    cfg = cfg_copy("kill9")
    s = Service(cfg, judge_overrides(jport))
    port = s.port
    jsrv.state.latency = 0.3
    n_callers, per = 8, 4
    results, errors = {}, []
    lock = threading.Lock()

    def caller(c):
        for k in range(per):
            body = {"prompt": "", "response": "caller %d row %d score=%d" % (c, k, 1 + (c + k) % 5), "label": ""}
            deadline = time.time() + 120
            while time.time() < deadline:
                try:
                    st, b = post("http://127.0.0.1:%d/slime" % port, body, timeout=30)
                    if st == 200:
                        with lock:
                            results[(c, k)] = b
                        break
                except (OSError, urllib.error.URLError):
                    pass
                time.sleep(0.1)
            else:
                errors.append((c, k))
    ts = [threading.Thread(target=caller, args=(c,)) for c in range(n_callers)]
    for t in ts:
        t.start()
    deadline = time.time() + 60
    while time.time() < deadline and jsrv.state.inflight == 0:
        time.sleep(0.01)
    inflight = jsrv.state.inflight
    s.p.kill()
    s.p.wait()
    s2 = None
    for _ in range(50):  # the port is ours again once the old socket is gone
        s2 = Service(cfg, judge_overrides(jport), port=port, name="kill9b")
        if s2.port:
            break
        s2.stop()
        time.sleep(0.2)
    for t in ts:
        t.join(timeout=180)
    jsrv.state.latency = 0.0
    want = {(c, k): float(1 + (c + k) % 5) for c in range(n_callers) for k in range(per)}
    report("kill9_under_load_then_retries_succeed", inflight > 0 and s2 and s2.port == port and not errors and results == want,
           "in flight at kill %d, restarted %s, errors %s, got %d of %d" % (inflight, s2 and s2.port, errors, len(results), len(want)))
    if s2:
        s2.stop()


def cleanup(jsrv):
    """Kills every service process still running (a failed case's) and stops the judge."""
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()
    jsrv.shutdown()


def main():
    jsrv, jport = judge_server.start(stall=2.0)
    try:
        test_protocols(jport, jsrv)
        test_unscored_value(jport)
        test_auth_and_limits(jport)
        test_inflight_dedup(jport, jsrv)
        test_ifeval_no_judge()
        test_drain(jport, jsrv)
        test_kill9_restart(jport, jsrv)
    finally:
        cleanup(jsrv)
    sys.exit(exit_code())


if __name__ == "__main__":
    main()
