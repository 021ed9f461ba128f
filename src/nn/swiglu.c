/* swiglu.c - SwiGLU gating silu(gate) * up forward/backward */
#include <math.h>

#include "judgerl/nn.h"

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
