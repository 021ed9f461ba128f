#!/bin/sh
# generate_vs_torch.sh - judgerl's KV-cache decode against a PyTorch generate loop with a KV cache on the
# same config, batch, prompt length and threads; prints both JSON objects and the decode tokens/s ratio.
# Usage: bench/generate_vs_torch.sh CONFIG [BATCH] [PROMPT] [TOKENS] [THREADS]   (CONFIG: 10m or 100m)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cfg=${1:?usage: bench/generate_vs_torch.sh 10m|100m [batch] [prompt] [tokens] [threads]}
b=${2:-8}; p=${3:-64}; n=${4:-64}; th=${5:-$(nproc)}
export OMP_NUM_THREADS=$th OPENBLAS_NUM_THREADS=$th
echo "# OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE:-} threads=$th"
j=$("$root/build/rel/judgerl" bench generate --config "$cfg" --batch "$b" --prompt "$p" --tokens "$n")
echo "$j"
t=$(/usr/bin/python3 "$root/bench/generate_torch.py" --config "$cfg" --batch "$b" --prompt "$p" --tokens "$n" --threads "$th")
echo "$t"
/usr/bin/python3 -c "
import json, sys
j, t = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print('ratio decode tokens/s judgerl/pytorch = %.2f (wall), %.2f (per CPU second)' % (
    j['decode_tokens_per_s'] / t['decode_tokens_per_s'], j['decode_cpu_tokens_per_s'] / t['decode_cpu_tokens_per_s']))" "$j" "$t"
