#!/bin/sh
# train_vs_torch.sh - judgerl's training step against PyTorch's on the same config, batch, sequence
# length and threads, back to back: judgerl float32, judgerl bfloat16 (model.compute), PyTorch fp32,
# PyTorch under torch.autocast bf16. Prints the four JSON objects, the load average, and the ratios.
# Usage: bench/train_vs_torch.sh CONFIG [BATCH] [SEQ] [STEPS] [THREADS]   (CONFIG: 10m, 100m or 0.5b)
# SKIP_FP32=1 leaves out the two fp32 runs (0.5b: saves time).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cfg=${1:?usage: bench/train_vs_torch.sh 10m|100m|0.5b [batch] [seq] [steps] [threads]}
b=${2:-8}; t=${3:-256}; n=${4:-5}; th=${5:-$(nproc)}
export OMP_NUM_THREADS=$th OPENBLAS_NUM_THREADS=$th
echo "# OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE:-} threads=$th"
echo "# $(grep -m1 'model name' /proc/cpuinfo); bf16 flags: $(grep -m1 -o 'avx512_bf16\|amx_bf16' /proc/cpuinfo | tr '\n' ' ')"
echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)"
jf='{}'; pf='{}'
[ "${SKIP_FP32:-0}" = 1 ] || jf=$("$root/build/rel/judgerl" bench train --config "$cfg" --batch "$b" --seq "$t" --steps "$n" --compute float32)
echo "$jf"
jb=$("$root/build/rel/judgerl" bench train --config "$cfg" --batch "$b" --seq "$t" --steps "$n" --compute bfloat16)
echo "$jb"
[ "${SKIP_FP32:-0}" = 1 ] || pf=$(/usr/bin/python3 "$root/bench/train_torch.py" --config "$cfg" --batch "$b" --seq "$t" --steps "$n" --threads "$th")
echo "$pf"
pb=$(/usr/bin/python3 "$root/bench/train_torch.py" --config "$cfg" --batch "$b" --seq "$t" --steps "$n" --threads "$th" --autocast)
echo "$pb"
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 -c "
import json, sys
jf, jb, pf, pb = (json.loads(a) for a in sys.argv[1:5])
r = lambda a, b: '%.2f' % (a['tokens_per_s'] / b['tokens_per_s']) if a and b else '-'
print('ratio tokens/s: judgerl bf16 / pytorch fp32 = %s, judgerl bf16 / pytorch autocast bf16 = %s, '
      'judgerl fp32 / pytorch fp32 = %s, judgerl bf16 / judgerl fp32 = %s' % (r(jb, pf), r(jb, pb), r(jf, pf), r(jb, jf)))
print('judgerl bf16 matmul phases at %.0f%% of its %d^3 bf16 GEMM rate (%.0f of %.0f GFLOP/s)' % (
      100 * jb['matmul_gflops'] / jb['gemm_peak_gflops'], jb['gemm_n'], jb['matmul_gflops'], jb['gemm_peak_gflops']))
print('peak RSS MB: judgerl bf16 %.0f, pytorch autocast %.0f' % (jb['peak_rss_mb'], pb['peak_rss_mb']))" "$jf" "$jb" "$pf" "$pb"
