#!/usr/bin/python3
"""train_torch.py - the PyTorch side of `judgerl bench train`: the same training step (forward, loss,
backward, clipping, AdamW) of the same Qwen2-layout config in fp32 PyTorch, on random tokens, with the
same thread count. Prints one JSON object (tokens_per_s, step_ms). Dev-time only (python3-torch).

The model is tools/torch_twin.py's HF-semantics forward (eager attention with repeat_kv, as
transformers runs on PyTorch 1.13, which has no fused scaled_dot_product_attention).

--autocast runs forward and loss under torch.autocast("cpu", dtype=torch.bfloat16) (bf16 matmuls,
fp32 weights and optimizer: the peer of judgerl's model.compute bfloat16).

Usage: /usr/bin/python3 bench/train_torch.py --config 10m|100m|0.5b [--batch 8] [--seq 256] [--steps 5] [--threads N]
       [--autocast]
"""
import argparse, json, os, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import torch  # noqa: E402
import torch_twin  # noqa: E402

CONFIGS = {
    "10m": dict(hidden_size=256, num_hidden_layers=6, num_attention_heads=8, num_key_value_heads=4,
                intermediate_size=768, vocab_size=8192),
    "100m": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, num_key_value_heads=4,
                 intermediate_size=2048, vocab_size=32000),
    # Qwen2.5-0.5B's shapes (494M parameters, tied)
    "0.5b": dict(hidden_size=896, num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
                 intermediate_size=4864, vocab_size=151936),
}


def bench_model(name, threads, generator):
    """The config dict and random fp32 weights (normal(0, 0.02), norms 1, biases 0) of a bench config, with
    torch set to fp32 (torch_twin defaults to float64 for its checks) and `threads` threads (0: torch's)."""
    if threads > 0:
        torch.set_num_threads(threads)
    torch.set_default_dtype(torch.float32)
    c = dict(CONFIGS[name], architectures=["Qwen2ForCausalLM"], model_type="qwen2", max_position_embeddings=4096,
             rms_norm_eps=1e-6, rope_theta=10000.0, rope_scaling=None, tie_word_embeddings=True)
    P = {}
    for n, shape in torch_twin.tensor_list(c):
        P[n] = torch.ones(shape) if n.endswith("norm.weight") else torch.zeros(shape) if n.endswith(".bias") \
            else 0.02 * torch.randn(shape, generator=generator)
    return c, P


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True, choices=sorted(CONFIGS))
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS", "0") or 0))
    ap.add_argument("--autocast", action="store_true")
    a = ap.parse_args()
    g = torch.Generator().manual_seed(1)
    c, P = bench_model(a.config, a.threads, g)
    for t in P.values():
        t.requires_grad_(True)
    params = list(P.values())
    opt = torch.optim.AdamW(params, lr=1e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    B, T, V = a.batch, a.seq, c["vocab_size"]
    ids = torch.randint(0, V, (B, T), generator=g)
    tg = torch.randint(0, V, (B, T), generator=g)
    mask = torch.ones(B, T, dtype=torch.int64)
    total = 0.0
    for s in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.autocast):
            logits = torch_twin.forward(c, P, ids, mask)
            loss = torch.nn.functional.cross_entropy(logits.view(-1, V).float(), tg.view(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        if s >= a.warmup:
            total += time.perf_counter() - t0
    import resource
    print(json.dumps(dict(impl="pytorch " + torch.__version__, autocast_bf16=a.autocast, config=a.config, batch=B, seq=T, steps=a.steps,
                          threads=torch.get_num_threads(), step_ms=1e3 * total / a.steps,
                          tokens_per_s=B * T * a.steps / total, loss=loss.item(),
                          peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0)))


if __name__ == "__main__":
    main()
