/* hfconfig.h - Hugging Face config.json and generation_config.json, and the tensor list a config implies */
#ifndef JUDGERL_HFCONFIG_H
#define JUDGERL_HFCONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "judgerl/status.h"

/* ---- config.json ---------------------------------------------------------------------------- */

typedef enum { JR_ARCH_LLAMA = 0, JR_ARCH_QWEN2, JR_ARCH_QWEN3 } jr_arch;
typedef enum { JR_ROPE_DEFAULT = 0, JR_ROPE_LLAMA3 } jr_rope_type;

#define JR_MAX_EOS 8

/* A decoder-only model's configuration (Llama / Qwen2 / Qwen3 layout). */
typedef struct jr_model_config {
    jr_arch arch;
    int hidden_size;
    int num_hidden_layers;
    int num_attention_heads;
    int num_key_value_heads;     /* default: num_attention_heads */
    int head_dim;                /* from config.json when present, else hidden_size / heads */
    int intermediate_size;
    int vocab_size;
    int max_position_embeddings;
    double rms_norm_eps;
    double rope_theta;
    jr_rope_type rope_type;      /* rope_scaling null / "default" -> DEFAULT; "llama3" -> LLAMA3 */
    double rope_factor;          /* llama3 only: factor, low_freq_factor, high_freq_factor, */
    double rope_low_freq_factor; /*   original_max_position_embeddings (0 when DEFAULT) */
    double rope_high_freq_factor;
    int rope_original_max_pos;
    int tie_word_embeddings;     /* lm_head shares model.embed_tokens.weight (absent from the file) */
    int qkv_bias;                /* q/k/v projections have a bias (Qwen2 always; Llama/Qwen3 attention_bias) */
    int o_bias;                  /* o_proj has a bias (Llama/Qwen3 attention_bias) */
    int qk_norm;                 /* per-head RMSNorm on q and k (Qwen3) */
    int bos_token_id;            /* -1 when absent/null */
    int n_eos;                   /* eos_token_id: an int or a list in config.json */
    int eos_token_ids[JR_MAX_EOS];
    char torch_dtype[16];        /* "float32", "bfloat16", ... ("" when absent) */
    json_t *json;                /* the whole config.json as read (owned), so saving keeps unknown keys */
} jr_model_config;

/* The architecture string of config.json ("LlamaForCausalLM", ...) and its model_type ("llama"). */
const char *jr_arch_name(jr_arch a);
const char *jr_arch_model_type(jr_arch a);

/* Fills *c with the defaults of `arch` (a small model: every size must still be set by the
 * caller, then jr_model_config_validate). c->json is NULL. Used to build new models. */
void jr_model_config_init(jr_model_config *c, jr_arch arch);

/* Parses config.json text. `name` (the path) prefixes every message:
 * "config.json: num_key_value_heads=3 does not divide num_attention_heads=8". Unknown
 * architectures, rope_scaling types other than default/llama3, hidden_act other than silu, mlp_bias
 * and sliding windows are errors. On success c->json owns the parsed object; on error *c is zeroed. */
jr_status jr_model_config_parse(jr_model_config *c, const char *text, size_t len, const char *name);
/* Reads and parses a config.json file. */
jr_status jr_model_config_load(jr_model_config *c, const char *path);

/* Checks the sizes and their relations (all positive, heads divisible by kv heads, ...).
 * `name` prefixes the message. */
jr_status jr_model_config_validate(const jr_model_config *c, const char *name);

/* The config as config.json text (caller frees): c->json (unknown keys kept, in their order) with
 * every field of *c written over it; a fresh object when c->json is NULL. */
char *jr_model_config_to_json(const jr_model_config *c);

/* Writes jr_model_config_to_json atomically to `path`. */
jr_status jr_model_config_save(const jr_model_config *c, const char *path);

void jr_model_config_free(jr_model_config *c);

/* The rotary inverse frequencies of the config, head_dim / 2 of them:
 * inv_freq[i] = rope_theta^(-2i/head_dim), then the llama3 scaling when rope_type is LLAMA3
 * (as transformers' _compute_llama3_parameters). Computed in double, stored as float. */
void jr_model_rope_inv_freq(const jr_model_config *c, float *inv_freq);

/* Total number of parameters the config implies (a tied lm_head counted once). */
int64_t jr_model_param_count(const jr_model_config *c);

/* JSON text as transformers writes its files (json.dumps(indent=2, sort_keys=True) + newline; reals
 * in their shortest round-trip spelling). Caller frees; NULL + message on allocation failure. */
char *jr_hf_json_dumps(const json_t *j);

/* ---- generation_config.json ----------------------------------------------------------------- */

/* Absent values: ints -1, doubles NAN (isnan), do_sample -1. */
typedef struct jr_generation_config {
    int bos_token_id;
    int pad_token_id;
    int n_eos;
    int eos_token_ids[JR_MAX_EOS];
    int do_sample;
    double temperature;
    double top_p;
    int top_k;
    double min_p;
    double repetition_penalty;
    int max_new_tokens;
    int max_length;
    json_t *json;               /* the whole file as read (owned); NULL when built in code */
} jr_generation_config;

/* Every field absent, json NULL. */
void jr_generation_config_init(jr_generation_config *g);
/* Parses generation_config.json text (`name` prefixes messages). On error *g is reset. */
jr_status jr_generation_config_parse(jr_generation_config *g, const char *text, size_t len, const char *name);
jr_status jr_generation_config_load(jr_generation_config *g, const char *path);
/* g->json with the present fields written over it (caller frees). */
char *jr_generation_config_to_json(const jr_generation_config *g);
void jr_generation_config_free(jr_generation_config *g);

/* ---- the tensor list ------------------------------------------------------------------------ */

/* What a tensor is, so the engine can map names to its own parameters. */
typedef enum {
    JR_T_EMBED = 0,      /* model.embed_tokens.weight          (vocab, hidden) */
    JR_T_ATTN_NORM,      /* layers.L.input_layernorm.weight    (hidden) */
    JR_T_Q,              /* layers.L.self_attn.q_proj.weight   (heads*head_dim, hidden) */
    JR_T_K,              /* layers.L.self_attn.k_proj.weight   (kv_heads*head_dim, hidden) */
    JR_T_V,              /* layers.L.self_attn.v_proj.weight   (kv_heads*head_dim, hidden) */
    JR_T_O,              /* layers.L.self_attn.o_proj.weight   (hidden, heads*head_dim) */
    JR_T_Q_BIAS,         /* layers.L.self_attn.q_proj.bias     (heads*head_dim) */
    JR_T_K_BIAS,         /* layers.L.self_attn.k_proj.bias     (kv_heads*head_dim) */
    JR_T_V_BIAS,         /* layers.L.self_attn.v_proj.bias     (kv_heads*head_dim) */
    JR_T_O_BIAS,         /* layers.L.self_attn.o_proj.bias     (hidden) */
    JR_T_Q_NORM,         /* layers.L.self_attn.q_norm.weight   (head_dim) */
    JR_T_K_NORM,         /* layers.L.self_attn.k_norm.weight   (head_dim) */
    JR_T_MLP_NORM,       /* layers.L.post_attention_layernorm.weight (hidden) */
    JR_T_GATE,           /* layers.L.mlp.gate_proj.weight      (intermediate, hidden) */
    JR_T_UP,             /* layers.L.mlp.up_proj.weight        (intermediate, hidden) */
    JR_T_DOWN,           /* layers.L.mlp.down_proj.weight      (hidden, intermediate) */
    JR_T_FINAL_NORM,     /* model.norm.weight                  (hidden) */
    JR_T_LM_HEAD,        /* lm_head.weight                     (vocab, hidden); absent when tied */
    JR_T_ROLE_COUNT
} jr_tensor_role;

/* One parameter tensor a config implies, with its HF name. */
typedef struct jr_model_tensor {
    char name[96];
    jr_tensor_role role;
    int layer;            /* -1 for embed / final norm / lm_head */
    int ndim;             /* 1 or 2 */
    int64_t shape[2];
    int64_t numel;
} jr_model_tensor;

/* Every parameter tensor of the config in a fixed order: model.embed_tokens.weight; per layer
 * input_layernorm, self_attn.{q,k,v,o}_proj.weight, {q,k,v}_proj.bias (qkv_bias), o_proj.bias
 * (o_bias), self_attn.{q,k}_norm.weight (qk_norm), post_attention_layernorm,
 * mlp.{gate,up,down}_proj.weight; model.norm.weight; lm_head.weight unless tied.
 * *out is a new array (caller frees) of *n entries. */
jr_status jr_model_tensors(const jr_model_config *c, jr_model_tensor **out, int *n);

#endif
