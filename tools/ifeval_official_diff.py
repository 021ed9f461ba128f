#!/usr/bin/python3
"""ifeval_official_diff.py - dev-time differential check of judgerl's IFEval checkers against the
official Python scorer (google-research instruction_following_eval), on real and mutated responses.

Not part of `make test`: it needs the official library's source (not in this repository; e.g. a
checkout of josejg/instruction_following_eval, which packages it) and Debian's python3-nltk,
python3-langdetect, python3-absl, python3-immutabledict.

NLTK's trained English Punkt model is not available here, so the official scorer's sentence
tokenizer is replaced by NLTK's own PunktSentenceTokenizer loaded with the parameters judgerl
approximates (read from src/verify/ifeval_punkt.c): the comparison then checks judgerl's port of
the Punkt algorithm, not the parameters (those are measured by tests/test_ifeval_conformance.c).
langdetect is seeded (DetectorFactory.seed = 0) so runs repeat.

usage: tools/ifeval_official_diff.py OFFICIAL_SRC_DIR [--judgerl build/rel/judgerl] [--mutations N]
       [--time]              only time the official scorer on the conformance file, both modes
       [--cases FILE.c]      only check the expectations of the unit tests in FILE.c
                             (tests/test_ifeval.c: the checker cases and the sentence counts)
       [--counts]            compare judgerl's sentence and capital-word counts with NLTK's on the
                             responses, their lines, the prompts and mutations of them (builds
                             tools/ifeval_counts.c against build/rel/libjudgerl.a)
       [--punkt-pickle F]    use NLTK's trained English model (english.pickle, loaded with a
                             restricted unpickler) instead of judgerl's parameters: the comparison
                             then measures judgerl's approximation of the model as well
OFFICIAL_SRC_DIR holds instructions.py, instructions_registry.py, instructions_util.py.
"""
import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "..", "shared", "data", "ifeval", "gpt4_conformance.jsonl")


def punkt_params():
    src = open(os.path.join(ROOT, "src", "verify", "ifeval_punkt.c")).read()

    def arr(name):
        m = re.search(r"static const char \*const %s\[\] = \{(.*?)\};" % name, src, re.S)
        return re.findall(r'"([^"]*)"', m.group(1))

    from nltk.tokenize import punkt
    known = set(arr("starters") + arr("common_lower"))
    suffixes = arr("lc_suffixes")
    flags = punkt._ORTHO_BEG_UC | punkt._ORTHO_MID_UC | punkt._ORTHO_MID_LC | punkt._ORTHO_UNK_LC

    class Ortho(dict):  # ortho_context() of ifeval_punkt.c
        def __missing__(self, w):
            if w in known or (re.fullmatch(r"[a-z]+", w) and any(len(w) > len(x) and w.endswith(x) for x in suffixes)):
                return flags
            return 0

    p = punkt.PunktParameters()
    p.abbrev_types = set(arr("abbrevs"))
    p.sent_starters = set(arr("starters"))
    p.ortho_context = Ortho()
    return punkt.PunktSentenceTokenizer(p)


def trained_punkt(path):
    """NLTK's english.pickle, unpickling only Punkt's own classes and builtins."""
    import pickle
    allowed = {("nltk.tokenize.punkt", n) for n in ("PunktSentenceTokenizer", "PunktParameters",
                                                     "PunktLanguageVars", "PunktToken")}
    allowed |= {("collections", "defaultdict"), ("builtins", "set"), ("builtins", "int"),
                ("copyreg", "_reconstructor"), ("builtins", "object")}

    class Restricted(pickle.Unpickler):
        def find_class(self, module, name):
            if (module, name) not in allowed:
                raise pickle.UnpicklingError("refusing %s.%s" % (module, name))
            return super().find_class(module, name)

    with open(path, "rb") as f:
        return Restricted(f).load()


def load_official(src_dir, pickle_path=None):
    import nltk
    import langdetect
    langdetect.DetectorFactory.seed = 0
    tok = trained_punkt(pickle_path) if pickle_path else punkt_params()
    nltk.tokenize.sent_tokenize = lambda text, language="english": tok.tokenize(text)
    pkg = types.ModuleType("instruction_following_eval")
    pkg.__path__ = [src_dir]
    sys.modules["instruction_following_eval"] = pkg
    from instruction_following_eval import instructions_registry, instructions_util
    instructions_util._get_sentence_tokenizer = lambda: tok
    return instructions_registry.INSTRUCTION_DICT


def official_verdicts(registry, row, loose):
    """test_instruction_following_strict / _loose of evaluation_lib, re-stated."""
    response = row["response"]
    if loose:
        r = response.split("\n")
        first = "\n".join(r[1:]).strip()
        last = "\n".join(r[:-1]).strip()
        both = "\n".join(r[1:-1]).strip()
        variants = [response, response.replace("*", ""), first, last, both,
                    first.replace("*", ""), last.replace("*", ""), both.replace("*", "")]
    else:
        variants = [response]
    out = []
    for iid, kw in zip(row["instruction_id_list"], row["kwargs"]):
        ins = registry[iid](iid)
        ins.build_description(**kw)
        args = ins.get_instruction_args()
        if args and "prompt" in args:
            ins.build_description(prompt=row["prompt"])
        out.append(any(v.strip() and ins.check_following(v) for v in variants))
    return out


MARKERS = ["*", "**", "***", "******", "\n\n", "\n", "<<A title>>", "P.S. ", "P.P.S ", "[name]", "\n- ", "\n* ",
           "SECTION 1 ", "Section 2\n", '"', ",", ". ", "? ", "! ", "...", "Mr. ", "U.S. ", "1. ", "e.g. ", "```",
           "```json\n", "{\"a\": 1}", "'", "--", "  ", "\t", "\u00a0", "\u2019", "\u00e9", "\u4e2d\u6587",
           "My answer is yes.", "Is there anything else I can help with?", "HELLO WORLD", "hello world"]


def mutate(rng, text):
    k = rng.randrange(6)
    if k == 0 and text:
        i = rng.randrange(len(text) + 1)
        return text[:i] + rng.choice(MARKERS) + text[i:]
    if k == 1:
        return text.upper()
    if k == 2:
        return text.lower()
    if k == 3 and text:
        i, j = sorted(rng.randrange(len(text) + 1) for _ in range(2))
        return text[:i] + text[j:]
    if k == 4:
        return rng.choice(MARKERS) + text + rng.choice(MARKERS)
    return "".join(rng.choice(MARKERS) + w for w in text.split(" ")[: rng.randrange(1, 40)])


def c_entries(src, start):
    """The brace entries of the C array that begins at `start`: lists of strings and integers."""
    import ast
    body = src[src.index("{", src.index(start)) + 1:]
    body = body[:re.search(r"\n\s*\};", body).start()]
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    entries = []
    for m in re.finditer(r"\{((?:\s*(?:\"(?:[^\"\\]|\\.)*\"|-?\d+|,))+)\s*\}", body):
        vals, last_str = [], False
        for t in re.finditer(r'"((?:[^"\\]|\\.)*)"|(-?\d+)|(,)', m.group(1)):
            if t.group(1) is not None:
                v = ast.literal_eval('"' + t.group(1) + '"')
                if last_str:
                    vals[-1] += v
                else:
                    vals.append(v)
                last_str = True
            elif t.group(2) is not None:
                vals.append(int(t.group(2)))
                last_str = False
            else:
                last_str = False
        entries.append(vals)
    return entries


def check_cases(registry, path):
    src = open(path).read()
    bad = 0
    for id_, kw, resp, st, lo in c_entries(src, "static const tcase cases[]"):
        row = {"prompt": "", "response": resp, "instruction_id_list": [id_], "kwargs": [json.loads(kw)]}
        got = (int(official_verdicts(registry, row, False)[0]), int(official_verdicts(registry, row, True)[0]))
        if got != (st, lo):
            bad += 1
            print("MISMATCH %s %s %r: official strict/loose %s, test expects %s" % (id_, kw, resp, got, (st, lo)))
    from instruction_following_eval import instructions_util
    tok = instructions_util._get_sentence_tokenizer()
    for text, n in c_entries(src, "} s[] = {"):
        got = len(tok.tokenize(text))
        if got != n:
            bad += 1
            print("MISMATCH sentences %r: nltk %d, test expects %d" % (text, got, n))
    print("%d mismatches" % bad)
    return 1 if bad else 0


def compare_counts(tok, mutations):
    from nltk.tokenize import NLTKWordTokenizer
    tb = NLTKWordTokenizer()
    shared = os.path.dirname(DATA)
    texts = []
    for l in open(DATA):
        r = json.loads(l)["response"]
        texts.append(r)
        texts += [ln for ln in r.split("\n") if ln.strip()]
    texts += [json.loads(l)["prompt"] for l in open(os.path.join(shared, "input_data.jsonl"))]
    rng = random.Random(3)
    base = list(texts)
    for _ in range(mutations):
        t = rng.choice(base)
        texts += [mutate(rng, t), mutate(rng, t.upper())]
    with tempfile.TemporaryDirectory() as d:
        exe = os.path.join(d, "counts")
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "jansson", "libpcre2-8", "libutf8proc"],
                               capture_output=True, text=True, check=True).stdout.split()
        subprocess.run(["cc", "-std=c11", "-D_GNU_SOURCE", "-I" + os.path.join(ROOT, "include"), "-O2",
                        os.path.join(ROOT, "tools", "ifeval_counts.c"), os.path.join(ROOT, "build", "rel", "libjudgerl.a"),
                        "-o", exe] + flags + ["-lcld2", "-lstdc++", "-lm", "-lpthread", "-fopenmp"], check=True)
        out = subprocess.run([exe], input="\n".join(json.dumps(t) for t in texts) + "\n", capture_output=True,
                             text=True, check=True).stdout.split("\n")
    ds = dc = 0
    for t, o in zip(texts, out):
        cs, cc = map(int, o.split())
        sents = tok.tokenize(t)
        if cs != len(sents):
            ds += 1
            print("SENTENCES judgerl %d nltk %d %r" % (cs, len(sents), t[:200]))
        caps = sum(1 for s in sents for w in tb.tokenize(s) if w.isupper())
        if cc != caps:
            dc += 1
            print("CAPITALS judgerl %d nltk %d %r" % (cc, caps, t[:200]))
    print("%d texts: sentence count differs on %d, capital-word count on %d" % (len(texts), ds, dc))
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("official")
    ap.add_argument("--judgerl", default=os.path.join(ROOT, "build", "rel", "judgerl"))
    ap.add_argument("--mutations", type=int, default=4)
    ap.add_argument("--time", action="store_true")
    ap.add_argument("--cases")
    ap.add_argument("--punkt-pickle")
    ap.add_argument("--counts", action="store_true")
    a = ap.parse_args()
    registry = load_official(os.path.abspath(a.official), a.punkt_pickle)
    if a.counts:
        from instruction_following_eval import instructions_util
        return compare_counts(instructions_util._get_sentence_tokenizer(), 6000)
    if a.cases:
        return check_cases(registry, a.cases)
    rows = [json.loads(l) for l in open(DATA)]
    # letter_frequency with a non-letter target is undefined in the official scorer
    rows = [r for r in rows if None not in r["strict"]]
    if a.time:
        t0, c0 = time.perf_counter(), time.process_time()
        for r in rows:
            official_verdicts(registry, r, False)
            official_verdicts(registry, r, True)
        print("official scorer, %d rows, strict + loose: %.3f s wall, %.3f s CPU" %
              (len(rows), time.perf_counter() - t0, time.process_time() - c0))
        return 0
    rng = random.Random(1)
    pool = [(iid, kw) for r in rows for iid, kw in zip(r["instruction_id_list"], r["kwargs"])]
    cases = []
    for r in rows:
        texts = [r["response"]] + [mutate(rng, r["response"]) for _ in range(a.mutations)]
        for t in texts:
            extra = [rng.choice(pool) for _ in range(3)]
            ids = r["instruction_id_list"] + [e[0] for e in extra]
            kws = r["kwargs"] + [e[1] for e in extra]
            cases.append({"prompt": r["prompt"], "response": t, "instruction_id_list": ids, "kwargs": kws})
    with tempfile.TemporaryDirectory() as d:
        inp = os.path.join(d, "in.jsonl")
        with open(inp, "w") as f:
            for i, c in enumerate(cases):
                # distinct prompts so that rows stay apart
                c = dict(c, prompt="%d %s" % (i, c["prompt"]))
                f.write(json.dumps(c) + "\n")
        subprocess.run([a.judgerl, "ifeval", "--input", inp, "--output-dir", d], check=True, stdout=subprocess.DEVNULL)
        mine = {m: [json.loads(l)["follow_instruction_list"] for l in open(os.path.join(d, "eval_results_%s.jsonl" % m))]
                for m in ("strict", "loose")}
    stats = {}
    shown = 0
    for m in ("strict", "loose"):
        for c, got in zip(cases, mine[m]):
            want = official_verdicts(registry, c, m == "loose")
            for iid, kw, g, w in zip(c["instruction_id_list"], c["kwargs"], got, want):
                s = stats.setdefault(iid, [0, 0])
                s[1] += 1
                if g == w:
                    s[0] += 1
                elif shown < 40:
                    shown += 1
                    print("DIFF %s %s %s judgerl=%s official=%s response=%r" % (m, iid, kw, g, w, c["response"][:300]))
    for iid in sorted(stats):
        ok, tot = stats[iid]
        print("%-48s %6d/%6d agree%s" % (iid, ok, tot, "" if ok == tot else "  <--"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
