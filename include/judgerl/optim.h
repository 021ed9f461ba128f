/* optim.h - AdamW with decoupled weight decay, learning-rate schedules, global-norm gradient clipping */
#ifndef JUDGERL_OPTIM_H
#define JUDGERL_OPTIM_H

#include <stdint.h>

#include "judgerl/model.h"
#include "judgerl/status.h"

typedef enum { JR_SCHED_CONSTANT = 0, JR_SCHED_LINEAR, JR_SCHED_COSINE } jr_sched_kind;

/* A learning-rate schedule over `total` optimizer steps, as transformers' get_*_schedule_with_warmup:
 * step s (0-based) of warmup w gets lr * s / w; after it constant stays lr, linear falls to 0 at
 * `total`, cosine follows lr * 0.5 * (1 + cos(pi * (s - w) / (total - w))). */
typedef struct jr_schedule {
    jr_sched_kind kind;
    double lr;
    int64_t warmup, total;
} jr_schedule;

/* Parses "constant" | "linear" | "cosine"; -1 when unknown. */
int jr_sched_parse(const char *name);
/* The learning rate of optimizer step `step` (0-based). */
double jr_schedule_lr(const jr_schedule *s, int64_t step);

/* AdamW state: first and second moments in ONE allocation (m = state, v = state + n), laid out
 * like the model's parameters so the same views and the same tensor names apply. */
typedef struct jr_adamw {
    double beta1, beta2, eps, weight_decay;
    int64_t t;              /* updates done (bias correction uses t + 1 for the next) */
    size_t n;               /* floats per moment (model n_params) */
    float *state;           /* (2, n): m then v */
    unsigned char *decay;   /* per model tensor: 1 = weight decay applies (2-D weights), 0 = norms, biases */
} jr_adamw;

/* Zeroed moments for model m. On error *o is zeroed. */
jr_status jr_adamw_init(jr_adamw *o, const jr_model *m, double beta1, double beta2, double eps, double weight_decay);
void jr_adamw_free(jr_adamw *o);

/* One update of every parameter from m->grads at learning rate lr (torch.optim.AdamW semantics:
 * p *= 1 - lr * wd on decayed tensors; m, v moving averages; p -= lr / (1 - b1^t) * m / (sqrt(v) /
 * sqrt(1 - b2^t) + eps)). Increments o->t. */
void jr_adamw_step(jr_adamw *o, jr_model *m, double lr);

/* L2 norm of all gradients (double accumulation). */
double jr_grad_norm(const jr_model *m);
/* Scales the gradients so their global norm is at most max_norm (torch clip_grad_norm_: factor
 * max_norm / (norm + 1e-6) when below 1). Returns the norm before clipping. max_norm <= 0: no clipping. */
double jr_clip_grad_norm(jr_model *m, double max_norm);

#endif
