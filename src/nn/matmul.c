/* matmul.c - fully connected layer (x W^T + b) forward/backward on OpenBLAS sgemm */
#include <cblas.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "judgerl/clock.h"
#include "judgerl/nn.h"

jr_nn_prof jr_nn_profile;

/* Threading: OpenMP only. Each thread runs a single-threaded sgemm on its own block of rows (or of
 * output channels), so OpenBLAS's pthreads never compete with OpenMP's (docs/PERFORMANCE.md). */
static void blas_single_thread(void) {
    static int done;
    if (!done) { openblas_set_num_threads(1); done = 1; }
}

/* Blocks to split `n` rows into for a matmul of `work` multiply-adds. */
static int n_blocks(long n, double work) {
    int nt = omp_get_max_threads();
    if (nt < 2 || work < 4e6 || n < 2 * nt) return 1;
    return nt;
}

// out (N,OC), inp (N,C), weight (OC,C), bias (OC) or NULL
void jr_matmul_forward(float *out, const float *inp, const float *weight, const float *bias, int N, int C, int OC) {
    double t0 = jr_nn_profile.enabled ? jr_now_s() : 0;
    blas_single_thread();
    int nb = n_blocks(N, (double)N * C * OC);
#pragma omp parallel for schedule(static) num_threads(nb) if(nb > 1)
    for (int b = 0; b < nb; b++) {
        int n0 = (int)((long)N * b / nb), n1 = (int)((long)N * (b + 1) / nb);
        float beta = 0.0f;
        if (bias) {
            for (int n = n0; n < n1; n++) memcpy(out + (long)n * OC, bias, sizeof(float) * (size_t)OC);
            beta = 1.0f;
        }
        if (n1 > n0)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n1 - n0, OC, C, 1.0f, inp + (long)n0 * C, C, weight, C,
                        beta, out + (long)n0 * OC, OC);
    }
    if (jr_nn_profile.enabled) {
        jr_nn_profile.matmul_s += jr_now_s() - t0;
        jr_nn_profile.matmul_flops += 2.0 * N * C * OC;
    }
}

// dinp (N,C), dweight (OC,C), dbias (OC), dout (N,OC), inp (N,C), weight (OC,C)
void jr_matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                        const float *weight, int N, int C, int OC) {
    double t0 = jr_nn_profile.enabled ? jr_now_s() : 0;
    blas_single_thread();
    if (dinp) { /* rows of dinp split between threads */
        int nb = n_blocks(N, (double)N * C * OC);
#pragma omp parallel for schedule(static) num_threads(nb) if(nb > 1)
        for (int b = 0; b < nb; b++) {
            int n0 = (int)((long)N * b / nb), n1 = (int)((long)N * (b + 1) / nb);
            if (n1 > n0)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n1 - n0, C, OC, 1.0f, dout + (long)n0 * OC, OC,
                            weight, C, 1.0f, dinp + (long)n0 * C, C);
        }
    }
    if (dweight) { /* rows (output channels) of dweight split between threads */
        int nb = n_blocks(OC, (double)N * C * OC);
#pragma omp parallel for schedule(static) num_threads(nb) if(nb > 1)
        for (int b = 0; b < nb; b++) {
            int o0 = (int)((long)OC * b / nb), o1 = (int)((long)OC * (b + 1) / nb);
            if (o1 > o0)
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, o1 - o0, C, N, 1.0f, dout + o0, OC, inp, C, 1.0f,
                            dweight + (long)o0 * C, C);
        }
    }
    if (dbias) {
        /* row chunks summed contiguously into partials, then in chunk order (deterministic) */
        enum { NCH = 16 };
        double *part = calloc((size_t)NCH * OC, sizeof(double));
#pragma omp parallel for schedule(static) if(part && (long)N * OC > JR_PAR_MIN)
        for (int ch = 0; ch < NCH; ch++) {
            if (!part) continue;
            double *pc = part + (size_t)ch * OC;
            for (long n = (long)N * ch / NCH; n < (long)N * (ch + 1) / NCH; n++) {
                const float *g = dout + n * OC;
#pragma omp simd
                for (int o = 0; o < OC; o++) pc[o] += g[o];
            }
        }
        for (int o = 0; o < OC; o++) {
            double t = 0;
            if (part)
                for (int ch = 0; ch < NCH; ch++) t += part[(size_t)ch * OC + o];
            else /* no memory for partials: column by column */
                for (int n = 0; n < N; n++) t += dout[(long)n * OC + o];
            dbias[o] += (float)t;
        }
        free(part);
    }
    if (jr_nn_profile.enabled) {
        jr_nn_profile.matmul_s += jr_now_s() - t0;
        jr_nn_profile.matmul_flops += 2.0 * N * C * OC * ((dinp != NULL) + (dweight != NULL));
    }
}

int jr_nn_set_threads(int n) {
    int old = omp_get_max_threads();
    if (n < 1) n = 1;
    omp_set_num_threads(n);
    openblas_set_num_threads(1); /* OpenBLAS runs inside OpenMP's threads, one each */
    return old;
}

int jr_nn_threads(void) { return omp_get_max_threads(); }
