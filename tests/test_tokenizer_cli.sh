# test_tokenizer_cli.sh - `judgerl tokenize` and `judgerl tokenizer train`: round trips, JSONL input, errors
. "$JR_ROOT/tests/lib.sh"
TINY="$JR_ROOT/tests/data/tokenizer/tiny"
T=$JR_TMP

# encode: one line of ids per line; the tiny vocabulary has only byte tokens, so ids are the bytes
printf 'hi <s>\n\n' | "$JR_BIN" tokenize --tokenizer "$TINY" >"$T/ids" 2>"$T/err"
if [ "$(cat "$T/ids")" = "$(printf '104 105 32 256\n')" ]; then ok encode_lines; else fail encode_lines "$(cat "$T/ids" "$T/err")"; fi
printf 'hi <s>\n' | "$JR_BIN" tokenize --tokenizer "$TINY" --split-special >"$T/ids2"
if [ "$(cat "$T/ids2")" = "104 105 32 60 115 62" ]; then ok split_special; else fail split_special "$(cat "$T/ids2")"; fi
# decode back, with and without special tokens
printf '104 105 32 256\n' | "$JR_BIN" tokenize --tokenizer "$TINY" --decode >"$T/txt"
if [ "$(cat "$T/txt")" = "hi <s>" ]; then ok decode_lines; else fail decode_lines "$(cat "$T/txt")"; fi
printf '104 105 32 256\n' | "$JR_BIN" tokenize --tokenizer "$TINY" --decode --no-special >"$T/txt"
if [ "$(cat "$T/txt")" = "hi " ]; then ok decode_no_special; else fail decode_no_special "$(cat "$T/txt")"; fi
# JSONL: CR and LF inside a text survive the round trip
printf '{"text": "a\\r\\nb\\tc"}\n' | "$JR_BIN" tokenize --tokenizer "$TINY" --jsonl >"$T/j"
if [ "$(cat "$T/j")" = "97 13 10 98 9 99" ]; then ok jsonl_crlf; else fail jsonl_crlf "$(cat "$T/j")"; fi
printf '{"ids": [97, 13, 10, 98]}\n' | "$JR_BIN" tokenize --tokenizer "$TINY" --jsonl --decode >"$T/j"
if [ "$(cat "$T/j")" = '{"text":"a\r\nb"}' ]; then ok jsonl_decode; else fail jsonl_decode "$(cat "$T/j")"; fi
"$JR_BIN" tokenize --tokenizer "$TINY" --info >"$T/info"
if grep -q '"n_tokens": 258, "vocab_size": 258, "bos_id": 256, "eos_id": 257' "$T/info"; then ok info; else fail info "$(cat "$T/info")"; fi

# errors: one line naming the problem
expect_error no_tokenizer "--tokenizer PATH is required" "$JR_BIN" tokenize </dev/null
expect_error missing_path "/nonexistent/tok: no such tokenizer.json" "$JR_BIN" tokenize --tokenizer /nonexistent/tok </dev/null
printf '{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [' >"$T/trunc.json"
expect_error truncated_json "trunc.json: line 1 column [0-9]+:" "$JR_BIN" tokenize --tokenizer "$T/trunc.json" </dev/null
printf '{"version": "1.0", "added_tokens": []}' >"$T/nomodel.json"
expect_error missing_model 'nomodel.json: missing "model" object' "$JR_BIN" tokenize --tokenizer "$T/nomodel.json" </dev/null
printf '1 2 x\n' >"$T/bad_ids"
expect_error bad_id "stdin line 1: \"x\" is not a token id" "$JR_BIN" tokenize --tokenizer "$TINY" --decode <"$T/bad_ids"
printf '5 9999\n' >"$T/big_ids"
expect_error unknown_id "stdin line 1: decode: id 9999 at position 1 is not a token" "$JR_BIN" tokenize --tokenizer "$TINY" --decode <"$T/big_ids"
printf 'ab\377\n' >"$T/bad_utf8"
expect_error invalid_utf8 "not valid UTF-8 \(byte 2\)" "$JR_BIN" tokenize --tokenizer "$TINY" <"$T/bad_utf8"
printf '{"text": 3}\n' >"$T/bad_row"
expect_error bad_row "stdin line 1: \"text\" must be a string" "$JR_BIN" tokenize --tokenizer "$TINY" --jsonl <"$T/bad_row"
printf '{"messages": [{"role": "user", "content": "x"}]}\n' >"$T/chat"
expect_error no_chat_template "no chat template" "$JR_BIN" tokenize --tokenizer "$TINY" --chat <"$T/chat"
printf '{%% macro m() %%}{%% endmacro %%}' >"$T/bad.jinja"
expect_error unsupported_template "bad.jinja: line 1: unsupported Jinja tag 'macro'" "$JR_BIN" tokenize --tokenizer "$TINY" --chat --chat-template "$T/bad.jinja" <"$T/chat"
"$JR_BIN" tokenize --tokenizer "$TINY" --chat --chat-template "$JR_ROOT/tests/data/tokenizer/templates/alternating.jinja" <"$T/chat" >"$T/r"
if [ "$(cat "$T/r")" = '"<s><start_of_turn>user\nx<end_of_turn>\n"' ]; then ok chat_render; else fail chat_render "$(cat "$T/r")"; fi

# training: a real vocabulary on shipped text, loadable, round trip, deterministic
cat "$JR_ROOT/README.md" "$JR_ROOT/docs/ARCHITECTURE.md" "$JR_ROOT"/src/core/*.c >"$T/corpus.txt"
expect_ok train "$JR_BIN" tokenizer train --vocab 600 -o "$T/tok1.json" "$T/corpus.txt"
"$JR_BIN" tokenizer train --vocab 600 -o "$T/tok2.json" "$T/corpus.txt" 2>/dev/null
if cmp -s "$T/tok1.json" "$T/tok2.json"; then ok train_deterministic; else fail train_deterministic "outputs differ"; fi
"$JR_BIN" tokenize --tokenizer "$T/tok1.json" --info >"$T/info"
if grep -q '"n_tokens": 600' "$T/info"; then ok train_vocab_size; else fail train_vocab_size "$(cat "$T/info")"; fi
head -n 400 "$T/corpus.txt" >"$T/sample.txt"
"$JR_BIN" tokenize --tokenizer "$T/tok1.json" --no-special <"$T/sample.txt" >"$T/sample.ids"
"$JR_BIN" tokenize --tokenizer "$T/tok1.json" --decode <"$T/sample.ids" >"$T/sample.back"
if cmp -s "$T/sample.txt" "$T/sample.back"; then ok train_round_trip; else fail train_round_trip "decode(encode(x)) != x"; fi
n_ids=$(tr ' ' '\n' <"$T/sample.ids" | grep -c .)
n_bytes=$(wc -c <"$T/sample.txt")
if [ "$n_ids" -lt $((n_bytes * 7 / 10)) ]; then ok train_compresses; else fail train_compresses "$n_ids ids for $n_bytes bytes"; fi
printf '<|im_start|>user\n' | "$JR_BIN" tokenize --tokenizer "$T/tok1.json" >"$T/sp"
if [ "$(cut -d' ' -f1 "$T/sp")" = 598 ]; then ok train_specials; else fail train_specials "$(cat "$T/sp")"; fi
expect_error train_small_vocab "vocab size 100 is below 256 byte tokens \+ 3 special tokens" "$JR_BIN" tokenizer train --vocab 100 -o "$T/x.json" "$T/corpus.txt"
: >"$T/empty.txt"
expect_error train_empty "empty.txt: corpus is empty" "$JR_BIN" tokenizer train --vocab 300 -o "$T/x.json" "$T/empty.txt"
expect_error train_bad_utf8 "bad_utf8: corpus is not valid UTF-8 \(byte 2\)" "$JR_BIN" tokenizer train --vocab 300 -o "$T/x.json" "$T/bad_utf8"
expect_error train_usage "--vocab N, -o FILE and CORPUS are required" "$JR_BIN" tokenizer train "$T/corpus.txt"
if [ ! -e "$T/x.json" ]; then ok train_no_partial_output; else fail train_no_partial_output "x.json written"; fi
# a template nested beyond the parser's bound is an error, not a stack overflow
awk 'BEGIN { for (i = 0; i < 100000; i++) printf "("; printf "1"; for (i = 0; i < 100000; i++) printf ")"; }' >"$T/deep.inner"
{ printf '{{ '; cat "$T/deep.inner"; printf ' }}'; } >"$T/deep.jinja"
expect_error deep_template "deep.jinja: line 1: template nested too deeply" "$JR_BIN" tokenize --tokenizer "$TINY" --chat --chat-template "$T/deep.jinja" <"$T/chat"
