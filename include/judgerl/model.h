/* model.h - the decoder-only transformer (Llama / Qwen2 / Qwen3 layout): fp32 weights, forward, backward, log-probs */
#ifndef JUDGERL_MODEL_H
#define JUDGERL_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "judgerl/config.h"
#include "judgerl/hfmodel.h"
#include "judgerl/status.h"

/* Pointers into one flat buffer, one per HF tensor of a layer (NULL when the config lacks it). */
typedef struct jr_layer_w {
    float *attn_norm;                 /* (C) input_layernorm */
    float *wq, *wk, *wv, *wo;         /* (Hq*D, C), (Hkv*D, C), (Hkv*D, C), (C, Hq*D) */
    float *bq, *bk, *bv, *bo;         /* (Hq*D), (Hkv*D), (Hkv*D), (C) or NULL */
    float *q_norm, *k_norm;           /* (D) or NULL (Qwen3 only) */
    float *mlp_norm;                  /* (C) post_attention_layernorm */
    float *wgate, *wup, *wdown;       /* (I, C), (I, C), (C, I) */
} jr_layer_w;

/* Named views of a flat buffer of every parameter (weights, gradients, or optimizer state). */
typedef struct jr_weights {
    float *embed;                     /* (V, C) */
    jr_layer_w *layers;               /* num_hidden_layers of them (owned by the views) */
    float *final_norm;                /* (C) */
    float *lm_head;                   /* (V, C); == embed when tied */
} jr_weights;

/* What the transformer's matmuls compute in (model.compute). FP32: OpenBLAS sgemm, bit-identical to
 * every earlier release. BF16: operands rounded to bf16, products accumulated in fp32 (oneDNN,
 * jr_matmul_bf16_*); weights, gradients and everything else stay fp32. */
typedef enum { JR_COMPUTE_F32 = 0, JR_COMPUTE_BF16 = 1 } jr_compute;

/* model.compute: "float32" or "bfloat16" as named, anything else ("auto", NULL) bfloat16 when the CPU
 * has bf16 units (jr_nn_bf16_native) and float32 otherwise. */
jr_compute jr_model_compute_resolve(const char *name);

/* Refuses a bf16 training compute that this CPU cannot run (no AVX512-BF16 or AMX-BF16 units, or JR_CPU
 * below avx512): one line naming `what` (the field or flag), the CPU's features and the way out. oneDNN
 * has no bf16 products without them, so the run would otherwise stop at its first product. */
jr_status jr_model_compute_check(const char *name, const char *what);

/* Optional: who takes the weight gradient of the model's matmul weights instead of m->grads (LoRA:
 * the adapters' gradients straight from dout and the input; the frozen weight's own (OC, C) gradient
 * is never formed). take(ud, w, dout, inp, N, C, OC) for the weight w (a view into params): returns 1
 * when it took d(w) = dout^T inp (dout (N,OC), inp (N,C)) or w is frozen, 0 when the backward is to
 * add d(w) into m->grads as usual. For the embedding it is asked with dout = inp = NULL (1: frozen). */
typedef struct jr_dweight_hook {
    void *ud;
    int (*take)(void *ud, const float *w, const float *dout, const float *inp, int N, int C, int OC);
} jr_dweight_hook;

/* A model: its config, the tensor list in HF order (hfmodel.h jr_model_tensors) and every
 * parameter in ONE allocation (params[offset[i] .. offset[i] + tensors[i].numel)). Gradients
 * live in one more allocation of the same layout once jr_model_alloc_grads is called; zeroing
 * them is one memset. A tied lm_head has no storage of its own: it is the embedding. */
typedef struct jr_model {
    jr_model_config cfg;              /* owned (cfg.json kept so saving preserves unknown keys) */
    int n_tensors;
    jr_model_tensor *tensors;         /* HF names and shapes, in jr_model_tensors order */
    size_t *offset;                   /* offset[i]: element offset of tensor i in params/grads */
    size_t n_params;                  /* total floats */
    float *params;
    float *grads;                     /* NULL until jr_model_alloc_grads */
    jr_weights w, g;                  /* views of params and grads (g all NULL until allocated) */
    jr_compute compute;               /* matmuls of jr_model_forward/backward (0 = fp32 after every init) */
    jr_dweight_hook dw_hook;          /* none (take NULL) after every init */
    uint16_t *w16;                    /* jr_model_load_bf16: the tensors jr_model_tensor_is_bf16 says, tensor i at
                                       * w16 + offset[i] (their fp32 views NULL, no fp32 copy); else NULL */
    size_t n_w16;                     /* bf16 values in w16 */
} jr_model;

/* Fills views of `base` (a buffer laid out as m->params) into *v. v->layers must hold
 * num_hidden_layers entries. Used for params, grads and optimizer moments alike. */
void jr_model_views(const jr_model *m, float *base, jr_weights *v);

/* A new model of config *cfg (copied, cfg->json shared by reference count) with weights drawn as
 * transformers initialises them: normal(0, std) for embeddings and projections, 1 for norms, 0 for
 * biases, from jr_rng seeded with `seed`. The config is validated first. On error *m is zeroed. */
jr_status jr_model_init_random(jr_model *m, const jr_model_config *cfg, uint64_t seed, float std);

/* Loads an HF model directory (config.json + safetensors, F32/F16/BF16 converted to fp32).
 * On error *m is zeroed and the message names the file and tensor. */
jr_status jr_model_load(jr_model *m, const char *dir);

/* jr_model_load for inference with bf16 weights (generate, serve): every matmul weight but the
 * embedding (q, k, v, o, gate, up, down, an untied lm_head) is read straight into bf16, tensor by
 * tensor (bf16 files as stored; fp32 or fp16 ones rounded to nearest even, as jr_bf16_from_f32),
 * never held in fp32: about half the memory of jr_model_load + a bf16 KV cache, the same bits. Such
 * a model only opens a KV cache with bf16 weights; the fp32 forward, training, saving and LoRA merging refuse it. */
jr_status jr_model_load_bf16(jr_model *m, const char *dir);
/* 1 for the tensors jr_model_load_bf16 keeps in bf16 only. */
int jr_model_tensor_is_bf16(const jr_model_tensor *t);

/* Writes the model as an HF directory (config.json with torch_dtype float32, model.safetensors
 * in F32, generation_config.json when gen is not NULL); each file atomic (hfmodel.h). */
jr_status jr_model_save(const jr_model *m, const char *dir, const jr_generation_config *gen);

/* Allocates zeroed gradients (one buffer, views in m->g). Idempotent. */
jr_status jr_model_alloc_grads(jr_model *m);
void jr_model_zero_grads(jr_model *m);

/* Index of the tensor called `name` in m->tensors, or -1. */
int jr_model_find(const jr_model *m, const char *name);

void jr_model_free(jr_model *m);

/* Activations of one forward pass, kept for the backward, sized for up to B_max rows of up to
 * T_max tokens. Everything is allocated once by jr_acts_init and reused across steps. */
typedef struct jr_acts {
    int B_max, T_max;
    int B, T;                         /* sizes of the last forward */
    int32_t *ids;                     /* (B,T) copy of the input ids */
    int32_t *pos;                     /* (B*T) positions 0..T-1 of each row */
    float *cos_t, *sin_t;             /* (T_max, D/2) rotary tables of the model's config */
    /* per layer, each an array of num_hidden_layers pointers into one buffer */
    float **res_in;                   /* (N,C) residual stream entering the layer */
    float **ln1, **ln1_rstd;          /* (N,C), (N) */
    float **q, **k, **v;              /* (N,Hq*D), (N,Hkv*D), (N,Hkv*D) projections (q/k before norm/rope) */
    float **qr, **kr;                 /* (N,Hq*D), (N,Hkv*D) after q/k norm and rope (what attention reads) */
    float **qn_rstd, **kn_rstd;       /* (N*Hq), (N*Hkv) q/k norm statistics (Qwen3) */
    float **att;                      /* (B,Hq,T,T) attention probabilities; fused: (B,Hq,T) log-sum-exp */
    int fused;                        /* fused attention (jr_acts_opts) */
    int checkpoint;                   /* activation checkpointing (jr_acts_opts): every per-layer
                                       * array but res_in points at ONE set of buffers (the last
                                       * layer run); the backward recomputes each layer from res_in */
    float **ao;                       /* (N,Hq*D) attention output before o_proj */
    float **res_mid;                  /* (N,C) residual after attention */
    float **ln2, **ln2_rstd;          /* (N,C), (N) */
    float **gate, **up, **sw;         /* (N,I) */
    float *res_out;                   /* (N,C) last residual */
    float *lnf, *lnf_rstd;            /* (N,C), (N) final norm */
    float *logits;                    /* (N,V); turned into dlogits by the backward; when chunked
                                       * (logit_rows < B_max*T_max): (logit_rows,V) scratch only */
    int logit_rows;                   /* rows of logits materialised at a time (jr_acts_opts) */
    float *scratch;                   /* backward buffers */
    uint16_t *wb;                     /* bf16 compute: the weights in bf16, converted by each forward
                                       * (wb_n of them, from wb_src = the model's params) and read by
                                       * its log-probs and backward; NULL until a bf16 forward */
    size_t wb_n;
    const float *wb_src;
    uint16_t *xb;                     /* bf16 compute: one activation (B_max*T_max, C) in bf16 */
    void *block;                      /* the one allocation behind the per-layer arrays */
    size_t bytes;                     /* bytes allocated (for reports) */
} jr_acts;

/* Allocates activations for model m and batches up to (B_max, T_max) (RoPE tables included, for
 * positions < T_max, which may exceed max_position_embeddings). On error *a is zeroed.
 * Every logit is kept (a->logits holds (B*T, V) after a forward). */
jr_status jr_acts_init(jr_acts *a, const jr_model *m, int B_max, int T_max);

/* Options of jr_acts_init_opts. logit_rows > 0: never hold the (B*T, V) logits at once: the
 * forward stops at the final norm, jr_model_logprobs computes the logits logit_rows rows at a time
 * and the backward recomputes each chunk (one more lm_head product per step); a->logits is then
 * scratch, not the logits. JR_LOGIT_ROWS_AUTO: rows for JR_LOGIT_CHUNK_BYTES of logits (at least
 * 16). 0: every logit kept (jr_acts_init). */
typedef struct jr_acts_opts {
    int logit_rows;
    int fused_attention;  /* 1: jr_attention_fused_* (no T x T probabilities kept; att holds the
                           * (B,Hq,T) log-sum-exp instead; the backward recomputes) */
    int checkpoint;       /* 1: keep only each layer's input (res_in) and one layer's other activations;
                           * the backward runs each layer's forward again (up to SwiGLU) before its
                           * backward: the same gradients, bit for bit (same ops on the same inputs),
                           * for ~1/4 more matmul work and L-1 fewer layers of activations */
} jr_acts_opts;
#define JR_LOGIT_ROWS_AUTO (-1)
#define JR_LOGIT_CHUNK_BYTES (64L << 20)
jr_status jr_acts_init_opts(jr_acts *a, const jr_model *m, int B_max, int T_max, const jr_acts_opts *o);
void jr_acts_free(jr_acts *a);

/* Forward pass over ids (B,T), rows right-padded (pads may hold any valid id; their outputs are
 * meaningless but never reach a real token, whose position is its column index). Fills a->logits
 * (B*T, V) and everything the backward needs. Fails (JR_EINVAL) when B/T exceed the acts' sizes
 * or an id is outside [0, vocab). */
jr_status jr_model_forward(jr_model *m, jr_acts *a, const int32_t *ids, int B, int T);

/* Log-probabilities of targets (B*T, -1 = skip -> 0) under softmax(logits / temperature) of the
 * last forward: lp (B*T). temperature > 0 (1 = the model's own distribution). With chunked logits
 * this runs the lm_head product (so it can fail like the forward; full logits: always JR_OK). */
jr_status jr_model_logprobs(const jr_model *m, const jr_acts *a, const int32_t *targets, float temperature, float *lp);
/* The same, plus ent (B*T): the entropy of softmax(logits / temperature) of each row with a target
 * (jr_entropy_forward; 0 elsewhere), from the same logits chunk (no second lm_head product). */
jr_status jr_model_logprobs_ent(const jr_model *m, const jr_acts *a, const int32_t *targets, float temperature,
                                float *lp, float *ent);

/* Backward of sum_n dlp[n] * logprob(targets[n]) over the last forward (dlp and targets (B*T), the
 * same temperature as the log-probs): ADDS the gradient of every parameter into m->grads, so
 * micro-batches accumulate. Consumes a->logits (overwritten by dlogits): call once per forward.
 * JR_EINVAL (nothing changed) when m has no gradients (jr_model_alloc_grads) or no forward ran. */
jr_status jr_model_backward(jr_model *m, jr_acts *a, const int32_t *targets, float temperature, const float *dlp);

/* Cross-entropy helper for SFT: forward over ids, then the summed negative log-likelihood of the
 * targets (targets < 0 are not scored) -> *nll_sum and the count -> *n_tok. When `scale` != 0 it
 * also runs the backward of scale * nll_sum (scale = 1 / tokens of the whole optimizer step makes
 * accumulated micro-batches equal one big batch). `lp` is scratch of B*T floats. */
jr_status jr_model_nll(jr_model *m, jr_acts *a, const int32_t *ids, const int32_t *targets, int B, int T,
                       float scale, float *lp, double *nll_sum, long *n_tok);

/* Floating-point operations of one forward+backward over B*T tokens (matmuls 6 N P plus
 * attention), for GFLOP/s reports. */
double jr_model_train_flops(const jr_model *m, int B, int T);

/* The model.* options: model.path (an HF directory to start from) or model.init (a config.json
 * for a fresh random model, drawn with model.init_std and run.seed), and model.compute. */
extern const jr_cfg_field jr_model_cfg[];

/* Where a model comes from: an HF directory, or a config.json for a fresh random model. */
typedef struct jr_model_opts {
    const char *path;   /* model.path: HF directory (config.json + safetensors) */
    const char *init;   /* model.init: config.json of a random model (exactly one of path, init) */
    float init_std;     /* model.init_std */
    uint64_t seed;      /* run.seed: draws the random init */
    jr_compute compute; /* model.compute, resolved (jr_model_compute_resolve): m->compute of the model;
                         * a trainer restoring a checkpoint sets m->compute from it too */
    const char *source; /* the config's name, for messages (may be NULL) */
} jr_model_opts;

/* Fills o from the model.* table and run.seed (strings borrowed from c). */
jr_status jr_model_opts_from_config(jr_model_opts *o, const jr_config *c);

/* Builds the model o asks for (o->path, else o->init; exactly one of them).
 * On error *m is zeroed and the message names the key and file. */
jr_status jr_model_open(jr_model *m, const jr_model_opts *o);

/* Convenience for commands and trainers: jr_model_opts_from_config, then jr_model_open. */
jr_status jr_model_from_config(jr_model *m, const jr_config *c);

#endif
