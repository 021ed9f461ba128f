#!/usr/bin/python3
"""grpo_torch.py - the PyTorch-eager peer of one `bench/grpo_step.sh` GRPO step (LoRA, pointwise judge):
the same work as judgerl's step, timed per phase. Dev-time only (python3-torch).

  generate  P prompts of PROMPT random tokens x G completions of TOKENS tokens each (temperature 1,
            multinomial sampling), all P*G rows as one batch with a preallocated KV cache, under
            torch.inference_mode and torch.autocast("cpu", dtype=torch.bfloat16)
  judge     one pointwise request per completion to the loopback judge (tests/judge_server.py at
            --judge-url), all in flight at once (a thread per request), "[RESULT] N" parsed
  update    GRPO's clipped objective (group-normalised advantages, ratio to the detached log-probs of
            the same forward: one update per batch, beta 0, token mean over the completions), forward
            and backward under autocast bf16 in micro-batches of --micro rows, gradient clipping to
            1.0 and AdamW on the adapters only

The model: Qwen2 layout (train_torch.CONFIGS, random normal(0, 0.02) weights, fp32 master), LoRA of
rank R, alpha 2R on q, k, v, o, gate, up, down as PEFT computes it (W x + alpha/R B A x, the base
frozen; A ~ U(+-1/sqrt(in)), B = 0 -> the same log-probs as the base at the first step).

Usage: /usr/bin/python3 bench/grpo_torch.py --judge-url http://127.0.0.1:PORT/v1 [--config 0.5b] [--prompts 8]
       [--group 8] [--prompt 16] [--tokens 128] [--rank 16] [--micro 32] [--threads N]
Prints one JSON object: time/generate, time/judge_wait, time/update, the step, tokens and rates.
"""
import argparse, json, os, re, sys, threading, time, urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch_twin  # noqa: E402
from train_torch import CONFIGS, bench_model  # noqa: E402

F = torch.nn.functional
TARGETS = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj",
           "mlp.up_proj", "mlp.down_proj")


def judge(url, texts):
    """One chat request per text, all in flight at once -> the [RESULT] scores (1..5, None if absent)."""
    out = [None] * len(texts)

    def one(i):
        body = json.dumps({"model": "bench", "max_tokens": 64, "messages": [
            {"role": "user", "content": "Score the response 1-5.\n" + texts[i]}]}).encode()
        req = urllib.request.Request(url + "/chat/completions", body, {"Content-Type": "application/json"})
        ans = json.load(urllib.request.urlopen(req, timeout=60))["choices"][0]["message"]["content"]
        m = re.search(r"\[RESULT\]\s*(\d+)", ans)
        out[i] = int(m.group(1)) if m else None

    th = [threading.Thread(target=one, args=(i,)) for i in range(len(texts))]
    for t in th:
        t.start()
    for t in th:
        t.join()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="0.5b", choices=sorted(CONFIGS))
    ap.add_argument("--judge-url", required=True)
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--prompt", type=int, default=16)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--rank", type=int, default=16)
    ap.add_argument("--micro", type=int, default=32)
    ap.add_argument("--threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS", "0") or 0))
    a = ap.parse_args()
    g = torch.Generator().manual_seed(1)
    c, P = bench_model(a.config, a.threads, g)
    H, nh, nkv, L, V = (c[k] for k in ("hidden_size", "num_attention_heads", "num_key_value_heads",
                                         "num_hidden_layers", "vocab_size"))
    D, R = H // nh, a.rank
    scale = 2.0 * R / R  # alpha = 2R
    ad = {}
    for l in range(L):
        for t in TARGETS:
            n = f"model.layers.{l}.{t}"
            out_f, in_f = P[n + ".weight"].shape
            A = (torch.rand(R, in_f, generator=g) * 2 - 1) / in_f ** 0.5
            ad[n] = (A.requires_grad_(True), torch.zeros(out_f, R, requires_grad=True))
    params = [t for pair in ad.values() for t in pair]
    opt = torch.optim.AdamW(params, lr=1e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    Tmax = a.prompt + a.tokens
    f = torch_twin.inv_freq(c).float()
    ang = torch.outer(torch.arange(Tmax).float(), f)
    cos_t, sin_t = torch.cat((ang, ang), -1).cos(), torch.cat((ang, ang), -1).sin()

    def lin(x, n):
        y = F.linear(x, P[n + ".weight"], P.get(n + ".bias"))
        if n in ad:
            A, B = ad[n]
            y = y + scale * F.linear(F.linear(x, A), B)
        return y

    def forward(ids, pos0, K=None, Vc=None):
        return torch_twin.cached_hidden(c, P, lin, ids, pos0, cos_t, sin_t, K, Vc)

    NR = a.prompts * a.group
    prompts = torch.randint(0, V, (a.prompts, a.prompt), generator=g).repeat_interleave(a.group, 0)
    t_step = time.perf_counter()
    # ---- generate
    t0 = time.perf_counter()
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
        K = [torch.zeros(NR, nkv, Tmax, D, dtype=torch.bfloat16) for _ in range(L)]
        Vc = [torch.zeros(NR, nkv, Tmax, D, dtype=torch.bfloat16) for _ in range(L)]
        h = forward(prompts, 0, K, Vc)[:, -1]
        toks = []
        for s in range(a.tokens):
            logits = (h @ P["model.embed_tokens.weight"].T).float()
            tok = torch.multinomial(torch.softmax(logits, -1), 1, generator=g)
            toks.append(tok)
            if s + 1 < a.tokens:
                h = forward(tok, a.prompt + s, K, Vc)[:, -1]
        comp = torch.cat(toks, 1)
    del K, Vc
    t_gen = time.perf_counter() - t0
    # ---- judge
    t0 = time.perf_counter()
    scores = judge(a.judge_url, [" ".join(map(str, row.tolist())) for row in comp])
    t_judge = time.perf_counter() - t0
    r = torch.tensor([float(s or 0) for s in scores]).view(a.prompts, a.group)
    adv = ((r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True) + 1e-4)).view(NR)
    # ---- update
    t0 = time.perf_counter()
    seq = torch.cat([prompts, comp], 1)
    ids, tg = seq[:, :-1], seq[:, 1:]
    n_tok = NR * a.tokens
    opt.zero_grad()
    for m0 in range(0, NR, a.micro):
        sl = slice(m0, min(NR, m0 + a.micro))
        with torch.autocast("cpu", dtype=torch.bfloat16):
            hs = forward(ids[sl], 0)[:, a.prompt - 1:]  # the positions that predict completion tokens
            logits = (hs @ P["model.embed_tokens.weight"].T).float()
        lp = torch.log_softmax(logits, -1).gather(-1, tg[sl, a.prompt - 1:, None]).squeeze(-1)
        ratio = torch.exp(lp - lp.detach())
        A = adv[sl, None]
        loss = -torch.min(ratio * A, ratio.clamp(0.8, 1.2) * A).sum() / n_tok
        loss.backward()
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    opt.step()
    t_upd = time.perf_counter() - t0
    t_all = time.perf_counter() - t_step
    import resource
    print(json.dumps({"impl": "pytorch " + torch.__version__ + " eager, autocast bf16, LoRA", "config": a.config,
                      "prompts": a.prompts, "group": a.group, "prompt_tokens": a.prompt, "completion_tokens": a.tokens,
                      "rank": R, "threads": torch.get_num_threads(), "time/generate": round(t_gen, 3),
                      "time/judge_wait": round(t_judge, 3), "time/update": round(t_upd, 3), "step_s": round(t_all, 3),
                      "generate_tokens_per_s": round(n_tok / t_gen, 2),
                      "update_tokens_per_s": round(NR * (a.prompt + a.tokens) / t_upd, 2),
                      "judged": sum(s is not None for s in scores),
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}))


if __name__ == "__main__":
    main()
