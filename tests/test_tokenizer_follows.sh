#!/bin/sh
# test_tokenizer_follows.sh - issue 25: tokenizers follow the model. `convert` and `merge` outputs carry
# the model's tokenizer files (so generating from them does not fall back to bytes), `generate` and
# `serve` say which tokenizer they use, and a tokenizer with more ids than the model's vocabulary is
# an error naming both sizes.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
TINY="$JR_ROOT/tests/fixtures/serve/tiny"
T="$JR_TMP/tf"
mkdir -p "$T/m"
# a model directory with a BPE tokenizer (264 ids = the tiny model's vocab_size) and the usual extras
cp "$TINY/config.json" "$TINY/model.safetensors" "$JR_ROOT/tests/fixtures/serve/bpe/"*.json "$T/m/"
printf '{"eos_token": "<|endoftext|>"}\n' >"$T/m/special_tokens_map.json"
printf '{%% for m in messages %%}{{ m.content }}{%% endfor %%}' >"$T/m/chat_template.jinja"

has_tok() { # NAME DIR: every tokenizer file of $T/m is in DIR, byte for byte
  for f in tokenizer.json tokenizer_config.json special_tokens_map.json chat_template.jinja; do
    if ! cmp -s "$T/m/$f" "$2/$f"; then fail "$1" "$2/$f missing or different: $(ls "$2" | tr '\n' ' ')"; return; fi
  done
  ok "$1"
}

# convert
expect_ok convert_runs "$JR_BIN" convert --model "$T/m" -o "$T/conv" --dtype bfloat16
has_tok convert_output_carries_tokenizer "$T/conv"
"$JR_BIN" generate --model "$T/conv" --prompt "the cat" --max-tokens 2 --temperature 0 >"$T/gen.out" 2>"$T/gen.err"
if grep -q "tokenizer: $T/conv/tokenizer.json (the model's), 264 ids" "$T/gen.err"; then ok generate_from_converted_uses_its_tokenizer
else fail generate_from_converted_uses_its_tokenizer "$(cat "$T/gen.err")"; fi

# merge: a PEFT adapter (r=2 on q_proj, B = 0.01) folded into the model
mkdir -p "$T/adapter"
"$PY" - "$T/adapter" <<'EOF'
import json, struct, sys
d = sys.argv[1]
json.dump({"peft_type": "LORA", "r": 2, "lora_alpha": 4, "target_modules": ["q_proj"]}, open(d + "/adapter_config.json", "w"))
tensors, blobs, off = {}, [], 0
for l in range(2):
    for part, shape, v in (("A", [2, 32], 0.01), ("B", [32, 2], 0.01)):
        name = "base_model.model.model.layers.%d.self_attn.q_proj.lora_%s.weight" % (l, part)
        data = struct.pack("<%df" % (shape[0] * shape[1]), *([v] * (shape[0] * shape[1])))
        tensors[name] = {"dtype": "F32", "shape": shape, "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
h = json.dumps(tensors).encode()
h += b" " * (-len(h) % 8)
open(d + "/adapter_model.safetensors", "wb").write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
EOF
expect_ok merge_runs "$JR_BIN" merge --model "$T/m" --adapter "$T/adapter" -o "$T/merged"
has_tok merge_output_carries_tokenizer "$T/merged"
"$JR_BIN" generate --model "$T/merged" --prompt "the cat" --max-tokens 2 --temperature 0 >"$T/gen.out" 2>"$T/gen.err"
if grep -q "tokenizer: $T/merged/tokenizer.json (the model's)" "$T/gen.err"; then ok generate_from_merged_uses_its_tokenizer
else fail generate_from_merged_uses_its_tokenizer "$(cat "$T/gen.err")"; fi

# no tokenizer.json: the byte tokenizer, said so
"$JR_BIN" generate --model "$TINY" --prompt "hi" --max-tokens 1 --temperature 0 >"$T/gen.out" 2>"$T/gen.err"
if grep -q "tokenizer: byte ($TINY has no tokenizer.json)" "$T/gen.err"; then ok generate_says_byte_and_why
else fail generate_says_byte_and_why "$(cat "$T/gen.err")"; fi

# a tokenizer whose ids exceed the model's vocabulary: an error naming both sizes
"$PY" - "$T/m/tokenizer.json" "$T/big.json" <<'EOF'
import json, sys
t = json.load(open(sys.argv[1]))
n = max(t["model"]["vocab"].values()) + 1 + len(t.get("added_tokens", []))
for i in range(40):
    t["model"]["vocab"]["zz%d" % i] = n + i
for a in t.get("added_tokens", []):
    a["id"] += 40
json.dump(t, open(sys.argv[2], "w"))
EOF
expect_error tokenizer_larger_than_vocab_is_an_error "has 304 ids but the model's vocab_size is 264" \
  "$JR_BIN" generate --model "$TINY" --tokenizer "$T/big.json" --prompt "hi" --max-tokens 1

# serve says which tokenizer it uses
"$JR_BIN" serve --model "$T/conv" --port 0 2>"$T/serve.err" &
pid=$!
i=0
while [ $i -lt 300 ]; do grep -q ready "$T/serve.err" 2>/dev/null && break; kill -0 $pid 2>/dev/null || break; sleep 0.1; i=$((i + 1)); done
kill -TERM $pid 2>/dev/null; wait $pid
if grep -q "judgerl serve: tokenizer: $T/conv/tokenizer.json (the model's)" "$T/serve.err"; then ok serve_says_which_tokenizer
else fail serve_says_which_tokenizer "$(cat "$T/serve.err")"; fi
