#!/usr/bin/python3
"""test_atomic_dirs.py - `judgerl convert` replaces its output directory atomically: killed (-9) at 20
random moments while converting model B over a directory holding model A, the directory is always
either A or B, complete (`judgerl inspect` accepts it and the hash of every file equals A's or B's).
Also: an existing non-empty directory that is not a model directory is refused, untouched.

Standard library only (tests/hfio_writer.py writes the source model)."""
import hashlib, os, random, shutil, subprocess, sys, tempfile, time

ROOT = os.environ.get("JR_ROOT", os.path.join(os.path.dirname(__file__), ".."))
BIN = os.environ.get("JR_BIN", os.path.join(ROOT, "build", "rel", "judgerl"))
TMP = tempfile.mkdtemp(dir=os.environ.get("JR_TMP") or None)
failed = 0


def ok(name):
    print("ok - " + name)


def fail(name, why):
    global failed
    failed += 1
    print("FAIL - %s: %s" % (name, why))


def tree_hash(d):
    """sha256 over (relative path, content) of every file under d, in sorted order."""
    h = hashlib.sha256()
    for base, dirs, files in sorted(os.walk(d)):
        dirs.sort()
        for f in sorted(files):
            p = os.path.join(base, f)
            h.update(os.path.relpath(p, d).encode() + b"\0")
            with open(p, "rb") as fh:
                h.update(fh.read())
    return h.hexdigest()


def convert(src, out, dtype, shard):
    return [BIN, "convert", "--model", src, "-o", out, "--dtype", dtype, "--max-shard-size", shard]


src = os.path.join(TMP, "src")
subprocess.run([sys.executable, os.path.join(ROOT, "tests", "hfio_writer.py"), "model", src, "--set", "hidden_size=256",
                "--set", "intermediate_size=768", "--set", "num_hidden_layers=8", "--set", "head_dim=64"], check=True)
a_ref, b_ref = os.path.join(TMP, "a_ref"), os.path.join(TMP, "b_ref")
A = ["float16", "2MB"]   # model A: what the directory holds before
B = ["float32", "5MB"]   # model B: what the killed conversion writes over it
subprocess.run(convert(src, a_ref, *A), check=True, stdout=subprocess.DEVNULL)
t0 = time.monotonic()
subprocess.run(convert(src, b_ref, *B), check=True, stdout=subprocess.DEVNULL)
full = time.monotonic() - t0
ha, hb = tree_hash(a_ref), tree_hash(b_ref)
assert ha != hb

out = os.path.join(TMP, "out")
rng = random.Random(27)
seen = {"A": 0, "B": 0}
bad = []
for i in range(20):
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(a_ref, out)
    p = subprocess.Popen(convert(src, out, *B), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(rng.uniform(0, full * 1.1))
    p.kill()
    p.wait()
    h = tree_hash(out) if os.path.isdir(out) else "missing"
    ins = subprocess.run([BIN, "inspect", out], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if h == ha:
        seen["A"] += 1
    elif h == hb:
        seen["B"] += 1
    else:
        bad.append("kill %d: the directory is neither A nor B (%s)" % (i, sorted(os.listdir(out)) if os.path.isdir(out) else h))
    if ins.returncode != 0:
        bad.append("kill %d: inspect rejects it: %s" % (i, ins.stderr.strip()))
if bad:
    fail("convert_killed_20_times_leaves_old_or_new", "; ".join(bad[:4]))
else:
    ok("convert_killed_20_times_leaves_old_or_new")
print("  (after the kills: %d x A, %d x B; a full conversion takes %.3f s)" % (seen["A"], seen["B"], full))

# the next conversion after the kills clears the leftover temporary directory and completes
r = subprocess.run(convert(src, out, *B), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
if r.returncode == 0 and tree_hash(out) == hb and not os.path.exists(os.path.join(TMP, ".tmp-out")):
    ok("convert_after_kills_completes_and_cleans_up")
else:
    fail("convert_after_kills_completes_and_cleans_up", r.stderr.strip() or sorted(os.listdir(TMP)))

# a non-empty directory without config.json is not replaced
other = os.path.join(TMP, "notes")
os.mkdir(other)
with open(os.path.join(other, "keep.txt"), "w") as f:
    f.write("mine")
r = subprocess.run(convert(src, other, *B), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
lines = r.stderr.strip().splitlines()
if r.returncode != 0 and len(lines) == 1 and "refusing" in lines[0] and os.listdir(other) == ["keep.txt"]:
    ok("convert_refuses_to_replace_an_unrelated_directory")
else:
    fail("convert_refuses_to_replace_an_unrelated_directory", "rc %d: %s; %s" % (r.returncode, r.stderr.strip(), os.listdir(other)))

shutil.rmtree(TMP, ignore_errors=True)
sys.exit(1 if failed else 0)
