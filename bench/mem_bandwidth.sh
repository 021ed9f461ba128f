#!/bin/sh
# mem_bandwidth.sh - the machine's streaming-read bandwidth (judgerl bench memory) and, from it, the decode
# bound of a model: tokens/s <= bandwidth / bytes of weights read per step.
# usage: bench/mem_bandwidth.sh [THREADS] [PARAMS_MILLIONS]   e.g. bench/mem_bandwidth.sh 2 100.1
set -e
root=$(cd "$(dirname "$0")/.." && pwd)
threads=${1:-2}
params=${2:-100.1}
out=$(OMP_NUM_THREADS=$threads "$root/build/rel/judgerl" bench memory --mib 512 --reps 7)
echo "$out"
echo "$out" | /usr/bin/python3 -c "
import json, sys
d = json.load(sys.stdin); p = float(sys.argv[1]) * 1e6
for name, b in (('fp32', 4), ('bf16', 2)):
    for k in ('best_gb_per_s', 'median_gb_per_s', 'best_gb_per_cpu_s'):
        print('%s weights, %.1fM params: decode bound at batch 1 = %.1f tok/s from %s %.1f' % (name, p / 1e6, d[k] * 1e9 / (p * b), k, d[k]))
" "$params"
