#!/usr/bin/python3
"""grpo_model_twin.py - the PyTorch twin of judgerl's GRPO through the real model and of its LoRA.

1. The clipped GRPO objective through the model: for the engine's qwen2_bias fixture model, a batch
   of two sequences with advantages, old log-probs (so ratios differ from 1 and some are clipped)
   and reference log-probs, the loss of TRL's GRPOTrainer (loss_type grpo, beta 0.04, epsilon 0.2,
   epsilon_high 0.28, temperature 0.7) and its gradient with respect to every weight by autograd
   (tests/fixtures/grpo/policy_grad.safetensors).
2. LoRA: for the same model it writes a PEFT adapter (adapter_config.json + adapter_model.safetensors with PEFT's tensor names,
B non-zero) and the expected results: per-token log-probs at temperature 0.7 of the adapted model
and the gradients of sum(w * logprob) with respect to every lora_A / lora_B (torch autograd), in
float64 stored as float32. The adapted projection is computed as PEFT computes it:
x W^T + b + (alpha / r) * (x A^T) B^T.

Dev-time only (Debian's python3-torch). Usage: /usr/bin/python3 tools/grpo_model_twin.py [OUT_DIR]
(LoRA fixture dir, default tests/fixtures/grpo/lora; the policy fixture goes to its parent)."""
import json, os, struct, sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_twin as tt  # noqa: E402

torch.set_default_dtype(torch.float64)
HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "tests", "fixtures", "engine", "qwen2_bias")
RANK, ALPHA, TEMP = 2, 6.0, 0.7
MODULES = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def st_read(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
        data = f.read()
    out = {}
    for k, v in h.items():
        if k == "__metadata__":
            continue
        a, b = v["data_offsets"]
        t = torch.frombuffer(bytearray(data[a:b]), dtype={"F32": torch.float32, "I32": torch.int32}[v["dtype"]])
        out[k] = t.reshape(v["shape"])
    return out


def forward_peft(c, W, L, ids, mask):
    # torch_twin.forward uses `x @ P[name + ".weight"].T`; give it an object whose .T applies
    # x A^T B^T separately from x W^T, as PEFT's LoraLayer does.
    class Lin:
        def __init__(self, w, a, b):
            self.w, self.a, self.b = w, a, b

        @property
        def T(self):
            return self

        def __rmatmul__(self, x):
            out = x @ self.w.T
            if self.a is not None:
                out = out + (ALPHA / RANK) * ((x @ self.a.T) @ self.b.T)
            return out

    P = dict(W)
    for n in list(W):
        if n.endswith(".weight") and any(m in n for m in MODULES):
            base = n[:-len(".weight")]
            a = L.get("base_model.model." + base + ".lora_A.weight")
            b = L.get("base_model.model." + base + ".lora_B.weight")
            P[n] = Lin(W[n], a, b)
    return tt.forward(c, P, ids, mask)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "tests", "fixtures", "grpo", "lora")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(MODEL, "config.json")) as f:
        c = json.load(f)
    W = {k: v.double() for k, v in st_read(os.path.join(MODEL, "model.safetensors")).items()}
    g = torch.Generator().manual_seed(7)
    L = {}
    for n, shape in tt.tensor_list(c):
        if n.endswith(".weight") and any(m in n for m in MODULES):
            base = n[:-len(".weight")]
            L["base_model.model." + base + ".lora_A.weight"] = (0.3 * torch.randn(RANK, shape[1], generator=g)).float().double()
            L["base_model.model." + base + ".lora_B.weight"] = (0.3 * torch.randn(shape[0], RANK, generator=g)).float().double()
    B, T = 2, 7
    ids = torch.randint(0, c["vocab_size"], (B, T), generator=g)
    mask = torch.ones(B, T, dtype=torch.int64)
    mask[1, 5:] = 0
    ids[1, 5:] = 0
    targets = torch.full((B, T), -1, dtype=torch.int64)
    targets[0, 1:6] = ids[0, 2:7]
    targets[1, 2:4] = ids[1, 3:5]
    w = (torch.randn(B, T, generator=g) * (targets >= 0)).float().double()
    for t in L.values():
        t.requires_grad_(True)
    logits = forward_peft(c, W, L, ids, mask)
    lp = tt.token_logprobs(logits, targets, TEMP)
    (w * lp).sum().backward()
    cfg = {"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": RANK, "lora_alpha": ALPHA, "lora_dropout": 0.0,
           "target_modules": MODULES, "bias": "none", "fan_in_fan_out": False, "use_rslora": False,
           "use_dora": False, "base_model_name_or_path": "qwen2_bias"}
    with open(os.path.join(out, "adapter_config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    tt.st_write(os.path.join(out, "adapter_model.safetensors"), [(k, v.detach().float()) for k, v in L.items()])
    ref = [("ids", ids.int()), ("targets", targets.int()), ("weights", w.float()), ("logprobs", lp.detach().float())]
    ref += [("grad." + k, v.grad.float()) for k, v in L.items()]
    tt.st_write(os.path.join(out, "expected.safetensors"), ref)
    print("lora twin: %d adapter tensors, sum(w lp) = %.6f" % (len(L), (w * lp).sum().item()))


def policy_fixture(out):
    with open(os.path.join(MODEL, "config.json")) as f:
        c = json.load(f)
    W = {k: v.double().requires_grad_(True) for k, v in st_read(os.path.join(MODEL, "model.safetensors")).items()}
    g = torch.Generator().manual_seed(11)
    B, T = 2, 7
    ids = torch.randint(0, c["vocab_size"], (B, T), generator=g)
    mask = torch.ones(B, T, dtype=torch.int64)
    mask[1, 6:] = 0
    ids[1, 6:] = 0
    targets = torch.full((B, T), -1, dtype=torch.int64)
    targets[0, 2:6] = ids[0, 3:7]     # prompt 3 tokens, 4 completion tokens
    targets[1, 1:5] = ids[1, 2:6]     # prompt 2 tokens, 4 completion tokens
    cm = (targets >= 0).double()
    lp = tt.token_logprobs(tt.forward(c, W, ids, mask), targets, TEMP)
    old = (lp.detach() + 0.15 * torch.randn(B, T, generator=g)).float().double() * cm
    ref = (lp.detach() + 0.5 * torch.randn(B, T, generator=g)).float().double() * cm
    adv = torch.tensor([0.8, -1.3])
    eps_lo, eps_hi, beta = 0.2, 0.28, 0.04
    ratio = torch.exp(lp - old)
    c1 = ratio * adv[:, None]
    c2 = torch.clamp(ratio, 1 - eps_lo, 1 + eps_hi) * adv[:, None]
    kl = torch.exp(ref - lp) - (ref - lp) - 1
    per_tok = -torch.min(c1, c2) + beta * kl
    loss = ((per_tok * cm).sum(-1) / cm.sum(-1).clamp(min=1)).mean()
    loss.backward()
    clipped = (((ratio < 1 - eps_lo) | (ratio > 1 + eps_hi)) & (cm > 0)).sum().item()
    ref_t = [("ids", ids.int()), ("targets", targets.int()), ("old", old.float()), ("ref", ref.float()),
             ("adv", adv.float()), ("loss", loss.detach().reshape(1).float())]
    ref_t += [("grad." + n, W[n].grad.float()) for n, _ in tt.tensor_list(c)]
    tt.st_write(os.path.join(out, "policy_grad.safetensors"), ref_t)
    print("policy twin: loss %.6f, %d of %d tokens outside the clip range" % (loss.item(), clipped, int(cm.sum())))


if __name__ == "__main__":
    main()
    policy_fixture(os.path.dirname(os.path.abspath(sys.argv[1])) if len(sys.argv) > 1 else
                   os.path.join(HERE, "..", "tests", "fixtures", "grpo"))
