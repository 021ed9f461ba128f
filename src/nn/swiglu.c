/* swiglu.c - SwiGLU gating silu(gate) * up forward/backward */
#include <math.h>

#include "judgerl/nn.h"
#include "nn/kernels.h"

// out, gate, up (N,F)
void jr_swiglu_forward(float *out, const float *gate, const float *up, int N, int F) {
    long n = (long)N * F;
#pragma omp parallel for schedule(static) if(n > JR_PAR_MIN)
    for (long i = 0; i < n; i++) {
        float g = gate[i];
        out[i] = g / (1.0f + expf(-g)) * up[i];
    }
}

// dgate, dup, dout, gate, up (N,F)
void jr_swiglu_backward(float *dgate, float *dup, const float *dout, const float *gate, const float *up, int N, int F) {
    long n = (long)N * F;
#pragma omp parallel for schedule(static) if(n > JR_PAR_MIN)
    for (long i = 0; i < n; i++) {
        float g = gate[i], sg = 1.0f / (1.0f + expf(-g));
        if (dgate) dgate[i] += dout[i] * up[i] * sg * (1.0f + g * (1.0f - sg));
        if (dup) dup[i] += dout[i] * g * sg;
    }
}

// out, gate, up (N,F)
void jr_swiglu_forward_fast(float *out, const float *gate, const float *up, int N, int F) {
    void (*swiglu_run)(float *, const float *, const float *, long) = jr_kernels()->swiglu; /* the level's fast exp */
    long n = (long)N * F;
    if (n <= JR_PAR_MIN) { swiglu_run(out, gate, up, n); return; }
    long nb = (n + 16383) / 16384;
#pragma omp parallel for schedule(static)
    for (long b = 0; b < nb; b++) swiglu_run(out + b * 16384, gate + b * 16384, up + b * 16384, b + 1 < nb ? 16384 : n - b * 16384);
}
