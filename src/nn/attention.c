/* attention.c - causal grouped-query scaled-dot-product attention forward/backward (blocked sgemm) */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/nn.h"

/* Rows of a block: the scratch of one block (rows x T floats) stays within 256 KiB of stack, and
 * each block multiplies only the columns up to its last row (causal), half the work of full T x T. */
static int row_block(int T) {
    int r = 65536 / T;
    return r < 1 ? 1 : r > 64 ? 64 : r;
}

static void blas_single_thread(void) {
    static int done;
    if (!done) { openblas_set_num_threads(1); done = 1; }
}

// out (B,T,Hq,D), att (B,Hq,T,T), q (B,T,Hq,D), k, v (B,T,Hkv,D)
void jr_attention_forward(float *out, float *att, const float *q, const float *k, const float *v, int B, int T,
                          int Hq, int Hkv, int D) {
    int rep = Hq / Hkv, R = row_block(T), ldq = Hq * D, ldk = Hkv * D;
    float scale = 1.0f / sqrtf((float)D);
    blas_single_thread();
#pragma omp parallel for collapse(2) schedule(dynamic) if((long)B * Hq * T * T * D > JR_PAR_MIN)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < Hq; h++) {
            int g = h / rep;
            const float *qb = q + (long)b * T * ldq + (long)h * D;
            const float *kb = k + (long)b * T * ldk + (long)g * D, *vb = v + (long)b * T * ldk + (long)g * D;
            float *ob = out + (long)b * T * ldq + (long)h * D;
            float *P = att + ((long)b * Hq + h) * T * T;
            for (int r0 = 0; r0 < T; r0 += R) {
                int r1 = r0 + R < T ? r0 + R : T, rb = r1 - r0;
                /* scores of rows r0..r1-1 against keys 0..r1-1 */
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rb, r1, D, scale, qb + (long)r0 * ldq, ldq, kb, ldk,
                            0.0f, P + (long)r0 * T, T);
                for (int t = r0; t < r1; t++) {
                    float *row = P + (long)t * T, mx = -INFINITY, sum = 0;
                    for (int j = 0; j <= t; j++) mx = row[j] > mx ? row[j] : mx;
                    for (int j = 0; j <= t; j++) { row[j] = expf(row[j] - mx); sum += row[j]; }
                    float inv = 1.0f / sum;
                    for (int j = 0; j <= t; j++) row[j] *= inv;
                    if (t + 1 < T) memset(row + t + 1, 0, sizeof(float) * (size_t)(T - t - 1));
                }
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rb, D, r1, 1.0f, P + (long)r0 * T, T, vb, ldk,
                            0.0f, ob + (long)r0 * ldq, ldq);
            }
        }
}

/* The gradients from one block of rows r0..r1-1 of one query head: P (its probabilities, row t at
 * P + (t - r0) * ldp, columns 0..r1-1), S scratch of (r1 - r0) x r1; q/k/v/dout/dq/dk/dv blocks of
 * the head (row strides ldq for q, dout, dq and ldk for k, v, dk, dv). */
static void block_grads(float *dqb, float *dkb, float *dvb, const float *P, int ldp, float *S, const float *qb,
                        const float *kb, const float *vb, const float *gb, int r0, int r1, int D, int ldq, int ldk,
                        float scale) {
    int rb = r1 - r0;
    /* dv[0:r1] += P[r0:r1, 0:r1]^T dout[r0:r1] */
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, r1, D, rb, 1.0f, P, ldp, gb + (long)r0 * ldq, ldq, 1.0f, dvb,
                ldk);
    /* dP = dout[r0:r1] v[0:r1]^T, then dS = P * (dP - rowsum(P * dP)) * scale */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rb, r1, D, 1.0f, gb + (long)r0 * ldq, ldq, vb, ldk, 0.0f, S,
                r1);
    for (int t = r0; t < r1; t++) {
        const float *p = P + (long)(t - r0) * ldp;
        float *s = S + (long)(t - r0) * r1, dot = 0;
        for (int j = 0; j <= t; j++) dot += p[j] * s[j];
        for (int j = 0; j <= t; j++) s[j] = p[j] * (s[j] - dot) * scale;
        for (int j = t + 1; j < r1; j++) s[j] = 0;
    }
    /* dq[r0:r1] += dS k[0:r1]; dk[0:r1] += dS^T q[r0:r1] */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rb, D, r1, 1.0f, S, r1, kb, ldk, 1.0f, dqb + (long)r0 * ldq,
                ldq);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, r1, D, rb, 1.0f, S, r1, qb + (long)r0 * ldq, ldq, 1.0f, dkb,
                ldk);
}

// dq (B,T,Hq,D), dk, dv (B,T,Hkv,D), dout (B,T,Hq,D), att (B,Hq,T,T), q, k, v as in the forward.
// One task per (batch, kv head) so that the query heads sharing a kv head add into dk/dv in turn.
void jr_attention_backward(float *dq, float *dk, float *dv, const float *dout, const float *att, const float *q,
                           const float *k, const float *v, int B, int T, int Hq, int Hkv, int D) {
    int rep = Hq / Hkv, R = row_block(T), ldq = Hq * D, ldk = Hkv * D;
    float scale = 1.0f / sqrtf((float)D);
    blas_single_thread();
#pragma omp parallel if((long)B * Hq * T * T * D > JR_PAR_MIN)
    {
        float S[R * T]; /* dL/d(scores) of one block of rows: at most 64K floats */
#pragma omp for collapse(2) schedule(dynamic)
        for (int b = 0; b < B; b++)
            for (int g = 0; g < Hkv; g++) {
                const float *kb = k + (long)b * T * ldk + (long)g * D, *vb = v + (long)b * T * ldk + (long)g * D;
                float *dkb = dk + (long)b * T * ldk + (long)g * D, *dvb = dv + (long)b * T * ldk + (long)g * D;
                for (int h = g * rep; h < (g + 1) * rep; h++) {
                    const float *qb = q + (long)b * T * ldq + (long)h * D, *gb = dout + (long)b * T * ldq + (long)h * D;
                    float *dqb = dq + (long)b * T * ldq + (long)h * D;
                    const float *P = att + ((long)b * Hq + h) * T * T;
                    for (int r0 = 0; r0 < T; r0 += R) {
                        int r1 = r0 + R < T ? r0 + R : T;
                        block_grads(dqb, dkb, dvb, P + (long)r0 * T, T, S, qb, kb, vb, gb, r0, r1, D, ldq, ldk, scale);
                    }
                }
            }
    }
}

/* Fused attention: the same products as above, but the probabilities of a block of rows live only
 * in per-thread scratch (rows x T, rows <= 64): nothing of size T x T is kept. The forward saves the
 * log-sum-exp of each row's scaled scores; the backward recomputes the scores of each block and
 * P = exp(score - lse) from it (one more q.k^T product per block). */

// out (B,T,Hq,D), lse (B,Hq,T), q (B,T,Hq,D), k, v (B,T,Hkv,D)
int jr_attention_fused_forward(float *out, float *lse, const float *q, const float *k, const float *v, int B, int T,
                               int Hq, int Hkv, int D) {
    int failed = 0;
    int rep = Hq / Hkv, R = row_block(T), ldq = Hq * D, ldk = Hkv * D;
    float scale = 1.0f / sqrtf((float)D);
    blas_single_thread();
#pragma omp parallel if((long)B * Hq * T * T * D > JR_PAR_MIN)
    {
        float *P = malloc(sizeof(float) * (size_t)R * T);
#pragma omp for collapse(2) schedule(dynamic)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < Hq; h++) {
                if (!P) { /* no scratch: the caller gets -1, never a half-written result */
#pragma omp atomic write
                    failed = 1;
                    continue;
                }
                int g = h / rep;
                const float *qb = q + (long)b * T * ldq + (long)h * D;
                const float *kb = k + (long)b * T * ldk + (long)g * D, *vb = v + (long)b * T * ldk + (long)g * D;
                float *ob = out + (long)b * T * ldq + (long)h * D, *lb = lse + ((long)b * Hq + h) * T;
                for (int r0 = 0; r0 < T; r0 += R) {
                    int r1 = r0 + R < T ? r0 + R : T, rb = r1 - r0;
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rb, r1, D, scale, qb + (long)r0 * ldq, ldq, kb,
                                ldk, 0.0f, P, r1);
                    for (int t = r0; t < r1; t++) {
                        float *row = P + (long)(t - r0) * r1, mx = -INFINITY, sum = 0;
                        for (int j = 0; j <= t; j++) mx = row[j] > mx ? row[j] : mx;
                        for (int j = 0; j <= t; j++) { row[j] = expf(row[j] - mx); sum += row[j]; }
                        float inv = 1.0f / sum;
                        for (int j = 0; j <= t; j++) row[j] *= inv;
                        for (int j = t + 1; j < r1; j++) row[j] = 0;
                        lb[t] = mx + logf(sum);
                    }
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rb, D, r1, 1.0f, P, r1, vb, ldk, 0.0f,
                                ob + (long)r0 * ldq, ldq);
                }
            }
        free(P);
    }
    return failed ? -1 : 0;
}

// dq (B,T,Hq,D), dk, dv (B,T,Hkv,D), dout (B,T,Hq,D), lse (B,Hq,T) from the forward, q, k, v.
int jr_attention_fused_backward(float *dq, float *dk, float *dv, const float *dout, const float *lse, const float *q,
                                const float *k, const float *v, int B, int T, int Hq, int Hkv, int D) {
    int failed = 0;
    int rep = Hq / Hkv, R = row_block(T), ldq = Hq * D, ldk = Hkv * D;
    float scale = 1.0f / sqrtf((float)D);
    blas_single_thread();
#pragma omp parallel if((long)B * Hq * T * T * D > JR_PAR_MIN)
    {
        float *P = malloc(sizeof(float) * 2 * (size_t)R * T), *S = P ? P + (size_t)R * T : NULL;
#pragma omp for collapse(2) schedule(dynamic)
        for (int b = 0; b < B; b++)
            for (int g = 0; g < Hkv; g++) {
                if (!P) {
#pragma omp atomic write
                    failed = 1;
                    continue;
                }
                const float *kb = k + (long)b * T * ldk + (long)g * D, *vb = v + (long)b * T * ldk + (long)g * D;
                float *dkb = dk + (long)b * T * ldk + (long)g * D, *dvb = dv + (long)b * T * ldk + (long)g * D;
                for (int h = g * rep; h < (g + 1) * rep; h++) {
                    const float *qb = q + (long)b * T * ldq + (long)h * D, *gb = dout + (long)b * T * ldq + (long)h * D;
                    const float *lb = lse + ((long)b * Hq + h) * T;
                    float *dqb = dq + (long)b * T * ldq + (long)h * D;
                    for (int r0 = 0; r0 < T; r0 += R) {
                        int r1 = r0 + R < T ? r0 + R : T, rb = r1 - r0;
                        /* P of rows r0..r1-1 again, from the scores and the saved log-sum-exp */
                        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rb, r1, D, scale, qb + (long)r0 * ldq, ldq,
                                    kb, ldk, 0.0f, P, r1);
                        for (int t = r0; t < r1; t++) {
                            float *row = P + (long)(t - r0) * r1;
                            for (int j = 0; j <= t; j++) row[j] = expf(row[j] - lb[t]);
                            for (int j = t + 1; j < r1; j++) row[j] = 0;
                        }
                        block_grads(dqb, dkb, dvb, P, r1, S, qb, kb, vb, gb, r0, r1, D, ldq, ldk, scale);
                    }
                }
            }
        free(P);
    }
    return failed ? -1 : 0;
}
