#!/bin/sh
# train_vs_torch.sh - judgerl's training step against PyTorch's on the same config, batch, sequence
# length and threads; prints both JSON objects and the tokens/s ratio (judgerl / PyTorch).
# Usage: bench/train_vs_torch.sh CONFIG [BATCH] [SEQ] [STEPS] [THREADS]   (CONFIG: 10m or 100m)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cfg=${1:?usage: bench/train_vs_torch.sh 10m|100m [batch] [seq] [steps] [threads]}
b=${2:-8}; t=${3:-256}; n=${4:-5}; th=${5:-$(nproc)}
export OMP_NUM_THREADS=$th OPENBLAS_NUM_THREADS=$th
echo "# OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE:-} threads=$th"
j=$("$root/build/rel/judgerl" bench train --config "$cfg" --batch "$b" --seq "$t" --steps "$n")
echo "$j"
p=$(/usr/bin/python3 "$root/bench/train_torch.py" --config "$cfg" --batch "$b" --seq "$t" --steps "$n" --threads "$th")
echo "$p"
/usr/bin/python3 -c "
import json, sys
j, p = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print('ratio tokens/s judgerl/pytorch = %.2f' % (j['tokens_per_s'] / p['tokens_per_s']))" "$j" "$p"
