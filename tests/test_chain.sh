# test_chain.sh - commands chain: `generate` rows carry an id that `grade` takes as is; `grade` output keeps
# the input's fields; a complete grade run leaves its output in input order
. "$JR_ROOT/tests/lib.sh"
M="$JR_ROOT/tests/fixtures/serve/tiny"
printf '{"prompt": "the cat", "topic": "cats"}\n{"id": "q7", "prompt": "a dog"}\n{"prompt": "the sun"}\n' >"$JR_TMP/p.jsonl"
cat >"$JR_TMP/g.yaml" <<'Y'
reward:
  components:
    - {name: nonempty, fn: format, params: {pattern: "."}}
Y
if "$JR_BIN" generate --model "$M" --input "$JR_TMP/p.jsonl" --output "$JR_TMP/gen.jsonl" --n 2 --max-tokens 4 --seed 1 \
     >/dev/null 2>"$JR_TMP/e" &&
   [ "$(jq -r '.id' "$JR_TMP/gen.jsonl" | tr '\n' ' ')" = "0-0 0-1 q7-0 q7-1 2-0 2-1 " ] &&
   [ "$(jq -r '.prompt_id' "$JR_TMP/gen.jsonl" | tr '\n' ' ')" = "0 0 q7 q7 2 2 " ]; then ok generate_rows_have_ids
else fail generate_rows_have_ids "$(cat "$JR_TMP/e"; head -c 400 "$JR_TMP/gen.jsonl")"; fi
"$JR_BIN" generate --model "$M" --input "$JR_TMP/p.jsonl" --output "$JR_TMP/gen1.jsonl" --max-tokens 4 --seed 1 >/dev/null 2>&1
if [ "$(jq -c '.id' "$JR_TMP/gen1.jsonl" | tr '\n' ' ')" = '0 "q7" 2 ' ]; then ok generate_one_sample_keeps_id
else fail generate_one_sample_keeps_id "$(jq -c .id "$JR_TMP/gen1.jsonl")"; fi

# generate -> grade with no editing; the output keeps prompt, response and the input's own fields
if "$JR_BIN" grade --config "$JR_TMP/g.yaml" --input "$JR_TMP/gen.jsonl" --output "$JR_TMP/graded.jsonl" --quiet \
     >/dev/null 2>"$JR_TMP/e" &&
   [ "$(jq -r '.id' "$JR_TMP/graded.jsonl" | tr '\n' ' ')" = "0-0 0-1 q7-0 q7-1 2-0 2-1 " ] &&
   [ "$(jq -r 'select(.prompt and (.response|type=="string") and .status and (.scores|has("nonempty"))) | .id' \
         "$JR_TMP/graded.jsonl" | wc -l)" -eq 6 ] &&
   [ "$(jq -r 'select(.id=="0-1") | .topic' "$JR_TMP/graded.jsonl")" = cats ]; then ok grade_keeps_input_fields
else fail grade_keeps_input_fields "$(cat "$JR_TMP/e"; head -c 600 "$JR_TMP/graded.jsonl")"; fi

# resume from a partial output in finishing order (q7-1, then 0-0): the complete run rewrites it in input order,
# every row once, the earlier rows kept as they were
{ jq -c 'select(.id=="q7-1")' "$JR_TMP/graded.jsonl"; jq -c 'select(.id=="0-0")' "$JR_TMP/graded.jsonl"; } >"$JR_TMP/part.jsonl"
head -1 "$JR_TMP/part.jsonl" | jq -r .id >"$JR_TMP/first"
cp "$JR_TMP/part.jsonl" "$JR_TMP/resume.jsonl"
if [ "$(cat "$JR_TMP/first")" = q7-1 ] &&
   "$JR_BIN" grade --config "$JR_TMP/g.yaml" --input "$JR_TMP/gen.jsonl" --output "$JR_TMP/resume.jsonl" --quiet \
     >"$JR_TMP/s" 2>"$JR_TMP/e" && [ "$(jq -r .skipped "$JR_TMP/s")" = 2 ] &&
   [ "$(jq -r '.id' "$JR_TMP/resume.jsonl" | tr '\n' ' ')" = "0-0 0-1 q7-0 q7-1 2-0 2-1 " ] &&
   grep -qxF "$(sed -n 1p "$JR_TMP/part.jsonl")" "$JR_TMP/resume.jsonl"; then ok complete_grade_in_input_order
else fail complete_grade_in_input_order "$(cat "$JR_TMP/e" "$JR_TMP/s"; jq -c .id "$JR_TMP/resume.jsonl")"; fi

# a response holding a NUL byte (an untrained byte-level model's output, as JSON "\u0000") is graded, not refused
printf '{"id": 1, "prompt": "p", "response": "a\\u0000b"}\n{"id": 2, "prompt": "p", "response": "c"}\n' >"$JR_TMP/nul.jsonl"
if "$JR_BIN" grade --config "$JR_TMP/g.yaml" --input "$JR_TMP/nul.jsonl" --output "$JR_TMP/nul.out.jsonl" --quiet >/dev/null 2>"$JR_TMP/e" &&
   [ "$(wc -l <"$JR_TMP/nul.out.jsonl")" -eq 2 ] && grep -q 'a\\u0000b' "$JR_TMP/nul.out.jsonl" &&
   "$JR_BIN" grade --config "$JR_TMP/g.yaml" --input "$JR_TMP/nul.jsonl" --output "$JR_TMP/nul.out.jsonl" --quiet >"$JR_TMP/s" 2>>"$JR_TMP/e" &&
   [ "$(jq -r .skipped "$JR_TMP/s")" = 2 ]; then ok grade_nul_in_response
else fail grade_nul_in_response "$(cat "$JR_TMP/e")"; fi
