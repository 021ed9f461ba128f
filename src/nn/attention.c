/* attention.c - causal grouped-query scaled-dot-product attention forward/backward */
#include <math.h>
#include <string.h>

#include "judgerl/nn.h"

static inline float dot(const float *a, const float *b, int n) {
    float s = 0;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

// out (B,T,Hq,D), att (B,Hq,T,T), q (B,T,Hq,D), k, v (B,T,Hkv,D)
void jr_attention_forward(float *out, float *att, const float *q, const float *k, const float *v, int B, int T,
                          int Hq, int Hkv, int D) {
    int rep = Hq / Hkv;
    float scale = 1.0f / sqrtf((float)D);
#pragma omp parallel for collapse(2) schedule(dynamic) if((long)B * Hq * T * T * D > JR_PAR_MIN)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < Hq; h++) {
            int g = h / rep;
            for (int t = 0; t < T; t++) {
                const float *qt = q + (((long)b * T + t) * Hq + h) * D;
                float *row = att + (((long)b * Hq + h) * T + t) * T;
                float mx = -INFINITY;
                for (int j = 0; j <= t; j++) {
                    float s = dot(qt, k + (((long)b * T + j) * Hkv + g) * D, D) * scale;
                    row[j] = s;
                    if (s > mx) mx = s;
                }
                float sum = 0;
                for (int j = 0; j <= t; j++) { row[j] = expf(row[j] - mx); sum += row[j]; }
                float inv = 1.0f / sum;
                for (int j = 0; j <= t; j++) row[j] *= inv;
                if (t + 1 < T) memset(row + t + 1, 0, sizeof(float) * (size_t)(T - t - 1));
                float *ot = out + (((long)b * T + t) * Hq + h) * D;
                memset(ot, 0, sizeof(float) * (size_t)D);
                for (int j = 0; j <= t; j++) {
                    const float *vj = v + (((long)b * T + j) * Hkv + g) * D;
                    float p = row[j];
                    for (int i = 0; i < D; i++) ot[i] += p * vj[i];
                }
            }
        }
}

// dq (B,T,Hq,D), dk, dv (B,T,Hkv,D), dout (B,T,Hq,D), att (B,Hq,T,T), q, k, v as in the forward.
// One task per (batch, kv head) so that the query heads sharing a kv head add into dk/dv in turn.
void jr_attention_backward(float *dq, float *dk, float *dv, const float *dout, const float *att, const float *q,
                           const float *k, const float *v, int B, int T, int Hq, int Hkv, int D) {
    int rep = Hq / Hkv;
    float scale = 1.0f / sqrtf((float)D);
#pragma omp parallel if((long)B * Hq * T * T * D > JR_PAR_MIN)
    {
        float ds[T]; // dL/d(score) of one row; T floats of stack per thread
#pragma omp for collapse(2) schedule(dynamic)
        for (int b = 0; b < B; b++)
            for (int g = 0; g < Hkv; g++) {
                for (int h = g * rep; h < (g + 1) * rep; h++)
                    for (int t = 0; t < T; t++) {
                        const float *row = att + (((long)b * Hq + h) * T + t) * T;
                        const float *go = dout + (((long)b * T + t) * Hq + h) * D;
                        const float *qt = q + (((long)b * T + t) * Hq + h) * D;
                        float *dqt = dq + (((long)b * T + t) * Hq + h) * D;
                        float s = 0;
                        for (int j = 0; j <= t; j++) {
                            const float *vj = v + (((long)b * T + j) * Hkv + g) * D;
                            ds[j] = dot(go, vj, D);
                            s += row[j] * ds[j];
                            float *dvj = dv + (((long)b * T + j) * Hkv + g) * D;
                            float p = row[j];
                            for (int i = 0; i < D; i++) dvj[i] += p * go[i];
                        }
                        for (int j = 0; j <= t; j++) {
                            float d = row[j] * (ds[j] - s) * scale;
                            const float *kj = k + (((long)b * T + j) * Hkv + g) * D;
                            float *dkj = dk + (((long)b * T + j) * Hkv + g) * D;
                            for (int i = 0; i < D; i++) {
                                dqt[i] += d * kj[i];
                                dkj[i] += d * qt[i];
                            }
                        }
                    }
            }
    }
}
