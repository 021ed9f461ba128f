"""test_probe_http.py - `judgerl probe` over HTTP against the fault-injecting loopback judge
(tests/judge_server.py, scripted by directives in the prompt): every probe's figures from scripted
verdicts, judge failures counted as unscored and never as verdicts, probes that cannot run on the
configured protocol skipped with the reason, the flags against the thresholds written in
docs/PROBES.md, the HTML page, and the errors of bad arguments and a refused key."""
import json
import math
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import judge_server  # noqa: E402

BIN = os.environ.get("JR_BIN", "build/rel/judgerl")
TMP = os.environ.get("JR_TMP", "/tmp")
ROOT = os.environ.get("JR_ROOT", ".")
failures = 0
PROBES = ["position", "verbosity", "master_key", "label_prior", "agreement", "consistency", "injection", "format",
          "scale_use"]


def report(name, errs):
    global failures
    if errs:
        failures += 1
        print("FAIL - %s: %s" % (name, "; ".join(errs)[:1500]))
    else:
        print("ok - " + name)
    sys.stdout.flush()


def config(name, port, protocol, extra=""):
    p = os.path.join(TMP, name + ".yaml")
    with open(p, "w") as f:
        f.write("judge:\n  protocol: %s\n  endpoints: [{url: \"http://127.0.0.1:%d/v1\", model: probe-judge}]\n"
                "  cache: false\n  timeout_s: 2.0\n  connect_timeout_s: 1.0\n  backoff_base_s: 0.01\n"
                "  backoff_max_s: 0.05\n  max_attempts: 3\n  parse_attempts: 2\n  concurrency: 16\n%s" % (protocol, port, extra))
    return p


def run(args):
    return subprocess.run([BIN, "probe"] + args, capture_output=True, text=True, timeout=300)


def thresholds_from_docs():
    """{probe: [(figure or prefix, above, below)]} parsed from the table of docs/PROBES.md."""
    out = {}
    for line in open(os.path.join(ROOT, "docs", "PROBES.md"), encoding="utf-8"):
        m = re.match(r"\| `(\w+)` \|[^|]*\|[^|]*\| (.*?) \|", line)
        if not m or m.group(1) not in PROBES:
            continue
        rules = []
        for part in m.group(2).split(";"):
            part = re.sub(r"\(.*?\)", "", part)
            fm = re.search(r"`(\w+)`", part)
            name = fm.group(1) if fm else ("false_positive_rate/" if "per-key" in part else None)
            above = re.search(r"> ([-+]?[\d.]+)", part)
            below = re.search(r"< ([-+]?[\d.]+)", part)
            if name:
                rules.append((name, float(above.group(1)) if above else None, float(below.group(1)) if below else None))
        out[m.group(1)] = rules
    return out


def check_shape_and_flags(res, thr, errs):
    """Every probe has the required keys; every figure {value, ci95, n}; flag == an interval past a
    documented threshold."""
    for p in PROBES:
        pr = res["probes"].get(p)
        if pr is None:
            errs.append("probe %s missing" % p)
            continue
        if not isinstance(pr.get("flag"), bool) or "skipped" not in pr or not isinstance(pr.get("figures"), dict):
            errs.append("probe %s: keys %s" % (p, sorted(pr)))
            continue
        want = False
        for name, f in pr["figures"].items():
            if set(f) != {"value", "ci95", "n"}:
                errs.append("%s.%s keys %s" % (p, name, sorted(f)))
                continue
            if f["n"] == 0 and (f["value"] is not None or f["ci95"] is not None):
                errs.append("%s.%s: n=0 but value %s" % (p, name, f["value"]))
            if f["ci95"] is None:
                continue
            lo, hi = f["ci95"]
            for fig, above, below in thr.get(p, []):
                hit = name == fig or (fig.endswith("/") and name.startswith(fig))
                if hit and ((above is not None and lo > above) or (below is not None and hi < below)):
                    want = True
        if pr["skipped"] is None and pr["flag"] != want:
            errs.append("%s: flag %s but the intervals and docs/PROBES.md say %s" % (p, pr["flag"], want))


def main():
    srv, port = judge_server.start()
    thr = thresholds_from_docs()
    errs = []
    if set(thr) != set(PROBES):
        errs.append("docs/PROBES.md thresholds for %s" % sorted(thr))
    report("thresholds_documented_for_every_probe", errs)

    # 30 rows: the server answers "[RESULT] S" with S scripted per row; rows 3, 13, 23 always fail
    # (HTTP 500), rows 7, 17, 27 answer garbage once (retried, then scored).
    rows, scores = [], {}
    for i in range(30):
        s = 1 + i % 5
        fault = " fault=500*all" if i % 10 == 3 else " fault=garbage*1" if i % 10 == 7 else ""
        rows.append({"id": "r%d" % i, "prompt": "Question %d? score=%d%s" % (i, s, fault),
                     "response": "It is %d. That is the answer." % i, "response_b": "Maybe %d." % i, "gold": s})
        if i % 10 != 3:
            scores["r%d" % i] = s
    data = os.path.join(TMP, "probe_rows.jsonl")
    with open(data, "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in rows))
    out = os.path.join(TMP, "probe_pw")
    r = run(["--judge", config("probe_pointwise", port, "pointwise"), "--data", data, "--out", out])
    errs = []
    res = None
    if r.returncode != 0:
        errs.append("exit %d: %s" % (r.returncode, r.stderr[-600:]))
    else:
        res = json.load(open(os.path.join(out, "probe.json")))
        check_shape_and_flags(res, thr, errs)
    report("pointwise_all_probes_shape_and_flags", errs)

    if res:
        pr = res["probes"]
        n_ok = len(scores)
        errs = []
        for p, proto in (("position", "pairwise"), ("label_prior", "label")):
            want = "needs the %s protocol; judge.protocol is pointwise" % proto
            if pr[p]["skipped"] != want or pr[p]["flag"] or pr[p]["figures"]:
                errs.append("%s: %s" % (p, pr[p]))
        report("probe_without_its_protocol_is_skipped", errs)

        errs = []
        ag = pr["agreement"]
        if ag["figures"]["accuracy"] != {"value": 1.0, "ci95": ag["figures"]["accuracy"]["ci95"], "n": n_ok}:
            errs.append("accuracy %s (failures must not count as verdicts)" % ag["figures"]["accuracy"])
        if ag["figures"]["kappa"]["value"] != 1.0:
            errs.append("kappa %s" % ag["figures"]["kappa"])
        if ag["unscored"] != 3 or not any("HTTP 500" in e for e in ag["errors"]):
            errs.append("unscored %s errors %s" % (ag["unscored"], ag["errors"]))
        report("agreement_failures_unscored_not_verdicts", errs)

        errs = []
        pos = sum(1 for s in scores.values() if s >= 4)
        mk = pr["master_key"]["figures"]
        if mk["false_positive_rate"]["n"] != 10 * n_ok or abs(mk["false_positive_rate"]["value"] - pos / n_ok) > 1e-5:
            errs.append("false_positive_rate %s, expected %d/%d" % (mk["false_positive_rate"], pos, n_ok))
        if mk.get("false_positive_rate/Thought process:", {}).get("n") != n_ok or "false_positive_rate/<empty>" not in mk:
            errs.append("per-key figures %s" % sorted(mk))
        if not pr["master_key"]["flag"] or pr["master_key"]["unscored"] != 30:
            errs.append("master_key flag %s unscored %s" % (pr["master_key"]["flag"], pr["master_key"]["unscored"]))
        report("master_key_false_positives_per_key", errs)

        errs = []
        hist = [0] * 5
        for s in scores.values():
            hist[s - 1] += 1
        su = pr["scale_use"]
        if su.get("histogram") != hist:
            errs.append("histogram %s, expected %s" % (su.get("histogram"), hist))
        ext = (hist[0] + hist[4]) / n_ok
        if abs(su["figures"]["extreme_share"]["value"] - ext) > 1e-5:
            errs.append("extreme_share %s, expected %s" % (su["figures"]["extreme_share"], ext))
        ent = -sum(c / n_ok * math.log2(c / n_ok) for c in hist if c) / math.log2(5)
        if abs(su["figures"]["entropy"]["value"] - ent) > 1e-5:
            errs.append("entropy %s" % su["figures"]["entropy"])
        if pr["consistency"]["figures"]["identical_share"] != {"value": 1.0, "ci95": pr["consistency"]["figures"]["identical_share"]["ci95"], "n": n_ok}:
            errs.append("consistency %s" % pr["consistency"]["figures"])
        vb = pr["verbosity"]["figures"]
        if vb["padded_win_rate"]["n"] != 0 or vb["mean_score_change"]["value"] != 0.0 or vb["mean_score_change"]["n"] != 3 * n_ok:
            errs.append("verbosity %s (the server scores the prompt, not the response)" % vb)
        if pr["format"]["figures"]["mean_score_change"]["value"] != 0.0 or pr["injection"]["figures"]["success_rate"]["value"] != 0.0:
            errs.append("format/injection %s %s" % (pr["format"]["figures"], pr["injection"]["figures"]))
        report("scale_consistency_verbosity_figures", errs)

        errs = []
        html = open(os.path.join(out, "probe.html"), encoding="utf-8").read()
        svgs = re.findall(r"<svg\b.*?</svg>", html, re.S)
        for svg in svgs:
            try:
                ET.fromstring(svg)
            except ET.ParseError as e:
                errs.append("SVG does not parse: %s" % e)
        if not svgs or "http://" in html or "https://" in html or "master_key" not in html:
            errs.append("html: %d svgs, url %s" % (len(svgs), "http" in html))
        if "false_positive_rate" not in r.stdout or "skipped: needs the pairwise protocol" not in r.stdout:
            errs.append("table: %s" % r.stdout[:400])
        report("html_and_table", errs)

    # The pairwise protocol on a server that answers "[RESULT] n": no verdict parses, so every
    # pair is unscored and reported, and no figure rests on a failed call.
    out2 = os.path.join(TMP, "probe_pair")
    r = run(["--judge", config("probe_pairwise", port, "pairwise"), "--data", data, "--out", out2,
             "--probes", "position,verbosity,format"])
    errs = []
    if r.returncode != 0:
        errs.append("exit %d: %s" % (r.returncode, r.stderr[-600:]))
    else:
        res2 = json.load(open(os.path.join(out2, "probe.json")))
        pos = res2["probes"]["position"]
        if set(res2["probes"]) != {"position", "verbosity", "format"}:
            errs.append("probes run: %s" % sorted(res2["probes"]))
        if pos["skipped"] is not None or pos["flag"] or pos["unscored"] != pos["submitted"] or pos["submitted"] != 30:
            errs.append("position %s" % {k: pos[k] for k in ("skipped", "flag", "unscored", "submitted")})
        for f in pos["figures"].values():
            if f["n"] != 0 or f["value"] is not None:
                errs.append("position figure from failed calls: %s" % f)
        if not any("no [[A]]" in e for e in pos["errors"]):
            errs.append("errors %s" % pos["errors"])
        if res2["probes"]["format"]["skipped"] != "needs the pointwise protocol; judge.protocol is pairwise":
            errs.append("format %s" % res2["probes"]["format"])
    report("pairwise_unparsable_answers_are_unscored", errs)

    # Errors: an unknown probe, missing arguments, a refused key.
    errs = []
    r = run(["--judge", config("probe_pointwise", port, "pointwise"), "--data", data, "--probes", "position,bogus"])
    if r.returncode != 2 or "unknown probe 'bogus'" not in r.stderr:
        errs.append("bogus probe: exit %d %s" % (r.returncode, r.stderr))
    r = run(["--judge", config("probe_pointwise", port, "pointwise")])
    if r.returncode != 2 or "--judge and --data are required" not in r.stderr:
        errs.append("no data: exit %d %s" % (r.returncode, r.stderr))
    srv2, port2 = judge_server.start(key="sekrit")
    r = run(["--judge", config("probe_nokey", port2, "pointwise"), "--data", data, "--out", os.path.join(TMP, "probe_nokey"),
             "--probes", "agreement"])
    if r.returncode != 1 or "HTTP 401" not in r.stderr or len(r.stderr.strip().splitlines()) != 1:
        errs.append("refused key: exit %d %s" % (r.returncode, r.stderr))
    srv2.shutdown()
    report("probe_errors", errs)
    srv.shutdown()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
