#!/usr/bin/python3
"""generate_torch.py - the PyTorch side of `judgerl bench generate`: a generate loop with a KV cache
(HF semantics: prefill each prompt, then one token per sequence per step, sampling at temperature 1)
on the same Qwen2-layout config (tied embeddings), fp32, same thread count, under torch.inference_mode.
The cache is preallocated (B, Hkv, T, D) per layer and written in place (cheaper than HF's
DynamicCache concatenation). Prints one JSON object (prefill_tokens_per_s, decode_tokens_per_s,
decode_step_ms, and the same per CPU second: process CPU time, which on a shared
machine counts the work and not the waiting). Dev-time only (python3-torch).

Usage: /usr/bin/python3 bench/generate_torch.py --config 10m|100m [--batch 8] [--prompt 64] [--tokens 64] [--threads N]
"""
import argparse, json, os, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import torch  # noqa: E402
import torch_twin  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_torch import CONFIGS, bench_model  # noqa: E402

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True, choices=sorted(CONFIGS))
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--prompt", type=int, default=64)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS", "0") or 0))
    a = ap.parse_args()
    g = torch.Generator().manual_seed(1)
    c, P = bench_model(a.config, a.threads, g)
    H, nh, nkv, L = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], c["num_hidden_layers"]
    D, B, Tmax = H // nh, a.batch, a.prompt + a.tokens + 1
    f = torch_twin.inv_freq(c).float()
    ang = torch.outer(torch.arange(Tmax).float(), f)
    cos_t, sin_t = torch.cat((ang, ang), -1).cos(), torch.cat((ang, ang), -1).sin()
    K = [torch.zeros(B, nkv, Tmax, D) for _ in range(L)]
    Vc = [torch.zeros(B, nkv, Tmax, D) for _ in range(L)]
    lin = lambda x, n: torch.nn.functional.linear(x, P[n + ".weight"], P.get(n + ".bias"))

    def step(ids, rows, pos0):
        """ids (R, S) tokens at positions pos0..pos0+S-1 of cache rows `rows` -> last logits (R, V)."""
        h = torch_twin.cached_hidden(c, P, lin, ids, pos0, cos_t, sin_t, K, Vc, rows)
        return h[:, -1] @ P["model.embed_tokens.weight"].T

    with torch.inference_mode():
        prompt = torch.randint(0, c["vocab_size"], (a.prompt,), generator=g)
        t0, c0 = time.perf_counter(), time.process_time()
        last = []
        for b in range(B):
            pr = prompt.clone()
            pr[0] = b
            last.append(step(pr[None], torch.tensor([b]), 0))
        t_prefill, c_prefill = time.perf_counter() - t0, time.process_time() - c0
        logits = torch.cat(last)
        rows = torch.arange(B)
        tok = torch.multinomial(torch.softmax(logits, -1), 1, generator=g)
        t0, c0 = time.perf_counter(), time.process_time()
        for s in range(a.tokens):
            logits = step(tok, rows, a.prompt + s)
            tok = torch.multinomial(torch.softmax(logits, -1), 1, generator=g)
        t_decode, c_decode = time.perf_counter() - t0, time.process_time() - c0
    print(json.dumps({"impl": "pytorch " + torch.__version__, "model": a.config, "batch": B, "prompt": a.prompt,
                      "tokens": a.tokens, "threads": torch.get_num_threads(),
                      "prefill_tokens_per_s": B * a.prompt / t_prefill, "decode_tokens_per_s": B * a.tokens / t_decode,
                      "decode_step_ms": 1e3 * t_decode / a.tokens,
                      "prefill_cpu_tokens_per_s": B * a.prompt / c_prefill, "decode_cpu_tokens_per_s": B * a.tokens / c_decode,
                      "decode_cpu_step_ms": 1e3 * c_decode / a.tokens}))


if __name__ == "__main__":
    main()
