#!/usr/bin/python3
"""clf_twin.py - PyTorch twin of seed 1's SimpleTransformer classifier; writes tests/fixtures/clf_twin.json.

Dev-time only (/usr/bin/python3 with python3-torch). The model is seed 1's class verbatim
(embedding, nn.MultiheadAttention without mask, mean pooling over the sequence, fc1 + ReLU + fc2),
at a small vocabulary and hidden size so the fixture stays small. The fixture holds the
parameters, a batch (with padding), the logits, the loss, every gradient, the parameters after
3 Adam steps (seed 1's supervised optimizer) and after 3 AdamW steps (its distillation optimizer),
and the whitespace vocabulary / encoding of a few texts. tests/test_classifier.c compares the C
implementation against it.
"""
import json, os, sys
import torch
import torch.nn as nn

NAMES = ["embedding.weight", "attention.in_proj_weight", "attention.in_proj_bias", "attention.out_proj.weight",
         "attention.out_proj.bias", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]


class SimpleTransformer(nn.Module):  # seed 1, verbatim apart from the sizes
    def __init__(self, vocab_size, embed_dim=16, num_heads=2, hidden_dim=32, num_labels=3):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_dim)
        self.attention = nn.MultiheadAttention(embed_dim, num_heads)
        self.fc1 = nn.Linear(embed_dim, hidden_dim)
        self.fc2 = nn.Linear(hidden_dim, num_labels)
        self.relu = nn.ReLU()

    def forward(self, input_ids):
        embedded = self.embedding(input_ids).permute(1, 0, 2)
        attn_output, _ = self.attention(embedded, embedded, embedded)
        pooled = attn_output.mean(dim=0)
        hidden = self.relu(self.fc1(pooled))
        return self.fc2(hidden)


def flat(model, grad=False):
    sd = dict(model.named_parameters())
    out = []
    for n in NAMES:
        t = sd[n].grad if grad else sd[n].data
        out += [float(x) for x in t.detach().reshape(-1)]
    return out


def r(xs):
    return [float("%.9g" % x) for x in xs]


def main(path):
    torch.manual_seed(1)
    V, E, H, F, L, T = 9, 16, 2, 8, 3, 10
    texts = ["Will I be rich someday?", "Should I ask my crush out?", "Will it  RAIN tomorrow?"]
    words = sorted(set(w for t in texts for w in t.lower().split()))
    vocab = {"<pad>": 0, "<unk>": 1}
    for i, w in enumerate(words, start=2):
        vocab[w] = i
    probe = "will I be  successful? Rich"
    enc = [vocab.get(w, 1) for w in probe.lower().split()][:T]
    enc += [0] * (T - len(enc))
    model = SimpleTransformer(V, E, H, F, L)
    with torch.no_grad():  # non-zero biases so their gradients are exercised
        model.attention.in_proj_bias.uniform_(-0.3, 0.3)
        model.attention.out_proj.bias.uniform_(-0.3, 0.3)
    params0 = flat(model)
    ids = torch.tensor([[2, 5, 3, 7, 0, 0, 0, 0, 0, 0], [8, 8, 1, 4, 6, 2, 3, 0, 0, 0], [1, 2, 3, 4, 5, 6, 7, 8, 2, 3]])
    labels = torch.tensor([2, 0, 1])
    logits = model(ids)
    loss = nn.CrossEntropyLoss()(logits, labels)
    loss.backward()
    grads = flat(model, grad=True)
    out = {"dims": {"vocab": V, "embed": E, "heads": H, "hidden": F, "labels": L, "max_len": T},
           "params": r(params0), "ids": ids.reshape(-1).tolist(), "labels": labels.tolist(),
           "logits": r(logits.detach().reshape(-1).tolist()), "loss": float(loss), "grads": r(grads),
           "texts": texts, "vocab": ["<pad>", "<unk>"] + words, "probe": probe, "probe_ids": enc}
    for key, opt_cls, kw in (("after_adam", torch.optim.Adam, {}), ("after_adamw", torch.optim.AdamW, {"weight_decay": 0.01})):
        m = SimpleTransformer(V, E, H, F, L)
        with torch.no_grad():
            off = 0
            sd = dict(m.named_parameters())
            for n in NAMES:
                k = sd[n].numel()
                sd[n].copy_(torch.tensor(params0[off:off + k]).reshape(sd[n].shape))
                off += k
        opt = opt_cls(m.parameters(), lr=1e-2, **kw)
        for _ in range(3):
            opt.zero_grad()
            nn.CrossEntropyLoss()(m(ids), labels).backward()
            opt.step()
        out[key] = r(flat(m))
    with open(path, "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "clf_twin.json"))
