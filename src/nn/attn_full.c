/* attn_full.c - non-causal multi-head scaled-dot-product attention forward/backward (no mask) */
#include <math.h>
#include <string.h>

#include "judgerl/attn_full.h"

static inline float dot(const float *a, const float *b, int n) {
    float s = 0;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

void jr_attn_full_forward(float *out, float *att, const float *q, const float *k, const float *v, int B, int T,
                          int H, int D) {
    float scale = 1.0f / sqrtf((float)D);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int t = 0; t < T; t++) {
                const float *qt = q + (((long)b * T + t) * H + h) * D;
                float *row = att + (((long)b * H + h) * T + t) * T;
                float mx = -INFINITY;
                for (int j = 0; j < T; j++) {
                    row[j] = dot(qt, k + (((long)b * T + j) * H + h) * D, D) * scale;
                    if (row[j] > mx) mx = row[j];
                }
                float sum = 0;
                for (int j = 0; j < T; j++) { row[j] = expf(row[j] - mx); sum += row[j]; }
                for (int j = 0; j < T; j++) row[j] /= sum;
                float *ot = out + (((long)b * T + t) * H + h) * D;
                memset(ot, 0, sizeof(float) * (size_t)D);
                for (int j = 0; j < T; j++) {
                    const float *vj = v + (((long)b * T + j) * H + h) * D;
                    for (int d = 0; d < D; d++) ot[d] += row[j] * vj[d];
                }
            }
}

void jr_attn_full_backward(float *dq, float *dk, float *dv, const float *dout, const float *att, const float *q,
                           const float *k, const float *v, int B, int T, int H, int D) {
    float scale = 1.0f / sqrtf((float)D);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int t = 0; t < T; t++) {
                const float *row = att + (((long)b * H + h) * T + t) * T;
                const float *go = dout + (((long)b * T + t) * H + h) * D;
                /* datt[j] = go . v_j; dv_j += att[j] * go */
                float datt[T > 0 ? T : 1];
                float rdot = 0;
                for (int j = 0; j < T; j++) {
                    const float *vj = v + (((long)b * T + j) * H + h) * D;
                    datt[j] = dot(go, vj, D);
                    rdot += datt[j] * row[j];
                    if (dv) {
                        float *dvj = dv + (((long)b * T + j) * H + h) * D;
                        for (int d = 0; d < D; d++) dvj[d] += row[j] * go[d];
                    }
                }
                /* softmax backward: ds[j] = att[j] * (datt[j] - sum_i att[i] datt[i]); scores = scale q.k */
                const float *qt = q + (((long)b * T + t) * H + h) * D;
                float *dqt = dq ? dq + (((long)b * T + t) * H + h) * D : NULL;
                for (int j = 0; j < T; j++) {
                    float ds = row[j] * (datt[j] - rdot) * scale;
                    const float *kj = k + (((long)b * T + j) * H + h) * D;
                    if (dqt)
                        for (int d = 0; d < D; d++) dqt[d] += ds * kj[d];
                    if (dk) {
                        float *dkj = dk + (((long)b * T + j) * H + h) * D;
                        for (int d = 0; d < D; d++) dkj[d] += ds * qt[d];
                    }
                }
            }
}
