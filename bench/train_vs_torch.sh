#!/bin/sh
# train_vs_torch.sh - judgerl's training step against PyTorch's on the same config, batch, sequence
# length and threads, back to back: judgerl float32, judgerl bfloat16 (model.compute), PyTorch fp32,
# PyTorch under torch.autocast bf16. Prints the four JSON objects, the load average, and the ratios.
# Usage: bench/train_vs_torch.sh CONFIG [BATCH] [SEQ] [STEPS] [THREADS]   (CONFIG: 10m, 100m or 0.5b)
# SKIP_FP32=1 leaves out the two fp32 runs (0.5b: saves time).
# On a CPU without bf16 units (no avx512_bf16 or amx_bf16 flag) the two bf16 runs are left out and their
# rows say "no bf16 units"; the fp32 figures are reported on any CPU. A bf16 run that fails anyway is
# reported as failed (its last stderr line) and the script goes on. NO_BF16=1 takes the no-bf16 branch
# on any CPU (to check that branch on a machine that has the units).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cfg=${1:?usage: bench/train_vs_torch.sh 10m|100m|0.5b [batch] [seq] [steps] [threads]}
b=${2:-8}; t=${3:-256}; n=${4:-5}; th=${5:-$(nproc)}
export OMP_NUM_THREADS=$th OPENBLAS_NUM_THREADS=$th
bf16_flags=$(grep -m1 -o -w 'avx512_bf16\|amx_bf16' /proc/cpuinfo | tr '\n' ' ' || true)
has_bf16=0
[ -n "$bf16_flags" ] && [ "${NO_BF16:-0}" != 1 ] && has_bf16=1
echo "# OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE:-} threads=$th"
echo "# $(grep -m1 'model name' /proc/cpuinfo); bf16 flags: ${bf16_flags:-none}$([ "${NO_BF16:-0}" = 1 ] && echo ' (NO_BF16=1: treated as none)')"
echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)"
err=$(mktemp)
trap 'rm -f "$err"' EXIT
# run LABEL CMD...: prints CMD's JSON object, or "{}" after a "# LABEL failed: ..." line when it fails.
run() {
  label=$1; shift
  if out=$("$@" 2>"$err"); then echo "$out"
  else echo "# $label failed (exit $?): $(tail -n 1 "$err")" >&2; echo '{}'; fi
}
jf='{}'; jb='{}'; pf='{}'; pb='{}'
[ "${SKIP_FP32:-0}" = 1 ] || jf=$(run "judgerl fp32" "$root/build/rel/judgerl" bench train --config "$cfg" --batch "$b" --seq "$t" --steps "$n" --compute float32)
echo "$jf"
if [ "$has_bf16" = 1 ]; then
  jb=$(run "judgerl bf16" "$root/build/rel/judgerl" bench train --config "$cfg" --batch "$b" --seq "$t" --steps "$n" --compute bfloat16)
  echo "$jb"
else echo "# judgerl bf16: no bf16 units"; fi
[ "${SKIP_FP32:-0}" = 1 ] || pf=$(run "pytorch fp32" /usr/bin/python3 "$root/bench/train_torch.py" --config "$cfg" --batch "$b" --seq "$t" --steps "$n" --threads "$th")
echo "$pf"
if [ "$has_bf16" = 1 ]; then
  pb=$(run "pytorch autocast bf16" /usr/bin/python3 "$root/bench/train_torch.py" --config "$cfg" --batch "$b" --seq "$t" --steps "$n" --threads "$th" --autocast)
  echo "$pb"
else echo "# pytorch autocast bf16: no bf16 units"; fi
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 -c "
import json, sys
jf, jb, pf, pb = (json.loads(a) for a in sys.argv[1:5])
why = 'no bf16 units' if sys.argv[5] == '0' else 'failed'
def r(a, b, bf16=False):
    if a and b: return '%.2f' % (a['tokens_per_s'] / b['tokens_per_s'])
    return why if bf16 else '-'
print('ratio tokens/s: judgerl fp32 / pytorch fp32 = %s' % r(jf, pf))
print('ratio tokens/s: judgerl bf16 / pytorch fp32 = %s, judgerl bf16 / pytorch autocast bf16 = %s, '
      'judgerl bf16 / judgerl fp32 = %s' % (r(jb, pf, 1), r(jb, pb, 1), r(jb, jf, 1)))
if jf:
    print('judgerl fp32 matmul phases at %.0f%% of its %d^3 fp32 GEMM rate (%.0f of %.0f GFLOP/s)' % (
          100 * jf['matmul_gflops'] / jf['gemm_peak_gflops'], jf['gemm_n'], jf['matmul_gflops'], jf['gemm_peak_gflops']))
if jb:
    print('judgerl bf16 matmul phases at %.0f%% of its %d^3 bf16 GEMM rate (%.0f of %.0f GFLOP/s)' % (
          100 * jb['matmul_gflops'] / jb['gemm_peak_gflops'], jb['gemm_n'], jb['matmul_gflops'], jb['gemm_peak_gflops']))
else:
    print('judgerl bf16 matmul phases: %s' % why)
rss = lambda j: '%.0f' % j['peak_rss_mb'] if j else '-'
print('peak RSS MB: judgerl fp32 %s, pytorch fp32 %s, judgerl bf16 %s, pytorch autocast %s' % (
      rss(jf), rss(pf), rss(jb) if jb else why, rss(pb) if pb else why))" "$jf" "$jb" "$pf" "$pb" "$has_bf16"
