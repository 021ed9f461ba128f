/* rope.c - rotary position embedding (HF rotate_half layout) forward/backward and tables */
#include <math.h>

#include "judgerl/nn.h"

// cos_t, sin_t (P, D/2), inv_freq (D/2)
void jr_rope_table(float *cos_t, float *sin_t, const double *inv_freq, int P, int D) {
    int h = D / 2;
    for (int p = 0; p < P; p++)
        for (int i = 0; i < h; i++) {
            double a = (double)p * inv_freq[i];
            cos_t[(long)p * h + i] = (float)cos(a);
            sin_t[(long)p * h + i] = (float)sin(a);
        }
}

// out, inp (N,H,D), pos (N), cos_t, sin_t (P, D/2)
void jr_rope_forward(float *out, const float *inp, const int32_t *pos, const float *cos_t, const float *sin_t,
                     int N, int H, int D) {
    int h2 = D / 2;
#pragma omp parallel for schedule(static) if((long)N * H * D > JR_PAR_MIN)
    for (int n = 0; n < N; n++) {
        const float *c = cos_t + (long)pos[n] * h2, *s = sin_t + (long)pos[n] * h2;
        for (int hd = 0; hd < H; hd++) {
            const float *x = inp + ((long)n * H + hd) * D;
            float *o = out + ((long)n * H + hd) * D;
            for (int i = 0; i < h2; i++) {
                float a = x[i], b = x[i + h2];
                o[i] = a * c[i] - b * s[i];
                o[i + h2] = b * c[i] + a * s[i];
            }
        }
    }
}

// dinp, dout (N,H,D), pos (N), cos_t, sin_t (P, D/2)
void jr_rope_backward(float *dinp, const float *dout, const int32_t *pos, const float *cos_t, const float *sin_t,
                      int N, int H, int D) {
    int h2 = D / 2;
#pragma omp parallel for schedule(static) if((long)N * H * D > JR_PAR_MIN)
    for (int n = 0; n < N; n++) {
        const float *c = cos_t + (long)pos[n] * h2, *s = sin_t + (long)pos[n] * h2;
        for (int hd = 0; hd < H; hd++) {
            const float *g = dout + ((long)n * H + hd) * D;
            float *dx = dinp + ((long)n * H + hd) * D;
            for (int i = 0; i < h2; i++) {
                float ga = g[i], gb = g[i + h2];
                dx[i] += ga * c[i] + gb * s[i];
                dx[i + h2] += gb * c[i] - ga * s[i];
            }
        }
    }
}
