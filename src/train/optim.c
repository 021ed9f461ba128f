/* optim.c - AdamW, learning-rate schedules and gradient clipping */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/nn.h"
#include "judgerl/optim.h"

int jr_sched_parse(const char *name) {
    if (!name) return -1;
    if (!strcmp(name, "constant")) return JR_SCHED_CONSTANT;
    if (!strcmp(name, "linear")) return JR_SCHED_LINEAR;
    if (!strcmp(name, "cosine")) return JR_SCHED_COSINE;
    return -1;
}

double jr_schedule_lr(const jr_schedule *s, int64_t step) {
    if (step < s->warmup) return s->lr * (double)step / (double)(s->warmup > 1 ? s->warmup : 1);
    double span = (double)(s->total - s->warmup > 1 ? s->total - s->warmup : 1);
    double prog = (double)(step - s->warmup) / span;
    switch (s->kind) {
    case JR_SCHED_LINEAR: {
        double f = (double)(s->total - step) / span;
        return s->lr * (f > 0 ? f : 0);
    }
    case JR_SCHED_COSINE: {
        double f = 0.5 * (1.0 + cos(M_PI * prog));
        return s->lr * (f > 0 ? f : 0);
    }
    default: return s->lr;
    }
}

jr_status jr_adamw_init(jr_adamw *o, const jr_model *m, double beta1, double beta2, double eps, double weight_decay) {
    memset(o, 0, sizeof *o);
    o->state = aligned_alloc(64, sizeof(float) * 2 * m->n_params);
    o->decay = jr_calloc((size_t)m->n_tensors, 1);
    if (!o->state || !o->decay) {
        free(o->state); free(o->decay); memset(o, 0, sizeof *o);
        return jr_fail(JR_ENOMEM, "AdamW: cannot allocate state for %zu parameters", m->n_params);
    }
    memset(o->state, 0, sizeof(float) * 2 * m->n_params);
    for (int i = 0; i < m->n_tensors; i++) o->decay[i] = m->tensors[i].ndim == 2;
    o->n = m->n_params;
    o->beta1 = beta1; o->beta2 = beta2; o->eps = eps; o->weight_decay = weight_decay;
    return JR_OK;
}

void jr_adamw_free(jr_adamw *o) {
    if (!o) return;
    free(o->state);
    free(o->decay);
    memset(o, 0, sizeof *o);
}

void jr_adamw_step(jr_adamw *o, jr_model *m, double lr) {
    o->t++;
    float b1 = (float)o->beta1, b2 = (float)o->beta2, eps = (float)o->eps;
    float bc1 = (float)(1.0 - pow(o->beta1, (double)o->t));
    float bc2s = (float)sqrt(1.0 - pow(o->beta2, (double)o->t));
    float step = (float)lr / bc1;
    float *mm = o->state, *vv = o->state + o->n;
    for (int i = 0; i < m->n_tensors; i++) {
        float shrink = o->decay[i] ? (float)(1.0 - lr * o->weight_decay) : 1.0f;
        long off = (long)m->offset[i], n = (long)m->tensors[i].numel;
        float *p = m->params + off, *g = m->grads + off, *mi = mm + off, *vi = vv + off;
#pragma omp parallel for schedule(static) if(n > JR_PAR_MIN)
        for (long j = 0; j < n; j++) {
            float gj = g[j];
            mi[j] = b1 * mi[j] + (1.0f - b1) * gj;
            vi[j] = b2 * vi[j] + (1.0f - b2) * gj * gj;
            float denom = sqrtf(vi[j]) / bc2s + eps;
            p[j] = p[j] * shrink - step * mi[j] / denom;
        }
    }
}

/* Summed in 256 fixed blocks, then in block order: the same bits whatever the thread count (an
 * OpenMP reduction combines partial sums in arrival order, which would break exact resume). */
double jr_grad_norm(const jr_model *m) {
    enum { NB = 256 };
    double part[NB];
    long n = (long)m->n_params;
    const float *g = m->grads;
#pragma omp parallel for schedule(static) if(n > JR_PAR_MIN)
    for (int b = 0; b < NB; b++) {
        long i0 = n * b / NB, i1 = n * (b + 1) / NB;
        double s = 0;
        for (long i = i0; i < i1; i++) s += (double)g[i] * g[i];
        part[b] = s;
    }
    double s = 0;
    for (int b = 0; b < NB; b++) s += part[b];
    return sqrt(s);
}

double jr_clip_grad_norm(jr_model *m, double max_norm) {
    double norm = jr_grad_norm(m);
    if (max_norm > 0) {
        double coef = max_norm / (norm + 1e-6);
        if (coef < 1.0) {
            float c = (float)coef;
            long n = (long)m->n_params;
#pragma omp parallel for schedule(static) if(n > JR_PAR_MIN)
            for (long i = 0; i < n; i++) m->grads[i] *= c;
        }
    }
    return norm;
}
