#!/bin/sh
# mpi_scale.sh - data-parallel SFT on the 100m config (docs/PERFORMANCE.md, "Data-parallel SFT over MPI"):
# 2 ranks x 1 thread (mpirun) against 1 process x 2 threads on the same cores, the same global batch.
# Usage: bench/mpi_scale.sh [STEPS] [REPEATS]   (release build; prints tokens/s per step and comm_frac)
set -eu
steps=${1:-3}; reps=${2:-2}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/build/rel/judgerl
tmp=$(mktemp -d /tmp/jr-mpi-scale-XXXXXX)
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# the 100m config of `judgerl bench train --config 100m` (Qwen2 layout, tied embeddings, 100.1M parameters)
cat >"$tmp/m100.json" <<'J'
{"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 768, "num_hidden_layers": 12,
 "num_attention_heads": 12, "num_key_value_heads": 4, "intermediate_size": 2048, "vocab_size": 32000,
 "max_position_embeddings": 4096, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": true,
 "hidden_act": "silu", "torch_dtype": "float32"}
J
# 64 rows of ~128 byte tokens (prompt 40 bytes, completion 87)
awk 'BEGIN { srand(1); split("the of and to in is was for on that with as by at from it this be are", w, " ");
  for (i = 0; i < 64; i++) { t = ""; for (k = 0; k < 60; k++) t = t (k ? " " : "") w[int(rand() * 19) + 1];
    printf "{\"prompt\": \"%s\", \"completion\": \"%s\"}\n", substr(t, 1, 40), substr(t, 41, 87) } }' >"$tmp/rows.jsonl"
cat >"$tmp/s.yaml" <<Y
run: {seed: 1}
data: {train: $tmp/rows.jsonl, shuffle: false}
model: {init: $tmp/m100.json, compute: float32}
trainer: {steps: $steps, batch_size: 2, grad_accum: 2, max_seq_len: 128, lr: 1e-4, tensorboard: false}
Y
show() { sed -n 's/.*"step":\([0-9]*\),.*"tokens_per_s":\([^,]*\),*\("comm_frac":\([^,]*\)\)*.*/  step \1: tokens\/s \2 comm_frac \4/p' "$1/metrics.jsonl"; }
r=1
while [ $r -le "$reps" ]; do
  echo "repeat $r, load: $(cut -d' ' -f1-3 /proc/loadavg)"
  "$bin" train "$tmp/s.yaml" run.out_dir="$tmp/t$r" trainer.threads=2 >/dev/null 2>&1
  echo " 1 process x 2 threads"; show "$tmp/t$r"
  mpirun -np 2 --bind-to none "$bin" train "$tmp/s.yaml" run.out_dir="$tmp/r$r" trainer.threads=1 >/dev/null 2>&1
  echo " 2 ranks x 1 thread"; show "$tmp/r$r"
  r=$((r + 1))
done
rm -rf "$tmp"
