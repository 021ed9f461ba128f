#!/usr/bin/python3
"""gen_hfio_fixtures.py - dev-time: PyTorch reference values for the safetensors/HF-config tests.

Run with Debian's interpreter (python3-torch): /usr/bin/python3 tools/gen_hfio_fixtures.py
Writes tests/fixtures/hfio/convert.safetensors (committed; the tests never need torch):
  x            F32   inputs: edge cases (ties, overflow, f16 subnormals, inf, nan) and random values
  x_f16        F16   torch x.half()        (round to nearest even)
  x_bf16       BF16  torch x.bfloat16()    (round to nearest even)
  rope_default F32   1 / 10000 ** (arange(0, 64, 2) / 64), computed as transformers does (float32)
  rope_llama3  F32   transformers' _compute_llama3_parameters for theta 500000, head_dim 64,
                     factor 32, low_freq_factor 1, high_freq_factor 4, original 8192 (Llama 3.2)
The file itself is written by tests/hfio_writer.py's standard-library safetensors writer, which
also writes two model directories (no torch needed for those):
  llama_sharded/  LlamaForCausalLM, llama3 rope_scaling, BF16, 3 shards + model.safetensors.index.json
  qwen3_tied/     Qwen3ForCausalLM, tied embeddings with a (redundant) lm_head.weight, F16, one file
"""
import math
import os
import random
import shutil
import struct
import sys

import torch

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(root, "tests"))
import hfio_writer  # noqa: E402


def f32(bits):
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def edge_values():
    v = [0.0, -0.0, 1.0, -1.0, 65504.0, 65519.99, 65520.0, -65520.0, 65536.0, 1e10, -1e10,
         float("inf"), float("-inf"), float("nan"),
         2.0 ** -14, 2.0 ** -24, -(2.0 ** -24), 2.0 ** -25, 2.0 ** -25 * 1.0001, 3 * 2.0 ** -26, 1.5 * 2.0 ** -24,
         2.5 * 2.0 ** -24, 2.0 ** -26, 1e-40, -1e-40, 1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11, 1 + 2.0 ** -8,
         1 + 3 * 2.0 ** -8, 3.3895314e38, f32(0x7f7fffff), -f32(0x7f7fffff), f32(0x7f7f8000), f32(0x7f7f7fff),
         2.0 ** -14 - 2.0 ** -25, 2.0 ** -14 - 2.0 ** -26, 0.1, 1.0 / 3, math.pi, 6.1035156e-05, 6.097555e-05]
    return [float(torch.tensor(x, dtype=torch.float32)) for x in v]


def main():
    rng = random.Random(1234)
    xs = edge_values()
    while len(xs) < 700:  # random bit patterns (not NaN)
        b = rng.getrandbits(32)
        if (b & 0x7fffffff) > 0x7f800000:
            continue
        xs.append(f32(b))
    for _ in range(600):  # ordinary magnitudes
        xs.append(rng.gauss(0, 1) * 10 ** rng.uniform(-9, 5))
    for _ in range(300):  # exact f16 ties: a half value plus half an ulp
        h = rng.getrandbits(15)
        if (h >> 10) == 31 or (h >> 10) == 30:
            continue
        lo = struct.unpack("<e", struct.pack("<H", h))[0]
        hi = struct.unpack("<e", struct.pack("<H", h + 1))[0]
        xs.append((lo + hi) / 2 * (-1 if rng.random() < 0.5 else 1))
    for _ in range(300):  # exact bf16 ties: low 16 bits 0x8000
        b = (rng.getrandbits(31) & 0x7f7f0000) | 0x8000
        xs.append(f32(b))
    x = torch.tensor(xs, dtype=torch.float32)
    xs = x.tolist()
    h16 = [v & 0xffff for v in x.half().view(torch.int16).tolist()]
    b16 = [v & 0xffff for v in x.bfloat16().view(torch.int16).tolist()]

    def inv_freq(base, dim):
        return 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))

    rope_default = inv_freq(10000.0, 64)
    # transformers.modeling_rope_utils._compute_llama3_parameters, written out
    inv = inv_freq(500000.0, 64)
    factor, low, high, old = 32.0, 1.0, 4.0, 8192
    low_wavelen, high_wavelen = old / low, old / high
    wavelen = 2 * math.pi / inv
    inv_l = torch.where(wavelen > low_wavelen, inv / factor, inv)
    smooth = (old / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * inv_l / factor + smooth * inv_l
    medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
    rope_llama3 = torch.where(medium, smoothed, inv_l)

    def f32_bytes(vals):
        return struct.pack("<%df" % len(vals), *vals)

    tensors = [("x", "F32", [len(xs)], f32_bytes(xs)),
               ("x_f16", "F16", [len(xs)], struct.pack("<%dH" % len(h16), *h16)),
               ("x_bf16", "BF16", [len(xs)], struct.pack("<%dH" % len(b16), *b16)),
               ("rope_default", "F32", [32], f32_bytes(rope_default.tolist())),
               ("rope_llama3", "F32", [32], f32_bytes(rope_llama3.tolist()))]
    out = os.path.join(root, "tests", "fixtures", "hfio")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "convert.safetensors"), "wb") as f:
        f.write(hfio_writer.safetensors_bytes(tensors, {"format": "pt", "generator": "tools/gen_hfio_fixtures.py"}))
    for d in ("llama_sharded", "qwen3_tied"):
        shutil.rmtree(os.path.join(out, d), ignore_errors=True)
    hfio_writer.write_model(os.path.join(out, "llama_sharded"), arch="llama", dtype="BF16", shards=3, llama3=True)
    hfio_writer.write_model(os.path.join(out, "qwen3_tied"), arch="qwen3", dtype="F16", tied=True,
                            extra=["lm_head.weight"])
    print("wrote %d values" % len(xs))


if __name__ == "__main__":
    main()
