/* gguf.c - GGUF v3 export of a Llama / Qwen2 / Qwen3 model for llama.cpp and ollama: the keys,
 * tokenizer and tensor names of llama.cpp's convert_hf_to_gguf.py (Llama's Q/K rows permuted),
 * F32 / F16 / BF16 / Q8_0 weights, written atomically */
#include "judgerl/gguf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "judgerl/fsutil.h"
#include "judgerl/safetensors.h"
#include "judgerl/strbuf.h"

enum { GGUF_ALIGN = 32 };
enum { T_UINT32 = 4, T_INT32 = 5, T_FLOAT32 = 6, T_BOOL = 7, T_STRING = 8, T_ARRAY = 9 };  /* gguf value types */
enum { G_F32 = 0, G_F16 = 1, G_Q8_0 = 8, G_BF16 = 30 };                                    /* ggml tensor types */
enum { TOK_NORMAL = 1, TOK_CONTROL = 3, TOK_USER_DEFINED = 4, TOK_UNUSED = 5 };           /* llama token types */

jr_status jr_gguf_dtype_parse(const char *s, jr_gguf_dtype *d) {
    static const char *const names[] = {"f32", "f16", "bf16", "q8_0"};
    for (int i = 0; i < 4; i++)
        if (s && !strcmp(s, names[i])) { *d = (jr_gguf_dtype)i; return JR_OK; }
    return jr_fail(JR_EINVAL, "--dtype %s: expected f32, f16, bf16 or q8_0", s ? s : "(none)");
}

/* ---- little-endian serialisation into a byte buffer ------------------------------------------- */

static void put(jr_strbuf *b, const void *p, size_t n) { jr_strbuf_addn(b, p, n); }
static void put_u32(jr_strbuf *b, uint32_t v) { put(b, &v, 4); }
static void put_u64(jr_strbuf *b, uint64_t v) { put(b, &v, 8); }
static void put_str(jr_strbuf *b, const char *s) { put_u64(b, strlen(s)); put(b, s, strlen(s)); }

typedef struct meta {
    jr_strbuf b;
    int n;
} meta;

static void key(meta *m, const char *k, uint32_t type) { put_str(&m->b, k); put_u32(&m->b, type); m->n++; }
static void kv_u32(meta *m, const char *k, uint32_t v) { key(m, k, T_UINT32); put_u32(&m->b, v); }
static void kv_f32(meta *m, const char *k, float v) { key(m, k, T_FLOAT32); put(&m->b, &v, 4); }
static void kv_bool(meta *m, const char *k, int v) { uint8_t x = v != 0; key(m, k, T_BOOL); put(&m->b, &x, 1); }
static void kv_str(meta *m, const char *k, const char *v) { key(m, k, T_STRING); put_str(&m->b, v); }
static void kv_strs(meta *m, const char *k, char *const *v, int n) {
    key(m, k, T_ARRAY);
    put_u32(&m->b, T_STRING);
    put_u64(&m->b, (uint64_t)n);
    for (int i = 0; i < n; i++) put_str(&m->b, v[i]);
}
static void kv_i32s(meta *m, const char *k, const int32_t *v, int n) {
    key(m, k, T_ARRAY);
    put_u32(&m->b, T_INT32);
    put_u64(&m->b, (uint64_t)n);
    put(&m->b, v, 4 * (size_t)n);
}

/* ---- the tokenizer ---------------------------------------------------------------------------- */

/* The pre-tokenizer regexes of llama.cpp's names (src/llama-vocab.cpp), as tokenizer.json writes
 * them; llama.cpp's own rewritings of them are accepted too. */
#define RE_CONTRACTIONS "(?i:'s|'t|'re|'ve|'m|'ll|'d)"
#define RE_CONTRACTIONS_LC "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
#define RE_TAIL "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RE_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
static const struct { const char *name, *re; } pre_names[] = {
    {"llama-bpe", RE_CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}" RE_TAIL},
    {"llama-bpe", RE_CONTRACTIONS_LC "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}" RE_TAIL},
    {"qwen2", RE_CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}" RE_TAIL},
    {"qwen2", RE_CONTRACTIONS_LC "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}" RE_TAIL},
    {"gpt-2", RE_GPT2},
};

typedef struct vocab {
    int n;                 /* = config vocab_size */
    char **tok;
    int32_t *type;
    char **merges;
    int n_merges;
    int special[6];        /* bos, eos, unk, sep, pad, mask: id or -1 */
    int add[2];            /* add_bos_token, add_eos_token: 0/1, or -1 when unset */
    char *chat_template;
    char pre[32];
} vocab;

static const char *const special_names[6] = {"bos", "eos", "unk", "sep", "pad", "mask"};
static const char *const special_keys[6] = {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                                            "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.seperator_token_id",
                                            "tokenizer.ggml.padding_token_id", "tokenizer.ggml.mask_token_id"};

static void vocab_free(vocab *v) {
    for (int i = 0; v->tok && i < v->n; i++) free(v->tok[i]);
    for (int i = 0; v->merges && i < v->n_merges; i++) free(v->merges[i]);
    free(v->tok);
    free(v->type);
    free(v->merges);
    free(v->chat_template);
}

/* tokenizer.ggml.pre from tokenizer.json's pre_tokenizer: its Split regexes (and ByteLevel's own
 * GPT-2 regex when use_regex is on) must equal one name's. */
static jr_status find_pre(const json_t *tj, const char *path, char *out, size_t out_len) {
    const json_t *pt = json_object_get(tj, "pre_tokenizer");
    const json_t *list = json_is_array(json_object_get(pt, "pretokenizers")) ? json_object_get(pt, "pretokenizers") : NULL;
    size_t n = list ? json_array_size(list) : 1;
    jr_strbuf res = {0};
    int bytelevel = 0, nre = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *p = list ? json_array_get(list, i) : pt;
        const char *type = json_string_value(json_object_get(p, "type"));
        if (type && !strcmp(type, "Split")) {
            const char *re = json_string_value(json_object_get(json_object_get(p, "pattern"), "Regex"));
            if (!re) { jr_strbuf_free(&res); return jr_fail(JR_EFORMAT, "%s: pre_tokenizer Split without a Regex pattern", path); }
            if (nre++) jr_strbuf_addc(&res, '\n');
            jr_strbuf_add(&res, re);
        } else if (type && !strcmp(type, "ByteLevel")) {
            bytelevel = 1;
            const json_t *ur = json_object_get(p, "use_regex");
            if (!ur || json_is_true(ur)) {
                if (nre++) jr_strbuf_addc(&res, '\n');
                jr_strbuf_add(&res, RE_GPT2);
            }
        } else {
            jr_strbuf_free(&res);
            return jr_fail(JR_EFORMAT, "%s: pre_tokenizer %s is not one llama.cpp knows (Split + ByteLevel)", path, type ? type : "null");
        }
    }
    char *got = jr_strbuf_take(&res);
    if (!got) return JR_ENOMEM;
    if (!bytelevel) {
        free(got);
        return jr_fail(JR_EFORMAT, "%s: not a byte-level BPE tokenizer (no ByteLevel pre-tokenizer): GGUF export writes llama.cpp's gpt2 tokenizer model only", path);
    }
    for (size_t i = 0; i < sizeof pre_names / sizeof *pre_names; i++)
        if (!strcmp(got, pre_names[i].re)) {
            snprintf(out, out_len, "%s", pre_names[i].name);
            free(got);
            return JR_OK;
        }
    jr_status st = jr_fail(JR_EFORMAT, "%s: the pre-tokenizer regex '%.160s' matches none of llama.cpp's (llama-bpe, qwen2, gpt-2): "
                                       "llama.cpp would split text differently than this tokenizer, so no GGUF is written", path, got);
    free(got);
    return st;
}

/* A special-token entry of tokenizer_config.json: "text" or {"content": "text"}. */
static const char *entry_text(const json_t *e) {
    return json_is_string(e) ? json_string_value(e) : json_string_value(json_object_get(e, "content"));
}

static int looks_special(const char *t) {
    size_t n = strlen(t);
    return (n >= 4 && !strncmp(t, "<|", 2) && !strcmp(t + n - 2, "|>")) || !strcmp(t, "<pad>") || !strcmp(t, "<mask>");
}

/* "\xe2\x96\x81" (U+2581, SentencePiece's space) replaced by " " in user-defined tokens. */
static void unspace(char *s) {
    char *w = s;
    for (const char *r = s; *r;) {
        if (!strncmp(r, "\xe2\x96\x81", 3)) { *w++ = ' '; r += 3; }
        else *w++ = *r++;
    }
    *w = 0;
}

static jr_status load_vocab(vocab *v, const jr_model_config *cfg, const char *dir) {
    memset(v, 0, sizeof *v);
    for (int i = 0; i < 6; i++) v->special[i] = -1;
    v->add[0] = v->add[1] = -1;
    char *path = jr_path_join(dir, "tokenizer.json");
    if (!path) return JR_ENOMEM;
    json_error_t err;
    json_t *tj = json_load_file(path, 0, &err);
    jr_status st = JR_OK;
    if (!tj) {
        st = jr_path_exists(path) ? jr_fail(JR_EFORMAT, "%s: %s (line %d)", path, err.text, err.line)
                                  : jr_fail(JR_ENOTFOUND, "%s: missing: a GGUF needs the model's tokenizer.json (a byte-level BPE)", path);
        free(path);
        return st;
    }
    const json_t *model = json_object_get(tj, "model");
    const char *mtype = json_string_value(json_object_get(model, "type"));
    if (!mtype || strcmp(mtype, "BPE")) st = jr_fail(JR_EFORMAT, "%s: model.type %s: only BPE tokenizers can be exported", path, mtype ? mtype : "null");
    if (!st) st = find_pre(tj, path, v->pre, sizeof v->pre);
    v->n = cfg->vocab_size;
    v->tok = st ? NULL : jr_calloc((size_t)v->n, sizeof *v->tok);
    v->type = st ? NULL : jr_calloc((size_t)v->n, sizeof *v->type);
    if (!st && (!v->tok || !v->type)) st = JR_ENOMEM;
    const char *k;
    json_t *val;
    if (!st) json_object_foreach((json_t *)json_object_get(model, "vocab"), k, val) {
        json_int_t id = json_integer_value(val);
        if (!json_is_integer(val) || id < 0 || id >= v->n) {
            st = jr_fail(JR_EFORMAT, "%s: token '%.40s' has id %lld, outside config.json's vocab_size %d", path, k, (long long)id, v->n);
            break;
        }
        free(v->tok[id]);
        v->tok[id] = jr_strdup(k);
        v->type[id] = TOK_NORMAL;
    }
    const json_t *added = json_object_get(tj, "added_tokens");
    size_t i;
    json_array_foreach(added, i, val) {
        if (st) break;
        json_int_t id = json_integer_value(json_object_get(val, "id"));
        const char *content = json_string_value(json_object_get(val, "content"));
        if (!content || id < 0 || id >= v->n) { st = jr_fail(JR_EFORMAT, "%s: added_tokens[%zu]: bad id or content", path, i); break; }
        free(v->tok[id]);
        v->tok[id] = jr_strdup(content);
        int special = json_is_true(json_object_get(val, "special")) || looks_special(content);
        v->type[id] = special ? TOK_CONTROL : TOK_USER_DEFINED;
        if (!special && v->tok[id]) unspace(v->tok[id]);
    }
    for (int id = 0; !st && id < v->n; id++) {
        if (v->tok[id]) continue;
        char pad[32];
        snprintf(pad, sizeof pad, "[PAD%d]", id);
        v->tok[id] = jr_strdup(pad);
        v->type[id] = TOK_UNUSED;
    }
    for (int id = 0; !st && id < v->n; id++)
        if (!v->tok[id]) st = JR_ENOMEM;
    /* merges: "a b", or [a, b] (transformers >= 4.45) with spaces inside written as U+0120 */
    const json_t *merges = json_object_get(model, "merges");
    v->n_merges = 0;
    v->merges = st ? NULL : jr_calloc(json_array_size(merges) + 1, sizeof *v->merges);
    if (!st && !v->merges) st = JR_ENOMEM;
    json_array_foreach(merges, i, val) {
        if (st) break;
        jr_strbuf b = {0};
        if (json_is_string(val)) jr_strbuf_add(&b, json_string_value(val));
        else if (json_is_array(val) && json_array_size(val) == 2) {
            for (int part = 0; part < 2; part++) {
                if (part) jr_strbuf_addc(&b, ' ');
                for (const char *c = json_string_value(json_array_get(val, (size_t)part)); c && *c; c++)
                    if (*c == ' ') jr_strbuf_add(&b, "\xc4\xa0");
                    else jr_strbuf_addc(&b, *c);
            }
        } else {
            jr_strbuf_free(&b);
            st = jr_fail(JR_EFORMAT, "%s: model.merges[%zu]: expected \"a b\" or [a, b]", path, i);
            break;
        }
        if (!(v->merges[v->n_merges++] = jr_strbuf_take(&b))) st = JR_ENOMEM;
    }
    if (!st && v->n_merges == 0) st = jr_fail(JR_EFORMAT, "%s: model.merges is empty", path);
    /* tokenizer_config.json: the chat template and special tokens (found by content among
     * added_tokens), then config.json's *_token_id for the ones still unset */
    char *tcp = jr_path_join(dir, "tokenizer_config.json");
    /* (Llama-3's model_max_length does not fit an integer) */
    json_t *tc = tcp && jr_path_exists(tcp) ? json_load_file(tcp, JSON_DECODE_INT_AS_REAL, &err) : NULL;
    if (!st && tcp && jr_path_exists(tcp) && !tc) st = jr_fail(JR_EFORMAT, "%s: %s (line %d)", tcp, err.text, err.line);
    free(tcp);
    if (!st && tc) {
        const json_t *ct = json_object_get(tc, "chat_template");
        if (json_is_string(ct) && !(v->chat_template = jr_strdup(json_string_value(ct)))) st = JR_ENOMEM;
        for (int t = 0; t < 6; t++) {
            char name[32];
            snprintf(name, sizeof name, "%s_token", special_names[t]);
            const char *text = entry_text(json_object_get(tc, name));
            json_array_foreach(added, i, val)
                if (text && v->special[t] < 0 && !strcmp(text, json_string_value(json_object_get(val, "content")) ? json_string_value(json_object_get(val, "content")) : ""))
                    v->special[t] = (int)json_integer_value(json_object_get(val, "id"));
        }
        for (int t = 0; t < 2; t++) {
            char name[32];
            snprintf(name, sizeof name, "add_%s_token", special_names[t]);
            const json_t *a = json_object_get(tc, name);
            if (json_is_boolean(a)) v->add[t] = json_is_true(a);
        }
    }
    json_decref(tc);
    for (int t = 0; t < 6 && !st; t++) {
        char name[32];
        snprintf(name, sizeof name, "%s_token_id", special_names[t]);
        const json_t *idv = json_object_get(cfg->json, name);
        if (v->special[t] < 0 && json_is_integer(idv) && json_integer_value(idv) >= 0 && json_integer_value(idv) < v->n)
            v->special[t] = (int)json_integer_value(idv);
    }
    json_decref(tj);
    free(path);
    if (st) vocab_free(v);
    return st;
}

/* ---- tensors ---------------------------------------------------------------------------------- */

typedef struct tensor {
    char name[64];
    const float *src;      /* (rows, cols) row-major, as in the HF file */
    float *owned;          /* generated data (rope_freqs), or NULL */
    int64_t rows, cols;    /* a 1-D tensor has rows == 1 */
    int ndim;
    int permute_heads;     /* > 0: Llama's Q/K row permutation with this many heads */
    int type;              /* ggml type */
    uint64_t offset, size; /* in the data section */
} tensor;

static const char *gguf_arch(jr_arch a) { return a == JR_ARCH_LLAMA ? "llama" : a == JR_ARCH_QWEN2 ? "qwen2" : "qwen3"; }

/* llama.cpp's name of an HF tensor role. */
static const char *role_name(jr_tensor_role r) {
    switch (r) {
    case JR_T_EMBED: return "token_embd.weight";
    case JR_T_ATTN_NORM: return "attn_norm.weight";
    case JR_T_Q: return "attn_q.weight";
    case JR_T_K: return "attn_k.weight";
    case JR_T_V: return "attn_v.weight";
    case JR_T_O: return "attn_output.weight";
    case JR_T_Q_BIAS: return "attn_q.bias";
    case JR_T_K_BIAS: return "attn_k.bias";
    case JR_T_V_BIAS: return "attn_v.bias";
    case JR_T_O_BIAS: return "attn_output.bias";
    case JR_T_Q_NORM: return "attn_q_norm.weight";
    case JR_T_K_NORM: return "attn_k_norm.weight";
    case JR_T_MLP_NORM: return "ffn_norm.weight";
    case JR_T_GATE: return "ffn_gate.weight";
    case JR_T_UP: return "ffn_up.weight";
    case JR_T_DOWN: return "ffn_down.weight";
    case JR_T_FINAL_NORM: return "output_norm.weight";
    case JR_T_LM_HEAD: return "output.weight";
    default: return NULL;
    }
}

static uint64_t type_size(int type, int64_t n) {
    return type == G_F32 ? 4 * (uint64_t)n : type == G_Q8_0 ? 34 * (uint64_t)(n / 32) : 2 * (uint64_t)n;
}

/* llama3 rope scaling's per-frequency factors (convert_hf_to_gguf.py LlamaModel.generate_extra_tensors),
 * in float32 arithmetic as torch computes them there. */
static float *rope_factors(const jr_model_config *c) {
    int dim = c->head_dim, n = dim / 2;
    float *f = jr_malloc(sizeof *f * (size_t)n);
    if (!f) return NULL;
    float old = (float)c->rope_original_max_pos, lo = (float)c->rope_low_freq_factor, hi = (float)c->rope_high_freq_factor;
    float low_wl = old / lo, high_wl = old / hi;
    for (int i = 0; i < n; i++) {
        float freq = 1.0f / powf((float)c->rope_theta, (float)(2 * i) / (float)dim);
        float wl = (float)(2 * M_PI) / freq;
        if (wl < high_wl) f[i] = 1.0f;
        else if (wl > low_wl) f[i] = (float)c->rope_factor;
        else {
            float smooth = (old / wl - lo) / (hi - lo);
            f[i] = 1.0f / ((1.0f - smooth) / (float)c->rope_factor + smooth);
        }
    }
    return f;
}

static int build_tensors(const jr_model *m, jr_gguf_dtype dtype, tensor **out, int *n_out, int *fallback) {
    const jr_model_config *c = &m->cfg;
    tensor *t = jr_calloc((size_t)m->n_tensors + 1, sizeof *t);
    if (!t) return -1;
    int n = 0;
    *fallback = 0;
    static const int wanted[] = {G_F32, G_F16, G_BF16, G_Q8_0};
    if (c->rope_type == JR_ROPE_LLAMA3) {
        snprintf(t[n].name, sizeof t[n].name, "rope_freqs.weight");
        if (!(t[n].owned = rope_factors(c))) { free(t); return -1; }
        t[n].src = t[n].owned;
        t[n].rows = 1;
        t[n].cols = c->head_dim / 2;
        t[n].ndim = 1;
        t[n].type = G_F32;
        n++;
    }
    for (int i = 0; i < m->n_tensors; i++) {
        const jr_model_tensor *mt = &m->tensors[i];
        tensor *x = &t[n++];
        if (mt->layer >= 0) snprintf(x->name, sizeof x->name, "blk.%d.%s", mt->layer, role_name(mt->role));
        else snprintf(x->name, sizeof x->name, "%s", role_name(mt->role));
        x->src = m->params + m->offset[i];
        x->ndim = mt->ndim;
        x->rows = mt->ndim == 2 ? mt->shape[0] : 1;
        x->cols = mt->ndim == 2 ? mt->shape[1] : mt->shape[0];
        if (c->arch == JR_ARCH_LLAMA && (mt->role == JR_T_Q || mt->role == JR_T_Q_BIAS)) x->permute_heads = c->num_attention_heads;
        if (c->arch == JR_ARCH_LLAMA && (mt->role == JR_T_K || mt->role == JR_T_K_BIAS)) x->permute_heads = c->num_key_value_heads;
        size_t nl = strlen(x->name);
        int keep_f32 = x->ndim == 1 || (nl > 12 && !strcmp(x->name + nl - 12, "_norm.weight")) || strcmp(x->name + nl - 7, ".weight");
        x->type = keep_f32 ? G_F32 : wanted[dtype];
        if (x->type == G_Q8_0 && x->cols % 32) { x->type = G_F16; (*fallback)++; } /* as convert_hf_to_gguf.py */
    }
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        t[i].offset = off;
        t[i].size = type_size(t[i].type, t[i].rows * t[i].cols);
        off += (t[i].size + GGUF_ALIGN - 1) / GGUF_ALIGN * GGUF_ALIGN;
    }
    *out = t;
    *n_out = n;
    return 0;
}

/* Row r of tensor x as stored: Llama's Q/K permutation reshapes the rows to (heads, 2, hd/2)
 * and swaps the last two axes, so stored row h*hd + 2i + j is HF row h*hd + j*hd/2 + i. */
static const float *src_row(const tensor *x, int64_t r) {
    if (!x->permute_heads) return x->src + r * x->cols;
    int64_t hd = x->rows / x->permute_heads, h = r / hd, k = r % hd, i = k / 2, j = k % 2;
    return x->src + (h * hd + j * (hd / 2) + i) * x->cols;
}

/* One row converted to the tensor's type into buf. */
static size_t encode_row(const tensor *x, const float *row, uint8_t *buf) {
    int64_t n = x->cols;
    switch (x->type) {
    case G_F32: memcpy(buf, row, 4 * (size_t)n); return 4 * (size_t)n;
    case G_F16:
    case G_BF16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t h = x->type == G_F16 ? jr_f32_to_f16(row[i]) : jr_f32_to_bf16(row[i]);
            memcpy(buf + 2 * i, &h, 2);
        }
        return 2 * (size_t)n;
    default: /* Q8_0, as ggml's quantize_row_q8_0_ref */
        for (int64_t b = 0; b < n / 32; b++) {
            const float *xb = row + 32 * b;
            float amax = 0;
            for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(xb[i]));
            float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
            uint16_t dh = jr_f32_to_f16(d);
            uint8_t *o = buf + 34 * b;
            memcpy(o, &dh, 2);
            for (int i = 0; i < 32; i++) o[2 + i] = (uint8_t)(int8_t)roundf(xb[i] * id);
        }
        return 34 * (size_t)(n / 32);
    }
}

/* ---- the file --------------------------------------------------------------------------------- */

static void add_hparams(meta *mt, const jr_model *m, const char *arch, const char *name, jr_gguf_dtype dtype) {
    const jr_model_config *c = &m->cfg;
    static const uint32_t file_type[] = {0, 1, 32, 7}; /* ALL_F32, MOSTLY_F16, MOSTLY_BF16, MOSTLY_Q8_0 */
    char k[96];
#define AK(suffix) (snprintf(k, sizeof k, "%s.%s", arch, suffix), k)
    kv_str(mt, "general.architecture", arch);
    kv_str(mt, "general.name", name);
    kv_u32(mt, AK("block_count"), (uint32_t)c->num_hidden_layers);
    kv_u32(mt, AK("context_length"), (uint32_t)c->max_position_embeddings);
    kv_u32(mt, AK("embedding_length"), (uint32_t)c->hidden_size);
    kv_u32(mt, AK("feed_forward_length"), (uint32_t)c->intermediate_size);
    kv_u32(mt, AK("attention.head_count"), (uint32_t)c->num_attention_heads);
    kv_u32(mt, AK("attention.head_count_kv"), (uint32_t)c->num_key_value_heads);
    kv_f32(mt, AK("rope.freq_base"), (float)c->rope_theta);
    kv_f32(mt, AK("attention.layer_norm_rms_epsilon"), (float)c->rms_norm_eps);
    if (json_object_get(c->json, "head_dim")) {
        kv_u32(mt, AK("attention.key_length"), (uint32_t)c->head_dim);
        kv_u32(mt, AK("attention.value_length"), (uint32_t)c->head_dim);
    }
    kv_u32(mt, "general.file_type", file_type[dtype]);
    if (c->arch == JR_ARCH_LLAMA) {
        kv_u32(mt, AK("vocab_size"), (uint32_t)c->vocab_size);
        kv_u32(mt, AK("rope.dimension_count"), (uint32_t)c->head_dim);
    }
    kv_u32(mt, "general.quantization_version", 2);
#undef AK
}

static void add_tokenizer(meta *mt, const vocab *v) {
    kv_str(mt, "tokenizer.ggml.model", "gpt2");
    kv_str(mt, "tokenizer.ggml.pre", v->pre);
    kv_strs(mt, "tokenizer.ggml.tokens", v->tok, v->n);
    kv_i32s(mt, "tokenizer.ggml.token_type", v->type, v->n);
    kv_strs(mt, "tokenizer.ggml.merges", v->merges, v->n_merges);
    for (int t = 0; t < 6; t++)
        if (v->special[t] >= 0) kv_u32(mt, special_keys[t], (uint32_t)v->special[t]);
    if (v->add[0] >= 0) kv_bool(mt, "tokenizer.ggml.add_bos_token", v->add[0]);
    if (v->add[1] >= 0) kv_bool(mt, "tokenizer.ggml.add_eos_token", v->add[1]);
    if (v->chat_template) kv_str(mt, "tokenizer.chat_template", v->chat_template);
}

static jr_status write_modelfile(const char *path, const char *gguf_path, const vocab *v) {
    const char *base = strrchr(gguf_path, '/');
    base = base ? base + 1 : gguf_path;
    jr_strbuf b = {0};
    jr_strbuf_add(&b, "# Modelfile written by judgerl export: ollama create NAME -f Modelfile\n"
                      "# ollama reads the chat template from the GGUF (tokenizer.chat_template).\nFROM ./");
    jr_strbuf_add(&b, base);
    jr_strbuf_addc(&b, '\n');
    if (v->special[1] >= 0 && !strchr(v->tok[v->special[1]], '"')) {
        jr_strbuf_add(&b, "PARAMETER stop \"");
        jr_strbuf_add(&b, v->tok[v->special[1]]);
        jr_strbuf_add(&b, "\"\n");
    }
    char *txt = jr_strbuf_take(&b);
    if (!txt) return JR_ENOMEM;
    jr_status st = jr_write_atomic(path, txt, strlen(txt));
    free(txt);
    return st;
}

jr_status jr_gguf_export(const jr_model *m, const jr_gguf_opts *o, jr_gguf_report *rep) {
    vocab v;
    jr_status st = load_vocab(&v, &m->cfg, o->model_dir);
    if (st) return st;
    const char *arch = gguf_arch(m->cfg.arch);
    char name[256];
    const char *nm = o->name;
    if (!nm) {
        size_t l = strlen(o->model_dir);
        while (l > 1 && o->model_dir[l - 1] == '/') l--;
        const char *s = o->model_dir + l;
        while (s > o->model_dir && s[-1] != '/') s--;
        snprintf(name, sizeof name, "%.*s", (int)(o->model_dir + l - s), s);
        nm = name;
    }
    tensor *t = NULL;
    int nt = 0, fallback = 0;
    meta mt = {0};
    jr_strbuf head = {0};
    if (build_tensors(m, o->dtype, &t, &nt, &fallback)) { vocab_free(&v); return JR_ENOMEM; }
    add_hparams(&mt, m, arch, nm, o->dtype);
    add_tokenizer(&mt, &v);
    /* header, metadata, tensor infos (dims fastest first), padding to the data section */
    put(&head, "GGUF", 4);
    put_u32(&head, 3);
    put_u64(&head, (uint64_t)nt);
    put_u64(&head, (uint64_t)mt.n);
    put(&head, mt.b.p, mt.b.n);
    for (int i = 0; i < nt; i++) {
        put_str(&head, t[i].name);
        put_u32(&head, (uint32_t)t[i].ndim);
        put_u64(&head, (uint64_t)t[i].cols);
        if (t[i].ndim == 2) put_u64(&head, (uint64_t)t[i].rows);
        put_u32(&head, (uint32_t)t[i].type);
        put_u64(&head, t[i].offset);
    }
    static const uint8_t zeros[GGUF_ALIGN] = {0};
    put(&head, zeros, (GGUF_ALIGN - head.n % GGUF_ALIGN) % GGUF_ALIGN);
    jr_afile af = {0};
    uint8_t *buf = NULL;
    int64_t maxcols = 1;
    for (int i = 0; i < nt; i++) maxcols = t[i].cols > maxcols ? t[i].cols : maxcols;
    if (head.oom || mt.b.oom) st = JR_ENOMEM;
    if (!st && !(buf = jr_malloc(4 * (size_t)maxcols + 64))) st = JR_ENOMEM;
    if (!st) st = jr_afile_open(&af, o->out_path);
    int64_t bytes = (int64_t)head.n;
    if (!st && fwrite(head.p, 1, head.n, af.f) != head.n) st = jr_fail(JR_EIO, "%s: write failed", o->out_path);
    for (int i = 0; !st && i < nt; i++) {
        for (int64_t r = 0; !st && r < t[i].rows; r++) {
            size_t len = encode_row(&t[i], src_row(&t[i], r), buf);
            if (fwrite(buf, 1, len, af.f) != len) st = jr_fail(JR_EIO, "%s: write failed", o->out_path);
            bytes += (int64_t)len;
        }
        size_t pad = (GGUF_ALIGN - t[i].size % GGUF_ALIGN) % GGUF_ALIGN;
        if (!st && fwrite(zeros, 1, pad, af.f) != pad) st = jr_fail(JR_EIO, "%s: write failed", o->out_path);
        bytes += (int64_t)pad;
    }
    if (!st) st = jr_afile_commit(&af);
    else jr_afile_abort(&af);
    if (!st && o->modelfile) st = write_modelfile(o->modelfile, o->out_path, &v);
    if (!st && rep) {
        memset(rep, 0, sizeof *rep);
        rep->n_tensors = nt;
        rep->n_kv = mt.n;
        rep->bytes = bytes;
        rep->n_fallback_f16 = fallback;
        snprintf(rep->arch, sizeof rep->arch, "%s", arch);
        snprintf(rep->pre, sizeof rep->pre, "%s", v.pre);
    }
    free(buf);
    for (int i = 0; i < nt; i++) free(t[i].owned);
    free(t);
    jr_strbuf_free(&head);
    jr_strbuf_free(&mt.b);
    vocab_free(&v);
    return st;
}
