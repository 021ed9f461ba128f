#!/usr/bin/python3
"""torch_twin.py - the PyTorch twin of judgerl's engine: writes tiny random HF-layout models and
reference outputs (logits, loss, every gradient, 10 AdamW steps) as fixtures for the C tests.

Dev-time only (Debian's python3-torch; transformers is not needed): the model below is written in
plain torch following transformers' modeling_llama / modeling_qwen2 / modeling_qwen3 semantics
(rotate_half RoPE, llama3 rope scaling, repeat_kv GQA, q/k RMSNorm before RoPE in Qwen3, RMSNorm
as x * rsqrt(mean(x^2) + eps) * w, attention_mask for right padding). Everything is computed in
float64 and stored as float32, so the fixture is the exact answer up to fp32 rounding.

Usage: /usr/bin/python3 tools/torch_twin.py [OUT_DIR]   (default tests/fixtures/engine)
"""
import json, math, os, struct, sys

import torch

torch.set_default_dtype(torch.float64)

# The fixture models: every feature of the layout at least once, with odd sizes.
CONFIGS = {
    # Llama, GQA 4:2, explicit head_dim 6 (q width 24 != hidden 20), untied head, llama3 rope scaling
    "llama_gqa": dict(architectures=["LlamaForCausalLM"], model_type="llama", hidden_size=20, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=6, intermediate_size=36,
                      vocab_size=61, max_position_embeddings=64, rms_norm_eps=1e-5, rope_theta=500.0,
                      rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                                        original_max_position_embeddings=16),
                      tie_word_embeddings=False, attention_bias=False, hidden_act="silu", bos_token_id=1,
                      eos_token_id=2, torch_dtype="float32"),
    # Qwen2, multi-query (kv heads 1), q/k/v bias, tied head, vocab 53, hidden 18 (head_dim 6)
    "qwen2_bias": dict(architectures=["Qwen2ForCausalLM"], model_type="qwen2", hidden_size=18, num_hidden_layers=2,
                       num_attention_heads=3, num_key_value_heads=1, intermediate_size=28, vocab_size=53,
                       max_position_embeddings=64, rms_norm_eps=1e-6, rope_theta=10000.0, rope_scaling=None,
                       tie_word_embeddings=True, hidden_act="silu", bos_token_id=None, eos_token_id=[3, 4],
                       use_sliding_window=False, torch_dtype="float32"),
    # Qwen3, q/k norm, head_dim 10 (not a power of two, != hidden/heads), GQA 4:2, untied, vocab 47
    "qwen3_qknorm": dict(architectures=["Qwen3ForCausalLM"], model_type="qwen3", hidden_size=12, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=10, intermediate_size=30,
                         vocab_size=47, max_position_embeddings=64, rms_norm_eps=1e-6, rope_theta=1000000.0,
                         rope_scaling=None, tie_word_embeddings=False, attention_bias=False, hidden_act="silu",
                         bos_token_id=None, eos_token_id=5, use_sliding_window=False, torch_dtype="float32"),
    # Qwen3 with a tied head (as the small Qwen3 models) and attention_bias (q/k/v/o bias)
    "qwen3_tied_bias": dict(architectures=["Qwen3ForCausalLM"], model_type="qwen3", hidden_size=14,
                            num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2, head_dim=8,
                            intermediate_size=22, vocab_size=37, max_position_embeddings=64, rms_norm_eps=1e-6,
                            rope_theta=10000.0, rope_scaling=None, tie_word_embeddings=True, attention_bias=True,
                            hidden_act="silu", eos_token_id=5, torch_dtype="float32"),
}

# The batch: 2 sequences of T=7, the second right-padded to length 5; targets -1 are not scored
# (the first tokens play the prompt).
T = 7
LENGTHS = [7, 5]
TEMPERATURE = 0.7
# AdamW run: 10 optimizer steps on the same batch, each accumulating 2 micro-batches (one row each).
ADAM = dict(lr=3e-2, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1, warmup=3, steps=10, schedule="cosine",
            max_grad_norm=1.0)


def tensor_list(c):
    """(name, shape, decay) in judgerl's order (hfmodel.h jr_model_tensors)."""
    H, L, V, I = c["hidden_size"], c["num_hidden_layers"], c["vocab_size"], c["intermediate_size"]
    nh, nkv = c["num_attention_heads"], c["num_key_value_heads"]
    D = c.get("head_dim") or H // nh
    arch = c["model_type"]
    qkv_bias = arch == "qwen2" or c.get("attention_bias", False)
    o_bias = arch != "qwen2" and c.get("attention_bias", False)
    out = [("model.embed_tokens.weight", (V, H))]
    for l in range(L):
        p = f"model.layers.{l}."
        out += [(p + "input_layernorm.weight", (H,)), (p + "self_attn.q_proj.weight", (nh * D, H)),
                (p + "self_attn.k_proj.weight", (nkv * D, H)), (p + "self_attn.v_proj.weight", (nkv * D, H)),
                (p + "self_attn.o_proj.weight", (H, nh * D))]
        if qkv_bias:
            out += [(p + "self_attn.q_proj.bias", (nh * D,)), (p + "self_attn.k_proj.bias", (nkv * D,)),
                    (p + "self_attn.v_proj.bias", (nkv * D,))]
        if o_bias:
            out += [(p + "self_attn.o_proj.bias", (H,))]
        if arch == "qwen3":
            out += [(p + "self_attn.q_norm.weight", (D,)), (p + "self_attn.k_norm.weight", (D,))]
        out += [(p + "post_attention_layernorm.weight", (H,)), (p + "mlp.gate_proj.weight", (I, H)),
                (p + "mlp.up_proj.weight", (I, H)), (p + "mlp.down_proj.weight", (H, I))]
    out += [("model.norm.weight", (H,))]
    if not c["tie_word_embeddings"]:
        out += [("lm_head.weight", (V, H))]
    return out


def inv_freq(c):
    D = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
    f = 1.0 / (c["rope_theta"] ** (torch.arange(0, D, 2, dtype=torch.int64).double() / D))
    rs = c.get("rope_scaling")
    if rs and rs.get("rope_type", rs.get("type")) == "llama3":  # transformers _compute_llama3_parameters
        factor, lo, hi, old = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"], rs["original_max_position_embeddings"]
        low_wl, high_wl = old / lo, old / hi
        wl = 2 * math.pi / f
        f_l = torch.where(wl > low_wl, f / factor, f)
        smooth = (old / wl - lo) / (hi - lo)
        smoothed = (1 - smooth) * f_l / factor + smooth * f_l
        is_medium = ~(wl < high_wl) * ~(wl > low_wl)
        f = torch.where(is_medium, smoothed, f_l)
    return f


def rmsnorm(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def forward(c, P, ids, attn_mask):
    """logits (B,T,V) as transformers computes them for right-padded ids with attention_mask."""
    B, Tn = ids.shape
    H, nh, nkv = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
    D = c.get("head_dim") or H // nh
    eps = c["rms_norm_eps"]
    qk_norm = c["model_type"] == "qwen3"
    dt = torch.get_default_dtype()  # float64 for fixtures; float32 in bench/train_torch.py
    pos = torch.arange(Tn).to(dt)
    freqs = torch.outer(pos, inv_freq(c).to(dt))
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos()[None, None], emb.sin()[None, None]
    causal = torch.tril(torch.ones(Tn, Tn, dtype=torch.bool))
    allowed = causal[None, None] & attn_mask[:, None, None, :].bool()
    bias = torch.where(allowed, 0.0, torch.finfo(dt).min)
    lin = lambda x, n: x @ P[n + ".weight"].T + (P[n + ".bias"] if n + ".bias" in P else 0)
    x = P["model.embed_tokens.weight"][ids]
    for l in range(c["num_hidden_layers"]):
        p = f"model.layers.{l}."
        h = rmsnorm(x, P[p + "input_layernorm.weight"], eps)
        q = lin(h, p + "self_attn.q_proj").view(B, Tn, nh, D)
        k = lin(h, p + "self_attn.k_proj").view(B, Tn, nkv, D)
        v = lin(h, p + "self_attn.v_proj").view(B, Tn, nkv, D)
        if qk_norm:
            q = rmsnorm(q, P[p + "self_attn.q_norm.weight"], eps)
            k = rmsnorm(k, P[p + "self_attn.k_norm.weight"], eps)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = nh // nkv
        k = k[:, :, None].expand(B, nkv, rep, Tn, D).reshape(B, nh, Tn, D)  # repeat_kv
        v = v[:, :, None].expand(B, nkv, rep, Tn, D).reshape(B, nh, Tn, D)
        att = torch.softmax(q @ k.transpose(2, 3) * D ** -0.5 + bias, dim=-1)
        o = (att @ v).transpose(1, 2).reshape(B, Tn, nh * D)
        x = x + lin(o, p + "self_attn.o_proj")
        h = rmsnorm(x, P[p + "post_attention_layernorm.weight"], eps)
        g = torch.nn.functional.silu(lin(h, p + "mlp.gate_proj")) * lin(h, p + "mlp.up_proj")
        x = x + lin(g, p + "mlp.down_proj")
    x = rmsnorm(x, P["model.norm.weight"], eps)
    head = P["model.embed_tokens.weight"] if c["tie_word_embeddings"] else P["lm_head.weight"]
    return x @ head.T


def cached_hidden(c, P, lin, ids, pos0, cos_t, sin_t, K=None, Vc=None, rows=slice(None)):
    """Final-norm hidden states (N, S, H) of ids (N, S) at positions pos0.. (Qwen2 layout, no q/k norm),
    the projections through lin(x, name) (a LoRA, autocast...); cos_t/sin_t (T, D) rotary tables. K, Vc:
    per-layer (rows, Hkv, T, D) KV caches, written at pos0.. of cache rows `rows` and attended up to
    pos0 + S (None: causal attention over ids alone, pos0 = 0)."""
    N, S = ids.shape
    H, nh, nkv = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
    D, eps, rep = H // nh, c["rms_norm_eps"], nh // nkv
    x = P["model.embed_tokens.weight"][ids]
    cos, sin = cos_t[pos0:pos0 + S][None, None], sin_t[pos0:pos0 + S][None, None]
    for l in range(c["num_hidden_layers"]):
        p = f"model.layers.{l}."
        h = rmsnorm(x, P[p + "input_layernorm.weight"], eps)
        q = lin(h, p + "self_attn.q_proj").view(N, S, nh, D).transpose(1, 2)
        k = lin(h, p + "self_attn.k_proj").view(N, S, nkv, D).transpose(1, 2)
        v = lin(h, p + "self_attn.v_proj").view(N, S, nkv, D).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if K is not None:
            K[l][rows, :, pos0:pos0 + S] = k
            Vc[l][rows, :, pos0:pos0 + S] = v
            k, v = K[l][rows, :, :pos0 + S], Vc[l][rows, :, :pos0 + S]
        kk, vv = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        s = q @ kk.transpose(2, 3) * D ** -0.5
        if S > 1:
            s = s + torch.triu(torch.full((S, pos0 + S), float("-inf")), diagonal=pos0 + 1)
        o = (torch.softmax(s.float(), -1).to(vv.dtype) @ vv).transpose(1, 2).reshape(N, S, nh * D)
        x = x + lin(o, p + "self_attn.o_proj")
        h = rmsnorm(x, P[p + "post_attention_layernorm.weight"], eps)
        x = x + lin(torch.nn.functional.silu(lin(h, p + "mlp.gate_proj")) * lin(h, p + "mlp.up_proj"), p + "mlp.down_proj")
    return rmsnorm(x, P["model.norm.weight"], eps)


def token_logprobs(logits, targets, temperature=1.0):
    lp = torch.log_softmax(logits / temperature, dim=-1)
    t = targets.clamp(min=0)
    return torch.where(targets >= 0, lp.gather(-1, t[..., None])[..., 0], torch.zeros(()))


def loss_sum(c, P, ids, targets, mask):
    return -token_logprobs(forward(c, P, ids, mask), targets).sum()


def lr_at(step):
    a = ADAM
    if step < a["warmup"]:
        return a["lr"] * step / max(1, a["warmup"])
    prog = (step - a["warmup"]) / max(1, a["steps"] - a["warmup"])
    return a["lr"] * max(0.0, 0.5 * (1.0 + math.cos(math.pi * prog)))


def st_write(path, entries):
    """Minimal safetensors writer: entries are (name, tensor) with float32 or int32 tensors."""
    header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for name, t in entries:
        t = t.contiguous()
        dt = {torch.float32: "F32", torch.int32: "I32"}[t.dtype]
        b = t.numpy().tobytes()
        header[name] = {"dtype": dt, "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def make(name, c, out_dir, seed):
    g = torch.Generator().manual_seed(seed)
    names = tensor_list(c)
    P = {}
    for n, shape in names:
        if n.endswith("norm.weight"):
            P[n] = 1.0 + 0.2 * torch.randn(shape, generator=g)
        elif n.endswith(".bias"):
            P[n] = 0.1 * torch.randn(shape, generator=g)
        else:
            P[n] = 0.25 * torch.randn(shape, generator=g)
        P[n] = P[n].float().double()  # the fp32 weights both sides start from
    V, B = c["vocab_size"], len(LENGTHS)
    ids = torch.randint(0, V, (B, T), generator=g)
    mask = torch.zeros(B, T, dtype=torch.int64)
    targets = torch.full((B, T), -1, dtype=torch.int64)
    for b, n in enumerate(LENGTHS):
        mask[b, :n] = 1
        ids[b, n:] = 0                       # pad id
        targets[b, 1 + b:n - 1] = ids[b, 2 + b:n]  # next tokens; the first 1+b positions are "prompt"
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(c, f, indent=2)
    st_write(os.path.join(d, "model.safetensors"), [(n, P[n].float()) for n, _ in names])

    for t in P.values():
        t.requires_grad_(True)
    logits = forward(c, P, ids, mask)
    n_tok = int((targets >= 0).sum())
    loss = -token_logprobs(logits, targets).sum() / n_tok
    loss.backward()
    lp_t = token_logprobs(logits.detach(), targets, TEMPERATURE)

    # row 0 alone (what `judgerl forward` computes for one sequence): its loss and gradients
    R = {n: P[n].detach().clone().requires_grad_(True) for n, _ in names}
    n0 = int((targets[0] >= 0).sum())
    loss0 = loss_sum(c, R, ids[:1], targets[:1], mask[:1]) / n0
    loss0.backward()

    # the RL path (GRPO): gradient of sum(w * logprob at temperature T) for random weights w, for
    # the smallest fixture only (keeps the fixtures small)
    rl = []
    if name == "qwen3_tied_bias":
        S = {n: P[n].detach().clone().requires_grad_(True) for n, _ in names}
        w = torch.randn(targets.shape, generator=g).float().double() * (targets >= 0)
        (w * token_logprobs(forward(c, S, ids, mask), targets, TEMPERATURE)).sum().backward()
        rl = [("dlp_weights", w.float())] + [("gradT." + n, S[n].grad.float()) for n, _ in names]

    # AdamW: decay on 2-D weights only (not norms, not biases); cosine schedule with warmup;
    # global-norm clipping; 2 micro-batches per step (equal to the full batch in exact math).
    Q = {n: P[n].detach().clone().requires_grad_(True) for n, _ in names}
    decay = [Q[n] for n, s in names if len(s) == 2]
    no_decay = [Q[n] for n, s in names if len(s) != 2]
    a = ADAM
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a["weight_decay"]},
                             {"params": no_decay, "weight_decay": 0.0}], lr=a["lr"], betas=a["betas"], eps=a["eps"])
    losses = []
    for s in range(a["steps"]):
        for gr in opt.param_groups:
            gr["lr"] = lr_at(s)
        opt.zero_grad()
        l = loss_sum(c, Q, ids, targets, mask) / n_tok
        l.backward()
        losses.append(l.item())
        torch.nn.utils.clip_grad_norm_(list(Q.values()), a["max_grad_norm"])
        opt.step()

    ref = [("ids", ids.int()), ("targets", targets.int()), ("lengths", torch.tensor(LENGTHS, dtype=torch.int32)),
           ("logits", logits.detach().float()), ("loss", loss.detach().reshape(1).float()),
           ("logprobs_t", lp_t.float()), ("temperature", torch.tensor([TEMPERATURE], dtype=torch.float32)),
           ("adamw_losses", torch.tensor(losses, dtype=torch.float32))]
    ref += [("grad." + n, P[n].grad.float()) for n, _ in names]
    ref += rl
    ref += [("loss0", loss0.detach().reshape(1).float())]
    ref += [("grad0." + n, R[n].grad.float()) for n, _ in names]
    st_write(os.path.join(d, "reference.safetensors"), ref)
    print(f"{name}: loss {loss.item():.6f}, adamw losses {losses[0]:.4f} -> {losses[-1]:.4f}")


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "engine")
    with open(os.path.join(out_dir, "adamw.json"), "w") as f:
        json.dump(dict(ADAM, betas=list(ADAM["betas"]), micro_batches=2), f, indent=2)
    for i, (name, c) in enumerate(CONFIGS.items()):
        make(name, c, out_dir, 1000 + i)


if __name__ == "__main__":
    main()
