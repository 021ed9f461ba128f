# test_tensorboard.py - an independent reader of judgerl's TensorBoard event files (standard library only):
# checks TFRecord framing, both masked CRC-32C of every record, and decodes the Event protobufs by hand.
import json
import os
import re
import struct
import subprocess
import sys

JR_BIN = os.environ.get("JR_BIN", "build/rel/judgerl")
JR_BUILD = os.environ.get("JR_BUILD", os.path.dirname(JR_BIN))
TMP = os.environ.get("JR_TMP", "/tmp")


def _crc_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


TABLE = _crc_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = (c >> 8) ^ TABLE[(c ^ b) & 0xFF]
    return c ^ 0xFFFFFFFF


def masked(c):
    return ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def records(blob):
    """Yields each record's data; raises ValueError on bad framing or CRC."""
    pos = 0
    while pos < len(blob):
        if pos + 12 > len(blob):
            raise ValueError("truncated header at %d" % pos)
        header = blob[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (len_crc,) = struct.unpack("<I", blob[pos + 8:pos + 12])
        if len_crc != masked(crc32c(header)):
            raise ValueError("length CRC mismatch at %d" % pos)
        data = blob[pos + 12:pos + 12 + length]
        if len(data) != length or pos + 16 + length > len(blob):
            raise ValueError("truncated record at %d" % pos)
        (data_crc,) = struct.unpack("<I", blob[pos + 12 + length:pos + 16 + length])
        if data_crc != masked(crc32c(data)):
            raise ValueError("data CRC mismatch at %d" % pos)
        yield data
        pos += 16 + length


def varint(b, i):
    v = shift = 0
    while True:
        x = b[i]
        i += 1
        v |= (x & 0x7F) << shift
        shift += 7
        if not x & 0x80:
            return v, i


def fields(b):
    """Decodes one protobuf message into a list of (field number, value)."""
    out, i = [], 0
    while i < len(b):
        key, i = varint(b, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, i = varint(b, i)
        elif wire == 1:
            v = b[i:i + 8]
            i += 8
        elif wire == 2:
            n, i = varint(b, i)
            v = b[i:i + n]
            i += n
        elif wire == 5:
            v = b[i:i + 4]
            i += 4
        else:
            raise ValueError("wire type %d" % wire)
        if i > len(b):
            raise ValueError("field %d runs past the message" % num)
        out.append((num, wire, v))
    return out


def decode_event(data):
    ev = {"wall_time": None, "step": 0, "file_version": None, "values": []}
    for num, wire, v in fields(data):
        if num == 1 and wire == 1:
            ev["wall_time"] = struct.unpack("<d", v)[0]
        elif num == 2 and wire == 0:
            ev["step"] = v - (1 << 64) if v >= 1 << 63 else v
        elif num == 3 and wire == 2:
            ev["file_version"] = v.decode()
        elif num == 7 and wire == 2:  # event.proto: SessionLog session_log = 7 (6 is log_message)
            ev["session_log"] = dict((n, v) for n, w, v in fields(v))
        elif num == 5 and wire == 2:
            for sn, sw, sv in fields(v):
                assert sn == 1 and sw == 2, "Summary field %d" % sn
                tag, val = None, None
                for vn, vw, vv in fields(sv):
                    if vn == 1 and vw == 2:
                        tag = vv.decode("utf-8")
                    elif vn == 2 and vw == 5:
                        val = struct.unpack("<f", vv)[0]
                ev["values"].append((tag, val))
        else:
            raise ValueError("unexpected Event field %d (wire %d)" % (num, wire))
    return ev


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def read_events(path):
    with open(path, "rb") as f:
        blob = f.read()
    return [decode_event(d) for d in records(blob)], blob


failures = 0


def check(name, cond, why=""):
    global failures
    if cond:
        print("ok - " + name)
    else:
        failures += 1
        print("FAIL - %s: %s" % (name, why))


def event_files(d):
    return sorted(n for n in os.listdir(d) if n.startswith("events.out.tfevents."))


def check_file_common(prefix, d):
    names = event_files(d)
    check(prefix + "_one_event_file", len(names) == 1, str(names))
    if len(names) != 1:
        return None
    name = names[0]
    check(prefix + "_file_name", re.fullmatch(r"events\.out\.tfevents\.\d{10}\.[^/]+", name) is not None, name)
    try:
        evs, blob = read_events(os.path.join(d, name))
    except (ValueError, AssertionError, IndexError, struct.error) as e:
        check(prefix + "_framing_and_crc", False, str(e))
        return None
    check(prefix + "_framing_and_crc", True)
    check(prefix + "_file_version_first", evs and evs[0]["file_version"] == "brain.Event:2" and not evs[0]["values"],
          repr(evs[:1]))
    # the reader is not vacuous: a flipped byte anywhere in a record is caught
    bad = bytearray(blob)
    bad[len(bad) // 2] ^= 0x01
    try:
        list(records(bytes(bad)))
        caught = False
    except ValueError:
        caught = True
    check(prefix + "_corruption_detected", caught)
    return evs


def test_runlog_helper():
    helper = os.path.join(JR_BUILD, "tests", "test_runlog")
    if not os.access(helper, os.X_OK):
        print("skip - runlog_events: %s not built" % helper)
        return
    run = os.path.join(TMP, "run")
    p = subprocess.run([helper, "--write-events", run], capture_output=True, text=True)
    check("runlog_helper_exit", p.returncode == 0, p.stderr)
    if p.returncode:
        return
    evs = check_file_common("runlog", run)
    if evs is None:
        return
    steps = [e for e in evs[1:]]
    ok = len(steps) == 5
    why = "%d events" % len(steps)
    with open(os.path.join(run, "metrics.jsonl")) as f:
        rows = [json.loads(l) for l in f]
    for s, e in enumerate(steps if ok else []):
        want = [("loss", f32(1.0 / (s + 1))), ("reward", f32(s - 2.5))]
        if s == 3:
            want.append(("eval/accuracy", f32(0.75)))
        if e["step"] != s or e["values"] != want:
            ok, why = False, "step %d: %r, expected %r" % (s, e, want)
        if abs(e["wall_time"] - rows[s]["wall_time"]) > 5:
            ok, why = False, "step %d wall_time %r vs metrics %r" % (s, e["wall_time"], rows[s]["wall_time"])
    check("runlog_events_tags_steps_values", ok, why)

    # resumed from the checkpoint of step 2: a second file opens with a session START at step 3
    # (TensorBoard then drops the first file's steps >= 3) and holds steps 3 and 4 again
    first = event_files(run)[0]
    p = subprocess.run([helper, "--resume-events", run, "2"], capture_output=True, text=True)
    check("runlog_resume_exit", p.returncode == 0, p.stderr)
    names = [n for n in event_files(run) if n != first]
    if p.returncode or len(names) != 1:
        check("runlog_resume_file", False, str(event_files(run)))
        return
    try:
        evs, _ = read_events(os.path.join(run, names[0]))
    except (ValueError, AssertionError, IndexError, struct.error) as e:
        check("runlog_resume_framing_and_crc", False, str(e))
        return
    want = [(3, [("loss", f32(10 + 1 / 4)), ("reward", f32(0.5)), ("eval/accuracy", f32(0.75))]),
            (4, [("loss", f32(10 + 1 / 5)), ("reward", f32(1.5))])]
    got = [(e["step"], e["values"]) for e in evs[2:]]
    check("runlog_resume_session_start", len(evs) == 4 and evs[0]["file_version"] == "brain.Event:2" and
          evs[1].get("session_log") == {1: 1} and evs[1]["step"] == 3 and not evs[1]["values"], repr(evs[:2]))
    check("runlog_resume_events", got == want, "%r, expected %r" % (got, want))
    with open(os.path.join(run, "metrics.jsonl")) as f:
        steps = [json.loads(l)["step"] for l in f]
    check("runlog_resume_metrics", steps == [0, 1, 2, 3, 4], str(steps))


def test_tb_export():
    d = os.path.join(TMP, "export")
    os.makedirs(d, exist_ok=True)
    rows = [
        {"step": 0, "wall_time": 1700000000.25, "loss": 2.0, "acc": 0, "note": "text is not a scalar"},
        {"step": 1, "wall_time": 1700000001.5, "loss": 1.5, "acc": 0.125, "loss/\u00e9t\u00e9": -3.75},
        {"step": 1 << 40, "wall_time": 1700000002.0, "loss": 1e-3},
        {"step": -5, "wall_time": 1700000003.0, "huge": 1e300},
    ]
    src = os.path.join(d, "metrics.jsonl")
    with open(src, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    out = os.path.join(d, "tb")
    p = subprocess.run([JR_BIN, "tb-export", src, "--out", out], capture_output=True, text=True)
    check("tb_export_exit", p.returncode == 0 and "4 events" in p.stdout, p.stderr + p.stdout)
    if p.returncode:
        return
    evs = check_file_common("tb_export", out)
    if evs is None:
        return
    ok, why = len(evs) == 5, "%d events" % len(evs)
    for r, e in zip(rows, evs[1:] if ok else []):
        want = [(k, f32(v) if abs(v) < 3.4e38 else float("inf")) for k, v in r.items()
                if k not in ("step", "wall_time") and isinstance(v, (int, float))]
        if e["step"] != r["step"] or e["wall_time"] != r["wall_time"] or e["values"] != want:
            ok, why = False, "%r, expected step %r wall_time %r values %r" % (e, r["step"], r["wall_time"], want)
    check("tb_export_tags_steps_values", ok, why)
    # a bad metrics line: one error line naming FILE:LINE, non-zero exit
    with open(src, "a") as f:
        f.write('{"wall_time": 1}\n')
    p = subprocess.run([JR_BIN, "tb-export", src, "--out", out], capture_output=True, text=True)
    lines = p.stderr.strip().splitlines()
    check("tb_export_bad_row", p.returncode == 1 and len(lines) == 1 and ("metrics.jsonl:5: missing integer field"
                                                                         in lines[0]), p.stderr)


def test_crc_vector():
    check("python_crc32c_vector", crc32c(b"123456789") == 0xE3069283)


test_crc_vector()
test_runlog_helper()
test_tb_export()
sys.exit(1 if failures else 0)
