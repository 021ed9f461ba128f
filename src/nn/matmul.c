/* matmul.c - fully connected layer (x W^T + b) forward/backward on OpenBLAS sgemm */
#include <cblas.h>
#include <omp.h>
#include <string.h>
#include <time.h>

#include "judgerl/nn.h"

jr_nn_prof jr_nn_profile;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

// out (N,OC), inp (N,C), weight (OC,C), bias (OC) or NULL
void jr_matmul_forward(float *out, const float *inp, const float *weight, const float *bias, int N, int C, int OC) {
    double t0 = jr_nn_profile.enabled ? now() : 0;
    float beta = 0.0f;
    if (bias) {
        for (int n = 0; n < N; n++) memcpy(out + (long)n * OC, bias, sizeof(float) * (size_t)OC);
        beta = 1.0f;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, C, 1.0f, inp, C, weight, C, beta, out, OC);
    if (jr_nn_profile.enabled) {
        jr_nn_profile.matmul_s += now() - t0;
        jr_nn_profile.matmul_flops += 2.0 * N * C * OC;
    }
}

// dinp (N,C), dweight (OC,C), dbias (OC), dout (N,OC), inp (N,C), weight (OC,C)
void jr_matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                        const float *weight, int N, int C, int OC) {
    double t0 = jr_nn_profile.enabled ? now() : 0;
    if (dinp)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, C, OC, 1.0f, dout, OC, weight, C, 1.0f, dinp, C);
    if (dweight)
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, C, N, 1.0f, dout, OC, inp, C, 1.0f, dweight, C);
    if (dbias) {
#pragma omp parallel for schedule(static) if((long)N * OC > JR_PAR_MIN)
        for (int o = 0; o < OC; o++) {
            double s = 0;
            for (int n = 0; n < N; n++) s += dout[(long)n * OC + o];
            dbias[o] += (float)s;
        }
    }
    if (jr_nn_profile.enabled) {
        jr_nn_profile.matmul_s += now() - t0;
        jr_nn_profile.matmul_flops += 2.0 * N * C * OC * ((dinp != NULL) + (dweight != NULL));
    }
}

int jr_nn_set_threads(int n) {
    int old = omp_get_max_threads();
    if (n < 1) n = 1;
    omp_set_num_threads(n);
    openblas_set_num_threads(n);
    return old;
}

int jr_nn_threads(void) { return omp_get_max_threads(); }
