# test_bytetok_hf.sh - the tokenizer.json written for the byte tokenizer encodes and decodes like judgerl
# when loaded by an independent HF-format tokenizer (@lenml/tokenizers, a port of transformers.js).
. "$JR_ROOT/tests/lib.sh"
name=hf_reference_encoder
cache="${HOME:-/tmp}/.cache/judgerl/npm"
pkg="$cache/node_modules/@lenml/tokenizers/package.json"
if ! grep -q '"version": "3.7.2"' "$pkg" 2>/dev/null; then
  mkdir -p "$cache"
  if ! command -v npm >/dev/null 2>&1 ||
     ! flock "$cache/.install.lock" npm install --silent --no-audit --no-fund --prefix "$cache" @lenml/tokenizers@3.7.2 >"$JR_TMP/npm.log" 2>&1; then
    if [ "${CI:-}" = true ]; then fail "$name" "cannot install @lenml/tokenizers@3.7.2: $(tail -c 300 "$JR_TMP/npm.log" 2>/dev/null)"
    else skip "$name" "@lenml/tokenizers@3.7.2 not installable (npm registry unreachable?)"; fi
    exit 0
  fi
fi
helper="${JR_BUILD:-$JR_ROOT/build/rel}/tests/test_bytetok"
if ! "$helper" --write-hf "$JR_TMP" 2>"$JR_TMP/err"; then fail "$name" "helper failed: $(cat "$JR_TMP/err")"; exit 0; fi
cat >"$JR_TMP/check.js" <<'JS'
const { TokenizerLoader } = require(process.argv[2]);
const fs = require("fs");
const dir = process.argv[3];
const tok = TokenizerLoader.fromPreTrained({
  tokenizerJSON: JSON.parse(fs.readFileSync(dir + "/tokenizer.json", "utf8")), tokenizerConfig: {} });
let bad = 0, n = 0;
for (const line of fs.readFileSync(dir + "/cases.jsonl", "utf8").split("\n")) {
  if (!line) continue;
  const c = JSON.parse(line);
  const ids = tok.encode(c.text, { add_special_tokens: false });
  const back = c.ids.length ? tok.decode(c.ids) : "";
  n++;
  if (JSON.stringify(ids) !== JSON.stringify(c.ids) || back !== c.text) {
    bad++;
    console.log("mismatch: " + JSON.stringify(c.text) + " ref " + JSON.stringify(ids) + " judgerl " +
                JSON.stringify(c.ids) + " decoded " + JSON.stringify(back));
  }
}
console.log(bad ? "bad" : "same " + n);
JS
node "$JR_TMP/check.js" "$cache/node_modules/@lenml/tokenizers" "$JR_TMP" >"$JR_TMP/out" 2>&1
if grep -q '^same 7$' "$JR_TMP/out"; then ok "$name"; else fail "$name" "$(tail -c 600 "$JR_TMP/out")"; fi
