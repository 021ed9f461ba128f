/* rmsnorm.c - RMSNorm (HF LlamaRMSNorm semantics, fp32) forward/backward */
#include <math.h>

#include "judgerl/nn.h"

// out (N,C), rstd (N), inp (N,C), weight (C)
void jr_rmsnorm_forward(float *out, float *rstd, const float *inp, const float *weight, int N, int C, float eps) {
#pragma omp parallel for schedule(static) if((long)N * C > JR_PAR_MIN)
    for (int n = 0; n < N; n++) {
        const float *x = inp + (long)n * C;
        float *o = out + (long)n * C;
        double ss = 0;
        for (int c = 0; c < C; c++) ss += (double)x[c] * x[c];
        float r = (float)(1.0 / sqrt(ss / C + (double)eps));
        for (int c = 0; c < C; c++) o[c] = x[c] * r * weight[c];
        rstd[n] = r;
    }
}

// dinp (N,C), dweight (C), dout (N,C), inp (N,C), weight (C), rstd (N)
void jr_rmsnorm_backward(float *dinp, float *dweight, const float *dout, const float *inp, const float *weight,
                         const float *rstd, int N, int C) {
    if (dinp) {
#pragma omp parallel for schedule(static) if((long)N * C > JR_PAR_MIN)
        for (int n = 0; n < N; n++) {
            const float *x = inp + (long)n * C, *g = dout + (long)n * C;
            float *dx = dinp + (long)n * C;
            float r = rstd[n];
            double dot = 0; // sum_c (w g)_c x_c
            for (int c = 0; c < C; c++) dot += (double)weight[c] * g[c] * x[c];
            float k = (float)(dot * r * r * r / C);
            for (int c = 0; c < C; c++) dx[c] += r * weight[c] * g[c] - x[c] * k;
        }
    }
    if (dweight) {
        // channels split across threads; tokens summed in order so the result is deterministic
#pragma omp parallel for schedule(static) if((long)N * C > JR_PAR_MIN)
        for (int c = 0; c < C; c++) {
            double s = 0;
            for (int n = 0; n < N; n++) s += (double)dout[(long)n * C + c] * inp[(long)n * C + c] * rstd[n];
            dweight[c] += (float)s;
        }
    }
}
