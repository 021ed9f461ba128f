#!/bin/sh
# grpo_step.sh - time one GRPO step per phase on the "10m" config (Qwen2 layout, hidden 256, 6 layers,
# vocab 8192, random weights, byte tokenizer) with G=8 completions of 8 prompts, up to 64 tokens,
# rewarded by a loopback judge (tests/judge_server.py) answering after LATENCY_MS; prints the
# metrics of each step (time/generate, time/judge_wait, time/reference, time/update, judge/hidden_frac,
# tokens) and the update phase's tokens/s, then PyTorch's training step on the same shape
# (bench/train_torch.py) for comparison.
# ASYNC=true turns on grpo.async_generation (the next batch is generated while the update runs).
# Environment: CONFIG=0.5b uses Qwen2.5-0.5B's shapes (hidden 896, 24 layers, 14/2 heads, intermediate
# 4864, vocab 151936, tied) instead of 10m; LORA=R trains rank-R adapters (alpha 2R) instead of every
# weight; COMP=N completion tokens (default 64); COMPUTE=float32|bfloat16|auto (model.compute);
# PROMPTS=N prompts per step (default 8, G=8 each); CKPT=true sets trainer.checkpoint_activations.
# The peer, run right after with the same judge: 10m: PyTorch's training step of the same shape
# (bench/train_torch.py); 0.5b: bench/grpo_torch.py, a PyTorch-eager GRPO step of the same work
# (KV-cache generation, the judge, the LoRA update under autocast bf16); TORCH=0 leaves it out.
# judgerl's peak RSS is GNU time's maximum resident set size.
# Usage: bench/grpo_step.sh [STEPS] [LATENCY_MS] [THREADS] [ASYNC]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
steps=${1:-3}; lat=${2:-100}; th=${3:-$(nproc)}; async=${4:-false}
export OMP_NUM_THREADS=$th OPENBLAS_NUM_THREADS=$th
tmp=$(mktemp -d)
trap 'kill $srv 2>/dev/null; rm -rf "$tmp"' EXIT
cfg=${CONFIG:-10m}; comp=${COMP:-64}; lora=${LORA:-0}; np=${PROMPTS:-8}; ckpt=${CKPT:-false}
if [ "$cfg" = 0.5b ]; then
  shape='"hidden_size": 896, "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2,
 "intermediate_size": 4864, "vocab_size": 151936'
else
  shape='"hidden_size": 256, "num_hidden_layers": 6, "num_attention_heads": 8, "num_key_value_heads": 4,
 "intermediate_size": 768, "vocab_size": 8192'
fi
cat >"$tmp/10m.json" <<J
{"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", $shape,
 "max_position_embeddings": 4096, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": true,
 "hidden_act": "silu", "bos_token_id": 256, "eos_token_id": 257, "torch_dtype": "float32"}
J
lora_yaml=""
[ "$lora" -gt 0 ] && lora_yaml="lora: {enabled: true, rank: $lora, alpha: $((2 * lora))}"
i=0; while [ $i -lt 64 ]; do echo "{\"prompt\": \"Question $i: say something.\"}"; i=$((i+1)); done >"$tmp/p.jsonl"
/usr/bin/python3 "$root/tests/judge_server.py" --latency-ms "$lat" >"$tmp/port" &
srv=$!
while ! grep -q port "$tmp/port" 2>/dev/null; do sleep 0.1; done
port=$(awk '/port/ {print $2}' "$tmp/port")
cat >"$tmp/c.yaml" <<Y
run: {seed: 1, out_dir: $tmp/run}
data: {train: $tmp/p.jsonl}
model: {init: $tmp/10m.json, compute: ${COMPUTE:-auto}}
trainer: {algo: grpo, steps: $steps, batch_size: 32, lr: 1e-4, tensorboard: false, threads: $th, checkpoint_activations: $ckpt}
grpo: {num_generations: 8, prompts_per_step: $np, max_prompt_length: 16, max_completion_length: $comp, async_generation: $async}
$lora_yaml
judge:
  protocol: pointwise
  endpoints: [{url: "http://127.0.0.1:$port/v1", model: bench}]
  cache: false
  max_tokens: 64
reward:
  components: [{name: judge, fn: pointwise}]
Y
echo "# OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE:-} threads=$th judge latency ${lat} ms async_generation=$async config=$cfg lora=$lora completion=$comp prompts=$np checkpoint_activations=$ckpt load=$(cut -d' ' -f1-3 /proc/loadavg)"
JR_PROGRESS=off /usr/bin/time -f '# judgerl peak RSS %M KB, %e s wall, %U s user' "$root/build/rel/judgerl" train "$tmp/c.yaml" >/dev/null
/usr/bin/python3 - "$tmp/run/metrics.jsonl" "$((np * 8))" <<'P'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
n = int(sys.argv[2])
for r in rows:
    print(json.dumps({k: round(r[k], 4) for k in ("time/generate", "time/judge_wait", "time/rollout_wait", "time/reference", "time/update",
                                                  "judge/hidden_frac", "judge/latency_p50", "completions/mean_length")}
                     | {"update_tokens_per_s": round(n * (r["completions/mean_length"] + 16) / r["time/update"], 1),
                        "generate_tokens_per_s": round(n * r["completions/mean_length"] / r["time/generate"], 2)}))
P
[ "${TORCH:-1}" = 1 ] || exit 0
echo "# load before the peer: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "$cfg" = 0.5b ]; then
  /usr/bin/python3 "$root/bench/grpo_torch.py" --config 0.5b --judge-url "http://127.0.0.1:$port/v1" --prompts "$np" \
    --tokens "$comp" --rank "$lora" --micro 16 --threads "$th"  # 32 rows: > 23 GB in eager PyTorch (OOM-killed here)
else
  /usr/bin/python3 "$root/bench/train_torch.py" --config 10m --batch 32 --seq 80 --steps 3 --threads "$th"
fi
