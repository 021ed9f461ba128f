// gguf_check.cjs - reads a GGUF written by `judgerl export` with the independent npm reader
// @huggingface/gguf (allowLocalFile) and checks it against the HF model directory it came from:
// every metadata key (name, type, value; the expected set is rebuilt here from config.json,
// tokenizer.json and tokenizer_config.json, no key more, none missing), every tensor (llama.cpp
// name, shape, type, alignment) and every tensor's bytes at the offset the reader reports,
// decoded here, against the safetensors values (decoded here too), after Llama's Q/K row
// permutation and, with an adapter, W + alpha/r * B A.
// Tolerances: f32 exact (relative 1e-5 with an adapter: the merge's sums run in another order;
// rope_freqs relative 1e-6: float32 there, double here); f16 and bf16 within half a unit in the last place (relative 2^-11 and
// 2^-8, absolute 2^-25 near 0); q8_0 within 0.56 d per value (d = the block's f16 scale: d/2 from
// rounding to an integer, plus d's own f16 rounding over |q| <= 127).
// usage: node gguf_check.cjs GGUF_MODULE_DIR FILE.gguf MODEL_DIR DTYPE [ADAPTER_DIR]
"use strict";
const fs = require("fs");
const path = require("path");
const [, , modDir, file, modelDir, dtype, adapterDir] = process.argv;
const { gguf, GGUFValueType } = require(path.join(modDir, "node_modules/@huggingface/gguf"));

let failures = 0;
function report(name, ok, why) {
  if (ok) console.log("ok - " + name);
  else { failures++; console.log("FAIL - " + name + ": " + String(why).slice(0, 600)); }
}

// ---- safetensors and number formats, independently of judgerl ----
function f16(h) {
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 31, m = h & 1023;
  if (e === 0) return s * m * Math.pow(2, -24);
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * Math.pow(2, e - 15);
}
function bf16(h) { const b = Buffer.alloc(4); b.writeUInt32LE(h << 16 >>> 0); return b.readFloatLE(0); }
function readSafetensors(p) {
  const buf = fs.readFileSync(p);
  const n = Number(buf.readBigUInt64LE(0));
  const hdr = JSON.parse(buf.subarray(8, 8 + n).toString());
  const out = {};
  for (const [name, t] of Object.entries(hdr)) {
    if (name === "__metadata__") continue;
    const [a, b] = t.data_offsets, d = buf.subarray(8 + n + a, 8 + n + b);
    const cnt = t.shape.reduce((x, y) => x * y, 1), v = new Float64Array(cnt);
    for (let i = 0; i < cnt; i++)
      v[i] = t.dtype === "F32" ? d.readFloatLE(4 * i) : t.dtype === "F16" ? f16(d.readUInt16LE(2 * i)) : bf16(d.readUInt16LE(2 * i));
    out[name] = { shape: t.shape, v };
  }
  return out;
}

// ---- what the file must hold ----
const cfg = JSON.parse(fs.readFileSync(path.join(modelDir, "config.json")));
const tj = JSON.parse(fs.readFileSync(path.join(modelDir, "tokenizer.json")));
const tcPath = path.join(modelDir, "tokenizer_config.json");
const tc = fs.existsSync(tcPath) ? JSON.parse(fs.readFileSync(tcPath)) : {};
const arch = { llama: "llama", qwen2: "qwen2", qwen3: "qwen3" }[cfg.model_type];
const nh = cfg.num_attention_heads, nkv = cfg.num_key_value_heads || nh, hd = cfg.head_dim || cfg.hidden_size / nh;
const T = GGUFValueType;
const expect = {};
const put = (k, type, value) => { expect[k] = { type, value }; };
put("general.architecture", T.STRING, arch);
put("general.name", T.STRING, path.basename(path.resolve(modelDir)));
put(arch + ".block_count", T.UINT32, cfg.num_hidden_layers);
put(arch + ".context_length", T.UINT32, cfg.max_position_embeddings);
put(arch + ".embedding_length", T.UINT32, cfg.hidden_size);
put(arch + ".feed_forward_length", T.UINT32, cfg.intermediate_size);
put(arch + ".attention.head_count", T.UINT32, nh);
put(arch + ".attention.head_count_kv", T.UINT32, nkv);
put(arch + ".rope.freq_base", T.FLOAT32, Math.fround(cfg.rope_theta));
put(arch + ".attention.layer_norm_rms_epsilon", T.FLOAT32, Math.fround(cfg.rms_norm_eps));
if (cfg.head_dim !== undefined) {
  put(arch + ".attention.key_length", T.UINT32, cfg.head_dim);
  put(arch + ".attention.value_length", T.UINT32, cfg.head_dim);
}
put("general.file_type", T.UINT32, { f32: 0, f16: 1, bf16: 32, q8_0: 7 }[dtype]);
put("general.quantization_version", T.UINT32, 2);
if (arch === "llama") {
  put("llama.vocab_size", T.UINT32, cfg.vocab_size);
  put("llama.rope.dimension_count", T.UINT32, hd);
}
// tokenizer: llama.cpp's pre-tokenizer names by the regex tokenizer.json gives
const PRE = {
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+": "llama-bpe",
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+": "qwen2",
};
const split = (tj.pre_tokenizer.pretokenizers || []).find((p) => p.type === "Split");
put("tokenizer.ggml.model", T.STRING, "gpt2");
put("tokenizer.ggml.pre", T.STRING, PRE[split.pattern.Regex]);
const tokens = [], types = [];
const added = new Map(tj.added_tokens.map((a) => [a.id, a]));
const rev = new Map(Object.entries(tj.model.vocab).map(([t, i]) => [i, t]));
for (let i = 0; i < cfg.vocab_size; i++) {
  const a = added.get(i);
  if (a) {
    const special = a.special || (a.content.startsWith("<|") && a.content.endsWith("|>"));
    tokens.push(special ? a.content : a.content.split("\u2581").join(" "));
    types.push(special ? 3 : 4);
  } else if (rev.has(i)) { tokens.push(rev.get(i)); types.push(1); }
  else { tokens.push("[PAD" + i + "]"); types.push(5); }
}
put("tokenizer.ggml.tokens", T.ARRAY, tokens);
put("tokenizer.ggml.token_type", T.ARRAY, types);
put("tokenizer.ggml.merges", T.ARRAY, tj.model.merges.map((m) => typeof m === "string" ? m : m.map((p) => p.split(" ").join("\u0120")).join(" ")));
const idKeys = { bos: "bos_token_id", eos: "eos_token_id", unk: "unknown_token_id", sep: "seperator_token_id", pad: "padding_token_id", mask: "mask_token_id" };
for (const [typ, k] of Object.entries(idKeys)) {
  const e = tc[typ + "_token"], text = typeof e === "string" ? e : e && e.content;
  let id = text === undefined ? undefined : (tj.added_tokens.find((a) => a.content === text) || {}).id;
  if (id === undefined && Number.isInteger(cfg[typ + "_token_id"])) id = cfg[typ + "_token_id"];
  if (id !== undefined) put("tokenizer.ggml." + k, T.UINT32, id);
}
for (const typ of ["bos", "eos"]) if (typeof tc["add_" + typ + "_token"] === "boolean") put("tokenizer.ggml.add_" + typ + "_token", T.BOOL, tc["add_" + typ + "_token"]);
if (typeof tc.chat_template === "string") put("tokenizer.chat_template", T.STRING, tc.chat_template);

// tensors: HF name -> llama.cpp name
function ggufName(hf) {
  const m = hf.match(/^model\.layers\.(\d+)\.(.*)$/);
  const map = {
    "input_layernorm.weight": "attn_norm.weight", "self_attn.q_proj.weight": "attn_q.weight", "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight", "self_attn.o_proj.weight": "attn_output.weight", "self_attn.q_proj.bias": "attn_q.bias",
    "self_attn.k_proj.bias": "attn_k.bias", "self_attn.v_proj.bias": "attn_v.bias", "self_attn.o_proj.bias": "attn_output.bias",
    "self_attn.q_norm.weight": "attn_q_norm.weight", "self_attn.k_norm.weight": "attn_k_norm.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight", "mlp.gate_proj.weight": "ffn_gate.weight", "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
  };
  if (m) return "blk." + m[1] + "." + map[m[2]];
  return { "model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight", "lm_head.weight": "output.weight" }[hf];
}

(async () => {
  const { metadata, typedMetadata, tensorInfos, tensorDataOffset } = await gguf(path.resolve(file), { allowLocalFile: true, typedMetadata: true });
  // ---- keys ----
  const got = Object.keys(typedMetadata).filter((k) => k !== "version" && k !== "tensor_count" && k !== "kv_count");
  const missing = Object.keys(expect).filter((k) => !(k in typedMetadata)), extra = got.filter((k) => !(k in expect));
  report("keys: exactly the expected set (" + Object.keys(expect).length + ")", !missing.length && !extra.length, "missing " + missing + " extra " + extra);
  let bad = [];
  for (const [k, e] of Object.entries(expect)) {
    const g = typedMetadata[k];
    if (!g) continue;
    const same = Array.isArray(e.value) ? Array.isArray(g.value) && g.value.length === e.value.length && g.value.every((x, i) => x === e.value[i])
      : g.value === e.value;
    if (g.type !== e.type || !same) bad.push(k + ": " + JSON.stringify(g.value).slice(0, 80) + " (type " + g.type + ") vs " + JSON.stringify(e.value).slice(0, 80));
  }
  report("keys: every value and type as expected", !bad.length, bad.join("; "));
  report("version 3, tensor and key counts", metadata.version === 3 && Number(metadata.tensor_count) === tensorInfos.length &&
    Number(metadata.kv_count) === got.length, [metadata.version, metadata.tensor_count, metadata.kv_count, got.length].join(","));
  // ---- tensors ----
  const st = {};
  const idx = path.join(modelDir, "model.safetensors.index.json");
  const files = fs.existsSync(idx) ? [...new Set(Object.values(JSON.parse(fs.readFileSync(idx)).weight_map))] : ["model.safetensors"];
  for (const f of files) Object.assign(st, readSafetensors(path.join(modelDir, f)));
  if (adapterDir) { // W += alpha / r * B A
    const ac = JSON.parse(fs.readFileSync(path.join(adapterDir, "adapter_config.json")));
    const ad = readSafetensors(path.join(adapterDir, "adapter_model.safetensors"));
    for (const [n, A] of Object.entries(ad)) {
      if (!n.endsWith(".lora_A.weight")) continue;
      const B = ad[n.replace("lora_A", "lora_B")], base = n.replace("base_model.model.", "").replace(".lora_A.weight", ".weight");
      const W = st[base], [o, i] = W.shape, r = A.shape[0], s = ac.lora_alpha / ac.r;
      for (let a = 0; a < o; a++) for (let b = 0; b < i; b++) {
        let acc = 0;
        for (let k = 0; k < r; k++) acc += B.v[a * r + k] * A.v[k * i + b];
        W.v[a * i + b] = Math.fround(Math.fround(W.v[a * i + b]) + Math.fround(s * acc));
      }
    }
  }
  const want = new Map();
  for (const [hf, t] of Object.entries(st)) want.set(ggufName(hf), { hf, ...t });
  let ropeFreqs = null;
  if (cfg.rope_scaling && cfg.rope_scaling.rope_type === "llama3") {
    const rs = cfg.rope_scaling, old = rs.original_max_position_embeddings, lo = rs.low_freq_factor, hi = rs.high_freq_factor;
    ropeFreqs = [];
    for (let i = 0; i < hd / 2; i++) {
      const freq = 1 / Math.pow(cfg.rope_theta, (2 * i) / hd), wl = (2 * Math.PI) / freq;
      if (wl < old / hi) ropeFreqs.push(1);
      else if (wl > old / lo) ropeFreqs.push(rs.factor);
      else { const sm = (old / wl - lo) / (hi - lo); ropeFreqs.push(1 / ((1 - sm) / rs.factor + sm)); }
    }
    want.set("rope_freqs.weight", { hf: "(llama3 rope factors)", shape: [hd / 2], v: Float64Array.from(ropeFreqs) });
  }
  const names = tensorInfos.map((t) => t.name);
  report("tensors: exactly the expected names (" + want.size + ")", names.length === want.size && names.every((n) => want.has(n)),
    names.filter((n) => !want.has(n)).concat([...want.keys()].filter((n) => !names.includes(n))));
  const fd = fs.openSync(file, "r");
  const size = fs.fstatSync(fd).size;
  const wantType = { f32: 0, f16: 1, bf16: 30, q8_0: 8 }[dtype];
  bad = [];
  let worst = 0, checked = 0;
  for (const ti of tensorInfos) {
    const w = want.get(ti.name);
    if (!w) continue;
    const rows = w.shape.length === 2 ? w.shape[0] : 1, cols = w.shape.length === 2 ? w.shape[1] : w.shape[0];
    const isMatrix = w.shape.length === 2 && !ti.name.endsWith("_norm.weight") && ti.name.endsWith(".weight");
    const type = !isMatrix ? 0 : wantType === 8 && cols % 32 ? 1 : wantType;
    const shapeOk = ti.n_dims === w.shape.length && Number(ti.shape[0]) === cols && (w.shape.length === 1 || Number(ti.shape[1]) === rows);
    if (!shapeOk || ti.dtype !== type || Number(ti.offset) % 32) { bad.push(ti.name + ": shape/type/alignment " + ti.shape + " " + ti.dtype); continue; }
    const esz = type === 0 ? 4 : 2, rowBytes = type === 8 ? (cols / 32) * 34 : cols * esz;
    const start = Number(tensorDataOffset + ti.offset);
    if (start + rows * rowBytes > size) { bad.push(ti.name + ": data past the end"); continue; }
    const data = Buffer.alloc(rows * rowBytes);
    fs.readSync(fd, data, 0, data.length, start);
    const rope = ti.name === "rope_freqs.weight";
    const perm = arch === "llama" && /attn_[qk]\.(weight|bias)$/.test(ti.name) ? (ti.name.includes("attn_q") ? nh : nkv) : 0;
    const rowsT = w.shape.length === 2 ? rows : perm ? w.shape[0] : 1, colsT = w.shape.length === 2 ? cols : perm ? 1 : cols;
    for (let r = 0; r < rowsT; r++) {
      // stored row r is HF row h*hd + j*hd/2 + i for r = h*hd + 2i + j (convert_hf_to_gguf.py LlamaModel.permute)
      let src = r;
      if (perm) { const h = Math.floor(r / hd), k = r % hd; src = h * hd + (k % 2) * (hd / 2) + Math.floor(k / 2); }
      for (let c = 0; c < colsT; c++) {
        const x = w.v[src * colsT + c], e = r * colsT + c;
        let y, tol;
        if (type === 0) { y = data.readFloatLE(4 * e); tol = rope ? 1e-6 * Math.abs(x) : adapterDir ? 1e-5 * Math.abs(x) + 1e-6 : 0; }
        else if (type === 1) { y = f16(data.readUInt16LE(2 * e)); tol = Math.abs(x) * Math.pow(2, -11) + Math.pow(2, -25); }
        else if (type === 30) { y = bf16(data.readUInt16LE(2 * e)); tol = Math.abs(x) * Math.pow(2, -8) + Math.pow(2, -133); }
        else {
          const blk = r * rowBytes + Math.floor(c / 32) * 34, d = f16(data.readUInt16LE(blk));
          y = d * data.readInt8(blk + 2 + (c % 32));
          tol = 0.56 * d;
        }
        const xf = type === 0 && !rope ? Math.fround(x) : x;
        const err = Math.abs(y - xf);
        if (!(err <= tol)) { if (bad.length < 5) bad.push(ti.name + "[" + r + "," + c + "] = " + y + ", expected " + xf + " (" + w.hf + ")"); }
        if (type === 8 && x !== 0) worst = Math.max(worst, err);
        checked++;
      }
    }
  }
  fs.closeSync(fd);
  report("tensors: every value at the reported offsets (" + checked + " values, dtype " + dtype + ")", !bad.length, bad.join("; "));
  if (dtype === "q8_0") console.log("# q8_0 largest absolute error " + worst);
  process.exit(failures ? 1 : 0);
})().catch((e) => { console.log("FAIL - gguf_read: " + e.stack); process.exit(1); });
