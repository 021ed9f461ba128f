#!/bin/sh
# generate_vs_llama.sh - judgerl bench generate against llama-batched-bench on the same model, back to back
# per (dtype, batch), issue 23's table. llama.cpp is built outside the repository (docs/PERFORMANCE.md).
# usage: bench/generate_vs_llama.sh LLAMA_BIN_DIR MODEL_DIR GGUF_PREFIX [THREADS] [BATCHES] [DTYPES]
#   e.g. bench/generate_vs_llama.sh ~/llama.cpp/build/bin /tmp/m100 /tmp/m100 2 "1 8 32" "bf16 f32"
#   (GGUF_PREFIX-bf16.gguf / GGUF_PREFIX-f32.gguf, written by `judgerl export --format gguf`)
# Prints, per pair, llama.cpp's table line (PP, S_PP, TG, S_TG) then judgerl's JSON, each with the load.
set -e
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 3 ] || { echo "usage: $0 LLAMA_BIN_DIR MODEL_DIR GGUF_PREFIX [THREADS] [BATCHES] [DTYPES]" >&2; exit 2; }
lb=$1/llama-batched-bench
model=$2
gguf=$3
threads=${4:-2}
batches=${5:-1 8 32}
dtypes=${6:-bf16 f32}
[ -x "$lb" ] || { echo "$0: no llama-batched-bench in $1" >&2; exit 2; }
for dt in $dtypes; do
    comp=float32
    [ "$dt" = bf16 ] && comp=bfloat16
    [ -f "$gguf-$dt.gguf" ] || { echo "$0: missing $gguf-$dt.gguf" >&2; exit 2; }
    for b in $batches; do
        echo "== $dt batch=$b threads=$threads load $(cut -d' ' -f1-3 /proc/loadavg)"
        "$lb" -m "$gguf-$dt.gguf" -c 4096 -b 2048 -ub 512 -npp 32 -ntg 64 -npl "$b" -t "$threads" 2>/dev/null |
            grep '^|' | tail -1
        OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads "$root/build/rel/judgerl" bench generate \
            --model "$model" --batch "$b" --prompt 32 --tokens 64 --compute "$comp"
    done
done
echo "== end load $(cut -d' ' -f1-3 /proc/loadavg)"
