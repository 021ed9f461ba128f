/* embedding.c - token embedding lookup and its scatter-add backward; residual add */
#include "judgerl/nn.h"

// out (N,C), ids (N), wte (V,C)
void jr_embedding_forward(float *out, const int32_t *ids, const float *wte, int N, int C) {
#pragma omp parallel for schedule(static) if((long)N * C > JR_PAR_MIN)
    for (int n = 0; n < N; n++) {
        const float *row = wte + (long)ids[n] * C;
        float *o = out + (long)n * C;
        for (int c = 0; c < C; c++) o[c] = row[c];
    }
}

// dwte (V,C), dout (N,C), ids (N). Rows may repeat, so tokens are added in order (deterministic);
// the channels are split between threads instead.
void jr_embedding_backward(float *dwte, const float *dout, const int32_t *ids, int N, int C) {
#pragma omp parallel if((long)N * C > JR_PAR_MIN)
    {
#ifdef _OPENMP
        extern int omp_get_thread_num(void), omp_get_num_threads(void);
        int nt = omp_get_num_threads(), it = omp_get_thread_num();
#else
        int nt = 1, it = 0;
#endif
        int c0 = (int)((long)C * it / nt), c1 = (int)((long)C * (it + 1) / nt);
        for (int n = 0; n < N; n++) {
            float *d = dwte + (long)ids[n] * C;
            const float *g = dout + (long)n * C;
            for (int c = c0; c < c1; c++) d[c] += g[c];
        }
    }
}

// out (n), inp (n)
void jr_add_inplace(float *out, const float *inp, long n) {
#pragma omp parallel for schedule(static) if(n > JR_PAR_MIN)
    for (long i = 0; i < n; i++) out[i] += inp[i];
}
