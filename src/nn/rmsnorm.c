/* rmsnorm.c - RMSNorm (HF LlamaRMSNorm semantics, fp32) forward/backward */
#include <math.h>
#include <stdlib.h>

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
        /* rows in NCH fixed chunks, each summed row-wise (contiguous) into its own partial, then the
         * partials in chunk order: deterministic for any thread count */
        enum { NCH = 16 };
        double *part = calloc((size_t)NCH * C, sizeof(double));
        if (part) {
#pragma omp parallel for schedule(static) if((long)N * C > JR_PAR_MIN)
            for (int ch = 0; ch < NCH; ch++) {
                double *pc = part + (size_t)ch * C;
                for (long n = (long)N * ch / NCH; n < (long)N * (ch + 1) / NCH; n++) {
                    const float *g = dout + n * C, *x = inp + n * C;
                    double r = rstd[n];
#pragma omp simd
                    for (int c = 0; c < C; c++) pc[c] += (double)g[c] * x[c] * r;
                }
            }
            for (int c = 0; c < C; c++) {
                double t = 0;
                for (int ch = 0; ch < NCH; ch++) t += part[(size_t)ch * C + c];
                dweight[c] += (float)t;
            }
            free(part);
        } else { /* no memory for partials: the column-wise loop */
            for (int c = 0; c < C; c++) {
                double t = 0;
                for (int n = 0; n < N; n++) t += (double)dout[(long)n * C + c] * inp[(long)n * C + c] * rstd[n];
                dweight[c] += (float)t;
            }
        }
    }
}
