#!/usr/bin/python3
"""make_serve_bpe_fixture.py - writes tests/fixtures/serve/bpe: a tiny HF byte-level BPE tokenizer.json
(ids 0..255 = the bytes in GPT-2's byte-to-unicode alphabet, 5 merges, 3 ChatML special tokens = 264
ids, the size of tests/fixtures/serve/tiny) and a tokenizer_config.json with a ChatML chat template.
Standard library only; run from the repository root."""
import json, os

def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))

b2u = bytes_to_unicode()
vocab = {b2u[b]: b for b in range(256)}
merges = [("t", "h"), ("th", "e"), ("Ġ", "c"), ("Ġc", "a"), ("Ġca", "t")]
for a, b in merges:
    vocab[a + b] = len(vocab)
specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
added = [{"id": len(vocab) + i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
          "normalized": False, "special": True} for i, s in enumerate(specials)]
tok = {
    "version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
    "post_processor": None,
    "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
    "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
              "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
              "vocab": vocab, "merges": [a + " " + b for a, b in merges]},
}
cfg = {
    "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", "bos_token": None,
    "chat_template": "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
                     "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
}
out = "tests/fixtures/serve/bpe"
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "tokenizer.json"), "w", encoding="utf-8") as f:
    json.dump(tok, f, ensure_ascii=False)
with open(os.path.join(out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
    json.dump(cfg, f, indent=1)
