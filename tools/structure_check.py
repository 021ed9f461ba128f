#!/usr/bin/python3
"""structure_check.py - judgerl's structure rules, checked on the source tree (run by `make test` as
tests/test_structure.sh, and alone by `make structure-check`).

  1. No function in src/ is over MAX_LINES lines, except one whose definition is preceded (on the line
     just above it) by the marker comment TABLE_MARKER: a function that is a data table. Every excepted
     function is listed in the output of each run.
  2. No include from a lower layer to a higher one. The layers, lowest first, are LAYERS below. A file in
     src/PART/ belongs to PART; a public header include/judgerl/X.h belongs to the part(s) whose files
     define the functions it declares (found with ctags, so a new header needs no entry here), or to its
     entry in HEADER_PART when it declares none. A header whose functions are defined in several parts
     counts as the highest of them. The umbrella header judgerl.h is for programs built against the
     library: no file in src/ or include/judgerl/ includes it, and it includes every other public header.
  3. No circle between parts (A includes B's headers and B includes A's) and no circle between files:
     file A depends on file B when A names a function that B defines and exports (not static); a chain of
     such dependencies that leads back to its start is a circle.

Violations another change is removing are listed, each with the issue item that removes it, in
ALLOWED_INCLUDES and ALLOWED_FILE_CIRCLES; an entry that no longer matches is itself a violation.

Standard tools only: universal-ctags (Debian's universal-ctags) for the functions, Python for the rest.
Usage: tools/structure_check.py [--root DIR]   (DIR: a judgerl tree, by default this script's)
Exit status 0 when the tree follows every rule, 1 with one line per violation otherwise, 2 when the
check itself cannot run (no ctags).
"""
import os
import re
import subprocess
import sys

MAX_LINES = 120
TABLE_MARKER = "structure-check: data table"

# Lowest first. A part may include its own layer and the layers below it, never one above.
LAYERS = [
    ["core"],
    ["nn", "io", "tokenizer"],
    ["judge", "verify", "model", "report", "sandbox"],
    ["sample", "reward", "serve", "eval", "workflow"],
    ["train", "bench"],
    ["cli"],
]
LAYER = {part: i for i, parts in enumerate(LAYERS) for part in parts}

# Public headers that declare no function defined in src/ (types and macros only): their part.
HEADER_PART = {
    "lm.h": "model",      # jr_lm, the language-model interface model/kvcache.c implements
    "hfmodel.h": "io",    # hfconfig.h + hfdir.h together (src/io/hfconfig.c, src/io/hfdir.c)
}

UMBRELLA = "judgerl.h"

# Known violations being removed by a change in flight, as (including file, included file); an entry
# that no longer matches a violation is itself reported, so the list cannot go stale.
ALLOWED_INCLUDES = set()  # none: keep it empty

# Known circles between files being removed, as the set of files in the circle; the same rules as
# ALLOWED_INCLUDES.
ALLOWED_FILE_CIRCLES = []  # none: keep it empty

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]')
IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# comments, string and character literals (dropped before names are looked for)
NOISE_RE = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def ctags_functions(root, paths):
    """[(name, file, first line, last line, static)] of the function definitions in paths."""
    cmd = ["ctags", "-o", "-", "--langmap=C:.c.h", "--kinds-C=f", "--kinds-C++=f", "--fields=+nKe",
           "--sort=no"] + paths
    try:
        out = subprocess.run(cmd, cwd=root, capture_output=True, text=True, check=True).stdout
    except FileNotFoundError:
        print("structure_check: ctags not found: install universal-ctags (tools/deps.sh test)", file=sys.stderr)
        sys.exit(2)
    funcs = []
    for line in out.splitlines():
        cols = line.split("\t")
        fields = dict(c.split(":", 1) for c in cols[3:] if ":" in c)
        if "line" not in fields:
            continue
        end = int(fields.get("end", 0))  # 0: ctags found no end (reported as a violation, never let through)
        funcs.append((cols[0], cols[1], int(fields["line"]), end, "file" in fields))
    return funcs


def ctags_prototypes(root, headers):
    """{header path: [function names it declares]}"""
    cmd = ["ctags", "-o", "-", "--langmap=C:.c.h", "--kinds-C=p", "--sort=no"] + headers
    out = subprocess.run(cmd, cwd=root, capture_output=True, text=True, check=True).stdout
    protos = {h: [] for h in headers}
    for line in out.splitlines():
        cols = line.split("\t")
        protos.setdefault(cols[1], []).append(cols[0])
    return protos


def list_files(root):
    src, public = [], []
    for part in sorted(os.listdir(os.path.join(root, "src"))):
        d = os.path.join(root, "src", part)
        if os.path.isdir(d):
            src += ["src/%s/%s" % (part, f) for f in sorted(os.listdir(d)) if f.endswith((".c", ".cc", ".h"))]
    inc = os.path.join(root, "include", "judgerl")
    public = ["include/judgerl/" + f for f in sorted(os.listdir(inc)) if f.endswith(".h")]
    return src, public


def read(root, path):
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
        return f.read()


def check_lengths(root, funcs, errors, notes):
    for name, path, first, last, _ in funcs:
        if last < first:
            errors.append("%s:%d: ctags found no end for function %s: its length cannot be checked" % (path, first, name))
            continue
        n = last - first + 1
        if n <= MAX_LINES:
            continue
        lines = read(root, path).split("\n")
        above = lines[first - 2] if first >= 2 else ""
        if TABLE_MARKER in above:
            notes.append("excepted (%s): %s:%d %s, %d lines" % (TABLE_MARKER, path, first, name, n))
        else:
            errors.append("%s:%d: function %s is %d lines (at most %d: split it, or mark a data table with "
                          "/* %s */ on the line above)" % (path, first, name, n, MAX_LINES, TABLE_MARKER))


def header_parts(root, public, funcs, errors):
    """{public header path: set of parts} from where the functions it declares are defined."""
    defined_in = {}
    for name, path, _, _, static in funcs:
        if not static:
            defined_in.setdefault(name, set()).add(path.split("/")[1])
    protos = ctags_prototypes(root, [h for h in public if os.path.basename(h) != UMBRELLA])
    parts = {}
    for h, names in protos.items():
        base = os.path.basename(h)
        p = set()
        for n in names:
            p |= defined_in.get(n, set())
        if not p and base in HEADER_PART:
            p = {HEADER_PART[base]}
        if not p:
            errors.append("%s: declares no function defined in src/, so its part is unknown: add it to HEADER_PART "
                          "in tools/structure_check.py" % h)
        parts[h] = p
    return parts


def resolve(root, path, inc):
    """The repository path of an #include from `path`, or None for a system header."""
    if inc.startswith("judgerl/"):
        cand = ["include/" + inc]
    else:
        cand = [os.path.normpath(os.path.join(os.path.dirname(path), inc)), "src/" + inc]
    for c in cand:
        if os.path.isfile(os.path.join(root, c)):
            return c
    return None


def part_of(path, hparts):
    """The set of parts a repository path belongs to."""
    if path.startswith("src/"):
        return {path.split("/")[1]}
    return hparts.get(path, set())


def top(parts):
    return max(parts, key=lambda p: LAYER.get(p, -1))


def check_includes(root, files, hparts, errors):
    """The layer rule and the umbrella rule; returns the part graph {part: set(parts of its layer or below that
    it includes)}, in which a circle can only be between parts of one layer."""
    graph = {}
    seen_allowed = set()
    for path in files:
        if os.path.basename(path) == UMBRELLA and path.startswith("include/"):
            continue
        src_parts = part_of(path, hparts)
        if not src_parts:
            continue
        for lineno, line in enumerate(read(root, path).split("\n"), 1):
            m = INCLUDE_RE.match(line)
            if not m:
                continue
            target = resolve(root, path, m.group(1))
            if target is None:
                continue
            if target == "include/judgerl/" + UMBRELLA:
                errors.append("%s:%d: includes the umbrella header %s (for programs outside the library): include "
                              "the headers it uses" % (path, lineno, UMBRELLA))
                continue
            tparts = part_of(target, hparts)
            if not tparts:
                continue
            for sp in src_parts:
                if sp not in LAYER:
                    errors.append("%s: part %s is in no layer: add it to LAYERS in tools/structure_check.py" % (path, sp))
                    continue
                for tp in tparts:
                    if tp == sp:
                        continue
                    if tp not in LAYER:
                        errors.append("%s: part %s is in no layer: add it to LAYERS in tools/structure_check.py"
                                      % (target, tp))
                        continue
                    if (path, target) in ALLOWED_INCLUDES and LAYER[tp] > LAYER[sp]:
                        seen_allowed.add((path, target))
                        continue
                    if LAYER[tp] <= LAYER[sp]:  # an upward include is reported here, not again as a circle
                        graph.setdefault(sp, set()).add(tp)
                    else:
                        errors.append("%s:%d: %s (layer %d) includes %s of %s (layer %d): a lower layer never "
                                      "includes a higher one" % (path, lineno, sp, LAYER[sp], target, tp, LAYER[tp]))
    for a in sorted(ALLOWED_INCLUDES - seen_allowed):
        errors.append("ALLOWED_INCLUDES lists %s -> %s, which is no longer a violation: delete the entry" % a)
    return graph


def check_umbrella(root, public, errors):
    path = "include/judgerl/" + UMBRELLA
    if not os.path.isfile(os.path.join(root, path)):
        errors.append("%s is missing (the umbrella header holding every public header)" % path)
        return
    listed = set()
    for line in read(root, path).split("\n"):
        m = INCLUDE_RE.match(line)
        if m:
            listed.add(m.group(1))
    for h in public:
        name = "judgerl/" + os.path.basename(h)
        if os.path.basename(h) != UMBRELLA and name not in listed:
            errors.append("%s does not include %s: add it" % (path, name))


def cycles(graph):
    """The strongly connected components of more than one node (Tarjan, iterative), each sorted."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter[0]; counter[0] += 1
        stack.append(start); on.add(start)
        while work:
            v, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]; counter[0] += 1
                    stack.append(nxt); on.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                elif nxt in on:
                    low[v] = min(low[v], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop(); on.discard(w); comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def one_circle(graph, comp):
    """A shortest path around the component from its first node back to it, as a list of nodes."""
    members, start = set(comp), comp[0]
    prev, frontier = {start: None}, [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph.get(v, ())):
                if w == start:
                    path = [v]
                    while prev[path[-1]] is not None:
                        path.append(prev[path[-1]])
                    return list(reversed(path)) + [start]
                if w in members and w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return comp


def file_graph(root, src, funcs):
    """{file: set(files whose exported functions it names)} over the .c/.cc files of src/."""
    exported, own_static = {}, {}
    for name, path, _, _, static in funcs:
        if name.isupper():  # a definition through a macro (a per-level kernel's JR_KFN(name)): not a callable name
            continue
        if not static and path.endswith((".c", ".cc")):
            exported.setdefault(name, set()).add(path)
        elif static:
            own_static.setdefault(path, set()).add(name)
    graph = {}
    for path in src:
        if not path.endswith((".c", ".cc")):
            continue
        # a file's own static function shadows an exported one of the same name
        names = set(IDENT_RE.findall(NOISE_RE.sub(" ", read(root, path)))) - own_static.get(path, set())
        for n in names:
            for f in exported.get(n, ()):
                if f != path:
                    graph.setdefault(path, set()).add(f)
    return graph


def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if len(argv) >= 2 and argv[0] == "--root":
        root = os.path.abspath(argv[1])
    src, public = list_files(root)
    funcs = ctags_functions(root, [p for p in src])
    errors, notes = [], []
    check_lengths(root, funcs, errors, notes)
    hparts = header_parts(root, public, funcs, errors)
    for h, p in sorted(hparts.items()):
        if len(p) > 1:
            notes.append("%s: functions defined in %s: counted as %s" % (h, ", ".join(sorted(p)), top(p)))
    hlayer = {h: {top(p)} for h, p in hparts.items() if p}
    pgraph = check_includes(root, src + public, hlayer, errors)
    check_umbrella(root, public, errors)
    fgraph = file_graph(root, src, funcs)
    seen_circles = []
    for kind, graph in (("parts", pgraph), ("files", fgraph)):
        for comp in cycles(graph):
            if kind == "files" and set(comp) in ALLOWED_FILE_CIRCLES:
                seen_circles.append(set(comp))
                continue
            circle = one_circle(graph, comp)
            more = "" if len(comp) == len(circle) - 1 else " (one circle of %d %s that reach each other: %s)" % (
                len(comp), kind, ", ".join(comp))
            errors.append("circle between %s: %s%s" % (kind, " -> ".join(circle), more))
    for c in ALLOWED_FILE_CIRCLES:
        if c not in seen_circles:
            errors.append("ALLOWED_FILE_CIRCLES lists %s, which is no longer a circle: delete the entry"
                          % " <-> ".join(sorted(c)))
    for n in notes:
        print("note: " + n)
    for e in errors:
        print("structure: " + e)
    n_src = sum(1 for p in src if p.endswith((".c", ".cc")))
    print("structure_check: %d functions in %d files, %d public headers: %s" %
          (len(funcs), n_src, len(public), "%d violations" % len(errors) if errors else "ok"))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
