#!/usr/bin/python3
"""test_forward_cli.py - `judgerl forward` on the PyTorch-twin fixtures: printed loss, dumped logits and
every gradient (row 0 of each fixture batch) against the reference; and its error lines.

Tolerances as in tests/test_model_torch.c: loss and logits |a-b| <= 1e-5 + 1e-5|b|; gradients
|a-b| <= 1e-4 * max|b| over the tensor + 1e-4|b|. Standard library only."""
import json, os, struct, subprocess, sys, tempfile

ROOT = os.environ.get("JR_ROOT", os.path.join(os.path.dirname(__file__), ".."))
BIN = os.environ.get("JR_BIN", os.path.join(ROOT, "build", "rel", "judgerl"))
TMP = os.environ.get("JR_TMP") or tempfile.mkdtemp()
FIX = os.path.join(ROOT, "tests", "fixtures", "engine")
FMT = {"F32": ("f", 4), "I32": ("i", 4)}


def read_st(path):
    """A safetensors file as {name: (shape, list of values)} (F32/I32 only)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        code, size = FMT[t["dtype"]]
        a, b = t["data_offsets"]
        raw = data[8 + n + a:8 + n + b]
        out[name] = (t["shape"], list(struct.unpack("<%d%s" % (len(raw) // size, code), raw)))
    return out


def close(a, b, atol, rtol):
    return abs(a - b) <= atol + rtol * abs(b)


def check_fixture(name):
    d = os.path.join(FIX, name)
    ref = read_st(os.path.join(d, "reference.safetensors"))
    (B, T), ids = ref["ids"]
    lengths = ref["lengths"][1]
    tg = ref["targets"][1]
    V = ref["logits"][0][2]
    n = lengths[0]
    dump = os.path.join(TMP, name + ".safetensors")
    p = subprocess.run([BIN, "forward", "--model", d, "--ids", " ".join(map(str, ids[:n])),
                        "--targets", " ".join(map(str, tg[:n])), "--dump", dump], capture_output=True, text=True)
    if p.returncode != 0:
        return "exit %d: %s" % (p.returncode, p.stderr.strip())
    words = p.stdout.split()
    if len(words) != 2 or words[0] != "loss":
        return "unexpected output %r" % p.stdout
    loss0 = ref["loss0"][1][0]
    if not close(float(words[1]), loss0, 1e-5, 1e-5):
        return "loss %s, reference %.9g" % (words[1], loss0)
    got = read_st(dump)
    shape, lg = got["logits"]
    if shape != [1, n, V]:
        return "logits shape %s, expected %s" % (shape, [1, n, V])
    reflg = ref["logits"][1][:n * V]
    bad = sum(1 for a, b in zip(lg, reflg) if not close(a, b, 1e-5, 1e-5))
    if bad:
        return "%d logits off" % bad
    grads = [k for k in ref if k.startswith("grad0.")]
    for k in grads:
        hf = k[len("grad0."):]
        if hf not in got:
            return "dump lacks gradient %s" % hf
        rv = ref[k][1]
        mx = max(abs(x) for x in rv)
        gv = got[hf][1]
        if got[hf][0] != ref[k][0]:
            return "%s shape %s, expected %s" % (hf, got[hf][0], ref[k][0])
        off = sum(1 for a, b in zip(gv, rv) if abs(a - b) > 1e-4 * mx + 1e-4 * abs(b))
        if off:
            return "%s: %d of %d gradients off" % (hf, off, len(rv))
    if len(got) != len(grads) + 1:
        return "dump has %d tensors, expected %d" % (len(got), len(grads) + 1)
    return None


def expect_error(label, pattern, args):
    import re
    p = subprocess.run([BIN] + args, capture_output=True, text=True)
    lines = p.stderr.strip().split("\n")
    if p.returncode in (1, 2) and len(lines) == 1 and re.search(pattern, lines[0]):
        print("ok - " + label)
    else:
        print("FAIL - %s: exit %d, stderr %r" % (label, p.returncode, p.stderr))


def main():
    for name in sorted(os.listdir(FIX)):
        if not os.path.isdir(os.path.join(FIX, name)):
            continue
        err = check_fixture(name)
        print(("ok - forward_" + name) if err is None else ("FAIL - forward_%s: %s" % (name, err)))
    d = os.path.join(FIX, "qwen2_bias")
    expect_error("forward_id_out_of_range", r"token id 53 at position 1 is outside the model's vocabulary \[0, 53\)",
                 ["forward", "--model", d, "--ids", "1 53 2"])
    expect_error("forward_targets_count", r"--targets: expected 3 ids", ["forward", "--model", d, "--ids", "1 2 3",
                                                                          "--targets", "1 2"])
    expect_error("forward_bad_ids", r"--ids: expected token ids", ["forward", "--model", d, "--ids", "1 x"])
    expect_error("forward_missing_model", r"nope", ["forward", "--model", os.path.join(TMP, "nope"), "--ids", "1"])


if __name__ == "__main__":
    main()
