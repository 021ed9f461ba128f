/* lora.h - LoRA adapters on a model's projections (q, k, v, o, gate, up, down): training, PEFT export/import, merging */
#ifndef JUDGERL_LORA_H
#define JUDGERL_LORA_H

#include <stdint.h>

#include "judgerl/model.h"
#include "judgerl/status.h"

/* Target-module bits, PEFT names q_proj ... down_proj. */
enum { JR_LORA_Q = 1, JR_LORA_K = 2, JR_LORA_V = 4, JR_LORA_O = 8, JR_LORA_GATE = 16, JR_LORA_UP = 32,
       JR_LORA_DOWN = 64, JR_LORA_ALL = 127 };

/* One adapted projection W (out, in): W_eff = W + scale * B A with A (r, in), B (out, r). */
typedef struct jr_lora_target {
    int tensor;          /* index of W in the base model's tensors */
    int out, in;
    float *A, *B;        /* into the adapter's params */
    float *gA, *gB;      /* into the adapter's grads */
    float *base;         /* the frozen W (owned copy) */
} jr_lora_target;

/* LoRA over a model m (borrowed). The model's params hold the effective weights W + scale * B A
 * while adapters are on (so generation, forward and backward run unchanged); the frozen base
 * projections are kept once more in `base` (the reference policy is the base: adapters off). The
 * trainable tensors form the pseudo-model `ad` (PEFT names, one params and one grads buffer), so
 * AdamW, gradient clipping and checkpoint moments apply to it as to a model. */
typedef struct jr_lora {
    int rank;
    double alpha, scale;     /* scale = alpha / rank (PEFT, use_rslora false) */
    unsigned targets;        /* JR_LORA_* bits */
    jr_model *m;
    jr_model ad;             /* adapter tensors: for each target in layer order, lora_A then lora_B */
    int n_t;
    jr_lora_target *t;
    int on;                  /* 1: m's params are the effective weights */
    int direct;              /* 1: the backward adds the adapters' gradients itself (jr_lora_direct) */
    float *xa, *db;          /* direct: (rows, r) scratch of the backward */
} jr_lora;

/* Parses a target list ("q,k,v,o,gate,up,down", also "q_proj", ... or "all") into bits; -1 and a
 * message naming the bad entry when unknown. */
int jr_lora_parse_targets(const char *list, unsigned *bits);

/* Adds adapters of rank r and alpha to every targeted projection of m, initialised as PEFT does
 * (A ~ kaiming-uniform(a = sqrt 5) i.e. U(-1/sqrt(in), 1/sqrt(in)) from jr_rng seeded with seed;
 * B = 0, so the model is unchanged) and turns them on. Allocates the adapter grads. On error *l is
 * zeroed and m is unchanged. */
jr_status jr_lora_init(jr_lora *l, jr_model *m, int rank, double alpha, unsigned targets, uint64_t seed);

/* Writes W + scale * B A into m's params (adapters on) / the base weights (adapters off). */
void jr_lora_on(jr_lora *l);
void jr_lora_off(jr_lora *l);

/* From the gradients of the effective weights in m->grads (the engine's backward), the adapters'
 * gradients into l->ad.grads (overwritten): gA = scale B^T dW, gB = scale dW A^T. */
void jr_lora_grads(jr_lora *l);

/* on = 1: the model's backward ADDS the adapters' gradients into l->ad.grads itself, from each adapted
 * projection's dout and input (gB += scale dout^T (x A^T), gA += scale (dout B)^T x: r-wide products),
 * and forms no weight gradient of the frozen model at all (m->grads stays as it was: the (out, in)
 * products, a third of a backward's matmul work, and the embedding's are skipped); jr_lora_grads is
 * then a no-op and the caller zeroes l->ad.grads per step (jr_lora_zero_grads). on = 0: back to
 * jr_lora_grads' projection of m->grads. */
jr_status jr_lora_direct(jr_lora *l, int on);
/* Zeroes the adapters' gradients (one memset). */
void jr_lora_zero_grads(jr_lora *l);

/* Writes a PEFT adapter directory: adapter_config.json (peft_type LORA, task_type CAUSAL_LM, r,
 * lora_alpha, lora_dropout, target_modules, base_model_name_or_path) and adapter_model.safetensors
 * (base_model.model.model.layers.L.self_attn.q_proj.lora_A.weight, ...), each atomic. */
jr_status jr_lora_save_peft(const jr_lora *l, const char *dir, const char *base_name, double dropout);

/* Loads the A and B matrices of a PEFT adapter directory into l (same rank and targets; a missing
 * or mis-shaped tensor is an error naming it) and turns adapters on. */
jr_status jr_lora_load_peft(jr_lora *l, const char *dir);

/* Folds the PEFT adapter in adapter_dir into model m's weights (W += alpha / r * B A for every
 * adapted module the config lists). Reads r, lora_alpha, target_modules from adapter_config.json.
 * A model loaded by jr_model_load_bf16 (no fp32 weights) is refused (JR_EUNSUPPORTED). */
jr_status jr_lora_merge_into(jr_model *m, const char *adapter_dir);

/* Frees the adapters; leaves the model's params as they are (call jr_lora_off first for the base). */
void jr_lora_free(jr_lora *l);

#endif
