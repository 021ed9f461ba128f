# test_report.py - judgerl report: a self-contained HTML file whose every inline SVG parses as XML,
# no external URL, the plotted points are the metrics' rows, escaping, the terminal summary, errors.
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

JR_BIN = os.environ.get("JR_BIN", "build/rel/judgerl")
TMP = os.environ.get("JR_TMP", "/tmp")


def result(name, cond, why=""):
    print(("ok - %s" % name) if cond else ("FAIL - %s: %s" % (name, why)))
    return cond


def make_run(d):
    os.makedirs(os.path.join(d, "grpo-unbiased"), exist_ok=True)
    os.makedirs(os.path.join(d, "grpo-biased"), exist_ok=True)
    rows = {"grpo-unbiased": [], "grpo-biased": []}
    for k, name in enumerate(rows):
        with open(os.path.join(d, name, "metrics.jsonl"), "w") as f:
            for s in range(1, 13):
                r = {"step": s, "wall_time": 1.0 + s, "reward": 0.1 * s + k, "kl": 0.01 * s,
                     "judge/latency_p50": 0.05 + 0.001 * s, "unscored_frac": 0.0 if s % 3 else 0.125}
                if s == 5:
                    r["kl"] = None  # non-finite values are written as null: skipped, not plotted
                f.write(json.dumps(r) + "\n")
                rows[name].append(r)
    variant = lambda n: {"name": n, "what": "judge <grades> & \"labels\"", "probe_judge_label": "Yes",
                         "logits_before": [-0.5, -2.5, 2.5], "logits_after": [-0.4, -2.6, 2.4],
                         "margin_before": -0.5, "margin_after": -0.3, "steps": 100, "skipped": 0,
                         "agree_before": 0.3, "agree_after": 0.4, "rewards": [0.2, 0.4, 0.9]}
    summary = {"version": 1, "run_dir": d, "quick": False, "total_seconds": 12.5,
               "stages": [{"name": "seed1", "status": "done", "seconds": 1.5, "note": "a <note> & more"}],
               "seed1": {"probe": "Will I be <successful> & rich?",
                         "sft": {"epoch_loss": [1.1, 0.9, 0.7], "train_accuracy": 0.8, "rows": 190, "params": 9827},
                         "judge_question": {"heldout_accuracy": 0.9}, "judge_answer": {"heldout_accuracy": 0.95},
                         "variants": [variant("question"), variant("answer")]},
               "grpo": [{"judge": "unbiased", "metrics": "grpo-unbiased/metrics.jsonl", "reward_before": 0.3,
                         "reward_after": 0.6, "dist_before": {"Yes": 0.3, "No": 0.3, "Maybe": 0.4},
                         "dist_after": {"Yes": 0.35, "No": 0.3, "Maybe": 0.35}, "judge_latency_p50": 0.06,
                         "unscored_share": 0.0},
                        {"judge": "biased", "metrics": "grpo-biased/metrics.jsonl", "reward_before": 0.5,
                         "reward_after": 0.9, "dist_before": {"Yes": 0.3, "No": 0.3, "Maybe": 0.4},
                         "dist_after": {"Yes": 0.8, "No": 0.1, "Maybe": 0.1}, "judge_latency_p50": 0.07,
                         "unscored_share": 0.05}],
               "steering": {"p_yes_unbiased": 0.35, "p_yes_biased": 0.8, "delta": 0.45}}
    with open(os.path.join(d, "summary.json"), "w") as f:
        json.dump(summary, f)
    return rows


def main():
    d = os.path.join(TMP, "report_run")
    rows = make_run(d)
    p = subprocess.run([JR_BIN, "report", d], capture_output=True, text=True)
    if not result("report_exit_0", p.returncode == 0, p.stderr):
        return
    html = open(os.path.join(d, "report.html"), encoding="utf-8").read()
    svgs = re.findall(r"<svg\b.*?</svg>", html, re.S)
    # seed 1: 2 variants x (logit bars + distillation line) + SFT loss; GRPO: reward, KL, 2 bars, latency, unscored
    result("svg_count", len(svgs) == 11, "found %d" % len(svgs))
    parsed, errs = [], []
    for s in svgs:
        try:
            parsed.append(ET.fromstring(s))
        except ET.ParseError as e:
            errs.append(str(e))
    result("every_svg_parses_as_xml", not errs and len(parsed) == len(svgs), "; ".join(errs[:3]))
    low = html.lower()
    result("no_external_url", "http://" not in low and "https://" not in low and "src=" not in low
           and "@import" not in low and "url(" not in low, "found a URL or external reference")
    # the reward chart plots one point per metrics row for each run, in order
    reward = [e for e in parsed if (e.findtext("title") or "").startswith("Judge reward per step")]
    ok = len(reward) == 1
    if ok:
        lines = [pl.get("points").split() for pl in reward[0].iter("polyline")]
        ok = [len(l) for l in lines] == [12, 12]
        ys = [float(pt.split(",")[1]) for pt in lines[0]]
        ok = ok and all(a > b for a, b in zip(ys, ys[1:]))  # rising reward = falling SVG y
    result("reward_points_are_metric_rows", ok, "points do not follow metrics.jsonl")
    kl = [e for e in parsed if (e.findtext("title") or "").startswith("KL")]
    result("null_values_skipped", len(kl) == 1 and [len(pl.get("points").split()) for pl in kl[0].iter("polyline")] == [11, 11],
           "a null KL row was plotted")
    # one colour meaning: "before" bars grey; judge i's "after" bars in judge i's colour of the reward chart
    line_col = {}
    if reward:
        rects = [r for r in reward[0].iter("rect") if r.get("width") == "10"]
        labels = [t.text for t in reward[0].iter("text") if t.text in ("unbiased", "biased")]
        line_col = dict(zip(labels, [r.get("fill") for r in rects]))
    ok, why = len(line_col) == 2 and line_col["unbiased"] != line_col["biased"], str(line_col)
    for e in parsed:
        title = e.findtext("title") or ""
        if not title.startswith("Held-out answers"):
            continue
        judge = title.split(", ")[1].split(" ")[0]
        fills = {}
        for r in e.iter("rect"):
            t = r.findtext("title")
            if t:
                fills.setdefault(t.rsplit(" ", 1)[0], set()).add(r.get("fill"))
        good = fills.get("before GRPO") == {"#9ca3af"} and fills.get("after GRPO") == {line_col.get(judge)}
        ok, why = ok and good, why + " %s: %s" % (judge, fills)
    result("colours_mean_one_thing", ok, why)
    result("text_is_escaped", "Will I be &lt;successful&gt; &amp; rich?" in html and "<successful>" not in html,
           "probe not escaped")
    out = p.stdout
    result("terminal_summary", "unbiased" in out and "biased" in out and "0.300 -> 0.600" in out
           and "+45 points" in out and "Will I be <successful> & rich?" in out, out[-800:])
    # a second report over the same run rewrites the file identically
    p2 = subprocess.run([JR_BIN, "report", d], capture_output=True, text=True)
    html2 = open(os.path.join(d, "report.html"), encoding="utf-8").read()
    result("report_is_deterministic", p2.returncode == 0 and html2 == html, "second report differs")
    # errors: one line, exit 1 (missing run) or 2 (usage)
    p = subprocess.run([JR_BIN, "report", os.path.join(TMP, "no_such_run")], capture_output=True, text=True)
    result("missing_run_one_error_line", p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1
           and "no such run directory" in p.stderr and "demo --out" not in p.stderr, p.stderr)
    p = subprocess.run([JR_BIN, "report"], capture_output=True, text=True)
    result("usage_error", p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr)
    bad = os.path.join(TMP, "report_bad")
    os.makedirs(bad, exist_ok=True)
    open(os.path.join(bad, "summary.json"), "w").write("{not json")
    p = subprocess.run([JR_BIN, "report", bad], capture_output=True, text=True)
    result("bad_summary_one_error_line", p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1
           and not os.path.exists(os.path.join(bad, "report.html")), p.stderr)


if __name__ == "__main__":
    main()
