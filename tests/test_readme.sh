# test_readme.sh - the README's quick start, run line by line in order (as a user would, from a directory
# holding the repository's configs/ and data/, with HOME in the test's directory so `make install
# PREFIX=$HOME/.local` installs there); a line that fails is reported with its output, so the README stays true
. "$JR_ROOT/tests/lib.sh"
W="$JR_TMP/user"
mkdir -p "$W" && ln -s "$JR_ROOT/configs" "$W/configs" && ln -s "$JR_ROOT/data" "$W/data"
sed -n '/<!-- readme-test:begin -->/,/<!-- readme-test:end -->/p' "$JR_ROOT/README.md" |
  sed -e '/^```/d' -e '/^<!--/d' -e '/^ *$/d' >"$JR_TMP/lines"
n=$(wc -l <"$JR_TMP/lines")
[ "$n" -ge 8 ] && ok readme_block_found || fail readme_block_found "$n lines between the readme-test markers"
# one shell for the block (export carries over); `make` runs in the repository; stop at the first failing line
{
  echo 'set -e'
  echo "cd '$W'"
  sed -e "s|^make |make -s -C '$JR_ROOT' |" -e 's|^\(.*\)$|echo "+ \1" >\&2; \1|' "$JR_TMP/lines"
} >"$JR_TMP/block.sh"
if HOME="$JR_TMP/home" JR_PROGRESS=off sh "$JR_TMP/block.sh" >"$JR_TMP/out" 2>"$JR_TMP/err"; then ok readme_commands_run
else fail readme_commands_run "$(grep '^+ ' "$JR_TMP/err" | tail -1): $(grep -v '^+ ' "$JR_TMP/err" | tail -5 | tr '\n' ' ')"; fi
# what the block says it makes
if [ -x "$JR_TMP/home/.local/bin/judgerl" ] && [ -f "$W/runs/quick-grpo/report.html" ] &&
   [ -f "$W/runs/graded.report.html" ] && [ -f "$W/runs/compare.html" ] &&
   [ "$(wc -l <"$W/runs/graded.jsonl")" -eq "$(wc -l <"$JR_ROOT/data/sft_demo.jsonl")" ]; then ok readme_outputs
else fail readme_outputs "$(ls -R "$W/runs" 2>/dev/null | head -20)"; fi
