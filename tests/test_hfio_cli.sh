# test_hfio_cli.sh - `judgerl inspect` on model directories written by an independent writer (tests/hfio_writer.py):
# good ones load; each broken one gives one clear error line and a non-zero exit.
. "$JR_ROOT/tests/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
W="$JR_ROOT/tests/hfio_writer.py"
if ! "$PY" -c 'import json, struct' 2>/dev/null; then
  if [ "${CI:-}" = true ]; then fail hfio_cli "python3 is missing"; else skip hfio_cli "python3 is missing"; fi
  exit 0
fi
T="$JR_TMP"
mk() { "$PY" "$W" model "$@" || echo "FAIL - writer: $*"; }

# Directories that load
mk "$T/llama3" --shards 3 --rope-llama3 --dtype BF16
expect_ok sharded_loads "$JR_BIN" inspect --model "$T/llama3"
if grep -q '^rope_scaling: llama3 (factor 32' "$JR_TMP/out" && grep -q '^weights: 4 files' "$JR_TMP/out" &&
   grep -q '^parameters: 5712 ' "$JR_TMP/out" &&
   grep -Eq '^  model.layers.1.mlp.down_proj.weight +BF16 +\[16, 32\]  model-0000[34]-of-00004.safetensors$' "$JR_TMP/out"
then ok sharded_summary; else fail sharded_summary "$(head -c 600 "$JR_TMP/out")"; fi
mk "$T/qwen2" --arch qwen2 --dtype F32
expect_ok qwen2_loads "$JR_BIN" inspect --model "$T/qwen2"
if grep -Eq '^  model.layers.0.self_attn.q_proj.bias +F32 +\[16\]$' "$JR_TMP/out" && grep -q 'qkv_bias: true' "$JR_TMP/out"
then ok qwen2_biases; else fail qwen2_biases "$(head -c 600 "$JR_TMP/out")"; fi
mk "$T/qwen3" --arch qwen3 --dtype F16 --tied --extra lm_head.weight
expect_ok qwen3_tied_loads "$JR_BIN" inspect --model "$T/qwen3"
if grep -q 'q_norm.weight' "$JR_TMP/out" && ! grep -q '^  lm_head.weight' "$JR_TMP/out"
then ok qwen3_tied_summary; else fail qwen3_tied_summary "$(head -c 600 "$JR_TMP/out")"; fi
expect_ok inspect_dir_positional "$JR_BIN" inspect "$T/qwen2"
expect_ok inspect_file "$JR_BIN" inspect "$T/qwen2/model.safetensors"
if grep -q '^metadata.format: pt$' "$JR_TMP/out"; then ok inspect_file_meta; else fail inspect_file_meta "$(cat "$JR_TMP/out")"; fi

# Broken safetensors files (one file, and inside a model directory)
for k in corrupt_header truncated overlap duplicate shape_mismatch header_len; do
  "$PY" "$W" bad "$k" "$T/$k.safetensors"
done
expect_error corrupt_header "corrupt_header.safetensors: header is not valid JSON" "$JR_BIN" inspect "$T/corrupt_header.safetensors"
expect_error truncated "truncated.safetensors: tensor 'b': data_offsets \[16,32\] past end of file \(size" "$JR_BIN" inspect "$T/truncated.safetensors"
expect_error overlapping_offsets "overlap.safetensors: tensor 'b': data_offsets \[8,24\] overlap tensor 'a'" "$JR_BIN" inspect "$T/overlap.safetensors"
expect_error duplicate_names "duplicate.safetensors: header: duplicate tensor name 'a'" "$JR_BIN" inspect "$T/duplicate.safetensors"
expect_error shape_size_mismatch "shape_mismatch.safetensors: tensor 'a': shape \[2,3\] of F32 needs 24 bytes but data_offsets \[0,16\] hold 16" "$JR_BIN" inspect "$T/shape_mismatch.safetensors"
expect_error header_length "header_len.safetensors: header length 1099511627776 past end of file" "$JR_BIN" inspect "$T/header_len.safetensors"
mk "$T/cut" --dtype F32
f="$T/cut/model.safetensors"
head -c $(( $(wc -c <"$f") - 40 )) "$f" >"$f.x" && mv "$f.x" "$f"
expect_error truncated_in_model "cut/model.safetensors: tensor '[a-z_.0-9]+': data_offsets \[[0-9]+,[0-9]+\] past end of file" "$JR_BIN" inspect --model "$T/cut"

# Weights that do not match the config
mk "$T/unknown" --extra model.layers.0.mlp.extra.weight
expect_error unknown_tensor "unknown/model.safetensors: unknown tensor 'model.layers.0.mlp.extra.weight'" "$JR_BIN" inspect --model "$T/unknown"
mk "$T/missing" --shards 2 --drop model.norm.weight
expect_error missing_tensor "missing/model.safetensors.index.json: missing tensor 'model.norm.weight' \(shape \[16\]" "$JR_BIN" inspect --model "$T/missing"
mk "$T/untied" --drop lm_head.weight
expect_error missing_lm_head "missing tensor 'lm_head.weight'" "$JR_BIN" inspect --model "$T/untied"

# Bad config.json
mk "$T/kv" --set num_key_value_heads=3 --set num_attention_heads=8 --set hidden_size=64
expect_error kv_heads_divide "kv/config.json: num_key_value_heads=3 does not divide num_attention_heads=8" "$JR_BIN" inspect --model "$T/kv"
mk "$T/yarn" --set 'rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}'
expect_error rope_scaling_type "yarn/config.json: rope_scaling type 'yarn' is not supported \(judgerl supports default and llama3\)" "$JR_BIN" inspect --model "$T/yarn"
mk "$T/arch" --set 'architectures=["MistralForCausalLM"]'
expect_error unknown_architecture "arch/config.json: unsupported architecture 'MistralForCausalLM'" "$JR_BIN" inspect --model "$T/arch"
mkdir -p "$T/empty"
expect_error no_config "empty: no config.json" "$JR_BIN" inspect --model "$T/empty"
expect_error no_dir "nowhere: no such model directory" "$JR_BIN" inspect --model "$T/nowhere"
expect_error usage "nothing to inspect" "$JR_BIN" inspect

# judgerl convert: what judgerl writes, an independent strict reader accepts with every value intact
mk "$T/src" --shards 3 --rope-llama3 --dtype BF16 --set head_dim=4
chk() { name=$1; shift; if "$PY" "$W" check "$@" >"$JR_TMP/chk" 2>&1; then ok "$name"; else fail "$name" "$(head -c 400 "$JR_TMP/chk")"; fi; }
expect_ok convert_f32 "$JR_BIN" convert --model "$T/src" -o "$T/f32" --dtype float32
chk convert_f32_reads_back "$T/f32" --values --dtype F32
[ -f "$T/f32/model.safetensors" ] && [ ! -f "$T/f32/model.safetensors.index.json" ] && ok convert_single_file || fail convert_single_file "layout"
expect_ok convert_bf16_sharded "$JR_BIN" convert --model "$T/f32" -o "$T/bf16" --dtype bf16 --max-shard-size 5000
chk convert_bf16_sharded_reads_back "$T/bf16" --values --dtype BF16
[ -f "$T/bf16/model-00001-of-00003.safetensors" ] && ok convert_shard_names || fail convert_shard_names "$(ls "$T/bf16")"
# the config written back is byte for byte the one transformers wrote (same keys, same spelling)
if cmp -s "$T/src/config.json" "$T/bf16/config.json" && cmp -s "$T/src/generation_config.json" "$T/bf16/generation_config.json"
then ok config_kept_byte_for_byte; else fail config_kept_byte_for_byte "$(diff "$T/src/config.json" "$T/bf16/config.json" | head -c 400)"; fi
expect_ok convert_f16 "$JR_BIN" convert --model "$T/bf16" -o "$T/f16" --dtype float16 --max-shard-size 0
chk convert_f16_reads_back "$T/f16" --values --dtype F16
mk "$T/q3" --arch qwen3 --tied --extra lm_head.weight --dtype F16
expect_ok convert_tied "$JR_BIN" convert --model "$T/q3" -o "$T/q3b" --dtype bfloat16
chk convert_tied_has_no_lm_head "$T/q3b" --values --dtype BF16
expect_error convert_bad_dtype "--dtype 'int8': use float32, float16 or bfloat16" "$JR_BIN" convert --model "$T/src" -o "$T/x" --dtype int8
expect_error convert_bad_input "kv/config.json: num_key_value_heads=3 does not divide" "$JR_BIN" convert --model "$T/kv" -o "$T/x"
[ ! -e "$T/x" ] && ok convert_failure_writes_nothing || fail convert_failure_writes_nothing "$T/x exists"
