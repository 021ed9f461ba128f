# test_bench_cli.sh - `judgerl bench memory|train|generate|grade` at toy sizes: each prints one JSON object
# with the figures its options ask for (no figure's value is asserted beyond its kind: speed is the
# machine's), and bad options are one usage line
. "$JR_ROOT/tests/lib.sh"
T=$JR_TMP
export OMP_NUM_THREADS=1

# check NAME FILE JQ-EXPRESSION: the JSON object in FILE satisfies the expression
check() {
  if jq -e "$3" "$2" >/dev/null 2>&1; then ok "$1"; else fail "$1" "$(head -c 600 "$2") $(head -c 300 "$T/err")"; fi
}

"$JR_BIN" bench memory --mib 4 --reps 3 >"$T/mem" 2>"$T/err"
check memory "$T/mem" '.mib == 4 and .reps == 3 and .best_gb_per_s > 0 and .best_gb_per_s >= .median_gb_per_s and .checksum > 0'

"$JR_BIN" bench generate --config 10m --batch 2 --prompt 8 --tokens 4 --long-prompt 12 --prefill-chunk 4 --save "$T/m10" \
  >"$T/gen" 2>"$T/err"
check generate "$T/gen" '.model == "10m" and .params == 6822144 and .batch == 2 and .prompt == 8 and .tokens == 4
  and .decode_tokens_per_s > 0 and .sample_share >= 0 and .long_prompt == 12 and .prefill_chunk == 4
  and .long_prompt_steps >= 3 and .itl_ms_during_max >= .itl_ms_during_median'
if [ -f "$T/m10/config.json" ]; then ok generate_save; else fail generate_save "no config.json in --save DIR"; fi
"$JR_BIN" bench generate --model "$T/m10" --batch 1 --prompt 4 --tokens 2 --compute float32 >"$T/gen2" 2>"$T/err"
check generate_saved_model "$T/gen2" ".model == \"$T/m10\" and .params == 6822144 and (.compute | test(\"fp32\"))"
# fp32 prompts batch and chunk with the decode rows at every kernel level this CPU has (docs/CPU.md)
top=$("$JR_BIN" version | sed -n 's/^kernel level: .*the highest this CPU has: \([a-z0-9]*\)).*/\1/p')
for l in baseline avx2 avx512; do
  JR_CPU=$l "$JR_BIN" bench generate --model "$T/m10" --batch 2 --prompt 4 --tokens 3 --compute float32 --long-prompt 12 \
    --prefill-chunk 4 >"$T/gen3" 2>"$T/err"
  check "generate_fp32_batched_prefill_at_$l" "$T/gen3" '.batched_prefill == true and .long_prompt_steps >= 3'
  [ "$l" = "$top" ] && break
done

"$JR_BIN" bench train --config 10m --batch 1 --seq 8 --steps 1 --warmup 0 --gemm-n 16 --compute float32 >"$T/train" 2>"$T/err"
check train "$T/train" '.model == "10m" and .params == 6822144 and .seq == 8 and .steps == 1 and .compute == "float32"
  and .loss > 8 and .loss < 10 and .tokens_per_s > 0 and .matmul_impl == "openblas sgemm" and .gemm_n == 16'
"$JR_BIN" bench train --model "$T/m10" --batch 1 --seq 4 --steps 1 --gemm-n 16 --compute float32 --full-logits \
  --checkpoint-activations >"$T/train2" 2>"$T/err"
check train_saved_model "$T/train2" '.params == 6822144 and .logit_rows == 4 and .checkpoint_activations == true'

# grade: judgerl's client and the Python one against the loopback server, every answer a 4
"$JR_BIN" bench grade --latency-ms 1 --levels 1,3 --per-level 2 --min 2 >"$T/grade" 2>"$T/err"
check grade "$T/grade" '.judgerl | length == 2 and .[0].requests == 2 and .[0].ok == 2 and .[1].in_flight == 3 and .[1].ok == 6'
if /usr/bin/python3 -c 'import concurrent.futures, urllib.request' 2>/dev/null; then
  check grade_python "$T/grade" '(.python_threadpool_urllib | type) == "array" and (.ratio | length) == 2'
else
  skip grade_python "no /usr/bin/python3"
fi
"$JR_BIN" bench grade --latency-ms 1 --levels 2 --per-level 1 --min 3 --python none >"$T/grade2" 2>"$T/err"
check grade_no_python "$T/grade2" '.judgerl[0].requests == 3 and .judgerl[0].ok == 3 and (has("python_threadpool_urllib") | not)'

expect_error train_unknown_config "bench train: --config: unknown '1m' \(10m, 100m or 0.5b\)" "$JR_BIN" bench train --config 1m
expect_error train_model_and_config "give one of --model DIR or --config" "$JR_BIN" bench train --config 10m --model x
expect_error generate_itl "--itl-target: expected 0 \(off\) or a ratio in \(1, 100\]" "$JR_BIN" bench generate --config 10m --itl-target 0.5
expect_error generate_missing_model "$T/none" "$JR_BIN" bench generate --model "$T/none"
expect_error grade_levels "--levels: expected at most 16 integers in \\[1, 4096\\] separated by commas, got '1,x'" "$JR_BIN" bench grade --levels 1,x
# trailing text and a 17th level are errors too (were read as 2, and dropped without a word)
expect_error grade_levels_text "got '2x'" "$JR_BIN" bench grade --levels 2x
expect_error grade_levels_17 "at most 16" "$JR_BIN" bench grade --levels 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17
expect_error memory_mib "--mib: expected an integer in \\[1, 1073741824\\], got '0'" "$JR_BIN" bench memory --mib 0
# a value with trailing text or no number is an error naming the flag, not read as far as it goes (or as 0)
expect_error train_batch_text "--batch: expected an integer in \\[1, 1048576\\], got '8x'" "$JR_BIN" bench train --config 10m --batch 8x
expect_error generate_itl_text "--itl-target: expected a number in \\[0, 100\\], got 'abc'" "$JR_BIN" bench generate --config 10m --itl-target abc
expect_error grade_unknown "unknown option '--latency'" "$JR_BIN" bench grade --latency 5
expect_error unknown_bench "unknown benchmark 'disk'" "$JR_BIN" bench disk

# tokenize --bench: the tiny tokenizer has only byte tokens, so as many tokens as bytes (no BOS)
printf 'hello\nworld\n' >"$T/corpus.txt"
"$JR_BIN" tokenize --tokenizer "$JR_ROOT/tests/data/tokenizer/tiny" --bench "$T/corpus.txt" >"$T/tb" 2>"$T/err"
check tokenize_bench "$T/tb" '.bytes == 12 and .tokens == 12 and .warm_encode_cpu_s >= 0 and .load_cpu_s >= 0'
expect_error tokenize_bench_missing "judgerl tokenize: $T/none: cannot open" \
  "$JR_BIN" tokenize --tokenizer "$JR_ROOT/tests/data/tokenizer/tiny" --bench "$T/none"
