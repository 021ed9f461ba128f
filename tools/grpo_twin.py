#!/usr/bin/python3
"""grpo_twin.py - PyTorch reference for tests/test_grpo_math.c (dev-time; prints C literals).

Follows TRL's GRPOTrainer: advantages (r - mean_g) / (std_g + 1e-4) with unbiased std,
per-token loss -min(r A, clip(r) A) + beta k3-KL, and the four loss_type normalisations.
Run: /usr/bin/python3 tools/grpo_twin.py > /tmp/grpo_expected.h
"""
import torch

torch.manual_seed(0)
N, T, G = 4, 5, 4
rewards = torch.tensor([1.0, 0.0, 0.5, 0.25])
mean = rewards.view(-1, G).mean(1).repeat_interleave(G)
std_g = rewards.view(-1, G).std(1).repeat_interleave(G)
adv_group = (rewards - mean) / (std_g + 1e-4)
adv_none = rewards - mean
lp = (torch.randn(N, T) * 0.3 - 1.0).double()
old = (lp + torch.randn(N, T).double() * 0.25)
ref = (lp + torch.randn(N, T).double() * 0.2)
mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0], [1, 1, 1, 1, 0]], dtype=torch.float64)


def loss_fn(lp_, adv, loss_type, eps_low=0.2, eps_high=0.28, beta=0.04, max_len=5, dapo_tokens=30.0):
    coef1 = torch.exp(lp_ - old)
    coef2 = torch.clamp(coef1, 1 - eps_low, 1 + eps_high)
    l1 = coef1 * adv.unsqueeze(1)
    l2 = coef2 * adv.unsqueeze(1)
    ptl = -torch.min(l1, l2)
    if beta != 0:
        kl = torch.exp(ref - lp_) - (ref - lp_) - 1
        ptl = ptl + beta * kl
    if loss_type == "grpo":
        return ((ptl * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).mean()
    if loss_type == "bnpo":
        return (ptl * mask).sum() / mask.sum().clamp(min=1.0)
    if loss_type == "dr_grpo":
        return (ptl * mask).sum() / (ptl.size(0) * max_len)
    return (ptl * mask).sum() / dapo_tokens


def arr(name, t):
    vals = ", ".join(f"{v:.17g}" for v in t.flatten().tolist())
    print(f"static const double {name}[] = {{{vals}}};")


arr("X_ADV_GROUP", adv_group)
arr("X_ADV_NONE", adv_none)
arr("X_LP", lp)
arr("X_OLD", old)
arr("X_REF", ref)
arr("X_MASK", mask)
for lt in ["grpo", "bnpo", "dr_grpo", "dapo"]:
    x = lp.clone().requires_grad_(True)
    loss = loss_fn(x, adv_group.double(), lt)
    loss.backward()
    print(f"static const double X_LOSS_{lt.upper()} = {loss.item():.17g};")
    arr(f"X_GRAD_{lt.upper()}", x.grad)
