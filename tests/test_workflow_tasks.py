"""test_workflow_tasks.py - `judgerl workflow tasks`: seeded and reproducible rows in the seed's shape,
every answer checked by an independent Python reading of the problem (maths re-computed from the
sentences, code references run against their public and hidden asserts, QA resolved from the facts)."""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jrtest import BIN, TMP, exit_code, report  # noqa: E402


def tasks(domain, n, seed=7, first=0):
    p = subprocess.run([BIN, "workflow", "tasks", "--domain", domain, "--n", str(n), "--seed", str(seed), "--first", str(first)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return [json.loads(line) for line in p.stdout.splitlines()]


def math_value(problem):
    """Recomputes a maths problem from its lines: the start, one step per line (the name, its ordinal,
    each step of a different kind), the question."""
    lines = problem.splitlines()
    total = int(re.fullmatch(r"\w+ has (\d+) \w+\.", lines[0]).group(1))
    kinds = []
    who = lines[0].split()[0]
    for s, ordinal in zip(lines[1:-1], ["first", "then", "next", "finally"]):
        assert s.startswith("%s %s " % (who, ordinal)), s
        if m := re.search(r" buys (\d+) bags of (\d+) \w+\.$", s):
            total += int(m.group(1)) * int(m.group(2))
            kinds.append("buy")
        elif m := re.search(r" gives away (\d+) \w+\.$", s):
            total -= int(m.group(1))
            kinds.append("give")
        elif m := re.search(r" for (\d+) new ones\.$", s):
            total *= int(m.group(1))
            kinds.append("trade")
        elif m := re.search(r" finds (\d+) more \w+\.$", s):
            total += int(m.group(1))
            kinds.append("find")
        else:
            raise AssertionError("unknown step: " + s)
    assert len(set(kinds)) == len(kinds) == len(lines) - 2, problem
    assert re.fullmatch(r"How many \w+ does \w+ have now\?", lines[-1]), lines[-1]
    return total


def program_mirrors(r):
    """The reference program: one comment per step line (the line itself) followed by its arithmetic."""
    body = r["program"].splitlines()[2:-1]
    steps = r["problem"].splitlines()[1:-1]
    return len(body) == 2 * len(steps) and all(body[2 * i] == "    # " + s for i, s in enumerate(steps))


def check_math():
    rows = tasks("math", 200)
    bad = []
    for r in rows:
        try:
            if str(math_value(r["problem"])) != r["answer"] or not program_mirrors(r):
                bad.append(r)
        except (AssertionError, AttributeError) as e:
            bad.append((str(e), r))
    steps = {r["steps"] for r in rows}
    mix = [sum(1 for r in rows if r["steps"] == k) for k in (1, 2, 3, 4)]  # 40/30/20/10% of the rows
    big = sum(1 for r in rows if r["steps"] >= 3 and abs(int(r["answer"])) >= 100)
    small = all(max(int(x) for x in re.findall(r"\d+", r["problem"])) <= 30 for r in rows if r["steps"] == 1)
    for r in rows:  # the reference program computes the answer too
        g = {}
        exec(r["program"], g)
        if str(g["solve"]()) != r["answer"]:
            bad.append(r)
    report("math_answers_recomputed", not bad and steps == {1, 2, 3, 4} and all(r["type"] == "math" for r in rows) and big > 40 and small and mix == [80, 60, 40, 20],
           "%d wrong, steps %s, mix %s, big %d, small %s: %s" % (len(bad), steps, mix, big, small, bad[:1]))


def check_code():
    rows = tasks("code", 60)
    prog = "import json,sys\nrows=json.load(sys.stdin)\nout=[]\nfor r in rows:\n" \
           "  res=[]\n  for code in (r['answer'], 'def %s(*a):\\n    return 0\\n' % r['entry_point']):\n" \
           "    g={}\n    exec(code, g)\n    ok=[]\n    for part in ('public_tests','hidden_tests'):\n" \
           "      n=0\n      for line in r[part].splitlines():\n        try:\n          exec(line, g); n+=1\n        except AssertionError:\n          pass\n" \
           "      ok.append((n, len(r[part].splitlines())))\n    res.append(ok)\n  out.append(res)\nprint(json.dumps(out))\n"
    p = subprocess.run(["/usr/bin/python3", "-c", prog], input=json.dumps(rows), capture_output=True, text=True, timeout=60)
    if p.returncode:
        report("code_references_pass_hidden_tests", False, p.stderr[-400:])
        return
    res = json.loads(p.stdout)
    ref_ok = all(pub[0] == pub[1] == 2 and hid[0] == hid[1] == 6 for (pub, hid), _ in res)
    wrong_caught = sum(1 for _, (pub, hid) in res if hid[0] < hid[1])
    fams = {r["entry_point"] for r in rows}
    report("code_references_pass_hidden_tests", ref_ok and wrong_caught >= 55 and len(fams) == 5 and
           all(r["type"] == "code" and r["problem"].startswith("def ") for r in rows), "ref_ok=%s caught=%d fams=%s" % (ref_ok, wrong_caught, fams))


def check_qa():
    rows = tasks("qa", 100)
    bad = []
    for r in rows:
        facts = re.findall(r"^- (.*)\.$", r["problem"], re.M)
        works = dict(re.match(r"(.*) works for (.*)", f).groups() for f in facts if " works for " in f)
        born = dict(re.match(r"(.*) was born in (.*)", f).groups() for f in facts if " was born in " in f)
        hq = dict(re.match(r"(.*) has its headquarters in (.*)", f).groups() for f in facts if " headquarters in " in f)
        q = r["problem"].splitlines()[-1]
        if m := re.match(r"Question: Which company does (.*) work for\?", q):
            want = works[m.group(1)]
        elif m := re.match(r"Question: In which town was (.*) born\?", q):
            want = born[m.group(1)]
        else:
            want = hq[works[re.match(r"Question: In which town is the headquarters of the company that (.*) works for\?", q).group(1)]]
        if want != r["answer"] or len(works) != 2 or len(born) != 2 or len(hq) != 2:
            bad.append(r)
    hops = {r["hops"] for r in rows}
    report("qa_answers_resolved_from_facts", not bad and hops == {1, 2}, "%d wrong: %s" % (len(bad), bad[:1]))


def check_seeding():
    a, b = tasks("qa", 6, seed=3), tasks("qa", 6, seed=3)
    c = tasks("qa", 6, seed=4)
    tail = tasks("qa", 3, seed=3, first=3)
    report("rows_are_seeded_and_addressable", a == b and a != c and tail == a[3:] and [r["id"] for r in a] == ["qa-%d" % i for i in range(6)])
    p = subprocess.run([BIN, "workflow", "tasks", "--domain", "poetry", "--n", "1"], capture_output=True, text=True)
    report("unknown_domain_fails_clearly", p.returncode != 0 and "domain 'poetry'" in p.stderr, p.stderr)


def check_exclude(tmp):
    """--exclude: held-out rows that share no problem with the training rows (the code generator repeats problems,
    so rows from another index range alone overlap: the demo's 30 held-out code rows shared 17 problems with its
    200 training rows)."""
    train = tasks("code", 200, seed=2)
    path = os.path.join(tmp, "train.jsonl")
    with open(path, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in train)
    seen = {r["problem"] for r in train}
    plain = tasks("code", 30, seed=2, first=100000)
    p = subprocess.run([BIN, "workflow", "tasks", "--domain", "code", "--n", "30", "--seed", "2", "--first", "100000",
                        "--exclude", path], capture_output=True, text=True, timeout=60)
    held = [json.loads(line) for line in p.stdout.splitlines()] if p.returncode == 0 else []
    probs = [r["problem"] for r in held]
    report("exclude_gives_unseen_distinct_rows", len(held) == 30 and not seen & set(probs) and len(set(probs)) == 30 and
           sum(r["problem"] in seen for r in plain) > 0,
           "%s; plain rows overlapping: %d" % (p.stderr.strip(), sum(r["problem"] in seen for r in plain)))
    p = subprocess.run([BIN, "workflow", "tasks", "--domain", "code", "--n", "3", "--exclude", os.path.join(tmp, "missing.jsonl")],
                       capture_output=True, text=True, timeout=60)
    report("exclude_missing_file_fails_clearly", p.returncode != 0 and "missing.jsonl" in p.stderr and not p.stdout, p.stderr)


check_math()
check_code()
check_qa()
check_seeding()
check_exclude(TMP)
sys.exit(exit_code())
