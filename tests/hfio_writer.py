#!/usr/bin/python3
"""hfio_writer.py - an independent writer and checker of Hugging Face model directories and safetensors files.

Standard library only. It writes files the way the reference tools do (safetensors' Rust writer:
tensors sorted by name, `__metadata__` first, compact JSON header padded with spaces to 8 bytes;
transformers' save_pretrained: config.json and the shard index as json.dumps(indent=2,
sort_keys=True), shards named model-00001-of-00003.safetensors), without sharing any code with
judgerl. Tests use it to check that judgerl reads what others write, and to make broken files.

  hfio_writer.py model DIR [--arch llama|qwen2|qwen3] [--dtype F32|F16|BF16] [--shards N] [--tied]
                 [--extra NAME] [--drop NAME] [--set KEY=JSON ...] [--rope-llama3]
  hfio_writer.py bad KIND OUT.safetensors
      KIND: corrupt_header, truncated, overlap, duplicate, shape_mismatch, gap, trailing,
            bad_dtype, header_len, not_json
  hfio_writer.py check DIR [--values] [--dtype D]
      reads DIR as transformers would and checks it strictly: every safetensors header as the
      reference writes it (8-byte length, compact JSON padded with spaces to 8 bytes,
      __metadata__ {"format": "pt"}, contiguous offsets covering the data), shard names and
      index (metadata.total_size, weight_map), exactly the tensors config.json implies (no tied
      lm_head), in dtype D; with --values every element equals the value formula below.
      Prints "ok N tensors" or one "error: ..." line and exits 1.
  hfio_writer.py value T J   (prints the value of element J of tensor number T, for checking)

Element j of the t-th tensor (in the order below) holds ((7*j + 13*t) % 41 - 20) / 16, which F16
and BF16 represent exactly.
"""
import json
import os
import struct
import sys

ARCHS = {"llama": ("LlamaForCausalLM", "llama"), "qwen2": ("Qwen2ForCausalLM", "qwen2"),
         "qwen3": ("Qwen3ForCausalLM", "qwen3")}
DTYPE_SIZE = {"F32": 4, "F16": 2, "BF16": 2, "I32": 4}


def value(t, j):
    return ((7 * j + 13 * t) % 41 - 20) / 16.0


def encode(vals, dtype):
    if dtype == "F32":
        return struct.pack("<%df" % len(vals), *vals)
    if dtype == "F16":
        return struct.pack("<%de" % len(vals), *vals)
    if dtype == "BF16":  # the values are exact in bf16: the top half of the f32 bits
        return b"".join(struct.pack("<f", v)[2:] for v in vals)
    raise ValueError(dtype)


def safetensors_bytes(tensors, metadata=None):
    """tensors: list of (name, dtype, shape, raw bytes). Sorted by name like the Rust writer."""
    header = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    data = b""
    for name, dtype, shape, raw in sorted(tensors, key=lambda t: t[0]):
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + data


def model_tensors(cfg, arch):
    """The parameter names and shapes of an HF Llama/Qwen2/Qwen3 model, in module order."""
    H, I, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    nh, nkv = cfg["num_attention_heads"], cfg.get("num_key_value_heads", cfg["num_attention_heads"])
    D = cfg.get("head_dim", H // nh)
    bias_qkv = arch == "qwen2" or cfg.get("attention_bias", False)
    bias_o = arch != "qwen2" and cfg.get("attention_bias", False)
    out = [("model.embed_tokens.weight", [V, H])]
    for l in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % l
        out.append((p + "input_layernorm.weight", [H]))
        out += [(p + "self_attn.q_proj.weight", [nh * D, H]), (p + "self_attn.k_proj.weight", [nkv * D, H]),
                (p + "self_attn.v_proj.weight", [nkv * D, H]), (p + "self_attn.o_proj.weight", [H, nh * D])]
        if bias_qkv:
            out += [(p + "self_attn.q_proj.bias", [nh * D]), (p + "self_attn.k_proj.bias", [nkv * D]),
                    (p + "self_attn.v_proj.bias", [nkv * D])]
        if bias_o:
            out.append((p + "self_attn.o_proj.bias", [H]))
        if arch == "qwen3":
            out += [(p + "self_attn.q_norm.weight", [D]), (p + "self_attn.k_norm.weight", [D])]
        out.append((p + "post_attention_layernorm.weight", [H]))
        out += [(p + "mlp.gate_proj.weight", [I, H]), (p + "mlp.up_proj.weight", [I, H]),
                (p + "mlp.down_proj.weight", [H, I])]
    out.append(("model.norm.weight", [H]))
    if not cfg.get("tie_word_embeddings", False):
        out.append(("lm_head.weight", [V, H]))
    return out


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def write_model(d, arch="llama", dtype="BF16", shards=1, tied=False, extra=(), drop=(), sets=(), llama3=False):
    os.makedirs(d, exist_ok=True)
    name, mtype = ARCHS[arch]
    cfg = {"architectures": [name], "model_type": mtype, "hidden_size": 16, "intermediate_size": 32,
           "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 32,
           "max_position_embeddings": 128, "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "hidden_act": "silu",
           "tie_word_embeddings": tied, "bos_token_id": 1, "eos_token_id": [2, 3], "torch_dtype": "bfloat16",
           "initializer_range": 0.02, "use_cache": True, "transformers_version": "4.45.0",
           "attention_dropout": 0.0}
    if arch == "llama":
        cfg.update({"attention_bias": False, "mlp_bias": False, "pretraining_tp": 1})
    if arch == "qwen3":
        cfg.update({"head_dim": 8, "attention_bias": False})
    if llama3:
        cfg["rope_scaling"] = {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                               "original_max_position_embeddings": 8192, "rope_type": "llama3"}
    for kv in sets:
        k, v = kv.split("=", 1)
        cfg[k] = json.loads(v)
    tensors = model_tensors(cfg, arch)
    vals = {}
    for t, (tname, shape) in enumerate(tensors):
        vals[tname] = [value(t, j) for j in range(numel(shape))]
    if tied and "lm_head.weight" in extra:  # an exporter that writes the tied head anyway
        vals["lm_head.weight"] = vals["model.embed_tokens.weight"]
        tensors.append(("lm_head.weight", [cfg["vocab_size"], cfg["hidden_size"]]))
        extra = [e for e in extra if e != "lm_head.weight"]
    for e in extra:
        tensors.append((e, [4]))
        vals[e] = [0.5, 1.0, 1.5, 2.0]
    tensors = [t for t in tensors if t[0] not in drop]
    with open(os.path.join(d, "config.json"), "w") as f:
        f.write(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    with open(os.path.join(d, "generation_config.json"), "w") as f:
        f.write(json.dumps({"bos_token_id": 1, "eos_token_id": [2, 3], "do_sample": True, "temperature": 0.6,
                            "top_p": 0.9, "transformers_version": "4.45.0"}, indent=2, sort_keys=True) + "\n")
    # split in module order into `shards` groups of about equal size, as save_pretrained would
    total = sum(numel(s) * DTYPE_SIZE[dtype] for _, s in tensors)
    limit = -(-total // shards)
    groups, cur, size = [], [], 0
    for t in tensors:
        nb = numel(t[1]) * DTYPE_SIZE[dtype]
        if cur and size + nb > limit:
            groups.append(cur)
            cur, size = [], 0
        cur.append(t)
        size += nb
    groups.append(cur)
    if len(groups) == 1:
        blob = safetensors_bytes([(n, dtype, s, encode(vals[n], dtype)) for n, s in groups[0]], {"format": "pt"})
        with open(os.path.join(d, "model.safetensors"), "wb") as f:
            f.write(blob)
        return
    wm = {}
    for i, g in enumerate(groups):
        fname = "model-%05d-of-%05d.safetensors" % (i + 1, len(groups))
        blob = safetensors_bytes([(n, dtype, s, encode(vals[n], dtype)) for n, s in g], {"format": "pt"})
        with open(os.path.join(d, fname), "wb") as f:
            f.write(blob)
        for n, _ in g:
            wm[n] = fname
    index = {"metadata": {"total_parameters": sum(numel(s) for _, s in tensors), "total_size": total},
             "weight_map": wm}
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        f.write(json.dumps(index, indent=2, sort_keys=True) + "\n")


def raw_file(header, data):
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + data


def write_bad(kind, out):
    a = {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}
    b = {"dtype": "F32", "shape": [4], "data_offsets": [16, 32]}
    data = encode([float(i) for i in range(8)], "F32")
    if kind == "corrupt_header":
        good = raw_file({"a": a, "b": b}, data)
        blob = good[:8] + b"{\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_off" + b"\x00" * 10 + good[8 + 52:]
    elif kind == "truncated":
        blob = raw_file({"a": a, "b": b}, data)[:-10]
    elif kind == "overlap":
        blob = raw_file({"a": a, "b": dict(b, data_offsets=[8, 24])}, data[:24])
    elif kind == "duplicate":
        h = ('{"__metadata__":{"format":"pt"},"a":%s,"a":%s}' % (json.dumps(a), json.dumps(b))).encode()
        h += b" " * ((8 - len(h) % 8) % 8)
        blob = struct.pack("<Q", len(h)) + h + data
    elif kind == "shape_mismatch":
        blob = raw_file({"a": dict(a, shape=[2, 3]), "b": b}, data)
    elif kind == "gap":
        blob = raw_file({"a": a, "b": dict(b, data_offsets=[20, 36])}, data + b"\0" * 4)
    elif kind == "trailing":
        blob = raw_file({"a": a, "b": b}, data + b"\0" * 8)
    elif kind == "bad_dtype":
        blob = raw_file({"a": dict(a, dtype="F8_E4M3", shape=[16]), "b": b}, data)
    elif kind == "header_len":
        blob = struct.pack("<Q", 1 << 40) + b"{}      "
    elif kind == "not_json":
        blob = struct.pack("<Q", 8) + b"{nope   "
    else:
        raise SystemExit("unknown kind " + kind)
    with open(out, "wb") as f:
        f.write(blob)


def decode(raw, dtype):
    if dtype == "F32":
        return list(struct.unpack("<%df" % (len(raw) // 4), raw))
    if dtype == "F16":
        return list(struct.unpack("<%de" % (len(raw) // 2), raw))
    if dtype == "BF16":
        return [struct.unpack("<f", b"\0\0" + raw[i:i + 2])[0] for i in range(0, len(raw), 2)]
    raise ValueError(dtype)


def read_safetensors(path):
    """Strict reader: returns {name: (dtype, shape, raw)}; raises ValueError naming the problem."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    hb = blob[8:8 + n]
    if n % 8 or not hb.startswith(b"{"):
        raise ValueError("%s: header length %d not a multiple of 8 or not an object" % (path, n))
    text = hb.decode("utf-8")
    if text != text.rstrip(" ") + " " * (len(text) - len(text.rstrip(" "))) or len(text) - len(text.rstrip(" ")) >= 8:
        raise ValueError("%s: header padding is not 0-7 spaces" % path)
    header = json.loads(text)
    if json.dumps(header, separators=(",", ":")) != text.rstrip(" "):
        raise ValueError("%s: header is not compact JSON as serde writes it" % path)
    if header.pop("__metadata__", None) != {"format": "pt"}:
        raise ValueError("%s: __metadata__ is not {'format': 'pt'}" % path)
    data = blob[8 + n:]
    pos, out = 0, {}
    for name, e in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"]):
        if set(e) != {"dtype", "shape", "data_offsets"}:
            raise ValueError("%s: %s: fields %s" % (path, name, sorted(e)))
        b, end = e["data_offsets"]
        if b != pos or end - b != numel(e["shape"]) * DTYPE_SIZE[e["dtype"]]:
            raise ValueError("%s: %s: offsets [%d,%d] not contiguous or wrong size" % (path, name, b, end))
        out[name] = (e["dtype"], e["shape"], data[b:end])
        pos = end
    if pos != len(data):
        raise ValueError("%s: data region has %d bytes, tensors cover %d" % (path, len(data), pos))
    return out


def check_model(d, values=False, dtype=None):
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    arch = {v[0]: k for k, v in ARCHS.items()}[cfg["architectures"][0]]
    if cfg["model_type"] != ARCHS[arch][1]:
        raise ValueError("config.json: model_type %s" % cfg["model_type"])
    expected = model_tensors(cfg, arch)
    single = os.path.join(d, "model.safetensors")
    index = os.path.join(d, "model.safetensors.index.json")
    found = {}
    if os.path.exists(single):
        if os.path.exists(index):
            raise ValueError("both model.safetensors and an index")
        found = read_safetensors(single)
    else:
        with open(index) as f:
            idx = json.load(f)
        files = sorted(set(idx["weight_map"].values()))
        total = 0
        for k, fn in enumerate(files):
            if fn != "model-%05d-of-%05d.safetensors" % (k + 1, len(files)):
                raise ValueError("shard name %s" % fn)
            part = read_safetensors(os.path.join(d, fn))
            for name in part:
                if idx["weight_map"].get(name) != fn:
                    raise ValueError("%s: %s not mapped here" % (fn, name))
                total += len(part[name][2])
            found.update(part)
        if idx["metadata"]["total_size"] != total:
            raise ValueError("index total_size %d, tensors %d" % (idx["metadata"]["total_size"], total))
        if set(idx["weight_map"]) != set(found):
            raise ValueError("weight_map and shards differ")
    names = [n for n, _ in expected]
    if set(found) != set(names):
        raise ValueError("tensors: extra %s missing %s" % (sorted(set(found) - set(names)), sorted(set(names) - set(found))))
    for t, (name, shape) in enumerate(expected):
        dt, sh, raw = found[name]
        if sh != shape or (dtype and dt != dtype):
            raise ValueError("%s: %s %s, expected %s %s" % (name, dt, sh, dtype, shape))
        if values:
            got = decode(raw, dt)
            for j, v in enumerate(got):
                if v != value(t, j):
                    raise ValueError("%s[%d] = %r, expected %r" % (name, j, v, value(t, j)))
    return len(expected)


def main(argv):
    if len(argv) >= 2 and argv[0] == "model":
        d, opts = argv[1], argv[2:]
        kw = {"extra": [], "drop": [], "sets": []}
        i = 0
        while i < len(opts):
            o = opts[i]
            if o == "--tied":
                kw["tied"] = True
            elif o == "--rope-llama3":
                kw["llama3"] = True
            elif o in ("--arch", "--dtype", "--shards", "--extra", "--drop", "--set"):
                i += 1
                v = opts[i]
                if o == "--arch":
                    kw["arch"] = v
                elif o == "--dtype":
                    kw["dtype"] = v
                elif o == "--shards":
                    kw["shards"] = int(v)
                else:
                    kw[{"--extra": "extra", "--drop": "drop", "--set": "sets"}[o]].append(v)
            else:
                raise SystemExit("unknown option " + o)
            i += 1
        write_model(d, **kw)
    elif len(argv) == 3 and argv[0] == "bad":
        write_bad(argv[1], argv[2])
    elif len(argv) >= 2 and argv[0] == "check":
        dtype = argv[argv.index("--dtype") + 1] if "--dtype" in argv else None
        try:
            n = check_model(argv[1], values="--values" in argv, dtype=dtype)
        except (ValueError, KeyError, OSError) as e:
            print("error: %s" % e)
            sys.exit(1)
        print("ok %d tensors" % n)
    elif len(argv) == 3 and argv[0] == "value":
        print(value(int(argv[1]), int(argv[2])))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
